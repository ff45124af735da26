"""A fit that fails leaves the estimator's fitted state as it was (RELIABILITY.md,
section "Numerics", row 6): no new width next to old coefficients, no read
past arrays."""

import functools

import numpy as np
import pytest
from tests._data import two_gaussians
from tests._reliability import catalogue_estimators

import weakkernels as wk

# The catalogue's semi-supervised solvers (their ``fast`` settings), and
# TSGS3VM once more with the polynomial kernel's features.
SEMI = [spec.make for spec in catalogue_estimators().values() if spec.kind == "semi"]
SEMI.append(functools.partial(wk.TSGS3VM, kernel="poly", max_features=64, max_iter=20,
                              random_state=0))


@pytest.mark.parametrize("make", SEMI)
def test_failed_refit_keeps_the_previous_model(make):
    X, y, _ = two_gaussians(n=150, d=4, n_labeled=20, seed=1)
    est = make().fit(X, y)
    f_before = est.decision_function(X)
    state = dict(est.__dict__)
    wide = np.random.default_rng(0).normal(size=(150, 2000))
    for bad_y in (np.full(150, -1), np.where(y == -1, -1, 0)):  # no labels; 1 class
        with pytest.raises(ValueError):
            est.fit(wide, bad_y)
        assert est.n_features_in_ == 4
        assert set(est.__dict__) == set(state)
        np.testing.assert_array_equal(est.decision_function(X), f_before)
        with pytest.raises(ValueError, match="features"):
            est.decision_function(wide)


def test_failed_first_fit_leaves_an_unfitted_estimator():
    from sklearn.exceptions import NotFittedError

    est = wk.TSGS3VM()
    with pytest.raises(ValueError):
        est.fit(np.zeros((10, 3)), np.full(10, -1))
    assert not hasattr(est, "n_features_in_")
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((2, 3)))


def test_default_expansion_respects_the_documented_memory_budget():
    """RELIABILITY.md, section "Numerics", row 5: the L-BFGS expansion's feature matrix
    (rows x D) and frequencies (d x D) stay within the budgets of
    ``_dsg.primal_features`` above the 1024-feature floor."""
    from weakkernels._dsg import primal_features

    assert primal_features(550, 32, 50) == 4096  # g50c: small, low-dim
    assert primal_features(4296, 32, 8) == 1024  # 200 + 4096 rows
    assert primal_features(100, 32, 20_000) == 1024  # 100 x 20 000 dense
    for rows, d in [(100, 300), (2200, 50), (300, 5000), (4000, 4000)]:
        D = primal_features(rows, 32, d)
        assert 1024 <= D <= 4096 and D % 32 == 0
        assert D == 1024 or (rows * D <= 1 << 22 and d * D <= 1 << 24)
