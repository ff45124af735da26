"""CCCP-TSVM fit CPU time on ijcnn1 at L = 1 000 labeled points.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_ijcnn1_scale.py --n-unlabeled 20000 \\
        [--save ref.npz] [--compare ref.npz] [--param cache_size=200]

ijcnn1 (LIBSVM ``ijcnn1.trn``, features as distributed), 1 000 labeled and U
unlabeled rows drawn at random (seed 0) from the training pool; C = 10, C* = C
L / U (paper 004's rule), sigma = 1 / median squared distance, s = -0.3.  One
warm-up fit compiles the numba kernels first; the fit is timed in CPU seconds
(``time.process_time``).  ``--save`` writes the decision values on the
training rows and 2 000 test rows; ``--compare`` reads such a file (e.g. from
an older commit) and prints the largest relative difference,
``max |f - f_ref| / max |f_ref|``; ``decision_sha256`` hashes the same
values (equal hashes: the same model bit for bit).  ``fill_cpu_s`` is the CPU
time of building the kernel cache (``KernelProblem``: every cached row and the
balancing column), ``solve_cpu_s`` that of the SMO solves
(``KernelProblem.solve``, gradient reconstructions included); the rest of the
fit is the CCCP bookkeeping between solves.  Test error is on 10 000 rows of
``ijcnn1.tst``.
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import json
import resource
import time

import numpy as np
from sklearn.datasets import load_svmlight_file

from _cccp_common import DATA, median_sigma, parse_param

N_LABELED = 1000


def load(name):
    with bz2.open(DATA / "ijcnn1" / name) as fh:
        X, y = load_svmlight_file(fh, n_features=22)
    return X.toarray(), (y > 0).astype(int)


def timed(cls, name, spent):
    """Wrap method ``name`` of ``cls`` to add its CPU seconds to
    ``spent[name]``."""
    method = getattr(cls, name)
    spent[name] = 0.0

    def wrapper(self, *args, **kwargs):
        t0 = time.process_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            spent[name] += time.process_time() - t0
    setattr(cls, name, wrapper)


def main():
    from weakkernels import CCCPTSVM
    from weakkernels._smo import KernelProblem

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, default=20000)
    ap.add_argument("--save")
    ap.add_argument("--compare")
    ap.add_argument("--param", action="append", default=[],
                    help="extra CCCPTSVM parameter key=value (JSON value)")
    args = ap.parse_args()
    Xp, yp = load("ijcnn1.trn.bz2")
    Xq, yq = load("ijcnn1.tst.bz2")
    rng = np.random.default_rng(0)
    perm = rng.permutation(yp.size)
    lab = perm[:N_LABELED]
    unl = perm[N_LABELED:N_LABELED + args.n_unlabeled]
    X = np.vstack([Xp[lab], Xp[unl]])
    y = np.concatenate([yp[lab], np.full(unl.size, -1)])
    te = rng.choice(yq.size, 10000, replace=False)
    sigma = median_sigma(X)
    extra = dict(parse_param(p) for p in args.param)
    params = dict(C=10.0, C_star=10.0 * N_LABELED / unl.size, s=-0.3, sigma=sigma,
                  **extra)
    warm = np.r_[0:200, N_LABELED:N_LABELED + 100]
    CCCPTSVM(**params).fit(X[warm], y[warm])  # compile before timing
    est = CCCPTSVM(**params)
    spent = {}
    timed(KernelProblem, "__post_init__", spent)  # the cache fill
    timed(KernelProblem, "solve", spent)  # SMO solves
    t0 = time.process_time()
    w0 = time.perf_counter()
    est.fit(X, y)
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    F = np.concatenate([est.decision_function(X), est.decision_function(Xq[te[:2000]])])
    err = float(np.mean(est.predict(Xq[te]) != yq[te]))
    out = {
        "n_unlabeled": int(unl.size),
        "fit_cpu_s": round(cpu, 2),
        "fit_wall_s": round(wall, 2),
        "fill_cpu_s": round(spent["__post_init__"], 2),
        "solve_cpu_s": round(spent["solve"], 2),
        "test_error": round(err, 5),
        "n_iter": est.n_iter_.tolist(),
        "decision_sha256": hashlib.sha256(F.tobytes()).hexdigest(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                             / 1024, 1),
        "params": {k: v for k, v in params.items() if k != "sigma"},
    }
    for attr in ("cache_hit_rate_", "cache_rows_"):
        if hasattr(est, attr):
            out[attr] = np.asarray(getattr(est, attr)).tolist()
    if args.compare:
        ref = np.load(args.compare)["F"]
        out["max_rel_diff_vs_ref"] = float(np.max(np.abs(F - ref))
                                           / np.max(np.abs(ref)))
    if args.save:
        np.savez(args.save, F=F)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
