"""CCCP-TSVM on sparse text: SSL-book set 9 "Text" against UniverSVM and SVMlight.

The exact-kernel side. Side by side in one run, on the official
100-labeled splits of Chapelle, Schölkopf & Zien's "Text" (1 500 documents x
11 960 terms, 0.44 % nonzero, rows of unit L2 norm; ``../shared/data/raw/
sslbook/data9.mat.xz``, MANIFEST.md):

* ``ours-sparse``: :class:`weakkernels.CCCPTSVM` on the CSR matrix;
* ``ours-dense``: the same estimator on ``X.toarray()`` (143 MB of float64);
* ``universvm``: UniverSVM 1.22 (Collobert, Sinz, Weston & Bottou: the
  CCCP-TSVM of paper 004), sparse LIBSVM-format files;
* ``svmlight``: SVMlight's TSVM (Joachims 1999), unlabeled rows with target 0.

Same kernel and C for all: RBF ``exp(-g ||x - x'||^2)`` with ``g = 0.1`` --
our ``sigma`` *is* that ``g`` (``weakkernels.kernels``), as are UniverSVM's and
SVMlight's ``-g`` -- and ``C = C* = 10`` (UniverSVM ``-c 10 -z 10``; SVMlight
anneals the unlabeled cost up to ``C``, so its ``C* = C``), ramp ``s = -0.3``
(ours and UniverSVM ``-S -0.3``), KKT tolerance 1e-3, 200 MB kernel cache.
Also ``C* = C L / U`` (paper 004 Sec. 1.6.1.1; our ``C_star=None``, UniverSVM
``-z C*L/U``); SVMlight has no such setting. Error = transductive error on the
1 400 unlabeled points.

Times: ours = ``fit`` alone (median over ``--repeats`` fits in one process,
after a warm-up fit so numba's compiled code is loaded), and the whole child
process; peers = the whole process (reading the files, training, predicting;
SVMlight = ``svm_learn`` + ``svm_classify``). Peak RSS: ``ru_maxrss`` of each
child; for ours also the growth during ``fit`` (VmHWM reset through
``/proc/self/clear_refs`` before the fit, minus VmRSS before it).

Run (peers built first)::

    UNIVERSVM_GIT_DIR=... sh benchmarks/peers/setup_sparse_peers.sh
    nice python benchmarks/sparse_text.py --splits 4 \
        --out benchmarks/results/sparse_text
    nice python benchmarks/sparse_text.py --kernel-rows   # the three row strategies
    nice python benchmarks/sparse_text.py --profile       # SMO vs kernel rows

The data mirror: ``$WEAKKERNELS_DATA`` or ``../shared/data/raw`` beside the
clone (as ``benchmarks/_cccp_common.py``).
"""

from __future__ import annotations

import argparse
import csv
import json
import lzma
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("WEAKKERNELS_DATA",
                           HERE.parents[1] / "shared/data/raw"))
PEERS = HERE / "peers" / "build"
UNIVERSVM = PEERS / "universvm" / "universvm"
SVM_LEARN = PEERS / "svmlight" / "svm_learn"
SVM_CLASSIFY = PEERS / "svmlight" / "svm_classify"

GAMMA = 0.1
C = 10.0
S = -0.3
TOL = 1e-3
CACHE_MB = 200
TIME = os.environ.get("GNU_TIME", "/usr/bin/time")  # GNU time, for peak RSS


def load_text():
    """Text (set 9): CSR X, labels in {-1, +1}, official 100-labeled splits."""
    with lzma.open(DATA / "sslbook/data9.mat.xz") as fh:
        d = sio.loadmat(fh)
    with lzma.open(DATA / "sslbook/splits9-labeled100.mat.xz") as fh:
        s = sio.loadmat(fh)
    X = sp.csr_matrix(d["X"], dtype=np.float64)
    X.sum_duplicates()
    y = np.where(d["y"].ravel() > 0, 1, -1)
    splits = [(s["idxLabs"][k].astype(int) - 1, s["idxUnls"][k].astype(int) - 1)
              for k in range(s["idxLabs"].shape[0])]
    return X, y, splits


def _status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return -1


def _reset_peak():
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------
# child: one of our fits
# --------------------------------------------------------------------------


