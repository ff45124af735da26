"""Float32 random features when ||omega|| ||x|| is large
(RELIABILITY.md, section "Numerics"). The fast cosine is checked against np.cos in
float64; inputs whose phases float32 cannot hold are refused at the boundary."""

from __future__ import annotations

import numpy as np
import pytest
from tests._data import two_gaussians

from weakkernels import TSGS3VM
from weakkernels.random_features import (
    _KERNELS,
    FLOAT32_PHASE_LIMIT,
    FeatureSpec,
)

_COS_FEATURES_SERIAL = _KERNELS[np.dtype(np.float32)][2]


def _fast_cos(x: np.ndarray) -> np.ndarray:
    Z = np.ascontiguousarray(x, dtype=np.float32).reshape(1, -1).copy()
    _COS_FEATURES_SERIAL(Z, np.zeros(Z.shape[1], np.float32), np.float32(1.0))
    return Z[0]


def test_fast_cos_matches_float64_cos_over_its_accepted_range():
    rng = np.random.default_rng(0)
    top = 4 * FLOAT32_PHASE_LIMIT  # phases reach a few times the median scale
    x = np.concatenate([
        rng.uniform(-10, 10, 200_000),
        rng.uniform(-top, top, 200_000),
        np.float32(2.0) ** rng.uniform(-20, np.log2(top), 200_000),
    ]).astype(np.float32)
    err = np.abs(_fast_cos(x).astype(np.float64) - np.cos(x.astype(np.float64)))
    # the documented bound: polynomial 1e-6 plus reduction 2.8e-8 |x|
    assert np.all(err <= 1e-6 + 3e-8 * np.abs(x))
    assert err[np.abs(x) < 10].max() < 1e-6
    # at the limit the reduction error is below the float32 ulp of the phase
    at_limit = np.abs(x) <= FLOAT32_PHASE_LIMIT + 2 * np.pi
    assert err[at_limit].max() < np.spacing(np.float32(FLOAT32_PHASE_LIMIT))


def test_fast_cos_stays_bounded_over_the_whole_float32_range():
    # Before: the reduction left |r| >> pi above ~4e5 and the polynomial
    # returned values up to ~1e34.
    rng = np.random.default_rng(1)
    x = (np.float32(2.0) ** rng.uniform(16, 127.9, 500_000)).astype(np.float32)
    x *= rng.choice([-1, 1], x.size).astype(np.float32)
    c = _fast_cos(np.concatenate([x, [np.finfo(np.float32).max]]))
    assert np.all(np.isfinite(c)) and np.abs(c).max() <= 1.0 + 1e-6


def test_huge_phases_are_refused_naming_the_scale_of_x_and_sigma():
    # Before: TSGS3VM on X * 1e8 with sigma=1 returned |f| ~ 1.5e34 and
    # accuracy 0.51, or a divergence error blaming eta0.
    X, y_semi, y = two_gaussians(n=200)
    # the float32 phases of the Fourier basis (Nyström has no phases)
    est = TSGS3VM(sigma=1.0, max_iter=20, batch_size=16, block_size=8,
                  features="fourier", random_state=0)
    with pytest.raises(ValueError, match=r"X has rows of norm up to .*sigma=1"):
        est.fit(X * 1e8, y_semi)
    # float64 computes the same phases accurately
    est64 = TSGS3VM(sigma=1.0, max_iter=20, batch_size=16, block_size=8,
                    features="fourier", dtype="float64",
                    random_state=0).fit(X * 1e8, y_semi)
    assert np.abs(est64.decision_function(X * 1e8)).max() < 10


def test_predict_on_out_of_range_x_is_refused():
    X, y_semi, _ = two_gaussians(n=200)
    est = TSGS3VM(sigma=1.0, max_iter=20, batch_size=16, block_size=8,
                  features="fourier", random_state=0).fit(X, y_semi)
    with pytest.raises(ValueError, match="float32"):
        est.decision_function(X * 1e6)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_features_below_the_limit_match_a_float64_reference(kernel):
    rng = np.random.default_rng(2)
    d = 8
    spec32 = FeatureSpec(kernel, 0.5, 2, 1.0, d, 256, 7, np.float32)
    spec64 = FeatureSpec(kernel, 0.5, 2, 1.0, d, 256, 7, np.float64)
    W, phase = spec64.blocks(0, 2)
    w_norm = np.median(np.linalg.norm(W, axis=0))
    # rows scaled so the phase scale sits just below the limit
    X = rng.normal(size=(64, d))
    X *= 0.9 * FLOAT32_PHASE_LIMIT / (w_norm * np.linalg.norm(X, axis=1).max())
    ref = spec64.features(X, W, phase)
    got = spec32.features(X, W.astype(np.float32), phase.astype(np.float32))
    assert np.all(np.abs(got) <= spec32.norm * (1 + 1e-6))
    # float32 phases of size ~6e4 carry ~1e-2 rad: the median feature is
    # accurate to a few percent of its amplitude
    rel = np.abs(got - ref) / spec32.norm
    assert np.median(rel) < 0.02
    if kernel == "rbf":
        assert rel.max() < 0.1


def test_laplacian_heavy_tailed_frequencies_are_not_refused():
    # The Cauchy frequencies of the Laplacian kernel include a few huge ones;
    # ordinary data must not be refused because of them.
    X, y_semi, y = two_gaussians(n=300, d=10)
    est = TSGS3VM(kernel="laplacian", sigma=0.1, max_iter=50, batch_size=32,
                  block_size=64, random_state=0, selection=None).fit(X, y_semi)
    assert np.mean(est.predict(X) == y) > 0.8
