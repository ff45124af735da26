"""Share of a default TSGS3VM fit and predict spent in the input and model
checks (the reliability guards of ``weakkernels._validation``), by cProfile.

Dense 20 000 x 22 float32 and CSR 20 000 x 300 (4 % dense) rows, 1 000
labels, the estimator's defaults; one thread. Prints the total profiled time
and the cumulative time of each check (nested calls included).

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/check_overhead.py
"""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import scipy.sparse as sp

from weakkernels import TSGS3VM

CHECKS = ("check_sparse_structure", "_precheck_sparse", "_canonical_csr",
          "check_magnitude", "check_divergence", "check_fitted_model",
          "check_unlabeled_predictions", "check_feature_memory",
          "available_memory", "_check_index_range", "validate_predict",
          "validate_semi_supervised")


def _profile(fn):
    pr = cProfile.Profile()
    pr.enable()
    out = fn()
    pr.disable()
    st = pstats.Stats(pr)
    cum = {f[2]: v[3] for f, v in st.stats.items() if f[2] in CHECKS}
    return out, st.total_tt, cum


def main() -> int:
    rng = np.random.default_rng(0)
    n = 20000
    X = rng.random((n, 22)).astype(np.float32)
    y = np.full(n, -1)
    y[:1000] = (X[:1000, 0] + X[:1000, 1] > 1).astype(int)
    Xs = sp.random(n, 300, density=0.04, random_state=0, format="csr")
    s = np.asarray(Xs[:1000].sum(axis=1)).ravel()
    ys = y.copy()
    ys[:1000] = (s > np.median(s)).astype(int)
    for name, A, b in (("dense 20000x22", X, y), ("CSR 20000x300 4%", Xs, ys)):
        TSGS3VM(random_state=0, max_iter=5).fit(A[:3000], b[:3000])  # compile
        est, total, cum = _profile(lambda A=A, b=b: TSGS3VM(random_state=0).fit(A, b))
        print(f"{name} fit: {total:.2f} s, checks {sum(cum.values()):.3f} s", cum)
        _, total, cum = _profile(lambda A=A, est=est: est.decision_function(A))
        print(f"{name} predict: {total:.2f} s, checks {sum(cum.values()):.3f} s", cum)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
