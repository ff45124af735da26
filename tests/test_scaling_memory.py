"""Out-of-core fit: TSGS3VM on a float32 memmap allocates far less than the data.

Guards against full-size temporaries sneaking into ``fit`` (input validation
included): a ``np.abs(X)`` in a magnitude check once made the 10M-row fit of
``benchmarks/scale_train.py`` allocate a second copy of X (BENCHMARKS.md,
"Scaling").  NumPy reports its allocations to ``tracemalloc``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from weakkernels import TSGS3VM
from weakkernels.pipeline.synthetic import (
    CHUNK_ROWS,
    SyntheticSpec,
    open_synthetic,
    write_synthetic,
)


def test_fit_on_memmap_allocates_much_less_than_x(tmp_path):
    spec = SyntheticSpec("t", 8 * CHUNK_ROWS, 28, seed=2)  # 524,288 x 28: 56 MiB
    write_synthetic(spec, tmp_path)
    X, y_true = open_synthetic(tmp_path)
    y = np.full(len(X), -1, dtype=np.int8)
    y[:500] = y_true[:500]
    # the SGD engine streams rows from the memmap: the one-pass path under test
    kw = dict(sigma=spec.teacher_sigma, C=10.0, max_iter=20, max_features=256,
              random_state=0, solver="sgd")
    TSGS3VM(**kw).fit(np.asarray(X[:5000]), y[:5000])  # compile outside the trace
    tracemalloc.start()
    try:
        est = TSGS3VM(**kw).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert est.n_iter_ == 20
    # index arrays (the unlabeled positions, int64) are O(n) by design: 8 B/row;
    # a copy of X (float32 or float64) would add >= 112 B/row
    assert peak < 24 * len(X), f"fit allocated {peak / 2**20:.0f} MiB"
