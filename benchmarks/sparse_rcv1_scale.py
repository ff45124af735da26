"""TSGS3VM on **synthetic RCV1-shaped** sparse data: one pass, peak RSS <= 2 GB.

The scale target. Data: :func:`weakkernels.pipeline.synthetic.
make_rcv1_like` -- RCV1's *shape* (47 000 term columns, density 0.16 %,
unit-norm tf-idf rows); the content is synthetic (Zipf terms, a sparse
linear-plus-quadratic teacher), **not RCV1**. ``--n-train`` rows are the
training set, of which ``--n-labeled`` (half per class) keep their labels and
the rest are unlabeled (``y = -1``); ``--n-test`` more rows from the same
generator are the test set. The matrices stay CSR (float32) end to end.

Each method runs in a fresh child process so its peak memory is its own:
``peak_rss`` is the child's ``VmHWM`` (resident-set high-water mark of
``/proc/self/status``: loading the data, a warm-up fit that loads the numba
cache, the fit, the prediction). Not ``ru_maxrss``: Linux carries the
parent's RSS at ``fork`` into the child's ``ru_maxrss`` across ``exec`` (it
read 535 MB before the child had loaded anything). ``fit_s`` excludes numba
compilation (the warm-up runs first).

Methods:

* ``sgd`` -- ``TSGS3VM(solver="sgd", n_passes=1)``: paper 000's Algorithm 1,
  one pass over the unlabeled rows (minibatches of 256 + 256, a fresh block
  of 32 features per step);
* ``lbfgs`` -- ``TSGS3VM()`` (the default solver, fixed seeded expansion;
  at d = 47 000 its default size is 1024 features, bounded by the d x D
  frequency budget of :func:`weakkernels._dsg.primal_features`);
* ``lbfgs4096`` -- ``TSGS3VM(max_features=4096)``: the same with 4x the
  features (memory and error at a larger expansion);
* ``linearsvc`` -- reference only: scikit-learn's ``LinearSVC`` on the
  labeled rows alone (what the unlabeled rows are worth).

``--kernel-only`` instead times ``X[rows] @ W`` for a block of 2000 sparse
rows and D = 1024 float32 columns: our numba kernel
(:func:`weakkernels.random_features.csr_project`, serial and parallel)
against scipy's product, on a contiguous W and on a column slice of a wider
W (what the growing SGD expansion passes), at a text-like shape (20 000
columns, density 0.5 %) and at RCV1's (47 000, 0.16 %).

Usage::

    python benchmarks/sparse_rcv1_scale.py --kernel-only
    python benchmarks/sparse_rcv1_scale.py
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

OUT = Path(__file__).parent / "results" / "sparse_rcv1"
CAPTION = "synthetic RCV1-shaped data"


def _peak_rss_mb() -> float:
    """This process's resident-set high-water mark (VmHWM), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmHWM in /proc/self/status")


# --------------------------------------------------------------- kernel ---
def _best(f, reps: int) -> float:
    f()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def _time_products(X, Wx, out, reps: int) -> dict:
    """Best-of-``reps`` seconds of ``X @ Wx`` by scipy and by our kernel."""
    from weakkernels.random_features import _CSR_PROJECT, _flat_rows

    Wf, ld = _flat_rows(Wx)
    args = (X.indptr, X.indices, X.data, 0, Wf, ld, out)
    n = X.shape[0]
    return {
        "scipy_s": _best(lambda: X[0:n] @ Wx, reps),
        "numba_serial_s": _best(lambda: _CSR_PROJECT[0](*args), reps),
        "numba_parallel_s": _best(lambda: _CSR_PROJECT[1](*args), reps),
    }


