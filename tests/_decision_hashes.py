"""The behaviour table of the estimators: decision values of every estimator
on small problems, hashed bit for bit.

Each case fits one estimator on one input kind (dense float64, dense float32,
CSR, a Dask array, a multiclass problem) at one parameter setting and records
the SHA-256 of its float64 ``decision_function`` on fixed query rows, with
the values themselves. The table ``tests/fixtures/decision_hashes.json`` was
recorded from the code before the solver package was split out;
``tests/test_decision_hashes.py`` refits every case and compares: bit for bit
on the instruction set the table was recorded with (its ``target``: numba's
CPU name, OpenBLAS's kernels and NumPy's SIMD targets; ``make test`` pins all
three, as the pipeline's launcher does); elsewhere to 1e-2 of the largest
value (other kernels round differently, and the solvers' stopping tests and
line searches amplify a last-bit difference to a few 1e-4 of it). A change
that alters a model on purpose rewrites the table in the same commit and says
why::

    python -m tests._decision_hashes --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

TABLE = Path(__file__).parent / "fixtures" / "decision_hashes.json"


def _semi(n=240, d=6, n_classes=2, n_labeled=24, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    means = rng.normal(size=(n_classes, d)) * 1.5
    X = rng.normal(size=(n, d)) + means[y]
    y_semi = np.full(n, -1)
    per = n_labeled // n_classes
    lab = np.concatenate([np.flatnonzero(y == c)[:per] for c in range(n_classes)])
    y_semi[lab] = y[lab]
    return X, y_semi


def _su(n_pairs=60, n_unl=120, d=5, seed=0):
    """Similar pairs (consecutive rows, ``y == 1``) and unlabeled rows."""
    rng = np.random.default_rng(seed)
    mean = np.full(d, 1.2)
    cls = rng.random(n_pairs) < 0.7
    sign = np.where(cls, 1.0, -1.0)[:, None, None]
    pairs = rng.normal(size=(n_pairs, 2, d)) + sign * mean
    unl_sign = np.where(rng.random(n_unl) < 0.7, 1.0, -1.0)[:, None]
    unl = rng.normal(size=(n_unl, d)) + unl_sign * mean
    X = np.vstack([pairs.reshape(-1, d), unl])
    y = np.concatenate([np.ones(2 * n_pairs, int), np.full(n_unl, -1)])
    return X, y


def _inputs(kind, X):
    if kind == "float32":
        return X.astype(np.float32)
    if kind == "csr":
        X = X.copy()
        X[np.abs(X) < 0.5] = 0.0
        return sp.csr_matrix(X)
    if kind == "dask":
        import dask.array as da

        return da.from_array(X, chunks=(80, X.shape[1]))
    return X


def _estimator(name, params):
    import weakkernels

    cls = getattr(weakkernels, name)
    if "random_state" in cls().get_params():
        params = {"random_state": 0, **params}
    return cls(**params)


# (case id, estimator, data, input kind, parameters)
CASES = [
    ("tsgs3vm-dense", "TSGS3VM", "semi", "dense", {}),
    ("tsgs3vm-dense-C10", "TSGS3VM", "semi", "dense", {"C": 10.0}),
    ("tsgs3vm-dense-rule", "TSGS3VM", "semi", "dense", {"selection": None}),
    ("tsgs3vm-dense-fourier", "TSGS3VM", "semi", "dense",
     {"features": "fourier", "selection": None}),
    ("tsgs3vm-dense-sgd", "TSGS3VM", "semi", "dense",
     {"solver": "sgd", "selection": None}),
    ("tsgs3vm-dense-ramp", "TSGS3VM", "semi", "dense",
     {"unlabeled_loss": "ramp_cccp", "selection": None}),
    ("tsgs3vm-float32", "TSGS3VM", "semi", "float32", {}),
    ("tsgs3vm-csr", "TSGS3VM", "semi", "csr", {"selection": None}),
    ("tsgs3vm-dask", "TSGS3VM", "semi", "dask", {"selection": None}),
    ("tsgs3vm-multiclass", "TSGS3VM", "multi", "dense", {"selection": None}),
    ("frs3vm-dense", "FRS3VM", "semi", "dense", {}),
    ("frs3vm-csr", "FRS3VM", "semi", "csr", {"selection": None}),
    ("tsgsu-dense", "TSGSU", "su", "dense", {}),
    ("tsgsu-float32", "TSGSU", "su", "float32", {}),
    ("tsgsu-sgd", "TSGSU", "su", "dense", {"solver": "sgd"}),
    ("qsgs2auc-dense", "QSGS2AUC", "semi", "dense", {}),
    ("qsgs2auc-csr", "QSGS2AUC", "semi", "csr", {}),
    ("qsgs2auc-sgd", "QSGS2AUC", "semi", "dense", {"solver": "sgd"}),
    ("cccptsvm-dense", "CCCPTSVM", "semi", "dense", {}),
    ("cccptsvm-multiclass", "CCCPTSVM", "multi", "dense", {}),
    ("rampsvm-dense", "RampSVM", "labeled", "dense", {}),
]


def _data(name):
    if name == "su":
        return _su()
    if name == "labeled":  # RampSVM is supervised: -1 would be a class
        X, y = _semi(n=120, n_labeled=60)
        return X[y != -1], y[y != -1]
    if name == "multi":
        return _semi(n=300, n_classes=3, n_labeled=30, seed=1)
    return _semi()


def decision_hash(case) -> dict:
    """Fit one case; the SHA-256 of its float64 decision values and a preview."""
    _, name, data, kind, params = case
    X, y = _data(data)
    est = _estimator(name, params).fit(_inputs(kind, X), y)
    query = _inputs(kind if kind != "dask" else "dense", X[::7])
    dec = np.ascontiguousarray(est.decision_function(query), dtype=np.float64)
    return {"sha256": hashlib.sha256(dec.tobytes()).hexdigest(),
            "shape": list(dec.shape), "values": [float(v) for v in dec.ravel()]}


def kernel_target() -> str:
    """The instruction set the compiled kernels run on: numba's CPU name, the
    OpenBLAS core type and NumPy's dispatched SIMD targets in use (pinned ones,
    or the host's)."""
    import llvmlite.binding
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    cpu = os.environ.get("NUMBA_CPU_NAME") or llvmlite.binding.get_host_cpu_name()
    blas = sorted({str(i.get("architecture")) for i in threadpool_info()
                   if i.get("internal_api") == "openblas"})
    simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    return f"numba:{cpu} openblas:{','.join(blas)} numpy:{','.join(simd)}"


def dask_client():
    """An in-process Dask client for the ``dask`` cases (fitting a dask array
    needs one)."""
    from distributed import Client, LocalCluster

    return Client(LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                               dashboard_address=None))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the table")
    args = ap.parse_args(argv)
    with dask_client():
        table = {case[0]: decision_hash(case) for case in CASES}
    if args.write:
        TABLE.write_text(json.dumps({"target": kernel_target(), "cases": table},
                                    indent=1, sort_keys=True) + "\n")
    else:
        old = json.loads(TABLE.read_text())["cases"]
        for key, rec in table.items():
            print(key, "same" if old.get(key) == rec else "CHANGED")


if __name__ == "__main__":
    main()
