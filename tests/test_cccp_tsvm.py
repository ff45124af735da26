"""Tests of RampSVM (Algorithm 1.2) and CCCPTSVM (Algorithm 1.3) of paper 004."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC
from sklearn.utils._param_validation import InvalidParameterError

import weakkernels
from weakkernels import CCCPTSVM, RampSVM
from weakkernels._artifact import ModelFormatError
from weakkernels.kernels import kernel_matrix


def _noisy(n=240, d=4, flip=0.2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y_clean = (X[:, 0] + X[:, 1] > 0).astype(int)
    y = y_clean.copy()
    flip_idx = rng.random(n) < flip
    y[flip_idx] = 1 - y[flip_idx]
    return X, y, y_clean


def _g50c_like(seed, n=300, d=50, n_lab=20):
    """Two 50-d Gaussians with Bayes error 5% (the construction of g50c)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    mu = np.full(d, 1.645 / np.sqrt(d))  # |mu| = Phi^{-1}(0.95)
    X = rng.standard_normal((n, d)) + np.where(y[:, None] == 1, mu, -mu)
    perm = rng.permutation(n)
    X, y = X[perm], y[perm]
    lab = np.concatenate([np.flatnonzero(y == c)[: n_lab // 2] for c in (0, 1)])
    y_semi = np.full(n, -1)
    y_semi[lab] = y[lab]
    return X, y, y_semi


def _blobs3(seed=0, n_per=40, n_lab=4):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 4.0], [4.0, -2.0], [-4.0, -2.0]])
    X = np.vstack([c + rng.standard_normal((n_per, 2)) for c in centers])
    y = np.repeat([0, 1, 2], n_per)
    y_semi = np.full(y.size, -1)
    for c in range(3):
        y_semi[np.flatnonzero(y == c)[:n_lab]] = c
    return X, y, y_semi


# ---------------------------------------------------------------- RampSVM


def test_ramp_with_very_negative_s_is_the_hinge_svm():
    # R_s -> H_1 as s -> -inf, so Algorithm 1.2 stops after one (hinge) solve.
    X, y, _ = _noisy(150, seed=1)
    ramp = RampSVM(C=1.0, s=-1e6, sigma=0.5, tol=1e-6).fit(X, y)
    svc = SVC(C=1.0, gamma=0.5, tol=1e-6).fit(X, y)
    assert ramp.n_iter_[0] == 1
    assert np.max(np.abs(ramp.decision_function(X) - svc.decision_function(X))) < 1e-4
    assert ramp.n_support_[0] == svc.n_support_.sum()
    np.testing.assert_array_equal(ramp.support_, np.sort(svc.support_))


def test_ramp_is_sparser_than_hinge_on_noisy_labels():
    # Table 1.1: similar accuracy with far fewer support vectors.
    X, y, y_clean = _noisy(400, flip=0.2, seed=2)
    Xt, _, yt = _noisy(400, flip=0.0, seed=3)
    svc = SVC(C=1.0, gamma=0.5).fit(X, y)
    ramp = RampSVM(C=1.0, s=0.0, sigma=0.5).fit(X, y)
    assert ramp.n_iter_[0] >= 2
    assert ramp.n_support_[0] < 0.7 * svc.n_support_.sum()
    acc_svc = np.mean(svc.predict(Xt) == yt)
    acc_ramp = np.mean(ramp.predict(Xt) == yt)
    assert acc_ramp >= acc_svc - 0.03
    assert acc_ramp > 0.85


@pytest.mark.parametrize("s", [-0.5, 0.0])
def test_ramp_objective_never_increases(s):
    # Eq. 1.2 + 1.3: J(theta^{t+1}) <= J(theta^t), exact up to the SMO tol.
    X, y, _ = _noisy(250, flip=0.25, seed=4)
    ramp = RampSVM(C=3.0, s=s, sigma=0.8, tol=1e-7).fit(X, y)
    curve = ramp.objective_curve_
    assert curve.size >= 3
    assert np.all(np.diff(curve) <= 1e-7 * np.abs(curve[:-1]))
    assert curve[-1] < curve[0]


