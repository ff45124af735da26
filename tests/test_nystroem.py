"""Nyström features (``features="nystroem"``): the feature map against a naive
NumPy reference, sparse = dense, model files, and what it refuses."""

import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels import (
    FRS3VM,
    QSGS2AUC,
    TSGS3VM,
    TSGSU,
    SolverOptions,
    load,
    random_features,
)
from weakkernels.baselines.auc import ExactS2AUC
from weakkernels.kernels import kernel_matrix
from weakkernels.random_features import NystromSpec


def test_features_reproduce_the_nystroem_kernel():
    """phi(x).phi(x') = k(x, Z) (K_ZZ + jitter I)^-1 k(Z, x') (float64)."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 6))
    X = rng.normal(size=(25, 6))
    spec = NystromSpec("rbf", 0.2, Z, np.float64)
    P = spec.features(X, *spec.blocks(0, 1))
    KxZ = kernel_matrix(X, Z, "rbf", 0.2)
    KZZ = kernel_matrix(Z, Z, "rbf", 0.2) + NystromSpec.JITTER * np.eye(40)
    ref = KxZ @ np.linalg.solve(KZZ, KxZ.T)
    np.testing.assert_allclose(P @ P.T, ref, rtol=1e-8, atol=1e-10)
    # on the landmarks themselves the approximation is the kernel
    PZ = spec.features(Z, *spec.blocks(0, 1))
    np.testing.assert_allclose(PZ @ PZ.T, kernel_matrix(Z, Z, "rbf", 0.2),
                               atol=1e-5)


def test_sparse_rows_give_the_dense_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 8))
    X[rng.random(X.shape) < 0.7] = 0.0
    spec = NystromSpec("rbf", 0.1, rng.normal(size=(16, 8)), np.float64)
    W, sq = spec.blocks(0, 1)
    np.testing.assert_allclose(spec.features(sp.csr_matrix(X), W, sq),
                               spec.features(X, W, sq), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sigma", [0.01, 0.3, 3.0, 30.0])
def test_float32_kernel_is_the_rounded_exponential(sigma, monkeypatch):
    """The fused float32 kernel (``_rbf_from_products``) against float64
    ``np.exp`` of the same distances: within 2e-7 relative (float32
    rounding is 6e-8, the polynomial 3e-8) wherever exp(-sigma d) >= e^-80,
    exactly 0 below (no subnormals), and the same from dense and CSR rows
    up to the float64 distances' rounding."""
    rng = np.random.default_rng(5)
    X = rng.random((300, 12))
    X[X < 0.3] = 0.0
    Z = rng.random((200, 12))
    spec = NystromSpec("rbf", sigma, Z, np.float32)
    W, sq = spec.blocks(0, 1)
    K = spec._kernel(X, W, sq)
    assert K.dtype == np.float32
    Zs = spec.landmarks.astype(np.float64)
    d2 = np.maximum((X * X).sum(1)[:, None] + sq[None, :] - 2 * X @ Zs.T, 0.0)
    t = -sigma * d2
    ref = np.exp(t)
    keep = t >= -80.0
    assert keep.any()
    np.testing.assert_allclose(K[keep], ref[keep], rtol=2e-7, atol=0)
    assert (K[~keep] == 0).all()
    assert not (np.abs(K[K != 0]) < np.finfo(np.float32).tiny).any()
    np.testing.assert_allclose(spec._kernel(sp.csr_matrix(X), W, sq), K,
                               rtol=1e-6, atol=0)
    # dense narrow rows in blocks of 16 (_KERNEL_BLOCK_BYTES; above, one block)
    monkeypatch.setattr(random_features, "_KERNEL_BLOCK_BYTES", 0)
    blocked = spec._kernel(X, W, sq)
    np.testing.assert_allclose(blocked[keep], ref[keep], rtol=2e-7, atol=0)
    assert (blocked[~keep] == 0).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_decision_folds_the_whitening_into_the_coefficients(dtype):
    """decision(X) = k(X, Z) (L^-T coef) equals phi(X) coef, the naive
    product (to rounding of the compute dtype)."""
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(50, 5))
    X = rng.normal(size=(70, 5))
    spec = NystromSpec("rbf", 0.3, Z, dtype)
    coefT = rng.normal(size=(3, 50))
    P = spec.features(X, *spec.blocks(0, 1)).astype(np.float64)
    ref = P @ coefT.T
    got = spec.decision(X, coefT, 1)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
    # the expansion's accumulate (out += scale phi(X) coef) folds the same way
    out = np.ones_like(ref)
    spec.accumulate(X, *spec.blocks(0, 1), coefT, 0.5, out)
    np.testing.assert_allclose(out, 1.0 + 0.5 * ref, rtol=tol,
                               atol=tol * np.abs(ref).max())


