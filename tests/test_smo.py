"""Tests of the numba SMO solver (weakkernels._smo) against naive references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.svm import SVC

from weakkernels import _smo
from weakkernels._smo import (
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    KernelProblem,
    bounds_from_margins,
    cache_rows,
    decision_values,
)
from weakkernels.kernels import KERNEL_CODES, kernel_matrix

KERNELS = ["rbf", "laplacian", "poly", "linear"]


def _data(n=120, d=5, seed=0, flip=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 > 0, 1.0, -1.0)
    flip_idx = rng.random(n) < flip
    y[flip_idx] *= -1
    return X, y


def _problem(X, kernel, sigma=0.3, degree=2, coef0=1.0, cache_size=50.0, **kw):
    return KernelProblem(X, KERNEL_CODES[kernel], sigma, degree, coef0, cache_size,
                         **kw)


def _naive_row(x, X, kernel, sigma, degree, coef0):
    """Obviously-correct kernel row, one pair at a time."""
    out = np.empty(X.shape[0])
    for q, z in enumerate(X):
        if kernel == "rbf":
            out[q] = np.exp(-sigma * np.sum((x - z) ** 2))
        elif kernel == "laplacian":
            out[q] = np.exp(-sigma * np.sum(np.abs(x - z)))
        elif kernel == "poly":
            out[q] = (sigma * np.dot(x, z) + coef0) ** degree
        else:
            out[q] = np.dot(x, z)
    return out


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_rows_match_naive_reference(kernel):
    X, _ = _data(40, 6, seed=1)
    kp = _problem(X, kernel, sigma=0.2, degree=3, coef0=0.5)
    K_ref = kernel_matrix(X, X, kernel, sigma=0.2, degree=3, coef0=0.5)
    for p in (0, 7, 39):
        naive = _naive_row(X[p], X, kernel, 0.2, 3, 0.5)
        np.testing.assert_allclose(kp.row(p), naive, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(kp.row(p), K_ref[p], rtol=1e-10, atol=1e-12)


def test_balancing_example_row_is_mean_of_unlabeled_rows():
    # Eq. 1.15: K_{i0} = mean_{j unlabeled} k(x_j, x_i), and K_00 its mean.
    X, _ = _data(30, 4, seed=2)
    unl = np.arange(10, 30)
    kp = _problem(X, "rbf", extra_mean_idx=unl)
    K = kernel_matrix(X, X, "rbf", sigma=0.3)
    k0 = K[unl].mean(axis=0)
    row0 = kp.row(kp.x0_index)
    np.testing.assert_allclose(row0[:30], k0, rtol=1e-12)
    np.testing.assert_allclose(row0[30], k0[unl].mean(), rtol=1e-12)
    np.testing.assert_allclose(kp.row(3)[30], k0[3], rtol=1e-12)


@pytest.mark.parametrize(
    "kernel, sigma, C",
    [("rbf", 0.3, 1.0), ("rbf", 0.1, 10.0), ("poly", 0.2, 1.0), ("linear", 1.0, 0.5)],
)
def test_smo_matches_sklearn_svc(kernel, sigma, C):
    X, y = _data(150, 5, seed=3, flip=0.05)
    n = y.size
    kp = _problem(X, kernel, sigma=sigma, degree=2, coef0=1.0)
    A, B = bounds_from_margins(y, np.zeros(n), np.full(n, C))
    alpha, g, b, _, status = kp.solve(np.arange(n), y, A, B, tol=1e-6)
    assert status == STATUS_CONVERGED
    svc = SVC(C=C, kernel=kernel, gamma=sigma, degree=2, coef0=1.0, tol=1e-6)
    svc.fit(X, y)
    f = y - g + b
    ref = svc.decision_function(X)
    assert np.max(np.abs(f - ref)) < 1e-4
    # Same support set, and the same signed coefficients (y_i alpha_i >= 0).
    support = np.flatnonzero(alpha != 0.0)
    np.testing.assert_array_equal(support, np.sort(svc.support_))
    np.testing.assert_allclose(alpha[svc.support_], svc.dual_coef_[0], atol=1e-4)
    assert np.all(y * alpha >= 0.0)
    assert abs(alpha.sum()) < 1e-10
    # f via the stand-alone prediction kernel agrees with the training values.
    f_pred = decision_values(X, X[support], alpha[support], b,
                             KERNEL_CODES[kernel], sigma, 2, 1.0)[:, 0]
    np.testing.assert_allclose(f_pred, f, atol=1e-8)


def test_small_cache_gives_identical_solution():
    X, y = _data(200, 5, seed=4, flip=0.1)
    n = y.size
    A, B = bounds_from_margins(y, np.zeros(n), np.full(n, 2.0))
    big = _problem(X, "rbf", cache_size=100.0)
    # 0.01 MB holds 6 rows of 200 doubles: far fewer than n.
    small = _problem(X, "rbf", cache_size=0.01)
    assert big.capacity == n
    assert small.capacity == cache_rows(0.01, n) < n
    assert small.data.nbytes <= 0.01 * 2**20
    out_big = big.solve(np.arange(n), y, A, B, tol=1e-5)
    out_small = small.solve(np.arange(n), y, A, B, tol=1e-5)
    np.testing.assert_array_equal(out_big[0], out_small[0])
    np.testing.assert_array_equal(out_big[1], out_small[1])
    assert out_big[2] == out_small[2]
    # The small cache really evicted: more misses than distinct rows.
    assert small.counters[2] > n
    assert big.counters[2] <= n


def test_shrinking_does_not_change_the_optimum():
    X, y = _data(300, 5, seed=5, flip=0.15)
    n = y.size
    A, B = bounds_from_margins(y, np.zeros(n), np.full(n, 20.0))
    res = {}
    for shrinking in (True, False):
        kp = _problem(X, "rbf", sigma=0.5)
        alpha, g, b, n_iter, status = kp.solve(np.arange(n), y, A, B, tol=1e-6,
                                               shrinking=shrinking)
        assert status == STATUS_CONVERGED
        res[shrinking] = (alpha, y - g + b, n_iter)
    # enough iterations for the shrinking heuristic (every min(n, 1000)) to run
    assert res[True][2] > n
    np.testing.assert_allclose(res[True][1], res[False][1], atol=1e-4)
    np.testing.assert_allclose(res[True][0], res[False][0], atol=1e-3)


def _dual_objective(alpha, K, zeta):
    return float(zeta @ alpha - 0.5 * alpha @ K @ alpha)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_general_box_matches_scipy_qp(seed):
    # Per-example bounds and a shifted linear term, as in the CCCP
    # sub-problems, checked against a generic QP solver.
    rng = np.random.default_rng(seed)
    n = 14
    X = rng.standard_normal((n, 3))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    beta = np.where(rng.random(n) < 0.4, 1.5, 0.0)
    A, B = bounds_from_margins(y, -beta, 1.5 - beta)
    zeta = y * (1.0 + 0.3 * rng.random(n))
    K = kernel_matrix(X, X, "rbf", sigma=0.5)
    kp = _problem(X, "rbf", sigma=0.5)
    alpha, g, b, _, status = kp.solve(np.arange(n), zeta, A, B, tol=1e-8)
    assert status == STATUS_CONVERGED
    np.testing.assert_allclose(g, zeta - K @ alpha, atol=1e-10)
    assert np.all(alpha >= A) and np.all(alpha <= B)
    ref = minimize(
        lambda a: -_dual_objective(a, K, zeta),
        np.zeros(n),
        jac=lambda a: -(zeta - K @ a),
        bounds=list(zip(A, B, strict=True)),
        constraints=[{"type": "eq", "fun": np.sum, "jac": lambda a: np.ones(n)}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    assert ref.success
    assert _dual_objective(alpha, K, zeta) >= -ref.fun - 1e-7
    assert abs(_dual_objective(alpha, K, zeta) + ref.fun) < 1e-5


def test_free_balancing_variable_enforces_its_equation():
    # The free alpha_0 (Eq. 1.15) is a Lagrange multiplier: at the optimum
    # f(x_0) = mean_{unlabeled} f = zeta_0 (Eq. 1.13).
    X, y = _data(60, 4, seed=6)
    L, U = 20, 40
    kp = _problem(X, "rbf", extra_mean_idx=np.arange(L, L + U))
    pov = np.concatenate([np.arange(L), np.arange(L, L + U), np.arange(L, L + U),
                          [kp.x0_index]])
    yv = np.concatenate([y[:L], np.ones(U), -np.ones(U), [1.0]])
    cap = np.concatenate([np.full(L, 1.0), np.full(2 * U, 0.5), [0.0]])
    A, B = bounds_from_margins(yv, np.zeros(yv.size), cap)
    A[-1], B[-1] = -np.inf, np.inf
    zeta = yv.copy()
    zeta[-1] = 0.4
    alpha, g, b, _, status = kp.solve(pov, zeta, A, B, tol=1e-7)
    assert status == STATUS_CONVERGED
    assert alpha[-1] != 0.0
    f_x0 = zeta[-1] - g[-1] + b
    assert abs(f_x0 - 0.4) < 1e-6
    K = kernel_matrix(X, X, "rbf", sigma=0.3)
    w = np.bincount(pov[:-1], weights=alpha[:-1], minlength=L + U)
    w[L:] += alpha[-1] / U
    f_unl = K[L:] @ w + b
    assert abs(f_unl.mean() - 0.4) < 1e-6


def test_max_iter_stops_the_solver():
    X, y = _data(100, 5, seed=7, flip=0.2)
    n = y.size
    A, B = bounds_from_margins(y, np.zeros(n), np.full(n, 10.0))
    kp = _problem(X, "rbf")
    alpha, _, _, n_iter, status = kp.solve(np.arange(n), y, A, B, max_iter=5)
    assert (n_iter, status) == (5, STATUS_MAX_ITER)
    assert abs(alpha.sum()) < 1e-12


def test_infeasible_start_is_rejected():
    X, y = _data(10, 2)
    kp = _problem(X, "rbf")
    A, B = bounds_from_margins(y, np.zeros(10), np.ones(10))
    with pytest.raises(ValueError, match="box"):
        kp.solve(np.arange(10), y, A, B, alpha=np.full(10, 2.0))


def _scalar_passes(g, alpha, A, B, pov, diag_all, ri, rj, kii, gmax, lam):
    """The active-set loops of ``_smo_solve`` over every variable, in Python:
    WSS2 ``(j, gmin)``, then the gradient update and the next ``(i, gmax)``."""
    gmin, best, j = np.inf, -np.inf, -1
    for k in range(g.size):
        if alpha[k] > A[k]:
            gk = g[k]
            if gk < gmin:
                gmin = gk
            diff = gmax - gk
            if diff > 0.0:
                pk = pov[k]
                eta = kii + diag_all[pk] - 2.0 * ri[pk]
                if eta <= 0.0:
                    eta = _smo.TAU
                val = diff * diff / eta
                if val > best:
                    best, j = val, k
    g = g.copy()
    ngmax, ni = -np.inf, -1
    for k in range(g.size):
        pk = pov[k]
        g[k] -= lam * (ri[pk] - rj[pk])
        if alpha[k] < B[k] and g[k] > ngmax:
            ngmax, ni = g[k], k
    return j, gmin, g, ni, ngmax


def _bits(x):
    return np.asarray(x, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("seed", range(12))
def test_full_set_passes_equal_the_scalar_loops(seed):
    # CCCP-TSVM's layout (labeled, unlabeled twice, x_0) with ties everywhere:
    # duplicated base points give equal WSS2 gains, gradients are drawn from a
    # few values (+0.0 and -0.0 among them), many variables sit at a bound.
    rng = np.random.default_rng(seed)
    L, U = 40, 300  # runs of more than one PASS_CHUNK
    m = L + U + 1
    pov = np.r_[0:L, L:L + U, L:L + U, L + U].astype(np.int64)
    n = pov.size
    levels = np.array([-1.5, -0.0, 0.0, 0.25, 0.25, 1.0])
    g = rng.choice(levels, n)
    A = np.r_[rng.choice([-1.0, 0.0], n - 1), -np.inf]
    B = np.r_[A[:-1] + 1.0, np.inf]
    alpha = np.where(rng.random(n) < 0.4, A, np.where(rng.random(n) < 0.5, B, A + 0.5))
    alpha[-1] = 0.3
    diag_all = rng.choice([1.0, 0.5], m)
    ri = rng.choice([0.0, 0.5, 1.0], m)  # eta <= 0 on some pairs: the TAU floor
    rj = rng.choice([0.0, 0.5, 1.0], m)
    runs = _smo._pov_runs(pov)
    # labeled + first copies, second copies + x_0: two runs
    assert [r.tolist() for r in runs] == [[0, L + U], [0, L], [L + U, U + 1]]
    kii = float(diag_all[pov[3]])
    gmax = float(rng.choice([0.25, 1.0, -1.5]))
    lam = float(rng.choice([0.5, 1e-3]))
    j, gmin, g_ref, ni, ngmax = _scalar_passes(g, alpha, A, B, pov, diag_all, ri, rj,
                                               kii, gmax, lam)
    buf_a, buf_b = np.empty(n), np.empty(n)
    j_new, gmin_new = _smo._wss2_full(g, alpha, A, diag_all, ri, kii, gmax, runs,
                                      buf_a, buf_b)
    g_new = g.copy()
    ni_new, ngmax_new = _smo._update_full(g_new, alpha, B, ri, rj, lam, runs, buf_a)
    assert j_new == j and ni_new == ni
    assert gmin_new == gmin  # +0 and -0 only ever meet in the gap gmax - gmin
    assert _bits(ngmax_new) == _bits(ngmax)
    np.testing.assert_array_equal(_bits(g_new), _bits(g_ref))


def test_first_max_and_pov_runs_edge_cases():
    assert _smo._first_max(np.full(5, -np.inf)) == -1
    assert _smo._first_max(np.empty(0)) == -1
    assert _smo._first_max(np.array([-0.0, 1.0, 0.0, 1.0, 1.0])) == 1
    assert _smo._first_max(np.array([-0.0, 0.0, -np.inf])) == 0
    assert _smo._min_all(np.empty(0)) == np.inf
    runs = _smo._pov_runs(np.array([0, 1, 2, 2, 3, 0], dtype=np.int64))
    assert [r.tolist() for r in runs] == [[0, 3, 5], [0, 2, 0], [3, 2, 1]]