def test_ramp_subset_initialisation():
    # Sec. 1.3.5: beta^0 from an SVM on a subset; result close to the full run.
    X, y, _ = _noisy(400, flip=0.2, seed=5)
    Xt, _, yt = _noisy(400, flip=0.0, seed=6)
    full = RampSVM(C=1.0, s=-0.3, sigma=0.5).fit(X, y)
    sub = RampSVM(C=1.0, s=-0.3, sigma=0.5, init_fraction=0.25, random_state=0)
    sub.fit(X, y)
    assert abs(np.mean(sub.predict(Xt) == yt) - np.mean(full.predict(Xt) == yt)) < 0.03
    assert sub.n_support_[0] < SVC(C=1.0, gamma=0.5).fit(X, y).n_support_.sum()
    again = RampSVM(**sub.get_params()).fit(X, y)
    assert again.to_bytes() == sub.to_bytes()


def test_ramp_multiclass_one_vs_rest():
    X, y, _ = _blobs3(2)
    ramp = RampSVM(C=1.0, sigma=0.5).fit(X, y)
    F = ramp.decision_function(X)
    assert F.shape == (y.size, 3)
    np.testing.assert_array_equal(ramp.predict(X), np.argmax(F, axis=1))
    assert np.mean(ramp.predict(X) == y) > 0.95
    assert ramp.n_support_.shape == (3,) and ramp.n_iter_.shape == (3,)


@pytest.mark.parametrize("seed", range(5))
def test_warm_start_projection_is_feasible(seed):
    # Between CCCP iterations the box moves; the previous alpha is clipped
    # and the sum restored before the next SMO solve.
    from weakkernels._cccp import _make_feasible

    rng = np.random.default_rng(seed)
    n = 30
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    beta = np.where(rng.random(n) < 0.3, 2.0, 0.0)
    A = np.where(y > 0, -beta, -(2.0 - beta))
    B = np.where(y > 0, 2.0 - beta, beta)
    alpha = rng.normal(scale=2.0, size=n)
    out = _make_feasible(alpha, A, B, np.zeros(n, dtype=bool))
    assert np.all(out >= A) and np.all(out <= B)
    assert abs(out.sum()) < 1e-12
    free = np.zeros(n + 1, dtype=bool)
    free[-1] = True
    A1, B1 = np.append(A, -np.inf), np.append(B, np.inf)
    out1 = _make_feasible(np.append(alpha, 0.0), A1, B1, free)
    assert abs(out1.sum()) < 1e-12
    np.testing.assert_array_equal(out1[:-1], np.clip(alpha, A, B))


def test_warm_start_projection_survives_rounding_at_the_bound():
    """alpha - (alpha - A) rounds to one ulp below A for these values; the
    projection must still land inside the box (a ramp_svm tune trial failed
    with "starting alpha violates the box constraints" on such a case)."""
    from weakkernels._cccp import _make_feasible

    a, lo = 2.8709830748868335, -6.919079950592624
    assert a - (a - lo) < lo  # the rounding this test is about
    A, B = np.array([lo, -1.0]), np.array([5.0, 20.0])
    # sum = a + 20 exceeds the first variable's room a - lo: it gives all of
    # it, alpha_0 - (alpha_0 - A_0), and the second the rest
    alpha = np.array([a, 20.0])
    out = _make_feasible(alpha, A, B, np.zeros(2, dtype=bool))
    assert np.all(out >= A) and np.all(out <= B)
    assert abs(out.sum()) < 1e-9 * (abs(a) + 20.0)


# ---------------------------------------------------------------- CCCPTSVM


def test_tsvm_beats_supervised_svm_on_g50c_like_data():
    err_svm, err_tsvm = [], []
    for seed in range(3):
        X, y, ys = _g50c_like(seed)
        unl = ys == -1
        svc = SVC(C=1.0, gamma=0.01).fit(X[~unl], ys[~unl])
        tsvm = CCCPTSVM(C=1.0, sigma=0.01).fit(X, ys)
        err_svm.append(np.mean(svc.predict(X[unl]) != y[unl]))
        err_tsvm.append(np.mean(tsvm.predict(X[unl]) != y[unl]))
        np.testing.assert_array_equal(tsvm.transduction_[unl], tsvm.predict(X[unl]))
        np.testing.assert_array_equal(tsvm.transduction_[~unl], ys[~unl])
    assert np.mean(err_tsvm) < np.mean(err_svm) - 0.03
    assert np.mean(err_tsvm) < 0.10


