"""Nyström features (``features="nystroem"``): the feature map against a naive
NumPy reference, sparse = dense, model files, and what it refuses."""

import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels import FRS3VM, TSGS3VM, load
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


@pytest.mark.parametrize("cls", [TSGS3VM, FRS3VM])
def test_fit_save_load_and_landmarks(cls, tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 4))
    truth = (X[:, 0] * X[:, 1] > 0).astype(int)
    y = np.full(400, -1)
    y[:60] = truth[:60]
    est = cls(features="nystroem", C=10.0, random_state=0, max_iter=50)
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
    assert (est.predict(X[60:]) == truth[60:]).mean() > 0.8
    est.save(tmp_path / "m.wk")
    again = load(tmp_path / "m.wk")
    assert again.features_ == est.features_ == "nystroem"
    np.testing.assert_array_equal(again.decision_function(X),
                                  est.decision_function(X))


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
