"""Random features: kernel approximation, seed purity, fast cosine, fused kernels."""

import numpy as np
import pytest

from weakkernels._threads import one_blas_thread
from weakkernels.kernels import kernel_matrix
from weakkernels.random_features import (
    FeatureSpec,
    RandomFeatures,
    _fast_cos,
)


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(40, 6)) * 0.5


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_features_approximate_kernel(X, kernel, dtype):
    # Monte-Carlo error of D features is O(1/sqrt(D)); with D = 16384 the mean
    # absolute error of the Gram matrix entries is ~0.006 (rbf) -- 0.02 leaves
    # room without letting a wrong distribution pass (sigma doubled gives ~0.1).
    rf = RandomFeatures(
        kernel=kernel, sigma=0.3, n_components=16384, block_size=512, dtype=dtype,
        random_state=0,
    ).fit(X)
    Z = rf.transform(X).astype(np.float64)
    K = kernel_matrix(X, X, kernel, 0.3, 2, 1.0)
    err = np.abs(Z @ Z.T - K)
    # Random Maclaurin features have a heavier-tailed product estimator (measured
    # max error 0.15 at D=16384, 0.08 at D=65536: it does converge as 1/sqrt(D)).
    assert err.mean() < 0.02
    assert err.max() < (0.3 if kernel == "poly" else 0.15)


def test_random_features_unbiased_over_seeds(X):
    # Averaging independent small expansions converges to k: the bias is zero.
    K = kernel_matrix(X[:5], X[:5], "rbf", 0.3)
    acc = np.zeros_like(K)
    n_seeds = 400
    for seed in range(n_seeds):
        Z = RandomFeatures(sigma=0.3, n_components=16, block_size=16,
                           random_state=seed, dtype="float64").fit(X).transform(X[:5])
        acc += Z @ Z.T
    # per-entry std of one 16-feature estimate <= ~0.35 -> mean over 400: ~0.018
    assert np.abs(acc / n_seeds - K).max() < 0.08


def test_blocks_are_pure_functions_of_seed_and_index():
    spec = FeatureSpec("rbf", 0.5, 2, 1.0, 7, 16, seed=123)
    forward = [spec.block(b) for b in range(5)]
    backward = [spec.block(b) for b in reversed(range(5))][::-1]
    for (w1, p1), (w2, p2) in zip(forward, backward, strict=True):
        assert np.array_equal(w1, w2) and np.array_equal(p1, p2)
    W, P = spec.blocks(0, 5)
    assert np.array_equal(W, np.concatenate([f[0] for f in forward], axis=1))
    other = FeatureSpec("rbf", 0.5, 2, 1.0, 7, 16, seed=124)
    assert not np.array_equal(other.block(0)[0], forward[0][0])
    assert not np.array_equal(spec.block(1)[0], forward[0][0])


def test_gaussian_draws_have_the_right_moments():
    sigma = 0.7
    spec = FeatureSpec("rbf", sigma, 2, 1.0, 50, 2000, seed=1, dtype=np.float64)
    W, phase = spec.block(0)
    # omega ~ N(0, 2 sigma I): 100k draws, std error of the variance ~0.6%.
    assert abs(W.mean()) < 0.01
    assert abs(W.var() / (2 * sigma) - 1) < 0.02
    assert phase.min() >= 0 and phase.max() < 2 * np.pi
    assert abs(phase.mean() - np.pi) < 0.1


def test_fast_cos_matches_numpy():
    x = np.linspace(-300, 300, 200001).astype(np.float32)
    ours = np.array([_fast_cos(v) for v in x[::97]], dtype=np.float64)
    ref = np.cos(x[::97].astype(np.float64))
    # float32 input, float32 arithmetic: error ~ |x| * 2^-24 from the reduction.
    assert np.abs(ours - ref).max() < 5e-5


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decision_matches_naive_numpy(kernel, dtype):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 9))
    spec = FeatureSpec(kernel, 0.2, 3, 1.0, 9, 32, seed=5, dtype=dtype)
    n_blocks = 7
    coef = rng.normal(size=(2, 32 * n_blocks))
    got = spec.decision(X, coef, n_blocks, blocks_per_chunk=3)
    # naive reference: regenerate blocks, explicit feature matrix, float64 math
    parts = []
    for b in range(n_blocks):
        W, second = spec.block(b)
        W = W.astype(np.float64)
        second = second.astype(np.float64)
        if kernel == "poly":
            prod = np.ones((X.shape[0], W.shape[2]))
            for q in range(W.shape[0]):
                dots = X @ W[q]
                used = np.any(W[q] != 0, axis=0)
                prod *= np.where(used, dots, 1.0)
            parts.append(spec.norm * second * prod)
        else:
            parts.append(spec.norm * np.cos(X @ W + second))
    ref = np.hstack(parts) @ coef.T
    tol = 1e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_serial_and_parallel_kernels_are_bit_identical():
    import numba

    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 28)).astype(np.float32)
    spec = FeatureSpec("rbf", 0.1, 2, 1.0, 28, 512, seed=9)
    coef = rng.normal(size=(1, 512 * 8)).astype(np.float32)
    outs = []
    old = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            with one_blas_thread():
                outs.append(spec.decision(X, coef, 8))
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(outs[0], outs[1])