@pytest.mark.parametrize("s", [-0.3, 0.0])
def test_tsvm_objective_never_increases(s):
    X, _, ys = _g50c_like(7, n=200)
    tsvm = CCCPTSVM(C=10.0, C_star=1.0, s=s, sigma=0.01, tol=1e-7).fit(X, ys)
    curve = tsvm.objective_curve_
    assert curve.size >= 2
    assert np.all(np.diff(curve) <= 1e-7 * np.abs(curve[:-1]))


def _objective_eq_1_12(est, X, ys, C, C_star, s):
    f = est.decision_function(X)
    sv = est.support_vectors_
    K = kernel_matrix(sv, sv, "rbf", sigma=est.sigma)
    a = est.dual_coef_[0]
    lab = ys != -1
    yl = np.where(ys[lab] == est.classes_[1], 1.0, -1.0)
    ramp = lambda z: np.minimum(1 - s, np.maximum(0, 1 - z))  # noqa: E731
    fu = f[~lab]
    return (
        0.5 * a @ K @ a
        + C * np.maximum(0, 1 - yl * f[lab]).sum()
        + C_star * (ramp(fu) + ramp(-fu)).sum()
    )


def test_tsvm_reported_objective_matches_eq_1_12_and_balance_holds():
    X, _, ys = _g50c_like(8, n=200)
    tsvm = CCCPTSVM(C=5.0, C_star=0.5, s=-0.3, sigma=0.01, tol=1e-7).fit(X, ys)
    J = _objective_eq_1_12(tsvm, X, ys, 5.0, 0.5, -0.3)
    assert abs(J - tsvm.objective_curve_[-1]) < 1e-6 * J
    # Eq. 1.13: mean f over unlabeled = mean label (+-1 coding) of labeled.
    lab = ys != -1
    target = np.mean(np.where(ys[lab] == tsvm.classes_[1], 1.0, -1.0))
    assert abs(tsvm.decision_function(X[~lab]).mean() - target) < 1e-5
    off = CCCPTSVM(C=5.0, C_star=0.5, sigma=0.01, balance=False).fit(X, ys)
    assert abs(off.decision_function(X[~lab]).mean() - target) > 1e-3


def test_tsvm_c_star_zero_is_the_labeled_svm_plus_balance():
    # With C* = 0 the unlabeled copies are pinned at 0 and only x_0 remains.
    X, _, ys = _g50c_like(9, n=120)
    tsvm = CCCPTSVM(C=1.0, C_star=0.0, sigma=0.01, balance=False).fit(X, ys)
    lab = ys != -1
    svc = SVC(C=1.0, gamma=0.01).fit(X[lab], ys[lab])
    assert np.max(np.abs(tsvm.decision_function(X) - svc.decision_function(X))) < 1e-3
    assert tsvm.n_iter_[0] == 1


def test_balanced_init_is_the_labeled_svm_under_eq_1_13():
    # init="balanced": theta^0 is the labeled hinge SVM solved with the free
    # alpha_0 of Eq. 1.15; checked against a dense NumPy kernel: Eq. 1.13,
    # sum(alpha) = 0 and the labeled points' KKT conditions.
    from weakkernels._cccp import _hinge_svm
    from weakkernels._smo import KernelProblem
    from weakkernels.kernels import KERNEL_CODES

    X, _, ys = _g50c_like(9, n=120)
    ys[np.flatnonzero(ys == 1)[:6]] = -1  # 10 vs 4 labeled: zeta_0 != 0
    lab = np.flatnonzero(ys != -1)
    unl = np.flatnonzero(ys == -1)
    L, U, C = lab.size, unl.size, 1.0
    Xo = X[np.concatenate([lab, unl])]
    yl = np.where(ys[lab] == 1, 1.0, -1.0)
    kp = KernelProblem(Xo, KERNEL_CODES["rbf"], 0.01, 3, 1.0, None,
                       np.arange(L, L + U))
    K = kernel_matrix(Xo, Xo, "rbf", sigma=0.01)
    opts = dict(tol=1e-9, max_iter=None, shrinking=True)
    a, b, _ = _hinge_svm(kp, np.arange(L), yl, C, x0=(L + U, yl.mean()), **opts)
    f = K[:, :L] @ a[:L] + a[-1] * K[:, L:].mean(axis=1) + b
    assert abs(f[L:].mean() - yl.mean()) < 1e-7
    assert abs(a.sum()) < 1e-10
    z, ya = yl * f[:L], yl * a[:L]
    assert np.all(ya >= -1e-12) and np.all(ya <= C + 1e-12)
    inner = (ya > 1e-8) & (ya < C - 1e-8)
    assert inner.any() and np.max(np.abs(z[inner] - 1.0)) < 1e-6
    assert np.all(z[ya <= 1e-8] >= 1.0 - 1e-6)
    assert np.all(z[ya >= C - 1e-8] <= 1.0 + 1e-6)
    # the plain labeled SVM (the default start) does not meet Eq. 1.13 here
    a0, b0, _ = _hinge_svm(kp, np.arange(L), yl, C, **opts)
    assert abs((K[L:, :L] @ a0).mean() + b0 - yl.mean()) > 1e-2


