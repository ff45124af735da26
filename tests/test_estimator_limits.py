"""Estimator edges of the random-feature solvers: bounded budgets that name
their parameter, and no spurious warning after fitting a DataFrame."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from weakkernels import QSGS2AUC, TSGS3VM, RandomFeatures, _dsg


def _semi(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.full(n, -1)
    y[:20] = (X[:20, 0] > 0).astype(int)
    y[:2] = [0, 1]
    return X, y


@pytest.mark.parametrize("est", [TSGS3VM(random_state=0),
                                 QSGS2AUC(random_state=0, prior=0.5)])
def test_fit_on_a_dataframe_does_not_warn(est):
    pd = pytest.importorskip("pandas")
    X, y = _semi()
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.fit(df, y)
    assert list(est.feature_names_in_) == list(df.columns)


def test_sgd_step_ceiling_binds_with_a_warning(monkeypatch):
    """n_passes=1e9 on 200 rows no longer runs (practically) forever."""
    monkeypatch.setattr(_dsg, "SGD_MAX_STEPS", 30)
    X, y = _semi()
    est = TSGS3VM(solver="sgd", n_passes=1e9, batch_size=16, block_size=8,
                  random_state=0)
    with pytest.warns(ConvergenceWarning, match="SGD_MAX_STEPS"):
        est.fit(X, y)
    assert est.n_iter_ == 30


def test_qsg_min_iter_ceiling(monkeypatch):
    monkeypatch.setattr(_dsg, "SGD_MAX_STEPS", 25)
    X, y = _semi()
    est = QSGS2AUC(solver="sgd", min_iter=10**9, batch_size=16, block_size=8,
                   prior=0.5, random_state=0)
    with pytest.warns(ConvergenceWarning, match="ceiling"):
        est.fit(X, y)
    assert est.n_iter_ == 25


@pytest.mark.parametrize("kw", [{"max_features": 2**40},
                                {"block_size": 2**40, "max_features": 2**40}])
def test_feature_budget_beyond_memory_is_refused_before_allocating(kw):
    X, y = _semi()
    with pytest.raises(ValueError, match="max_features / n_components / block_size"):
        TSGS3VM(random_state=0, **kw).fit(X, y)


def test_random_features_n_components_bound():
    X = np.zeros((3, 1000))
    with pytest.raises(ValueError, match="n_components=10000000"):
        RandomFeatures(n_components=10**7).fit(X)


def test_random_features_refuse_a_corrupt_csr():
    """RandomFeatures reaches the numba CSR projection: bad indices are a
    ValueError, not a read out of bounds."""
    import scipy.sparse as sp

    X = sp.csr_matrix(np.eye(4))
    rf = RandomFeatures(n_components=8, random_state=0).fit(X)
    bad = sp.csr_matrix((np.ones(4), np.array([0, 1, 2, 10**8]),
                         np.arange(5)), shape=(4, 4), copy=False)
    for call in (rf.transform, RandomFeatures(n_components=8).fit):
        with pytest.raises(ValueError, match="indices"):
            call(bad)


@pytest.mark.parametrize("make", [lambda: TSGS3VM(random_state=0),
                                  lambda: QSGS2AUC(random_state=0, prior=0.5)])
def test_score_ignores_unlabeled_rows_and_refuses_unknown_labels(make):
    """One meaning of score for every estimator: accuracy on the labeled
    rows of a semi-supervised y (the inherited one counted y == -1 as wrong
    and returned 0.0 for TSGS3VM)."""
    X, y = _semi()
    est = make().fit(X, y)
    lab = y != -1
    assert est.score(X, y) == pytest.approx(np.mean(est.predict(X[lab]) == y[lab]))
    with pytest.raises(ValueError, match="not in classes_"):
        est.score(X[:5], np.array([0, 1, 7, 0, 1]))
    with pytest.raises(ValueError, match="labeled samples"):
        est.score(X[:5], np.full(5, -1))


def test_unlabeled_predictions_check():
    from weakkernels._validation import (
        DegenerateModelWarning,
        check_unlabeled_predictions,
    )

    Y = np.where(np.arange(100) < 10, 1.0, -1.0)[:, None]  # 10 % positive
    with pytest.warns(DegenerateModelWarning, match="majority"):
        check_unlabeled_predictions(TSGS3VM(), np.r_[np.ones(3), -np.ones(997)], Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_unlabeled_predictions(TSGS3VM(), np.r_[np.ones(30), -np.ones(970)], Y)
    # one-vs-rest: class 2 never predicted
    Yk = -np.ones((90, 3))
    Yk[np.arange(90), np.arange(90) % 3] = 1.0
    F = np.zeros((60, 3))
    F[np.arange(60), np.arange(60) % 2] = 1.0
    with pytest.warns(DegenerateModelWarning, match="output 2"):
        check_unlabeled_predictions(TSGS3VM(), F, Yk)


def test_a_fit_that_predicts_only_the_majority_warns():
    """Noise features, 10 % positive labels, tiny C: the machine predicts the
    majority on every unlabeled point and says so."""
    from weakkernels._validation import DegenerateModelWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.full(600, -1)
    y[:100] = (np.arange(100) < 10).astype(int)
    with pytest.warns(DegenerateModelWarning, match="majority"):
        TSGS3VM(C=1e-3, random_state=0).fit(X, y)