def child(config, split, c_star, repeats):
    from weakkernels import CCCPTSVM

    X, y, splits = load_text()
    lab, unl = splits[split]
    y_semi = np.full(y.size, -1)
    y_semi[lab] = (y[lab] > 0).astype(int)
    if config == "ours-dense":
        X = X.toarray()
    params = dict(C=C, C_star=None if c_star == "LU" else C, sigma=GAMMA, s=S,
                  tol=TOL, cache_size=CACHE_MB)
    # warm-up: load the compiled code of this layout (numba cache) off the clock
    warm = np.r_[lab[:10], unl[:40]]
    CCCPTSVM(**params).fit(X[warm], np.r_[y_semi[lab[:10]], np.full(40, -1)])
    times = []
    rss_before = _status("VmRSS")
    reset = _reset_peak()
    for _ in range(repeats):
        est = CCCPTSVM(**params)
        t0 = time.perf_counter()
        est.fit(X, y_semi)
        times.append(time.perf_counter() - t0)
    peak = _status("VmHWM") if reset else -1
    pred = np.where(est.transduction_[unl] == 1, 1, -1)
    sv = est.support_vectors_
    print(json.dumps({
        "fit_s": statistics.median(times),
        "fit_all_s": times,
        "error": float(np.mean(pred != y[unl])),
        "rss_before_fit": rss_before,
        "fit_peak_growth": peak - rss_before if peak > 0 else None,
        "C_star": est.C_star_,
        "cccp_iter": int(est.n_iter_[0]),
        "n_sv": int(sv.shape[0]),
        "sv_sparse": bool(sp.issparse(sv)),
    }))