# Truncated Newton alone stops the annealed stages of this fit at
# SolverOptions.newton_max_iter above its tolerance (tests/test_newton.py);
# with the L-BFGS finish (newton_finish, the default) both minimisers meet
# the floor.
@pytest.mark.parametrize("method", ["lbfgs", "newton"])
@pytest.mark.parametrize("cls", [TSGS3VM, FRS3VM])
def test_fit_save_load_and_landmarks(cls, method, tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 4))
    truth = (X[:, 0] * X[:, 1] > 0).astype(int)
    y = np.full(400, -1)
    y[:60] = truth[:60]
    est = cls(features="nystroem", C=10.0, random_state=0, max_iter=50,
              solver_options=SolverOptions(primal_method=method))
    if cls is FRS3VM:
        est.set_params(n_components=128)
    else:
        est.set_params(max_features=128)
    est.fit(X, y)
    assert est.n_features_model_ == 128
    # every labeled row is a landmark (60 <= 128 / 2)
    Z = est.spec_.landmarks
    assert Z.dtype == np.float32  # stored in the compute dtype
    assert all(np.any(np.all(Z == x, axis=1)) for x in X[:60].astype(np.float32))
    est.save(tmp_path / "m.wk")
    again = load(tmp_path / "m.wk")
    assert again.features_ == est.features_ == "nystroem"
    np.testing.assert_array_equal(again.decision_function(X),
                                  est.decision_function(X))
    # last, so that the Newton case checks the landmarks and the file first
    assert (est.predict(X[60:]) == truth[60:]).mean() > 0.8


def test_refuses_sgd_and_other_kernels():
    X = np.random.default_rng(3).normal(size=(50, 3))
    y = np.full(50, -1)
    y[:6] = [0, 1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="solver"):
        TSGS3VM(features="nystroem", solver="sgd").fit(X, y)
    with pytest.raises(ValueError, match="rbf"):
        TSGS3VM(features="nystroem", kernel="laplacian").fit(X, y)


def test_landmark_count_is_bounded_at_fit_and_load(tmp_path):
    """A model file cannot make load build an m x m matrix beyond the bound."""
    from weakkernels import ModelFormatError

    with pytest.raises(ValueError, match="landmarks"):
        NystromSpec("rbf", 1.0, np.zeros((NystromSpec.MAX_LANDMARKS + 1, 1)))
    X = np.random.default_rng(4).normal(size=(80, 2))
    y = np.full(80, -1)
    y[:8] = [0, 1] * 4
    est = TSGS3VM(features="nystroem", max_iter=5, random_state=0).fit(X, y)
    from weakkernels._dsg import set_expansion_state

    meta, arrays = est._artifact_state()
    meta["spec"]["block_size"] = NystromSpec.MAX_LANDMARKS + 1
    arrays["landmarks"] = np.zeros((NystromSpec.MAX_LANDMARKS + 1, 2), np.float32)
    with pytest.raises(ModelFormatError, match="landmarks"):
        set_expansion_state(TSGS3VM(), meta, arrays)


def test_whitening_does_not_depend_on_the_blas_threads():
    """L^-T is the same bits whatever BLAS thread count the process has: a
    model file reloaded elsewhere (a Dask worker pins BLAS to one thread)
    scores as the fitted model did."""
    from threadpoolctl import threadpool_limits

    Z = np.random.default_rng(0).random((700, 8))
    with threadpool_limits(limits=2, user_api="blas"):
        two = NystromSpec("rbf", 1.0, Z)._T
    with threadpool_limits(limits=1, user_api="blas"):
        one = NystromSpec("rbf", 1.0, Z)._T
    np.testing.assert_array_equal(one, two)


