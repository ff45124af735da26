"""Training throughput of TSGS3VM next to a limit measured in the same run.

Throughput = (sample x random feature) evaluations per second during ``fit``:
iteration ``t`` evaluates f on ``m = 2 * batch_size`` points over the ``t * B``
features already in the model and computes ``B`` new features on them, so a fit
of ``T`` iterations does ``m B (T (T - 1) / 2 + T)`` evaluations. Fit time
includes everything (sampling, losses, Python loop); compile time is excluded
by a warm-up fit.

The limit is what NumPy reaches on the same shapes: a float32 GEMM
``(m, d) @ (d, F)`` plus ``np.cos`` on the ``(m, F)`` result, timed in this run
(the faster of threaded and single-threaded BLAS, ``np.cos`` on one core as
NumPy runs it).
Data: Gaussian, **synthetic**, at d in {3, 8, 28, 116, 300} (the widths of skin,
cod-rna, HIGGS, dota2, w8a).

Usage::

    python benchmarks/throughput.py [--repeats 5] [--iters 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from weakkernels import TSGS3VM


def limit_rate(m, d, F, repeats):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, d)).astype(np.float32)
    W = rng.normal(size=(d, F)).astype(np.float32)
    Z = np.empty((m, F), dtype=np.float32)
    t_gemm, t_gemm1, t_cos = [], [], []
    for _ in range(repeats):
        t = time.perf_counter()
        np.matmul(X, W, out=Z)
        t_gemm.append(time.perf_counter() - t)
        with threadpool_limits(1, user_api="blas"):
            t = time.perf_counter()
            np.matmul(X, W, out=Z)
            t_gemm1.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.cos(Z, out=Z)
        t_cos.append(time.perf_counter() - t)
    # the limit takes NumPy's better GEMM setting (threaded BLAS or one thread):
    # a generous bar
    g = min(np.median(t_gemm), np.median(t_gemm1))
    c = np.median(t_cos)
    return m * F / (g + c), m * F / g, m * F / c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dims", default="3,8,28,116,300")
    ap.add_argument("--out", default="benchmarks/results/throughput.json")
    args = ap.parse_args()
    T, B, mb = args.iters, args.block, args.batch
    m = 2 * mb
    evals = m * B * (T * (T - 1) / 2 + T)
    rows = []
    for d in map(int, args.dims.split(",")):
        rng = np.random.default_rng(d)
        n = mb * T + 200
        X = rng.normal(size=(n, d))
        y = np.full(n, -1)
        y[:200] = (X[:200, 0] > 0).astype(int)
        # the SGD engine's evaluation throughput (paper 000 Algorithm 1)
        kw = dict(C=1.0, C_star=1.0, sigma=1.0 / d, batch_size=mb, block_size=B,
                  max_iter=T, random_state=0, solver="sgd")
        TSGS3VM(**{**kw, "max_iter": 3}).fit(X, y)  # compile
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            TSGS3VM(**kw).fit(X, y)
            times.append(time.perf_counter() - t)
        fit_t = float(np.median(times))
        # the limit at the model's mean width over the fit
        lim, gemm, cos = limit_rate(m, d, B * T // 2, args.repeats * 3)
        rows.append(dict(d=d, fit_s=fit_t, evals=evals, rate=evals / fit_t,
                         limit=lim, gemm_rate=gemm, cos_rate=cos,
                         ratio=evals / fit_t / lim))
        print(rows[-1], flush=True)
    meta = dict(iters=T, block=B, batch=mb, repeats=args.repeats,
                numba_threads=numba.get_num_threads(), numpy=np.__version__,
                numba=numba.__version__, machine=platform.processor() or "x86_64")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(meta=meta, rows=rows), indent=2))
    print(f"\nT={T} iterations, block {B}, batch {mb}+{mb}, median of "
          f"{args.repeats} fits, numba threads {meta['numba_threads']}")
    print("| d | fit time | our rate (evals/s) | NumPy limit (GEMM+cos) | ratio |"
          " GEMM alone | cos alone |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['d']} | {r['fit_s']:.2f} s | {r['rate']:.3g} | {r['limit']:.3g} | "
              f"**{r['ratio']:.2f}** | {r['gemm_rate']:.3g} | {r['cos_rate']:.3g} |")


if __name__ == "__main__":
    main()
