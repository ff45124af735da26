"""Kernel width of the exact-kernel estimators (CCCP-TSVM, the Ramp SVM)
and the papers' baselines (SUSL, CUU, PNU-AUC, the exact S2AUC, supervised
kernel AUC): ``sigma="scale"`` by default, resolved at fit
time to ``sigma_ = 1 / (d Var X)`` over every row given to ``fit``
(:func:`weakkernels.kernels.resolve_sigma`, as TSGSU and QSGS2AUC), used in every
kernel evaluation and stored in the model file; files that hold no ``sigma_``
(their ``sigma`` parameter is then a number) load and predict as before."""

from __future__ import annotations

import numpy as np
import pytest
from tests._reliability import semi_data, su_data, sup_data

import weakkernels as wk
from weakkernels._artifact import dumps, loads
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC, SupervisedKernelAUC
from weakkernels.baselines.su import CUU, SUSL
from weakkernels.kernels import resolve_sigma

# name -> (class, its small settings, data)
BASELINES = {
    "SUSL": (SUSL, {"n_centers": 30, "random_state": 0}, su_data),
    "CUU": (CUU, {"n_centers": 30, "max_iter": 10, "batch_size": 20,
                  "random_state": 0}, su_data),
    "PNUAUC": (PNUAUC, {"prior": 0.5}, semi_data),
    "ExactS2AUC": (ExactS2AUC, {"prior": 0.5}, semi_data),
    "SupervisedKernelAUC": (SupervisedKernelAUC, {"prior": 0.5}, semi_data),
    "CCCPTSVM": (wk.CCCPTSVM, {}, semi_data),
    "RampSVM": (wk.RampSVM, {}, sup_data),
}
NAMES = sorted(BASELINES)


def _fit(name, **params):
    cls, kw, data = BASELINES[name]
    X, y = data()
    return cls(**{**kw, **params}).fit(X, y), X


def _rewrite(est, tmp_path, edit):
    """``est``'s model file with its ``meta.json`` edited by ``edit(meta)``."""
    meta, arrays = loads(est.to_bytes())
    edit(meta)
    path = tmp_path / "model.wkm"
    path.write_bytes(dumps(meta, arrays))
    return path


@pytest.mark.parametrize("name", NAMES)
def test_default_sigma_is_scale_over_every_fitted_row(name):
    cls = BASELINES[name][0]
    assert cls().sigma == "scale"
    est, X = _fit(name)
    assert est.sigma_ == resolve_sigma("scale", X)
    # all rows, labeled (or paired) and unlabeled alike
    assert est.sigma_ == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_scale_is_the_resolved_number(name):
    est, X = _fit(name)
    same = _fit(name, sigma=est.sigma_)[0]
    assert same.sigma_ == est.sigma_
    np.testing.assert_array_equal(est.decision_function(X),
                                  same.decision_function(X))


@pytest.mark.parametrize("name", NAMES)
def test_fixed_sigma_is_used_as_given(name):
    est, X = _fit(name, sigma=0.3)
    assert est.sigma_ == 0.3
    assert not np.array_equal(est.decision_function(X),
                              _fit(name)[0].decision_function(X))


@pytest.mark.parametrize("name", NAMES)
def test_save_load_predicts_the_same(name, tmp_path):
    est, X = _fit(name)
    est.save(tmp_path / "model.wkm")
    same = wk.load(tmp_path / "model.wkm")
    assert same.sigma == "scale"
    assert same.sigma_ == est.sigma_
    np.testing.assert_array_equal(same.predict(X), est.predict(X))
    np.testing.assert_array_equal(same.decision_function(X),
                                  est.decision_function(X))


@pytest.mark.parametrize("name", NAMES)
def test_file_without_stored_sigma_uses_its_sigma_param(name, tmp_path):
    """Files written before ``sigma_`` was stored had a numeric ``sigma``
    (1.0 by default): that number is the width they predict with."""
    est, X = _fit(name, sigma=1.0)

    def old(meta):
        del meta["state"]["sigma"]

    same = wk.load(_rewrite(est, tmp_path, old))
    assert same.sigma_ == 1.0
    np.testing.assert_array_equal(same.decision_function(X),
                                  est.decision_function(X))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("stored", [None, -1.0, float("inf"), "scale", True])
def test_file_with_no_usable_width_is_refused(name, stored, tmp_path):
    est, _ = _fit(name)

    def bad(meta):
        if stored is None:  # "scale" and no resolved width: nothing to use
            del meta["state"]["sigma"]
        else:
            meta["state"]["sigma"] = stored

    path = _rewrite(est, tmp_path, bad)
    with pytest.raises(wk.ModelFormatError, match="sigma"):
        wk.load(path)


def test_scale_refuses_a_variance_that_overflows():
    """Entries near 1e153 pass the magnitude check but their squares sum to
    inf: sigma_ would be 0 (a constant kernel, and a model file that refuses
    to load), so fit says why instead."""
    X = np.random.default_rng(0).normal(size=(400, 2)) * 1e153
    with pytest.raises(ValueError, match="overflows"):
        resolve_sigma("scale", X)


@pytest.mark.parametrize("cls", [wk.TSGSU, wk.QSGS2AUC, wk.TSGS3VM])
def test_random_feature_models_reload_their_sigma(cls, tmp_path):
    X, y = (su_data if cls is wk.TSGSU else semi_data)()
    kw = {"prior": 0.7} if cls is wk.TSGSU else {}
    est = cls(random_state=0, max_iter=5, **kw).fit(X, y)
    est.save(tmp_path / "model.wkm")
    assert wk.load(tmp_path / "model.wkm").sigma_ == est.sigma_


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_the_pipeline_scales_sigma_as_the_estimators_do(sparse):
    """The pipeline's ``sigma = sigma_rel * scale`` uses the estimators' own
    ``sigma="scale"``: at ``sigma_rel = 1`` the pipeline's width is bit for
    bit the one ``TSGS3VM(sigma="scale")`` resolves on the same rows."""
    import scipy.sparse as sp

    from weakkernels.pipeline.common import fit_data

    X, y = semi_data(n=90)
    X = np.where(np.abs(X) > 1.0, X, 0.0)  # zeros for the CSR case
    if sparse:
        X = sp.csr_matrix(X)
    split = {"labeled": np.arange(30), "unlabeled": np.arange(30, 90)}
    _, X_fit, y_fit, _, _, scale = fit_data("tsgs3vm", X, y, split, 60)
    est = wk.TSGS3VM(sigma="scale", max_iter=2, selection=None,
                     random_state=0).fit(X_fit, y_fit)
    assert est.sigma_ == scale