# ---------------------------------------------------------------------------
# TSGSU (paper 002) and QSG-S2AUC (paper 003) on a Nyström basis
# ---------------------------------------------------------------------------
def _su_data(rng, n_pairs=40, n_u=360, prior=0.7):
    """SU layout: ``n_pairs`` similar pairs (consecutive rows, y = 1) of
    class +1 with probability ``prior^2 / pi_S`` (paper 002 Eq. 2), then
    unlabeled rows (y = -1); the classes are shifted along x0 and class 1
    (prior 0.7) is bent along x1."""
    def draw(n):
        c = (rng.random(n) < prior).astype(int)
        X = rng.normal(size=(n, 4))
        X[:, 0] += np.where(c == 1, 1.5, -1.5)
        X[:, 1] += np.where(c == 1, np.sin(2.0 * X[:, 0]), 0.0)
        return X, c

    pool, c = draw(20 * n_pairs)
    pos = rng.random(n_pairs) < prior**2 / (prior**2 + (1 - prior) ** 2)
    rows = np.concatenate([np.flatnonzero(c == 1)[: 2 * pos.sum()],
                           np.flatnonzero(c == 0)[: 2 * (~pos).sum()]])
    XU, tU = draw(n_u)
    X = np.vstack([pool[rows], XU])
    t = np.r_[c[rows], tU]
    y = np.r_[np.ones(2 * n_pairs, int), -np.ones(n_u, int)]
    return X, y, t


def _semi_data(rng, n=400, n_l=40):
    X = rng.normal(size=(n, 4))
    t = (X[:, 0] * X[:, 1] > 0).astype(int)
    y = np.full(n, -1)
    y[:n_l] = t[:n_l]
    return X, y, t


_SU_AUC = {
    "TSGSU": (lambda **kw: TSGSU(prior=0.7, sigma=0.5, lam=0.1, **kw), _su_data),
    "QSGS2AUC": (lambda **kw: QSGS2AUC(sigma=0.5, lam=1e-2, prior=0.5, **kw),
                 _semi_data),
}


@pytest.mark.parametrize("name", sorted(_SU_AUC))
def test_su_auc_nystroem_fit_landmarks_determinism_and_file(name, tmp_path):
    make, data = _SU_AUC[name]
    X, y, t = data(np.random.default_rng(5))
    est = make(features="nystroem", max_features=160, random_state=0).fit(X, y)
    assert est.features_ == "nystroem" and est.n_features_model_ == 160
    # every row with a label (pair rows; positives and negatives) is a
    # landmark: 80 / 40 of them, at most 160 / 2
    Z = est.spec_.landmarks
    first = X[y != -1].astype(np.float32)
    assert all(np.any(np.all(Z == x, axis=1)) for x in first)
    unl = y == -1
    assert (est.predict(X[unl]) == t[unl]).mean() > 0.65  # chance: 0.5
    # bit for bit: a second fit, and the model file (landmarks inside)
    again = make(features="nystroem", max_features=160, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.coef_, est.coef_)
    np.testing.assert_array_equal(again.spec_.landmarks, Z)
    est.save(tmp_path / "m.wk")
    loaded = load(tmp_path / "m.wk")
    assert loaded.features_ == "nystroem"
    np.testing.assert_array_equal(loaded.decision_function(X),
                                  est.decision_function(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))


@pytest.mark.parametrize("name", sorted(_SU_AUC))
def test_su_auc_default_basis_is_auto_and_fourier_stays_seed_only(name):
    """The default basis is "auto", as TSGS3VM's: Nyström for L-BFGS (every
    row a landmark below 4096 rows), Fourier for the papers' SGD, which
    refuses "nystroem". ``features="fourier"`` keeps the papers' seed-only
    model file: seeds and coefficients, no landmarks."""
    make, data = _SU_AUC[name]
    X, y, _ = data(np.random.default_rng(6))
    est = make(features="fourier", max_features=64, max_iter=5,
               random_state=0).fit(X, y)
    assert est.features_ == "fourier"
    meta, arrays = est._artifact_state()
    assert "landmarks" not in arrays and meta["spec"].get("kind") != "nystroem"
    auto = make(max_iter=5, random_state=0).fit(X, y)
    assert auto.features == "auto" and auto.features_ == "nystroem"
    assert auto.n_features_model_ == X.shape[0]  # every row: below 4096 rows
    assert "landmarks" in auto._artifact_state()[1]
    sgd = make(features="auto", solver="sgd", max_iter=3, random_state=0)
    assert sgd.fit(X, y).features_ == "fourier"
    with pytest.raises(ValueError, match="solver"):
        make(features="nystroem", solver="sgd").fit(X, y)
    with pytest.raises(ValueError, match="rbf"):
        make(features="nystroem", kernel="laplacian").fit(X, y)


