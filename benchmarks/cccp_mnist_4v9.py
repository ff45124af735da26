"""CCCP-TSVM on MNIST 4 vs 9 (binary): ours against UniverSVM, whole processes.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_mnist_4v9.py [--n-unlabeled 10000]
        [--methods ours,universvm] [--out results.json]

Data: MNIST from the data mirror (``_cccp_common.DATA``), pixels / 255, the
digits 4 (label -1) and 9 (+1) only. 1 000 labeled and U unlabeled training
images drawn with seed 0 (disjoint); the error is on every 4 and 9 of the test
set (1 991 images). Parameters are those of paper 004's MNIST runs (Table 1.5):
C = 10, gamma = sigma = 0.0128, s = -0.1, and C* = C L / U (Sec. 1.6.1.1), KKT
tolerance 1e-3; UniverSVM 1.22 (``benchmarks/peers/setup_sparse_peers.sh``)
runs with the same values and a kernel cache as large as the full matrix
(``-m``), as ours has by default.

Both run as separate processes under GNU time: reported are the whole
process's CPU seconds (user + system: data loading, fit and prediction) and
peak RSS; for ours also the fit CPU alone (``time.process_time``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _cccp_common import DATA

HERE = Path(__file__).resolve().parent
UNIVERSVM = HERE / "peers" / "build" / "universvm" / "universvm"
TIME = os.environ.get("GNU_TIME", "/usr/bin/time")
N_LABELED = 1000
C, SIGMA, S, TOL = 10.0, 0.0128, -0.1, 1e-3


def load(n_unlabeled):
    """(X_labeled, y_labeled, X_unlabeled, X_test, y_test), y in {-1, +1}."""
    with np.load(DATA / "mnist/mnist.npz") as d:
        Xtr, ytr = d["x_train"].reshape(60000, -1) / 255.0, d["y_train"]
        Xte, yte = d["x_test"].reshape(10000, -1) / 255.0, d["y_test"]
    tr = np.flatnonzero((ytr == 4) | (ytr == 9))
    te = np.flatnonzero((yte == 4) | (yte == 9))
    perm = np.random.default_rng(0).permutation(tr)
    lab, unl = perm[:N_LABELED], perm[N_LABELED:N_LABELED + n_unlabeled]
    sign = lambda v: np.where(v == 9, 1, -1)  # noqa: E731
    return Xtr[lab], sign(ytr[lab]), Xtr[unl], Xte[te], sign(yte[te])


def run_timed(cmd):
    """(returncode, stdout, stderr, wall s, CPU s, peak RSS MB) under GNU time."""
    t0 = time.perf_counter()
    proc = subprocess.run([TIME, "-f", "WK_TIME %U %S %M", *cmd],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    m = re.findall(r"WK_TIME ([\d.]+) ([\d.]+) (\d+)", proc.stderr)
    cpu = rss = None
    if m:
        cpu = float(m[-1][0]) + float(m[-1][1])
        rss = int(m[-1][2]) / 1024
    return proc.returncode, proc.stdout, proc.stderr, wall, cpu, rss


def child(n_unlabeled):
    from weakkernels import CCCPTSVM

    XL, yL, XU, Xte, yte = load(n_unlabeled)
    X = np.vstack([XL, XU])
    y = np.concatenate([(yL > 0).astype(int), np.full(len(XU), -1)])
    est = CCCPTSVM(C=C, C_star=C * N_LABELED / n_unlabeled, sigma=SIGMA, s=S,
                   tol=TOL)
    t0 = time.process_time()
    est.fit(X, y)
    fit_cpu = time.process_time() - t0
    err = float(np.mean(np.where(est.predict(Xte) == 1, 1, -1) != yte))
    print("RESULT " + json.dumps({"test_error": err, "fit_cpu_s": round(fit_cpu, 2),
                                  "n_cccp_iter": est.n_iter_.tolist()}), flush=True)


def run_ours(n_unlabeled):
    rc, out, err, wall, cpu, rss = run_timed(
        [sys.executable, __file__, "--child", str(n_unlabeled)])
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if rc or not line:
        return {"fail": err[-500:]}
    res = json.loads(line[-1][7:])
    return {**res, "process_cpu_s": cpu, "process_wall_s": round(wall, 1),
            "peak_rss_mb": rss}


def run_universvm(n_unlabeled, tmp):
    from sklearn.datasets import dump_svmlight_file

    XL, yL, XU, Xte, yte = load(n_unlabeled)
    files = {k: str(tmp / f"{k}.dat") for k in ("train", "unlabeled", "test")}
    dump_svmlight_file(XL, yL, files["train"], zero_based=False)
    dump_svmlight_file(XU, np.zeros(len(XU)), files["unlabeled"], zero_based=False)
    dump_svmlight_file(Xte, yte, files["test"], zero_based=False)
    m = N_LABELED + n_unlabeled
    cache_mb = int(np.ceil(m * m * 8 / 2**20)) + 1  # the whole matrix, as ours
    cmd = [str(UNIVERSVM), "-o", "1", "-c", f"{C:g}",
           "-z", f"{C * N_LABELED / n_unlabeled:.10g}", "-t", "2",
           "-g", f"{SIGMA:g}", "-S", f"{S:g}", "-e", f"{TOL:g}",
           "-m", str(cache_mb), "-u", files["unlabeled"], "-T", files["test"],
           files["train"]]
    rc, out, err, wall, cpu, rss = run_timed(cmd)
    acc = re.findall(r"Accuracy=\s*[\d.]+\s*\((\d+)/(\d+)\)", out)
    if rc or not acc:
        return {"fail": (err or out)[-500:]}
    right, total = map(int, acc[-1])
    return {"test_error": 1.0 - right / total, "process_cpu_s": cpu,
            "process_wall_s": round(wall, 1), "peak_rss_mb": rss,
            "cmd": " ".join(Path(c).name if "/" in c else c for c in cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, default=10000)
    ap.add_argument("--methods", default="ours,universvm")
    ap.add_argument("--out")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child)
        return
    results = {"n_labeled": N_LABELED, "n_unlabeled": args.n_unlabeled}
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.methods.split(","):
            if method == "ours":
                results[method] = run_ours(args.n_unlabeled)
            elif method == "universvm":
                results[method] = run_universvm(args.n_unlabeled, Path(tmp))
            print(method, json.dumps(results[method]), flush=True)
    if "ours" in results and "universvm" in results:
        a, b = results["ours"], results["universvm"]
        if a.get("process_cpu_s") and b.get("process_cpu_s"):
            results["cpu_ratio_universvm_over_ours"] = round(
                b["process_cpu_s"] / a["process_cpu_s"], 2)
    print(json.dumps(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
