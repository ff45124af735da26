"""Kernel rows in BLAS blocks and the machine-sized kernel cache (weakkernels._smo).

Every block row is compared with an obviously-correct NumPy reference (one
pair at a time) and with the row-at-a-time numba kernel it replaces; the
model must not depend on the cache size, its dtype aside, nor on the thread
counts.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from weakkernels import CCCPTSVM, RampSVM, _smo
from weakkernels._smo import (
    BLOCK_MIN_FEATURES,
    CACHE_MEMORY_FRACTION,
    ROW_BLOCK,
    KernelProblem,
    _kernel_row,
    cache_rows,
    default_cache_mb,
)
from weakkernels.kernels import KERNEL_CODES

D_BLOCK = BLOCK_MIN_FEATURES + 6  # wide enough for the dgemm block path


def _naive_kernel(x, z, kernel, sigma, degree, coef0):
    if kernel == "rbf":
        return np.exp(-sigma * np.sum((x - z) ** 2))
    if kernel == "laplacian":
        return np.exp(-sigma * np.sum(np.abs(x - z)))
    if kernel == "poly":
        return (sigma * np.dot(x, z) + coef0) ** degree
    return np.dot(x, z)


def _naive_rows(X, P, kernel, sigma=0.01, degree=3, coef0=0.5):
    return np.array([[_naive_kernel(X[p], z, kernel, sigma, degree, coef0)
                      for z in X] for p in P])


def _wide(n=3 * ROW_BLOCK + 5, d=D_BLOCK, seed=0):
    return np.random.default_rng(seed).random((n, d))


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear", "laplacian"])
def test_block_rows_match_naive_and_row_at_a_time(kernel):
    X = _wide()
    n = X.shape[0]
    # cache of 7 rows: the block path serves the misses, not only the fill
    for cache in (None, 7 * 8 * n / 2**20):
        kp = KernelProblem(X, KERNEL_CODES[kernel], 0.01, 3, 0.5, cache)
        assert kp.block == (1 if kernel == "laplacian" else ROW_BLOCK)
        P = [0, 1, ROW_BLOCK - 1, ROW_BLOCK, n - 1, 5, 2 * ROW_BLOCK + 3]
        rows = np.array([kp.row(p) for p in P])
        ref = _naive_rows(X, P, kernel)
        np.testing.assert_allclose(rows, ref, rtol=1e-12, atol=1e-300)
        sq = np.einsum("ij,ij->i", X, X)
        old = np.empty(n)
        for r, p in enumerate(P):
            _kernel_row(X[p], sq[p], X, sq, KERNEL_CODES[kernel], 0.01, 3, 0.5, old)
            np.testing.assert_allclose(rows[r], old, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian"])
def test_sparse_block_rows_match_naive(kernel):
    rng = np.random.default_rng(1)
    X = rng.random((70, 90)) * (rng.random((70, 90)) < 0.1)
    kp = KernelProblem(sp.csr_matrix(X), KERNEL_CODES[kernel], 0.01, 3, 0.5, None,
                       np.arange(20, 70))
    P = [0, 19, 20, 69]
    rows = np.array([kp.row(p)[:70] for p in P])
    np.testing.assert_allclose(rows, _naive_rows(X, P, kernel), rtol=1e-12,
                               atol=1e-300)
    k0 = _naive_rows(X, range(20, 70), kernel).mean(axis=0)
    np.testing.assert_allclose(kp.k0, k0, rtol=1e-12)


def test_balancing_column_from_blocks_matches_naive():
    X = _wide()
    idx = np.arange(10, X.shape[0])
    for cache in (None, 0.01):  # fill everything, or mostly only the column
        kp = KernelProblem(X, KERNEL_CODES["rbf"], 0.01, 3, 0.5, cache, idx)
        ref = _naive_rows(X, idx, "rbf").mean(axis=0)
        np.testing.assert_allclose(kp.k0, ref, rtol=1e-12)
        np.testing.assert_allclose(kp.k00, ref[idx].mean(), rtol=1e-12)
        np.testing.assert_allclose(kp.row(kp.x0_index)[:-1], ref, rtol=1e-12)
        np.testing.assert_allclose(kp.row(3)[-1], ref[3], rtol=1e-12)


def test_default_cache_is_a_fraction_of_memory_capped_at_the_matrix(monkeypatch):
    assert _smo.available_memory() > 0
    monkeypatch.setattr(_smo, "available_memory", lambda: 4 * 2**30)
    # a 10 000-point problem needs 763 MB: it fits in a quarter of 4 GB
    assert default_cache_mb(10_000) == 10_000**2 * 8 / 2**20
    # 60 000 points (27 GB) do not: the cap is the fraction
    assert default_cache_mb(60_000) == CACHE_MEMORY_FRACTION * 4 * 1024
    assert default_cache_mb(60_000, 4) == CACHE_MEMORY_FRACTION * 4 * 1024
    kp = KernelProblem(_wide(n=50), KERNEL_CODES["rbf"], 0.01, 3, 0.5)
    assert kp.capacity == kp.m == 50 and kp.rows_computed == 50
    assert cache_rows(1.0, 2**10, 4) == 2 * cache_rows(1.0, 2**10, 8)


def _tsvm_data(d, n=160, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    ys = np.full(n, -1)
    ys[:16] = y[:16]
    return X, y, ys


@pytest.mark.parametrize("d", [5, D_BLOCK])
def test_model_does_not_depend_on_the_cache_size(d):
    X, _, ys = _tsvm_data(d)
    params = dict(C=10.0, sigma=0.5 / d, s=-0.3)
    big = CCCPTSVM(**params).fit(X, ys)
    tiny = CCCPTSVM(**params, cache_size=0.02).fit(X, ys)
    assert tiny.cache_rows_ < X.shape[0] < big.cache_rows_
    np.testing.assert_array_equal(tiny.dual_coef_, big.dual_coef_)
    np.testing.assert_array_equal(tiny.intercept_, big.intercept_)
    assert big.cache_hit_rate_ == 1.0 and tiny.cache_hit_rate_ < 1.0
    assert big.kernel_rows_computed_ == X.shape[0] + 1  # + x_0's row
    assert tiny.kernel_rows_computed_ > big.kernel_rows_computed_


def test_float32_cache_is_close_to_float64():
    X, y, ys = _tsvm_data(D_BLOCK)
    params = dict(C=10.0, sigma=0.5 / D_BLOCK, s=-0.3)
    f64 = CCCPTSVM(**params).fit(X, ys)
    f32 = CCCPTSVM(**params, cache_dtype="float32").fit(X, ys)
    F64, F32 = f64.decision_function(X), f32.decision_function(X)
    # float32 rows move the solution within the SMO tolerance (tol = 1e-3),
    # not beyond it: the KKT conditions are only met to tol in either case
    assert np.max(np.abs(F32 - F64)) < 2 * f64.tol
    np.testing.assert_array_equal(f32.transduction_, f64.transduction_)


_THREADS_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from weakkernels import CCCPTSVM
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, {d}))
    ys = np.full(300, -1)
    ys[:30] = np.arange(30) % 3
    est = CCCPTSVM(C=10.0, sigma=0.01, cache_size={cache}).fit(X, ys)
    print(json.dumps([est.dual_coef_.tobytes().hex(),
                      est.intercept_.tobytes().hex()]))
""")