def test_qsg_nystroem_on_every_row_is_the_exact_minimizer():
    """With every training row a landmark the Nyström expansion spans the
    representer theorem's functions: QSG-S2AUC's L-BFGS solve is the exact
    kernel minimizer of paper 003 Eq. (8)-(9) (ExactS2AUC), up to the jitter
    and the tolerance (scores up to a constant: the pairwise loss)."""
    X, ys, t = _semi_data(np.random.default_rng(7), n=200, n_l=40)
    lam, sigma = 0.05, 0.3
    exact = ExactS2AUC(lam=lam, sigma=sigma, prior=0.5).fit(X, ys)
    q = QSGS2AUC(features="nystroem", lam=lam, sigma=sigma, prior=0.5,
                 dtype="float64", tol=1e-10, random_state=0).fit(X, ys)
    assert q.n_features_model_ == 200
    fe = exact.decision_function(X) + exact.threshold_
    fq = q.decision_function(X) + q.threshold_
    err = np.abs((fq - fq.mean()) - (fe - fe.mean())).max()
    assert err < 1e-4 * fe.std()


def test_landmarks_take_the_first_set_up_to_half():
    """nystroem_landmarks: all of ``first`` while it is at most m / 2, then a
    seeded sample of m / 2 of it; the rest from ``rest``; the same rows for
    index and row-array forms of the sets."""
    from weakkernels._dsg import nystroem_landmarks

    X = np.arange(100.0)[:, None] * np.ones((1, 2))
    first, rest = np.arange(10), np.arange(10, 100)
    Z = nystroem_landmarks((X, first), (X, rest), 40, seed=3)
    assert Z.shape == (40, 2) and set(Z[:10, 0]) == set(range(10))
    assert set(Z[10:, 0]) <= set(range(10, 100))
    np.testing.assert_array_equal(
        Z, nystroem_landmarks((X[:10], None), (X[10:], None), 40, seed=3))
    Z = nystroem_landmarks((X, first), (X, rest), 12, seed=3)
    assert (Z[:6, 0] < 10).all() and (Z[6:, 0] >= 10).all()


@pytest.mark.parametrize("n,d", [(550, 50), (2200, 8), (4096, 784),
                                 (4097, 784), (49990, 22), (61000, 784),
                                 (80000, 784), (200000, 28), (61000, 20000)])
def test_landmark_rule_keeps_the_basis_and_small_sets(n, d):
    """The default landmark count: every row up to NYSTROEM_ALL_ROWS (the
    pipeline's sets: g50c, cod-rna's 200 + 2 000 rows), never fewer than the
    Fourier rule, and where it grows past 4 096 it stays within the bounds of
    features="auto" (a larger count never turns the basis to Fourier)."""
    from weakkernels._dsg import nystroem_size, primal_features, resolve_basis
    from weakkernels._options import DEFAULT_OPTIONS

    NYSTROEM_ALL_ROWS = DEFAULT_OPTIONS.nystroem_all_rows

    m = nystroem_size(n, d)
    if n <= NYSTROEM_ALL_ROWS:
        assert m == n
        return
    held = (1 << 31) // (4 * n)
    assert m >= max(min(NYSTROEM_ALL_ROWS, held), primal_features(n, 32, d))
    if m > NYSTROEM_ALL_ROWS:
        assert m % 32 == 0  # a max_features budget of the same count
        assert resolve_basis("auto", "lbfgs", "rbf", n, d, m) == "nystroem"


@pytest.mark.parametrize("n", [262_144, 10**6, 10**7])
def test_large_narrow_sets_stream_the_floor_of_landmarks(n):
    """Past the 2 GiB held bound, rows of d <= 32 768 stream
    NYSTROEM_STREAMED landmarks (Nyström, not the 1 024 Fourier features of
    the old rule); very wide rows (text) keep the Fourier basis there."""
    from weakkernels._dsg import nystroem_size, resolve_basis
    from weakkernels._options import DEFAULT_OPTIONS

    NYSTROEM_STREAMED = DEFAULT_OPTIONS.nystroem_streamed

    for d in (28, 784):
        m = nystroem_size(n, d)
        assert m == NYSTROEM_STREAMED
        assert resolve_basis("auto", "lbfgs", "rbf", n, d, m) == "nystroem"
    m = nystroem_size(n, 47_236)
    assert resolve_basis("auto", "lbfgs", "rbf", n, 47_236, m) == "fourier"


def test_landmark_rule_at_the_measured_mnist_size():
    """MNIST, paper 004's protocol at U = 60 000 (61 000 rows): the count the
    committed rows of benchmarks/results/scale_accuracy/mnist.csv were
    measured with (``tsgs3vm_f5920``); it grows with n."""
    from weakkernels._dsg import nystroem_size

    assert nystroem_size(61000, 784) == 5920
    sizes = [nystroem_size(n, 784) for n in (5000, 20000, 40000, 61000)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
