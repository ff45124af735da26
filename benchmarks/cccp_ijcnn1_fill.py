"""The ijcnn1 kernel cache of ``cccp_ijcnn1_scale.py`` alone: fill CPU and a hash.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_ijcnn1_fill.py [--n-unlabeled 20000] [--repeats 1]
        [--n-threads 1 2]

Builds the ``KernelProblem`` that ``CCCPTSVM`` builds for the same L = 1 000
labeled and U unlabeled rows (labeled first, the balancing example of Eq.
1.15 over the unlabeled ones, RBF with sigma = 1 / median squared distance,
cache as large as the full matrix) after one small warm-up build (numba
compilation), and prints the CPU seconds of each build and the SHA-256 of the
cache it leaves (every cached row, the balancing column and x_0's row,
``k0``, ``k00``, the slot owners). Two versions of the fill produce the same
cache bit for bit exactly when the hashes are equal. ``--n-threads``: the
fill on each of these thread counts (``KernelProblem(n_threads=...)``,
alternating within each repeat), with its wall seconds beside the CPU
seconds of all threads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np

from _cccp_common import median_sigma
from cccp_ijcnn1_scale import N_LABELED, load


def main():
    from weakkernels._smo import KernelProblem
    from weakkernels.kernels import KERNEL_CODES

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--n-threads", type=int, nargs="+", default=[1])
    args = ap.parse_args()
    Xp, yp = load("ijcnn1.trn.bz2")
    rng = np.random.default_rng(0)  # the draw of cccp_ijcnn1_scale.py
    perm = rng.permutation(yp.size)
    rows = perm[:N_LABELED + args.n_unlabeled]
    X = np.ascontiguousarray(Xp[rows])
    sigma = median_sigma(X)
    mean_idx = np.arange(N_LABELED, rows.size)
    m = rows.size + 1
    full_mb = m * m * 8 / 2**20
    rbf = KERNEL_CODES["rbf"]
    KernelProblem(X[:300], rbf, sigma, 3, 0.0, None, np.arange(200, 300))
    cpu = {t: [] for t in args.n_threads}
    wall = {t: [] for t in args.n_threads}
    hashes = set()
    for _ in range(args.repeats):
        for t in args.n_threads:
            t0, w0 = time.process_time(), time.perf_counter()
            kp = KernelProblem(X, rbf, sigma, 3, 0.0, full_mb, mean_idx,
                               n_threads=t)
            cpu[t].append(round(time.process_time() - t0, 2))
            wall[t].append(round(time.perf_counter() - w0, 2))
            h = hashlib.sha256()
            for part in (kp.data[: kp.counters[3]], kp.k0, np.float64(kp.k00),
                         kp.owner):
                h.update(np.ascontiguousarray(part))  # the buffer: no 3.5 GB copy
            hashes.add(h.hexdigest())
            del kp
    print(json.dumps({"n_unlabeled": args.n_unlabeled, "n_threads": args.n_threads,
                      "fill_cpu_s": cpu, "fill_wall_s": wall,
                      "cache_sha256": sorted(hashes)}))


if __name__ == "__main__":
    main()
