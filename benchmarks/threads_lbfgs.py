"""One TSGS3VM L-BFGS fit over every row, for timing 1 vs 2 threads.

The chunked objective spreads its row chunks over ``NUMBA_NUM_THREADS``
threads (numpy's GEMM and the nogil numba kernels), bit-identical for any
count; this script fits one model and prints a hash of its coefficients so
the paired runs can be checked to be the same model.

Usage (paired, the ratio per pair)::

    farm-bench -n 5 --timeout 1800 \\
      --vs "env NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/threads_lbfgs.py" \\
      -- env NUMBA_NUM_THREADS=2 .venv/bin/python benchmarks/threads_lbfgs.py

Data: the first ``--rows`` rows of the **synthetic** HEPMASS-shaped set
(d = 28, :mod:`weakkernels.pipeline.synthetic`), 2 000 labeled, the rest
unlabeled; Fourier features (1 024, held in memory).
"""

from __future__ import annotations

import argparse
import hashlib
import os

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv=None) -> int:
    from weakkernels import TSGS3VM
    from weakkernels.pipeline.synthetic import SYNTHETIC, synthetic_rows

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    a = ap.parse_args(argv)
    spec = SYNTHETIC["synthetic_hepmass"]
    X, y = synthetic_rows(spec, 0, a.rows)
    y = y.astype(np.int64)
    y[2000:] = -1
    est = TSGS3VM(C=10, sigma=spec.teacher_sigma, features="fourier",
                  max_features=1024, random_state=0).fit(X, y)
    digest = hashlib.sha256(est.coef_.tobytes() + est.intercept_.tobytes())
    print(digest.hexdigest()[:16], est.n_iter_)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