def kernel_bench(reps: int = 5) -> list[dict]:
    from weakkernels.random_features import csr_project

    rows = []
    D, n = 1024, 2000
    shapes = [("text-like", 20_000, 0.005), ("RCV1-shaped", 47_000, 0.0016)]
    for name, d, dens in shapes:
        X = sp.random(n, d, density=dens, format="csr", dtype=np.float32,
                      random_state=0)
        rng = np.random.default_rng(0)
        W = rng.standard_normal((d, D), dtype=np.float32)
        view = rng.standard_normal((d, D + D // 2), dtype=np.float32)[:, :D]
        out = np.empty((n, D), np.float32)
        for Wx, layout in ((W, "contiguous W"), (view, "column slice of W")):
            np.testing.assert_allclose(csr_project(X, Wx), X @ Wx, rtol=1e-4,
                                       atol=1e-4)
            r = {"shape": f"{name} {n} x {d}, density {dens:.2%}, D = {D}",
                 "W": layout, **_time_products(X, Wx, out, reps)}
            rows.append(r)
            print(json.dumps(r), flush=True)
    return rows


# ------------------------------------------------------------ one method ---
def child(method: str, data: Path, threads: int, seed: int) -> dict:
    import numba

    from weakkernels import TSGS3VM

    numba.set_num_threads(threads)
    z = np.load(data / "y.npz")
    y_semi, y_test = z["y_semi"], z["y_test"]
    X = sp.load_npz(data / "X.npz")
    X_test = sp.load_npz(data / "X_test.npz")
    rss_data = _peak_rss_mb()
    if method == "linearsvc":
        from sklearn.svm import LinearSVC

        lab = y_semi != -1
        t0 = time.perf_counter()
        est = LinearSVC(C=1.0).fit(X[lab], y_semi[lab])
        fit_s = time.perf_counter() - t0
        info = {}
    else:
        kw = {"random_state": seed}
        if method == "sgd":
            kw.update(solver="sgd", n_passes=1.0)
        elif method == "lbfgs4096":
            kw.update(max_features=4096)
        # warm-up on a slice: loads the numba cache / compiles the kernels
        TSGS3VM(**{**kw, "max_iter": 3}).fit(X[:3000], y_semi[:3000])
        est = TSGS3VM(**kw)
        t0 = time.perf_counter()
        est.fit(X, y_semi)
        fit_s = time.perf_counter() - t0
        info = {"n_iter": int(est.n_iter_), "n_features_model": int(
            est.n_features_model_), "sigma": float(est.sigma_)}
    t0 = time.perf_counter()
    err = float(np.mean(est.predict(X_test) != y_test))
    pred_s = time.perf_counter() - t0
    return {"method": method, "fit_s": round(fit_s, 2),
            "predict_s": round(pred_s, 2), "test_error": round(err, 4),
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            "rss_after_loading_data_mb": round(rss_data, 1),
            "threads": threads, **info}


def make_data(path: Path, n_train: int, n_test: int, n_features: int,
              density: float, n_labeled: int, seed: int) -> dict:
    from weakkernels.pipeline.synthetic import make_rcv1_like

    X, y = make_rcv1_like(n_train + n_test, n_features, density, seed=seed,
                          dtype=np.float32)
    rng = np.random.default_rng(seed)
    ytr = y[:n_train]
    lab = np.concatenate([
        rng.choice(np.flatnonzero(ytr == c), n_labeled // 2, replace=False)
        for c in (0, 1)
    ])
    y_semi = np.full(n_train, -1)
    y_semi[lab] = ytr[lab]
    sp.save_npz(path / "X.npz", X[:n_train], compressed=False)
    sp.save_npz(path / "X_test.npz", X[n_train:], compressed=False)
    np.savez(path / "y.npz", y_semi=y_semi, y_test=y[n_train:])
    Xtr = X[:n_train]
    return {"n_train": n_train, "n_test": n_test, "n_features": n_features,
            "density": round(Xtr.nnz / (n_train * n_features), 6),
            "n_labeled": int(lab.size),
            "csr_mb": round((Xtr.data.nbytes + Xtr.indices.nbytes
                             + Xtr.indptr.nbytes) / 2**20, 1),
            "dense_float64_gb": round(n_train * n_features * 8 / 2**30, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel-only", action="store_true")
    ap.add_argument("--n-train", type=int, default=50_000)
    ap.add_argument("--n-test", type=int, default=10_000)
    ap.add_argument("--n-features", type=int, default=47_000)
    ap.add_argument("--density", type=float, default=0.0016)
    ap.add_argument("--n-labeled", type=int, default=400)
    ap.add_argument("--methods", default="sgd,lbfgs,lbfgs4096,linearsvc")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.data, a.threads, a.seed)))
        return
    a.out.mkdir(parents=True, exist_ok=True)
    if a.kernel_only:
        rows = kernel_bench()
        with open(a.out / "kernel.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        data = make_data(Path(tmp), a.n_train, a.n_test, a.n_features, a.density,
                         a.n_labeled, a.seed)
        data["generate_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(data), flush=True)
        rows = []
        for m in a.methods.split(","):
            cmd = [sys.executable, __file__, "--child", m, "--data", tmp,
                   "--threads", str(a.threads), "--seed", str(a.seed)]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode:
                sys.stderr.write(r.stderr)
                raise SystemExit(f"{m} failed")
            row = json.loads(r.stdout.strip().splitlines()[-1])
            print(json.dumps(row), flush=True)
            rows.append(row)
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k != "method", k))
    with open(a.out / "scale.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    meta = {"data": data, "machine": platform.platform(),
            "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
            "caption": CAPTION, "command": " ".join(["python"] + sys.argv)}
    (a.out / "scale_meta.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
