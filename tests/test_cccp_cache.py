"""Kernel rows in BLAS blocks and the machine-sized kernel cache (weakkernels._smo).

Every block row is compared with an obviously-correct NumPy reference (one
pair at a time) and with the row-at-a-time numba kernel it replaces; the
model must not depend on the cache size, its dtype aside, nor on the thread
counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

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