def run_timed(cmd):
    """(returncode, stdout, stderr, wall seconds, peak RSS bytes) of ``cmd``.

    The peak RSS comes from GNU time (``%M``): ``ru_maxrss`` of a child
    forked (vfork) from this large Python process would include this
    process's own pages from before the ``exec``.
    """
    t0 = time.perf_counter()
    proc = subprocess.run([TIME, "-f", "WK_MAXRSS_KB %M", *cmd],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    m = re.findall(r"WK_MAXRSS_KB (\d+)", proc.stderr)
    rss = int(m[-1]) * 1024 if m else None
    return proc.returncode, proc.stdout, proc.stderr, wall, rss


# --------------------------------------------------------------------------
# peers
# --------------------------------------------------------------------------


def write_split_files(X, y, lab, unl, tmp):
    from sklearn.datasets import dump_svmlight_file

    files = {k: str(tmp / f"{k}.dat") for k in
             ("train", "unlabeled", "test", "svmlight_train")}
    dump_svmlight_file(X[lab], y[lab], files["train"], zero_based=False)
    dump_svmlight_file(X[unl], np.zeros(unl.size), files["unlabeled"],
                       zero_based=False)
    dump_svmlight_file(X[unl], y[unl], files["test"], zero_based=False)
    # SVMlight transduction: unlabeled rows in the training file with target 0
    dump_svmlight_file(sp.vstack([X[lab], X[unl]], format="csr"),
                       np.r_[y[lab], np.zeros(unl.size)], files["svmlight_train"],
                       zero_based=False)
    return files


def universvm_cmd(files, c_star):
    return [str(UNIVERSVM), "-o", "1", "-c", f"{C:g}", "-z", f"{c_star:.10g}",
            "-t", "2", "-g", f"{GAMMA:g}", "-S", f"{S:g}", "-e", f"{TOL:g}",
            "-m", str(CACHE_MB), "-u", files["unlabeled"], "-T", files["test"],
            files["train"]]


def run_universvm(files, c_star):
    rc, out, err, wall, rss = run_timed(universvm_cmd(files, c_star))
    m = re.findall(r"Accuracy=\s*[\d.]+\s*\((\d+)/(\d+)\)", out)
    if rc != 0 or not m:
        return {"error": None, "fail": (err or out)[-300:]}
    right, total = map(int, m[-1])
    return {"error": 1.0 - right / total, "process_s": wall, "peak_rss": rss}


def svmlight_cmds(files, tmp):
    model, pred = str(tmp / "svmlight.model"), str(tmp / "svmlight.pred")
    learn = [str(SVM_LEARN), "-c", f"{C:g}", "-t", "2", "-g", f"{GAMMA:g}",
             "-e", f"{TOL:g}", "-m", str(CACHE_MB), files["svmlight_train"], model]
    classify = [str(SVM_CLASSIFY), files["test"], model, pred]
    return learn, classify, pred


def run_svmlight(files, tmp, y_unl):
    learn, classify, pred = svmlight_cmds(files, tmp)
    rc1, out1, err1, wall1, rss1 = run_timed(learn)
    rc2, out2, err2, wall2, rss2 = run_timed(classify)
    if rc1 or rc2:
        return {"error": None, "fail": (err1 + err2 + out1[-200:])[-300:]}
    f = np.loadtxt(pred)
    return {"error": float(np.mean(np.where(f > 0, 1, -1) != y_unl)),
            "process_s": wall1 + wall2, "peak_rss": max(rss1, rss2)}


def run_ours(config, split, c_star, repeats):
    cmd = [sys.executable, __file__, "--child", config, "--split", str(split),
           "--c-star", c_star, "--repeats", str(repeats)]
    rc, out, err, wall, rss = run_timed(cmd)
    if rc != 0:
        return {"error": None, "fail": err[-500:]}
    res = json.loads(out.strip().splitlines()[-1])
    res.update(process_s=wall, peak_rss=rss)
    return res


# --------------------------------------------------------------------------
# the three ways to compute a sparse kernel row (measured, --kernel-rows)
# --------------------------------------------------------------------------


def kernel_rows():
    from numba import njit

    from weakkernels._smo import FASTMATH, _csr_kernel_row, csr_points

    @njit(fastmath=FASTMATH)
    def scatter_gather(indptr, indices, data, sqnorm, work, sigma, out):
        n = indptr.shape[0] - 1
        for p in range(n):
            for t in range(indptr[p], indptr[p + 1]):
                work[indices[t]] = data[t]
            for q in range(n):
                dot = 0.0
                for t in range(indptr[q], indptr[q + 1]):
                    dot += work[indices[t]] * data[t]
                out[q] = np.exp(-sigma * max(sqnorm[p] + sqnorm[q] - 2 * dot, 0.0))
            for t in range(indptr[p], indptr[p + 1]):
                work[indices[t]] = 0.0

    @njit(fastmath=FASTMATH)
    def merge(indptr, indices, data, sqnorm, sigma, out):
        n = indptr.shape[0] - 1
        for p in range(n):
            for q in range(n):
                a, a_end = indptr[p], indptr[p + 1]
                b, b_end = indptr[q], indptr[q + 1]
                dot = 0.0
                while a < a_end and b < b_end:
                    ia, ib = indices[a], indices[b]
                    if ia == ib:
                        dot += data[a] * data[b]
                        a += 1
                        b += 1
                    elif ia < ib:
                        a += 1
                    else:
                        b += 1
                out[q] = np.exp(-sigma * max(sqnorm[p] + sqnorm[q] - 2 * dot, 0.0))

    @njit
    def inverted(indptr, indices, data, l1, colptr, rowidx, colval, sqnorm, sigma,
                 out):
        n = indptr.shape[0] - 1
        for p in range(n):
            a, b = indptr[p], indptr[p + 1]
            _csr_kernel_row(indices[a:b], data[a:b], sqnorm[p], l1[p], colptr,
                            rowidx, colval, sqnorm, l1, 0, sigma, 3, 1.0, out)

    X, _, _ = load_text()
    (indptr, indices, data, l1, colptr, rowidx, colval, _), sqnorm = csr_points(X)
    out = np.empty(X.shape[0])
    work = np.zeros(X.shape[1])
    runs = {
        "scatter/gather over all rows": lambda: scatter_gather(
            indptr, indices, data, sqnorm, work, GAMMA, out),
        "sorted merge per pair": lambda: merge(indptr, indices, data, sqnorm,
                                               GAMMA, out),
        "inverted index (CSC), used": lambda: inverted(
            indptr, indices, data, l1, colptr, rowidx, colval, sqnorm, GAMMA, out),
    }
    df = np.diff(colptr).astype(float)
    print(f"Text: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}; products per row: "
          f"scatter/gather {X.nnz}, inverted index {(df * df).sum() / X.shape[0]:.0f}")
    rows = []
    for name, fn in runs.items():
        fn()  # compile
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        rows.append((name, statistics.median(ts)))
        print(f"{name:32s} all {X.shape[0]} rows: median {statistics.median(ts):.3f} s")
    return rows


def profile(split=0):
    """Where one sparse fit's time goes: SMO solves vs the kernel set-up."""
    from weakkernels import CCCPTSVM, _smo

    X, y, splits = load_text()
    lab, unl = splits[split]
    y_semi = np.full(y.size, -1)
    y_semi[lab] = (y[lab] > 0).astype(int)
    params = dict(C=C, C_star=C, sigma=GAMMA, s=S, tol=TOL, cache_size=CACHE_MB)
    CCCPTSVM(**params).fit(X, y_semi)  # warm-up
    solve = _smo.KernelProblem.solve
    acc = {"s": 0.0, "iters": 0, "solves": 0}

    def timed_solve(self, *a, **k):
        t0 = time.perf_counter()
        out = solve(self, *a, **k)
        acc["s"] += time.perf_counter() - t0
        acc["iters"] += out[3]
        acc["solves"] += 1
        return out

    _smo.KernelProblem.solve = timed_solve
    t0 = time.perf_counter()
    CCCPTSVM(**params).fit(X, y_semi)
    total = time.perf_counter() - t0
    _smo.KernelProblem.solve = solve
    t0 = time.perf_counter()
    _smo.KernelProblem(X, 0, GAMMA, 3, 1.0, CACHE_MB, np.arange(lab.size, y.size),
                       np.r_[lab, unl])
    setup = time.perf_counter() - t0
    print(f"fit {total:.3f} s: {acc['solves']} SMO solves {acc['s']:.3f} s "
          f"({acc['iters']} SMO iterations); kernel set-up with the x_0 column "
          f"({unl.size} kernel rows) {setup:.3f} s")


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3,
                    help="fits per split for ours (median)")
    ap.add_argument("--dense-splits", type=int, default=None,
                    help="splits for ours-dense (default: all; it is slow)")
    ap.add_argument("--methods", default="ours-sparse,ours-dense,universvm,svmlight",
                    help="comma-separated subset of the four methods")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--kernel-rows", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child", default=None)
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--c-star", default="C", choices=["C", "LU"])
    args = ap.parse_args()
    if args.child:
        child(args.child, args.split, args.c_star, args.repeats)
        return
    if args.profile:
        profile(args.split)
        return
    if args.kernel_rows:
        rows = kernel_rows()
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            with open(args.out / "kernel_rows.csv", "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["strategy", "all_rows_median_s"])
                w.writerows(rows)
        return
    for exe in (UNIVERSVM, SVM_LEARN, SVM_CLASSIFY):
        if not exe.exists():
            sys.exit(f"{exe} missing: run benchmarks/peers/setup_sparse_peers.sh")
    X, y, splits = load_text()
    L, U = splits[0][0].size, splits[0][1].size
    n_dense = args.splits if args.dense_splits is None else args.dense_splits
    records = []
    for k in range(args.splits):
        lab, unl = splits[k]
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            files = write_split_files(X, y, lab, unl, tmp)
            jobs = [("ours-sparse", "C"), ("ours-dense", "C"), ("universvm", "C"),
                    ("svmlight", "C"), ("ours-sparse", "LU"), ("universvm", "LU")]
            for name, cs in jobs:
                if name == "ours-dense" and k >= n_dense:
                    continue
                if name not in args.methods.split(","):
                    continue
                if name.startswith("ours"):
                    res = run_ours(name, k, cs,
                                   1 if name == "ours-dense" else args.repeats)
                elif name == "universvm":
                    res = run_universvm(files, C if cs == "C" else C * L / U)
                else:
                    res = run_svmlight(files, tmp, y[unl])
                res.update(method=name, c_star="C" if cs == "C" else "C*L/U",
                           split=k)
                records.append(res)
                print(json.dumps({key: res.get(key) for key in (
                    "method", "c_star", "split", "error", "fit_s", "process_s",
                    "peak_rss", "fit_peak_growth", "fail")}), flush=True)
    if args.out:
        write_results(records, args, X)


def _rel(cmd):
    """A command line with the repository's paths relative to its root."""
    root = str(HERE.parent) + os.sep
    return " ".join(str(c).replace(root, "") for c in cmd)


def write_results(records, args, X):
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    keys = ["method", "c_star", "split", "error", "fit_s", "process_s", "peak_rss",
            "rss_before_fit", "fit_peak_growth", "cccp_iter", "n_sv", "fail"]
    with open(out / "runs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(records)
    groups = {}
    for r in records:
        groups.setdefault((r["method"], r["c_star"]), []).append(r)
    summary = []
    for (method, cs), rs in groups.items():
        ok = [r for r in rs if r.get("error") is not None]

        def med(key, ok=ok):
            vals = [r[key] for r in ok if r.get(key) is not None]
            return statistics.median(vals) if vals else None

        summary.append({
            "method": method, "c_star": cs, "n_splits": len(ok),
            "mean_error": float(np.mean([r["error"] for r in ok])) if ok else None,
            "median_fit_s": med("fit_s"), "median_process_s": med("process_s"),
            "median_peak_rss_mb": (med("peak_rss") or 0) / 2**20,
            "median_fit_peak_growth_mb": (
                med("fit_peak_growth") / 2**20 if med("fit_peak_growth") else None),
        })
    with open(out / "summary.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(summary[0]))
        w.writeheader()
        w.writerows(summary)
    sparse_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    (out / "meta.json").write_text(json.dumps({
        "command": " ".join(["python", "benchmarks/sparse_text.py"] + sys.argv[1:]),
        "sparse_data_mb": sparse_mb,
        "dense_data_mb": X.shape[0] * X.shape[1] * 8 / 2**20,
        "kernel_cache_mb_full_matrix": (X.shape[0] + 1) ** 2 * 8 / 2**20,
        "universvm_cmd": _rel(universvm_cmd(
            {"unlabeled": "unlabeled.dat", "test": "test.dat",
             "train": "train.dat"}, C)),
        "svmlight_cmds": [_rel(c) for c in svmlight_cmds(
            {"svmlight_train": "svmlight_train.dat", "test": "test.dat"},
            Path("."))[:2]],
    }, indent=1))


if __name__ == "__main__":
    main()
