"""Estimator edges of the random-feature solvers: bounded budgets that name
their parameter, and no spurious warning after fitting a DataFrame."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from weakkernels import QSGS2AUC, TSGS3VM, TSGSU, RandomFeatures, SolverOptions, _dsg
from weakkernels.tsgsu import su_risk


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


def test_sgd_step_ceiling_binds_with_a_warning():
    """n_passes=1e9 on 200 rows no longer runs (practically) forever."""
    X, y = _semi()
    est = TSGS3VM(solver="sgd", n_passes=1e9, batch_size=16, block_size=8,
                  random_state=0, solver_options=SolverOptions(sgd_max_steps=30))
    with pytest.warns(ConvergenceWarning, match="sgd_max_steps"):
        est.fit(X, y)
    assert est.n_iter_ == 30


def test_check_sgd_curve_warns_past_ten_times_the_start():
    """The mean of the last tenth of the minibatch losses against ten times
    the start's loss; no scale (start <= 0) or no steps: no check."""
    def run(curve, start):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            _dsg.check_sgd_curve(TSGS3VM(), _dsg.Expansion(
                None, 0.0, len(curve), curve, start_loss=start))
        return [str(w.message) for w in got
                if issubclass(w.category, ConvergenceWarning)]

    # 20 steps: the last 2 count (mean 10.5 > 10; mean 9.5 is not)
    assert "TSGS3VM(solver='sgd')" in run([1.0] * 18 + [10.0, 11.0], 1.0)[0]
    assert run([1.0] * 18 + [9.0, 10.0], 1.0) == []
    assert run([50.0] * 18 + [1.0, 1.0], 1.0) == []  # only the end counts
    assert run([5.0], 0.4)  # one step: that step
    assert run([1e9], 0.0) == [] and run([1e9], -1.0) == []
    assert run([], 1.0) == [] and run([1e9], None) == []


def _su_pairs(n=200, d=5, seed=0):
    """Similar pairs (two consecutive rows of one class) and unlabeled rows."""
    X, y = _semi(n, d, seed)
    pos = np.flatnonzero(X[:, 0] > 0)[:40]
    return np.r_[X[pos], X[100:]], np.r_[np.ones(40, int), -np.ones(n - 100, int)]


@pytest.mark.parametrize("make, data, big, small", [
    # a polynomial kernel: no output bound, the loss curve is the check
    (lambda eta0: TSGS3VM(kernel="poly", solver="sgd", eta0=eta0,
                          max_iter=40, batch_size=64, random_state=0),
     _semi, 3.0, 1.0),
    (lambda eta0: QSGS2AUC(solver="sgd", eta0=eta0, prior=0.5, random_state=0),
     _semi, 300.0, 3.0),
    (lambda eta0: TSGSU(solver="sgd", eta0=eta0, prior=0.7, random_state=0),
     _su_pairs, 100.0, 1.0),
], ids=["TSGS3VM", "QSGS2AUC", "TSGSU"])
def test_every_sgd_estimator_warns_on_a_finite_diverged_iterate(make, data,
                                                               big, small):
    """A step size too large for the problem: finite coefficients far from
    any minimiser (check_divergence passes them), which the SGD curve
    reveals; the same fit at a step size that converges does not warn."""
    X, y = data()
    with pytest.warns(ConvergenceWarning, match="diverged"):
        est = make(big).fit(X, y)
    assert np.all(np.isfinite(est.decision_function(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        make(small).fit(X, y)


def test_a_corrected_su_risk_is_judged_on_its_mean_partial_risks():
    """correction="abs" on minibatches of 32 near prior 0.5: |noisy partial
    risk| is biased upwards (x 1/(2 prior - 1) = 17), so the mean corrected
    minibatch risk of a run whose full-data risk is 2.5 x the start's
    (measured: 0.62 against 0.25) reads 20 x; the mean partial risks,
    corrected once, do not pass the bar."""
    rng = np.random.default_rng(0)
    Xc = np.r_[rng.normal(1, 1, (4000, 5)), rng.normal(-1, 1, (4000, 5))]
    prior = 0.53
    pos = rng.random(500) < prior**2 / (prior**2 + (1 - prior) ** 2)
    S = np.concatenate([Xc[rng.choice(np.arange(4000) + (0 if c else 4000), 2)]
                        for c in pos])
    X = np.r_[S, Xc[rng.choice(8000, 2000)]]
    y = np.r_[np.ones(len(S), int), -np.ones(2000, int)]
    est = TSGSU(solver="sgd", prior=prior, correction="abs", batch_size=32,
                max_iter=3000, sigma=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(X, y)
    curve = est.objective_curve_
    assert np.mean(curve[-300:]) > 10 * curve[0]  # what the old bar read


def test_the_sgd_start_loss_is_the_objective_at_zero(monkeypatch):
    """TSGSU: the start's loss is Eq. (8) at f = 0 (a NumPy reference);
    TSGS3VM with annealing: the full-weight loss at f = 0, not the annealed
    first value of the curve."""
    import weakkernels.tsgs3vm as s3vm
    import weakkernels.tsgsu as su

    seen = []
    for mod in (s3vm, su):
        monkeypatch.setattr(mod, "check_sgd_curve",
                            lambda est, result, end=None: seen.append(result))
    X, y = _su_pairs()
    est = TSGSU(solver="sgd", prior=0.7, max_iter=5, random_state=0).fit(X, y)
    zeros = np.zeros(1)
    assert seen[-1].start_loss == pytest.approx(
        su_risk(zeros, zeros, est.prior_, est.loss, est.correction), rel=1e-12)
    X, y = _semi()
    C = 2.0
    TSGS3VM(C=C, C_star=C, solver="sgd", balance="none", anneal=0.5,
            loss="hinge", unlabeled_loss="da", max_iter=10,
            random_state=0).fit(X, y)
    n_l = int((y != -1).sum())
    # the hinge and the da loss are 1 at f = 0; C and C* on sums
    assert seen[-1].start_loss == pytest.approx(C * n_l + C * (y.size - n_l))
    assert seen[-1].objective_curve[0] < seen[-1].start_loss  # annealed


def test_qsg_min_iter_ceiling():
    X, y = _semi()
    est = QSGS2AUC(solver="sgd", min_iter=10**9, batch_size=16, block_size=8,
                   prior=0.5, random_state=0,
                   solver_options=SolverOptions(sgd_max_steps=25))
    with pytest.warns(ConvergenceWarning, match="ceiling"):
        est.fit(X, y)
    assert est.n_iter_ == 25


@pytest.mark.parametrize("kw", [{"max_features": 2**40},
                                {"block_size": 2**40, "max_features": 2**40}])
def test_feature_budget_beyond_memory_is_refused_before_allocating(kw):
    X, y = _semi()
    # refused by the pre-fit plan (weakkernels._plan), naming the parameter
    with pytest.raises(ValueError, match=r"max_features=1099511627776 \(block_size"
                       r"=\d+\) gives .* this process may use"):
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
