"""Kernel rows one at a time (numba loop) vs aligned BLAS blocks (dgemm + norms).

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_row_blocks.py [--repeats 5]

Random dense data in [0, 1] of two shapes: ijcnn1 at U = 20 000
(21 000 x 22) and MNIST at U = 10 000 (11 000 x 784); RBF rows. Prints CPU
milliseconds per row (median of ``--repeats`` runs of 256 rows, measured in
the same process) for the row-at-a-time kernel (``block = 1``, the cache's
path below ``BLOCK_MIN_FEATURES`` features) and for blocks of 8 ... 256 rows
through :func:`weakkernels._smo._rows_block`, and the largest relative
difference between the two.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from weakkernels._smo import ROW_BLOCK, _rows_block


def per_row_ms(X, sq, block, n_rows=256):
    out = np.empty((n_rows, X.shape[0]))
    t0 = time.process_time()
    _rows_block(X, 0, n_rows, sq, 0, 0.0128, 2, 1.0, block, out)
    return (time.process_time() - t0) / n_rows * 1e3, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| n x d | rows per block | CPU ms per row | max rel diff vs row-at-a-time |")
    print("|---|---|---|---|")
    for n, d in ((21000, 22), (11000, 784)):
        X = rng.random((n, d))
        sq = np.einsum("ij,ij->i", X, X)
        per_row_ms(X[:300], sq[:300], 1, 8)  # compile both paths
        per_row_ms(X[:300], sq[:300], ROW_BLOCK, 64)
        ref = None
        for block in (1, 8, ROW_BLOCK, 64, 256):
            runs = [per_row_ms(X, sq, block) for _ in range(args.repeats)]
            ms = float(np.median([r[0] for r in runs]))
            rows = runs[0][1]
            if ref is None:
                ref = rows
            diff = float(np.max(np.abs(rows - ref) / np.abs(ref)))
            print(f"| {n} x {d} | {block} | {ms:.3f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