def test_balanced_init_fits_and_is_a_no_op_without_balance():
    X, _, ys = _g50c_like(9, n=120)
    kw = dict(C=1.0, C_star=0.3, sigma=0.01, s=-0.1)
    bal = CCCPTSVM(init="balanced", **kw).fit(X, ys)
    lab = ys != -1
    target = np.mean(np.where(ys[lab] == 1, 1.0, -1.0))
    assert abs(bal.decision_function(X[~lab]).mean() - target) < 1e-3
    a = CCCPTSVM(init="balanced", balance=False, **kw).fit(X, ys)
    b = CCCPTSVM(balance=False, **kw).fit(X, ys)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    with pytest.raises(InvalidParameterError):
        CCCPTSVM(init="svm").fit(X, ys)


def test_tsvm_tiny_cache_gives_identical_model():
    # 0.02 MB holds 13 kernel rows of the 201 base points (200 + x_0).
    X, _, ys = _g50c_like(12, n=200)
    big = CCCPTSVM(C=1.0, sigma=0.01).fit(X, ys)
    tiny = CCCPTSVM(C=1.0, sigma=0.01, cache_size=0.02).fit(X, ys)
    np.testing.assert_array_equal(tiny.dual_coef_, big.dual_coef_)
    np.testing.assert_array_equal(tiny.intercept_, big.intercept_)
    np.testing.assert_array_equal(tiny.objective_curve_, big.objective_curve_)


def test_tsvm_multiclass_one_vs_rest():
    X, y, ys = _blobs3()
    tsvm = CCCPTSVM(C=1.0, sigma=0.5, s=-0.3).fit(X, ys)
    np.testing.assert_array_equal(tsvm.classes_, [0, 1, 2])
    F = tsvm.decision_function(X)
    assert F.shape == (X.shape[0], 3)
    assert np.mean(tsvm.predict(X) == y) > 0.95
    P = tsvm.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all((P >= 0) & (P <= 1))
    assert len(tsvm.objective_curve_) == 3
    assert tsvm.dual_coef_.shape == (3, tsvm.support_vectors_.shape[0])


