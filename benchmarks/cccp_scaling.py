"""CCCP-TSVM training time and peak memory vs number of unlabeled points.

Usage::

    .venv/bin/python benchmarks/cccp_scaling.py [--sizes 500 1000 ...] [--repeats 3]

cod-rna (LIBSVM training file, 59,535 x 8, features standardised), 100 labeled
points drawn at random and U unlabeled points drawn at random (seed 0) from the
rest. Paper 004 Figures 1.7/1.9/1.10 show the CCCP-TSVM time growing about
quadratically with U. Each size runs in a fresh subprocess so that its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) belongs to that fit alone; the
baseline RSS (interpreter + numba + data, after a warm-up fit that compiles the
kernels) is reported beside it. Fixed hyper-parameters: RBF sigma = 1 / median
squared distance, C = 1, C* = L C / U (the paper's heuristic), s = -0.3,
cache_size = 200 MB by default (``--cache-size``): the kernel rows have
U + L + 1 entries, so from U ~ 5000 on the cache no longer holds them all and
rows are recomputed; memory stays bounded by the cache. The exponent is the
least-squares slope of log(time) on log(U).
"""

from __future__ import annotations

import argparse
import json
import lzma
import resource
import subprocess
import sys
import time

import numpy as np

from _cccp_common import DATA, median_sigma

N_LABELED = 100


def load_codrna():
    with lzma.open(DATA / "cod-rna/cod-rna.dense.txt.xz") as fh:
        raw = np.loadtxt(fh)
    y = (raw[:, 0] > 0).astype(int)
    X = raw[:, 1:]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


def subset(y, n_unlabeled, seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size)
    # Labeled points drawn at random (class ratio of the data, ~1:2), so the
    # balancing constraint Eq. 1.13 targets the right fraction of positives.
    lab = perm[:N_LABELED]
    assert np.unique(y[lab]).size == 2
    rest = np.setdiff1d(perm, lab, assume_unique=True)
    rest = rest[rng.permutation(rest.size)]
    return lab, rest[:n_unlabeled]


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(n_unlabeled: int, repeats: int, cache_size: float):
    from weakkernels import CCCPTSVM

    X, y = load_codrna()
    sigma = median_sigma(X)
    # warm-up fit: compiles / loads the numba kernels before measuring
    lab, unl = subset(y, 200, seed=1)
    ys = np.full(y.size, -1)
    ys[lab] = y[lab]
    idx = np.concatenate([lab, unl])
    CCCPTSVM(sigma=sigma, C_star=N_LABELED / 200).fit(X[idx], ys[idx])
    base = rss_mb()
    lab, unl = subset(y, n_unlabeled)
    idx = np.concatenate([lab, unl])
    Xs, ys = X[idx], np.concatenate([y[lab], np.full(unl.size, -1)])
    times = []
    for _ in range(repeats):
        est = CCCPTSVM(C=1.0, C_star=N_LABELED / n_unlabeled, s=-0.3, sigma=sigma,
                       cache_size=cache_size)
        t0 = time.perf_counter()
        est.fit(Xs, ys)
        times.append(time.perf_counter() - t0)
    err = float(np.mean(est.transduction_[N_LABELED:] != y[unl]))
    print(json.dumps({
        "U": n_unlabeled, "times": times, "median_s": float(np.median(times)),
        "peak_rss_mb": rss_mb(), "baseline_rss_mb": base,
        "cccp_iter": int(est.n_iter_[0]), "n_sv": int(est.n_support_[0]),
        "transductive_error": err,
    }))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+",
                    default=[500, 1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed fits per size (sizes >= 10000 use 1)")
    ap.add_argument("--cache-size", type=float, default=200.0,
                    help="kernel cache of the SMO solver, MB")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.repeats, args.cache_size)
        return
    rows = []
    for U in args.sizes:
        reps = args.repeats if U < 10000 else 1
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(U), "--repeats", str(reps),
             "--cache-size", str(args.cache_size)],
            check=True, capture_output=True, text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], file=sys.stderr, flush=True)
    U = np.array([r["U"] for r in rows], float)
    T = np.array([r["median_s"] for r in rows])
    slope, _ = np.polyfit(np.log(U), np.log(T), 1)
    big = U >= 2000
    slope_big = (np.polyfit(np.log(U[big]), np.log(T[big]), 1)[0]
                 if big.sum() > 1 else float("nan"))
    print("\n| U (unlabeled) | variables 2U+L+1 | fit time s (median, runs) | "
          "CCCP iters | SVs | peak RSS MB | baseline RSS MB | transductive error % |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['U']} | {2 * r['U'] + N_LABELED + 1} | {r['median_s']:.2f} "
              f"({len(r['times'])}) | {r['cccp_iter']} | {r['n_sv']} | "
              f"{r['peak_rss_mb']:.0f} | {r['baseline_rss_mb']:.0f} | "
              f"{100 * r['transductive_error']:.2f} |")
    print(f"\nfitted exponent time ~ U^a: a = {slope:.2f} over all sizes"
          + (f", a = {slope_big:.2f} for U >= 2000" if big.sum() > 1 else ""))


if __name__ == "__main__":
    main()
