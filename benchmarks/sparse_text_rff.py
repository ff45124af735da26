"""TSGS3VM and FRS3VM on SSL-book "Text" (sparse CSR), beside the CCCP-TSVM
rows of ``sparse_text.py``: the same splits (all 12 official
100-labeled ones), kernel (RBF, sigma = g = 0.1), C = 10 and both C* settings,
transductive error on the 1 400 unlabeled points; in-process fit times, the
median of 3 fits after a warm-up fit (numba's cache loading off the clock).

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/sparse_text_rff.py \
        --out benchmarks/results/sparse_text/rff.csv
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import numpy as np

from sparse_text import GAMMA, C, load_text
from weakkernels import FRS3VM, TSGS3VM


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=12)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    X, y, splits = load_text()
    rows = []
    for k in range(args.splits):
        lab, unl = splits[k]
        y_semi = np.full(y.size, -1)
        y_semi[lab] = (y[lab] > 0).astype(int)
        for name, Est in (("TSGS3VM", TSGS3VM), ("FRS3VM", FRS3VM)):
            for cs in ("C", "C*L/U"):
                params = dict(C=C, C_star=C if cs == "C" else None, sigma=GAMMA,
                              random_state=0)
                Est(**params).fit(X, y_semi)  # warm-up
                times = []
                for _ in range(3):
                    est = Est(**params)
                    t0 = time.perf_counter()
                    est.fit(X, y_semi)
                    times.append(time.perf_counter() - t0)
                pred = np.where(est.predict(X[unl]) == 1, 1, -1)
                rows.append((name, cs, k, float(np.mean(pred != y[unl])),
                             statistics.median(times)))
                print(*rows[-1], flush=True)
    for name in ("TSGS3VM", "FRS3VM"):
        for cs in ("C", "C*L/U"):
            r = [x for x in rows if x[0] == name and x[1] == cs]
            err = 100 * np.mean([x[3] for x in r])
            fit = statistics.median(x[4] for x in r)
            print(f"| {name} (defaults otherwise) | {cs} | {err:.2f} % | {fit:.2f} s |")
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["method", "c_star", "split", "error", "fit_s"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