def test_same_model_for_one_and_two_threads():
    out = set()
    # one thread with the whole matrix cached, two with a cache of 40 rows
    for threads, cache in (("1", "None"), ("2", "0.1")):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads,
                   OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        script = _THREADS_SCRIPT.format(d=D_BLOCK, cache=cache)
        res = subprocess.run([sys.executable, "-c", script], env=env,
                             capture_output=True, text=True, check=True)
        out.add(tuple(json.loads(res.stdout.strip().splitlines()[-1])))
    assert len(out) == 1


def _multiclass(sparse, n=240, d=D_BLOCK, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.argmax(X[:, :4] @ rng.standard_normal((4, 4)), axis=1)
    if sparse:
        X[rng.random(X.shape) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    return X, y


def _fitted_state(est):
    state = [est.dual_coef_, est.intercept_, est.support_, est.n_iter_,
             *est.objective_curve_, est.probA_, est.probB_,
             est.cache_rows_, est.cache_hit_rate_, est.kernel_rows_computed_]
    if hasattr(est, "transduction_"):
        state.append(est.transduction_)
    return [np.asarray(a).tobytes() for a in state]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("make", ["tsvm", "ramp"])
def test_one_vs_rest_in_threads_is_the_serial_model(make, sparse, monkeypatch):
    X, y = _multiclass(sparse)
    if make == "tsvm":
        ys = np.full(y.size, -1)
        ys[:40] = y[:40]
        params = dict(C=10.0, sigma=0.5 / D_BLOCK, s=-0.3, C_star=0.5)
        est_cls = CCCPTSVM
    else:
        ys = y
        params = dict(C=10.0, sigma=0.5 / D_BLOCK, s=-0.3, init_fraction=0.5,
                      random_state=0)
        est_cls = RampSVM
    views = []
    real_view = KernelProblem.solver_view

    def counting_view(self):
        views.append(1)
        return real_view(self)

    monkeypatch.setattr(KernelProblem, "solver_view", counting_view)
    serial = est_cls(**params).fit(X, ys)
    assert not views
    for n_jobs in (2, -1):
        threaded = est_cls(**params, n_jobs=n_jobs).fit(X, ys)
        assert _fitted_state(threaded) == _fitted_state(serial)
    assert len(views) == 2 * 4  # one view per class problem and fit: threads ran
    assert serial.cache_hit_rate_ == 1.0
    # a partial cache: the problems run one after another, the same model
    views.clear()
    rows = X.shape[0] - 40  # every class problem misses rows
    tiny = est_cls(**params, n_jobs=2, cache_size=rows * 8 * (X.shape[0] + 1)
                   / 2**20).fit(X, ys)
    assert not views and tiny.cache_rows_ < X.shape[0]
    np.testing.assert_array_equal(tiny.dual_coef_, serial.dual_coef_)
    np.testing.assert_array_equal(tiny.intercept_, serial.intercept_)


def test_solver_view_shares_rows_and_counts_its_own_requests():
    X = _wide(n=60)
    kp = KernelProblem(X, KERNEL_CODES["rbf"], 0.01, 3, 0.5)
    before = kp.counters.copy()
    view = kp.solver_view()
    assert view.data is kp.data and view.stamp is not kp.stamp
    row = view.row(7)
    np.testing.assert_array_equal(row, kp.data[kp.slot_of[7]])
    assert view.counters[1] == 1 and np.array_equal(kp.counters, before)
    kp.absorb_counters([view])
    assert kp.counters[1] == before[1] + 1 and kp.counters[2] == before[2]
    partial = KernelProblem(X, KERNEL_CODES["rbf"], 0.01, 3, 0.5,
                            cache_size=10 * 8 * 60 / 2**20)
    assert not partial.fully_cached
    with pytest.raises(ValueError, match="fully cached"):
        partial.solver_view()


def test_n_jobs_zero_is_refused():
    X, y = _multiclass(False, n=40)
    with pytest.raises(ValueError, match="n_jobs"):
        RampSVM(n_jobs=0).fit(X, y)


# The RBF row loop as it was in one pass (distance and exp per entry), same
# source and flags: the two-pass kernel row must give these bits exactly.
@njit(fastmath=_smo.FASTMATH)
def _one_pass_rbf_row(xi, xi_sq, X, sqnorm, sigma, out):
    n, d = X.shape
    for q in range(n):
        dot = 0.0
        for t in range(d):
            dot += xi[t] * X[q, t]
        d2 = xi_sq + sqnorm[q] - 2.0 * dot
        if d2 < 0.0:
            d2 = 0.0
        out[q] = math.exp(-sigma * d2)


def _spread(n, d, seed):
    # mixed scales and exact zeros (sparse-like rows, distances near 0)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 30.0], size=(n, 1))
    X[rng.random(X.shape) < 0.3] = 0.0
    X[1] = X[0]
    return X


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("d", [1, 3, 4, 5, 15, 16, 17, 22, 33, D_BLOCK])
def test_two_pass_rbf_row_has_the_one_pass_bits(d):
    X = _spread(41, d, seed=d)
    sq = np.einsum("ij,ij->i", X, X)
    new = np.empty(41)
    old = np.empty(41)
    for p in (0, 7):
        for sigma in (0.05, 3.0):
            _kernel_row(X[p], sq[p], X, sq, KERNEL_CODES["rbf"], sigma, 3, 0.5, new)
            _one_pass_rbf_row(X[p], sq[p], X, sq, sigma, old)
            np.testing.assert_array_equal(_bits(new), _bits(old))


def _filled_reference(rows, mean_idx):
    """The cache the fill must produce from full rows: row p in slot p, the
    balancing column and x_0's row summed in ascending p."""
    n = rows.shape[0]
    k0 = np.zeros(n)
    for p in mean_idx:
        k0 += 1.0 * rows[p]
    k0 *= 1.0 / len(mean_idx)
    k00 = 0.0
    for v in k0[mean_idx]:
        k00 += v
    k00 *= 1.0 / len(mean_idx)
    full = np.empty((n + 1, n + 1))
    full[:n, :n] = rows
    full[:n, n] = k0
    full[n, :n] = k0
    full[n, n] = k00
    return full


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_fill_has_the_bits_of_the_row_at_a_time_rows(layout, n_threads):
    # 600 base points: the fill's chunks of 256 rows go straight into their
    # slots (float64 cache) or through the buffer (float32; a partial cache's
    # last chunk), and rows past the cache only feed the balancing column;
    # with two threads the chunks are computed two at a time
    n, d = 600, 22
    X = _spread(n, d, seed=5)
    mean_idx = np.arange(100, n)
    sq = np.einsum("ij,ij->i", X, X)
    rows = np.empty((n, n))
    if layout == "dense":
        for p in range(n):
            _one_pass_rbf_row(X[p], sq[p], X, sq, 0.05, rows[p])
        Xin = X
    else:
        Xin = sp.csr_matrix(X)
        points, sqn = _smo.csr_points(Xin)
        _smo._rows_block(points, 0, n, sqn, KERNEL_CODES["rbf"], 0.05, 3, 0.5, 1,
                         rows)
    ref = _filled_reference(rows, mean_idx)
    full = KernelProblem(Xin, KERNEL_CODES["rbf"], 0.05, 3, 0.5, None, mean_idx,
                         n_threads=n_threads)
    assert full.fully_cached and full.block == 1
    np.testing.assert_array_equal(full.owner, np.arange(n + 1))
    np.testing.assert_array_equal(_bits(full.data), _bits(ref))
    assert full.k00 == ref[n, n]
    # 300 slots: chunk 0..255 direct, 256..511 through the buffer (its first
    # 44 rows cached), 512..599 for the column only
    part = KernelProblem(Xin, KERNEL_CODES["rbf"], 0.05, 3, 0.5,
                         300 * 8 * (n + 1) / 2**20, mean_idx, n_threads=n_threads)
    assert part.capacity == 300
    np.testing.assert_array_equal(part.owner, np.arange(300))
    np.testing.assert_array_equal(_bits(part.data), _bits(ref[:300]))
    np.testing.assert_array_equal(_bits(part.k0), _bits(ref[n, :n]))
    f32 = KernelProblem(Xin, KERNEL_CODES["rbf"], 0.05, 3, 0.5, None, mean_idx,
                        cache_dtype=np.float32, n_threads=n_threads)
    np.testing.assert_array_equal(f32.data[:n, :n], rows.astype(np.float32))
    np.testing.assert_array_equal(_bits(f32.k0), _bits(ref[n, :n]))
    assert part.rows_computed == n and full.rows_computed == n + 1  # + x_0's row


@pytest.mark.parametrize("cache_dtype", [np.float64, np.float32])
def test_block_fill_on_threads_has_the_serial_bits(cache_dtype):
    # dgemm blocks (d >= BLOCK_MIN_FEATURES), 700 points: spans of 256 rows,
    # computed 1, 2 or 3 at a time; a full cache, and one of 300 rows whose
    # last spans only feed the balancing column
    X = _wide(n=700, seed=3)
    mean_idx = np.arange(50, 700)
    for cache in (None, 300 * np.dtype(cache_dtype).itemsize * 701 / 2**20):
        kps = [KernelProblem(X, KERNEL_CODES["rbf"], 0.01, 3, 0.5, cache, mean_idx,
                             cache_dtype=cache_dtype, n_threads=t) for t in (1, 2, 3)]
        assert kps[0].block == ROW_BLOCK
        filled = int(kps[0].counters[3])
        for kp in kps[1:]:
            assert kp.counters[3] == filled
            np.testing.assert_array_equal(kp.owner, kps[0].owner)
            np.testing.assert_array_equal(_bits(kp.data[:filled]),
                                          _bits(kps[0].data[:filled]))
            np.testing.assert_array_equal(_bits(kp.k0), _bits(kps[0].k0))
            assert kp.k00 == kps[0].k00
            assert kp.rows_computed == kps[0].rows_computed
        ref = _naive_rows(X, mean_idx, "rbf").mean(axis=0)
        np.testing.assert_allclose(kps[1].k0, ref, rtol=1e-12)
        if cache is None:
            rtol = 1e-12 if cache_dtype == np.float64 else 1e-6
            np.testing.assert_allclose(kps[1].data[:700, :700],
                                       _naive_rows(X, range(700), "rbf"), rtol=rtol)


def test_cache_array_is_writable_uninitialised_storage():
    big = _smo.cache_array((300, 301), np.float64)
    assert big.shape == (300, 301) and big.dtype == np.float64
    assert big.flags.c_contiguous and big.flags.writeable
    big[:] = 2.5
    row = big[299]
    del big
    assert row.sum() == 2.5 * 301  # the view keeps the mapping alive
    assert _smo.cache_array((1, 3), np.float32).shape == (1, 3)