def test_predict_proba_is_calibrated_on_labeled_points():
    X, y, ys = _g50c_like(10)
    tsvm = CCCPTSVM(C=1.0, sigma=0.01).fit(X, ys)
    P = tsvm.predict_proba(X)
    assert P.shape == (X.shape[0], 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    f = tsvm.decision_function(X)
    # Platt's sigmoid is increasing in f (A < 0) on sensible data.
    assert tsvm.probA_[0] < 0
    order = np.argsort(f)
    assert np.all(np.diff(P[order, 1]) >= 0)
    np.testing.assert_allclose(np.exp(tsvm.predict_log_proba(X)), P)


# ---------------------------------------------------------------- persistence


@pytest.mark.parametrize(
    "make",
    [
        lambda: (CCCPTSVM(C=1.0, sigma=0.01), _g50c_like(11, n=150)),
        lambda: (CCCPTSVM(C=1.0, sigma=0.5, kernel="poly", degree=2), _blobs3(1)),
        lambda: (RampSVM(C=1.0, sigma=0.5), _noisy(150, seed=12)),
    ],
)
def test_determinism_and_save_load(make, tmp_path):
    est, (X, _, y) = make()
    if isinstance(est, RampSVM):
        X, y, _ = _noisy(150, seed=12)
    a = est.fit(X, y).to_bytes()
    b = type(est)(**est.get_params()).fit(X, y).to_bytes()
    assert a == b
    path = tmp_path / "model.wk"
    est.save(path)
    loaded = weakkernels.load(path)
    assert type(loaded) is type(est)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    assert loaded.to_bytes() == a
    np.testing.assert_array_equal(loaded.n_iter_, est.n_iter_)


def test_tsvm_pickle_and_clone_on_semi_supervised_data():
    # The sklearn checks that need fitting are xfailed for CCCPTSVM (they pass
    # fully labeled y); the same contracts on semi-supervised data:
    import pickle

    from sklearn.base import clone

    X, _, ys = _g50c_like(17, n=120)
    est = CCCPTSVM(sigma=0.01, max_cccp_iter=5)
    params = est.get_params()
    assert est.fit(X, ys) is est
    assert est.get_params() == params  # fit does not touch parameters
    assert est.n_features_in_ == X.shape[1]
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    fresh = clone(est)
    assert not hasattr(fresh, "classes_")
    np.testing.assert_array_equal(fresh.fit(X, ys).predict(X), est.predict(X))
    assert np.all(est.n_iter_ <= 5)


def test_string_classes_roundtrip():
    X, y, _ = _noisy(100, seed=13)
    labels = np.array(["neg", "pos"], dtype=object)[y]
    ramp = RampSVM(sigma=0.5).fit(X, labels)
    loaded = RampSVM.from_bytes(ramp.to_bytes())
    np.testing.assert_array_equal(loaded.predict(X), ramp.predict(X))
    assert set(loaded.predict(X)) <= {"neg", "pos"}


def test_corrupt_model_file(tmp_path):
    X, _, ys = _g50c_like(14, n=100)
    payload = CCCPTSVM(sigma=0.01).fit(X, ys).to_bytes()
    with pytest.raises(ModelFormatError):
        CCCPTSVM.from_bytes(payload[: len(payload) // 2])
    with pytest.raises(ModelFormatError):
        CCCPTSVM.from_bytes(b"not a model file at all")
    with pytest.raises(ModelFormatError):
        RampSVM.from_bytes(payload)  # wrong estimator type
    bad = tmp_path / "bad.wk"
    bad.write_bytes(payload[:-40])
    with pytest.raises(ModelFormatError):
        weakkernels.load(bad)


# ---------------------------------------------------------------- bad input


def test_bad_input_errors():
    X, _, ys = _g50c_like(15, n=80)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CCCPTSVM().fit(Xn, ys)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        CCCPTSVM().fit(Xi, ys)
    with pytest.raises(ValueError, match="infinity"):
        RampSVM().fit(Xi, np.arange(80) % 2)
    one_class = np.where(ys == 1, -1, ys)
    with pytest.raises(ValueError, match="one class"):
        CCCPTSVM().fit(X, one_class)
    with pytest.raises(ValueError, match="[Oo]nly one class"):
        RampSVM().fit(X, np.zeros(80, dtype=int))
    with pytest.raises(ValueError, match="No unlabeled"):
        CCCPTSVM().fit(X, np.arange(80) % 2)
    for bad in (dict(C=0.0), dict(C=-1.0), dict(sigma=0.0), dict(sigma=-2.0),
                dict(s=0.5), dict(kernel="cosine"), dict(C_star=-1.0)):
        with pytest.raises(InvalidParameterError):
            CCCPTSVM(**bad).fit(X, ys)
    with pytest.raises(InvalidParameterError):
        RampSVM(s=1.0).fit(X, np.arange(80) % 2)
    tsvm = CCCPTSVM(sigma=0.01).fit(X, ys)
    with pytest.raises(ValueError, match="features"):
        tsvm.predict(X[:, :10])
    with pytest.raises(ValueError, match="NaN"):
        tsvm.predict(Xn)


def test_smo_iteration_cap_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, y, _ = _noisy(100, seed=16)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        RampSVM(max_iter=3, sigma=0.5).fit(X, y)


def test_default_c_star_is_the_papers_heuristic_and_survives_save_load():
    """Paper 004 Sec. 1.6.1.1: U C* = L C; C_star=None now means that rule."""
    from tests._data import two_gaussians

    from weakkernels import CCCPTSVM

    X, y, _ = two_gaussians(n=120, d=3, n_labeled=20, seed=3)
    est = CCCPTSVM(C=3.0, sigma=0.5).fit(X, y)
    assert est.C_star_ == pytest.approx(3.0 * 20 / 100)
    explicit = CCCPTSVM(C=3.0, C_star=0.6, sigma=0.5).fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X),
                                  explicit.decision_function(X))
    again = CCCPTSVM.from_bytes(est.to_bytes())
    assert again.C_star_ == est.C_star_
