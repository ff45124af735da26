"""The exact-kernel CCCP estimators never hang and
never return a NaN or constant model silently (RELIABILITY.md, section "Numerics")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from tests._data import two_gaussians

import weakkernels._cccp as cccp_module
from weakkernels import CCCPTSVM, RampSVM
from weakkernels._smo import default_max_iter, kernel_bound
from weakkernels._validation import DegenerateModelWarning, check_fitted_model
from weakkernels.kernels import KERNEL_CODES, kernel_matrix


def _fit(cls, **params):
    X, y_semi, y = two_gaussians(n=300)
    return cls(**params).fit(X, y_semi if cls is CCCPTSVM else y)


@pytest.mark.parametrize("cls", [CCCPTSVM, RampSVM])
def test_huge_c_is_refused_naming_c(cls):
    # Before: CCCPTSVM(C=1e17) on 300 points ran > 60 s (SMO without a cap).
    with pytest.raises(ValueError, match=r"C=1e\+17 is numerically meaningless"):
        _fit(cls, C=1e17)


def test_huge_c_star_is_refused_naming_c_star():
    with pytest.raises(ValueError, match=r"C_star=1e\+17 is numerically"):
        _fit(CCCPTSVM, C_star=1e17)


@pytest.mark.parametrize("cls", [CCCPTSVM, RampSVM])
def test_tol_below_float64_resolution_is_refused(cls):
    # Before: tol=1e-300 never returned.
    with pytest.raises(ValueError, match=r"tol=1e-300 is below 1e-12"):
        _fit(cls, tol=1e-300)


def test_largest_accepted_c_still_fits():
    # C = 1e9 (accepted: eps * C = 2e-7 < tol) fits a finite model quickly.
    est = _fit(CCCPTSVM, C=1e9)
    assert np.all(np.isfinite(est.dual_coef_))


def test_default_max_iter_is_a_finite_cap_and_warns(monkeypatch):
    assert CCCPTSVM().max_iter is None and RampSVM().max_iter is None
    # LIBSVM's rule max(10^7, 100 l): finite for every problem size.
    assert default_max_iter(600) == 10**7
    assert default_max_iter(10**6) == 10**8
    # The default cap is what the solver gets: shrink it and the default
    # estimator reports the cap with a ConvergenceWarning.
    monkeypatch.setattr(cccp_module, "default_max_iter", lambda n: 3)
    for cls in (CCCPTSVM, RampSVM):
        with pytest.warns(ConvergenceWarning, match="max_iter"):
            _fit(cls, max_cccp_iter=2)


@pytest.mark.parametrize("cls", [CCCPTSVM, RampSVM])
@pytest.mark.parametrize(
    "params, match",
    [
        (dict(kernel="poly", degree=1000), "degree=1000"),
        (dict(kernel="poly", coef0=1e300), r"coef0=1e\+300"),
    ],
)
def test_overflowing_kernel_is_refused_naming_its_parameters(cls, params, match):
    # Before: degree=1000 failed with "zero-size array to reduction operation"
    # and coef0=1e300 likewise (NaN coefficients, no support vector).
    with pytest.raises(ValueError, match=f"kernel values overflow float64.*{match}"):
        _fit(cls, **params)


@pytest.mark.parametrize("cls", [CCCPTSVM, RampSVM])
def test_underflowing_kernel_warns_that_the_model_is_constant(cls):
    # Before: a constant model (every kernel value 0), silently.
    with pytest.warns(DegenerateModelWarning, match="constant"):
        est = _fit(cls, kernel="poly", degree=1000, coef0=0.0, sigma=1e-3)
    assert np.all(np.isfinite(est.decision_function(np.ones((2, 10)))))


def test_healthy_fit_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        _fit(CCCPTSVM)
        _fit(RampSVM)


def test_kernel_bound_bounds_every_kernel_value():
    X, _, _ = two_gaussians(n=60, d=3)
    for kernel, kw in [("rbf", {}), ("laplacian", {}), ("linear", {}),
                       ("poly", dict(degree=3, coef0=-2.0))]:
        p = dict(sigma=0.7, degree=kw.get("degree", 3), coef0=kw.get("coef0", 1.0))
        K = kernel_matrix(X, X, kernel, **p)
        bound = kernel_bound(X, KERNEL_CODES[kernel], p["sigma"], p["degree"],
                             p["coef0"])
        assert np.max(np.abs(K)) <= bound * (1 + 1e-12)


class _Est:
    def get_params(self, deep=False):
        return {"kernel": "poly", "degree": 7, "C": 1.0}


def test_check_fitted_model_contract():
    est = _Est()
    with pytest.raises(ValueError, match="non-finite.*kernel='poly', degree=7"):
        check_fitted_model(est, np.array([1.0, np.nan]), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="non-finite"):
        check_fitted_model(est, np.ones(2), np.array([np.inf, -1.0]))
    with pytest.warns(DegenerateModelWarning, match="constant"):
        check_fitted_model(est, np.ones(2), np.full(5, 0.25))
    with pytest.warns(DegenerateModelWarning, match="single class"):
        check_fitted_model(est, np.ones(2), np.array([0.1, 0.5, 2.0]))
    with pytest.warns(DegenerateModelWarning, match="single class"):
        check_fitted_model(est, np.ones(2), np.array([[1.0, 0.0], [2.0, 0.5]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_fitted_model(est, np.ones(2), np.array([-0.1, 0.5]))
        check_fitted_model(est, np.ones(2), np.array([[1.0, 0.0], [0.0, 0.5]]))
