"""Out-of-core fit: TSGS3VM on a float32 memmap allocates far less than the data,
and does not keep the mapped input resident.

Guards against full-size temporaries sneaking into ``fit`` (input validation
included): a ``np.abs(X)`` in a magnitude check once made the 10M-row fit of
``benchmarks/scale_train.py`` allocate a second copy of X (BENCHMARKS.md,
"Scaling").  NumPy reports its allocations to ``tracemalloc``.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from weakkernels import TSGS3VM
from weakkernels._dsg import Problem, release_mapped_rows
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


def _rss_file_mib() -> float:
    """This process's resident pages of mapped files (``RssFile``), MiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssFile line")


linux_only = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                reason="reads RssFile of /proc/self/status")


@linux_only
def test_release_mapped_rows_drops_only_those_rows_pages(tmp_path):
    path = tmp_path / "X.npy"
    data = np.arange(1 << 23, dtype=np.float32).reshape(-1, 32)  # 32 MiB
    np.save(path, data)
    X = np.load(path, mmap_mode="r")
    before = _rss_file_mib()
    assert float(X.sum(dtype=np.float64)) == float(data.sum(dtype=np.float64))
    touched = _rss_file_mib() - before
    assert touched > 28  # the whole file is resident after a full read
    half = X.shape[0] // 2
    release_mapped_rows(np.asarray(X[half:]))  # a plain view of the mapping
    dropped = before + touched - _rss_file_mib()
    assert 14 < dropped < 18, dropped  # the second half's pages, not more
    np.testing.assert_array_equal(X, data)  # faulted back in, same bytes
    # a copy-on-write mapping's pages are never dropped (writes would go)
    Xc = np.load(path, mmap_mode="c")
    Xc[0, 0] = -1.0
    release_mapped_rows(Xc)
    assert Xc[0, 0] == -1.0
    release_mapped_rows(data)  # not mapped: a no-op


@linux_only
def test_lbfgs_fit_on_memmap_leaves_no_input_pages_resident(tmp_path):
    spec = SyntheticSpec("t", 8 * CHUNK_ROWS, 28, seed=2)  # 56 MiB of float32
    write_synthetic(spec, tmp_path)
    X, y_true = open_synthetic(tmp_path)
    y = np.full(len(X), -1, dtype=np.int8)
    y[:500] = y_true[:500]
    kw = dict(sigma=spec.teacher_sigma, C=10.0, max_iter=5, max_features=256,
              random_state=0)
    TSGS3VM(**kw).fit(np.asarray(X[:5000]), y[:5000])  # compile first
    before = _rss_file_mib()
    est = TSGS3VM(**kw).fit(X, y)
    # validation and every pass of the solver read the whole file; its pages
    # leave the resident set chunk by chunk and at the end of the solve
    assert _rss_file_mib() - before < 5
    ref = TSGS3VM(**kw).fit(np.array(X), y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)


def test_problem_rows_copied_from_a_mapping_for_any_selection(tmp_path):
    # a float64 file read in float32: every selection is a copy, and its pages
    # are released whatever form the selection takes
    path = tmp_path / "X.npy"
    data = np.random.default_rng(0).random((3000, 5))
    np.save(path, data)
    X = np.load(path, mmap_mode="r")
    index = np.arange(1000, 3000)
    problem = Problem([(X, None), (X, index)], 1, loss=None)
    for s, rows_of in ((0, np.arange(3000)), (1, index)):
        for idx in (None, slice(10, 700), np.array([0, 5, 999]),
                    np.array([], dtype=np.intp)):
            sel = rows_of if idx is None else rows_of[idx]
            got = problem.rows(s, idx, np.float32)
            np.testing.assert_array_equal(got, data[sel].astype(np.float32))


def test_release_mapped_rows_ignores_objects_that_are_their_own_base():
    # a Dask point set's ``.base`` is itself: following it never ended
    class SelfBased:
        shape = (10, 2)

        def __init__(self):
            self.base = self

    release_mapped_rows(SelfBased())
