"""Tests of TSGSU and the SU baselines (paper 002; Bao et al. 2018; Lu et al. 2020).

Naive NumPy references of the SU risk, its gradient and one update step; finite
differences for every loss and the corrected risk; unbiasedness of the triply
stochastic gradient within a stated statistical tolerance; class-prior
estimation; accuracy against CUU; determinism; errors; scikit-learn checks.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from weakkernels import load
from weakkernels.baselines.su import CUU, SUSL
from weakkernels.class_prior import (
    estimate_class_prior,
    prior_from_mixture_proportion,
)
from weakkernels.kernels import kernel_matrix
from weakkernels.random_features import FeatureSpec
from weakkernels.tsgsu import (
    CORRECTIONS,
    LOSSES,
    TSGSU,
    split_su,
    su_loss,
    su_loss_grad,
    su_partial_risks,
    su_risk,
    su_risk_gradient,
    su_zero_one_risk,
)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def _draw(rng, n, prior, shift=1.5):
    """Two classes in 2-D: the positive class is shifted and bent (non-linear)."""
    y = rng.random(n) < prior
    X = rng.normal(size=(n, 2))
    X[:, 0] += np.where(y, shift, -shift)
    X[:, 1] += np.where(y, np.sin(2.0 * X[:, 0]), 0.0)
    return X, y.astype(int)


def _draw_class(rng, n, positive, shift=1.5):
    X = rng.normal(size=(n, 2))
    X[:, 0] += shift if positive else -shift
    if positive:
        X[:, 1] += np.sin(2.0 * X[:, 0])
    return X


def su_problem(prior=0.7, n_pairs=500, n_u=1000, n_test=2000, seed=0, shift=1.5):
    """Similar pairs by the class prior (paper 002 Eq. 2), U from p(x), a test
    set; returns ``(X, y, X_test, y_test)`` in the TSGSU layout."""
    rng = np.random.default_rng(seed)
    p_pos = prior**2 / (prior**2 + (1 - prior) ** 2)
    n_pos = int(rng.binomial(n_pairs, p_pos))
    XS = np.concatenate(
        [_draw_class(rng, 2 * n_pos, True, shift),
         _draw_class(rng, 2 * (n_pairs - n_pos), False, shift)]
    ).reshape(n_pairs, 2, 2)
    XS = XS[rng.permutation(n_pairs)].reshape(-1, 2)
    XU, _ = _draw(rng, n_u, prior, shift)
    Xt, yt = _draw(rng, n_test, prior, shift)
    X = np.concatenate([XS, XU])
    y = np.concatenate([np.ones(2 * n_pairs, int), -np.ones(n_u, int)])
    return X, y, Xt, yt


# ---------------------------------------------------------------------------
# naive references (Bao et al. 2018 Theorem 1 written out)
# ---------------------------------------------------------------------------
def naive_loss(name, z, t):
    m = z * t
    if name == "squared":
        return (m - 1.0) ** 2 / 4.0
    return max(-m, max(0.0, 0.5 - m / 2.0))


def naive_su_risk(fS, fU, prior, loss, corr):
    """Loops over points: partial risks R+ and R- (paper 002 Eq. 7-8)."""
    pm = 1.0 - prior
    pS = prior**2 + pm**2
    a = 1.0 / (2.0 * prior - 1.0)
    Rp = a * (pS * sum(naive_loss(loss, z, 1) for z in fS) / len(fS)
              - pm * sum(naive_loss(loss, z, 1) for z in fU) / len(fU))
    Rm = a * (prior * sum(naive_loss(loss, z, -1) for z in fU) / len(fU)
              - pS * sum(naive_loss(loss, z, -1) for z in fS) / len(fS))
    d = {"abs": abs, "relu": lambda r: max(r, 0.0), "none": lambda r: r}[corr]
    return d(Rp) + d(Rm)


def bao_su_risk(fS, fU, prior, loss):
    """Bao et al.'s form: pi_S E_S[L~] + E_U[L-] (uncorrected, Eq. 6-7)."""
    pm = 1.0 - prior
    pS = prior**2 + pm**2
    a = 1.0 / (2.0 * prior - 1.0)

    def Lt(z):
        return a * (naive_loss(loss, z, 1) - naive_loss(loss, z, -1))

    def Lm(z):
        return a * (-pm * naive_loss(loss, z, 1) + prior * naive_loss(loss, z, -1))

    return pS * np.mean([Lt(z) for z in fS]) + np.mean([Lm(z) for z in fU])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("corr", CORRECTIONS)
@pytest.mark.parametrize("prior", [0.7, 0.3])
def test_risk_matches_naive_reference(loss, corr, prior):
    rng = np.random.default_rng(1)
    fS, fU = rng.normal(size=9) * 2, rng.normal(size=13) * 2
    got = su_risk(fS, fU, prior, loss, corr)
    assert got == pytest.approx(naive_su_risk(fS, fU, prior, loss, corr), rel=1e-12)
    if corr == "none":
        assert got == pytest.approx(bao_su_risk(fS, fU, prior, loss), rel=1e-12)


def test_partial_risks_are_the_class_risks_in_expectation():
    """R+ -> pi+ E+[l(f, +1)] and R- -> pi- E-[l(f, -1)] (the regrouping of Bao
    et al.'s risk used by the correction): checked on 200k samples, tolerance
    0.01 (the standard error of each term is below 0.002 here)."""
    prior, n = 0.7, 200_000
    rng = np.random.default_rng(2)
    X, y = _draw(rng, n, prior)
    p_pos = prior**2 / (prior**2 + (1 - prior) ** 2)
    lab = rng.random(n) < p_pos
    XS = np.where(lab[:, None], _draw_class(rng, n, True), _draw_class(rng, n, False))

    def f(Z):
        return 0.8 * Z[:, 0] - 0.3 * Z[:, 1] + 0.2

    for loss in LOSSES:
        Rp, Rm = su_partial_risks(f(XS), f(X), prior, loss)
        true_p = prior * su_loss(loss, f(X[y == 1]), 1.0).mean()
        true_m = (1 - prior) * su_loss(loss, f(X[y == 0]), -1.0).mean()
        assert Rp == pytest.approx(true_p, abs=0.01)
        assert Rm == pytest.approx(true_m, abs=0.01)
    err = np.mean((f(X) > 0) != (y == 1))
    assert su_zero_one_risk(f(XS), f(X), prior) == pytest.approx(err, abs=0.01)


# ---------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("t", [1.0, -1.0])
def test_loss_derivative_finite_difference(loss, t):
    z = np.linspace(-3.1, 3.1, 57)  # avoids the kinks z t = +-1 of the double hinge
    h = 1e-6
    fd = (su_loss(loss, z + h, t) - su_loss(loss, z - h, t)) / (2 * h)
    np.testing.assert_allclose(su_loss_grad(loss, z, t), fd, atol=1e-7)
    # l(z, +1) - l(z, -1) = -z: Bao et al.'s condition for a convex SU risk
    np.testing.assert_allclose(su_loss(loss, z, 1.0) - su_loss(loss, z, -1.0), -z)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("corr", CORRECTIONS)
@pytest.mark.parametrize("prior", [0.8, 0.25])
def test_corrected_risk_gradient_finite_difference(loss, corr, prior):
    rng = np.random.default_rng(3)
    # Large f values: with the squared loss the partial risks of such an f are
    # negative, so the abs/ReLU branches with delta' != 1 are exercised too.
    found_negative = False
    for _trial in range(20):
        fS, fU = rng.normal(size=7) * 3, rng.normal(size=11) * 3
        if loss == "double_hinge":  # stay away from the kinks
            fS += 0.05 * (np.abs(np.abs(fS) - 1) < 0.01)
            fU += 0.05 * (np.abs(np.abs(fU) - 1) < 0.01)
        Rp, Rm = su_partial_risks(fS, fU, prior, loss)
        if min(abs(Rp), abs(Rm)) < 1e-3:
            continue
        found_negative |= min(Rp, Rm) < 0
        gS, gU = su_risk_gradient(fS, fU, prior, loss, corr)
        h = 1e-6
        for f, g in ((fS, gS), (fU, gU)):
            for i in range(f.size):
                e = np.zeros_like(f)
                e[i] = h
                fp = su_risk(fS + (e if f is fS else 0), fU + (e if f is fU else 0),
                             prior, loss, corr)
                fm = su_risk(fS - (e if f is fS else 0), fU - (e if f is fU else 0),
                             prior, loss, corr)
                assert g[i] == pytest.approx((fp - fm) / (2 * h), abs=1e-6)
    assert found_negative or loss == "double_hinge"


# ---------------------------------------------------------------------------
# unbiased triply stochastic gradient (paper 002 Eq. 18-20)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "corr, batch", [("none", 3), ("abs", None)],
    ids=["minibatch+features", "abs-full-batch+features"],
)
def test_stochastic_functional_gradient_is_unbiased(corr, batch):
    """Mean over N draws of ``sum_i G_i phi_w(x_i) phi_w(z)`` (random minibatch of
    pair and unlabeled points, random feature block) equals the exact functional
    gradient ``sum_i g_i k(x_i, z)`` of Eq. (17) at 5 test points, within 5
    standard errors of the mean. With the abs correction the sign factor is
    taken on the batch (Lu et al.), so it is unbiased for the full-batch
    gradient; the test then draws only the features."""
    rng = np.random.default_rng(4)
    prior, sigma, B, N = 0.7, 0.5, 4, 6000
    XS, XU = rng.normal(size=(6, 2)), rng.normal(size=(8, 2))
    Z = rng.normal(size=(5, 2))

    def f(X):
        return np.tanh(X[:, 0] - 0.5 * X[:, 1]) * 2.0

    gS, gU = su_risk_gradient(f(XS), f(XU), prior, "squared", corr)
    exact = gS @ kernel_matrix(XS, Z, "rbf", sigma) + gU @ kernel_matrix(XU, Z, "rbf",
                                                                       sigma)
    spec = FeatureSpec("rbf", sigma, 2, 1.0, 2, B, seed=99, dtype=np.float64)
    draws = np.empty((N, Z.shape[0]))
    for k in range(N):
        if batch is None:
            bS, bU = XS, XU
        else:
            bS = XS[rng.integers(0, len(XS), batch)]
            bU = XU[rng.integers(0, len(XU), batch)]
        hS, hU = su_risk_gradient(f(bS), f(bU), prior, "squared", corr)
        W, phase = spec.block(k)
        Xb = np.concatenate([bS, bU])
        G = np.concatenate([hS, hU])
        draws[k] = (G @ spec.features(Xb, W, phase)) @ spec.features(Z, W, phase).T
    se = draws.std(axis=0, ddof=1) / math.sqrt(N)
    assert np.all(np.abs(draws.mean(axis=0) - exact) <= 5 * se)
    # the test can fail: the gradient is far from zero at this precision
    assert np.max(np.abs(exact)) > 10 * np.max(se)


# ---------------------------------------------------------------------------
# one update step vs a naive NumPy reference (Eq. 22-23)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_training_matches_naive_reference(fit_intercept):
    """Four iterations of Eq. (22)-(23) replayed in NumPy: same minibatches
    (Philox stream keyed by the seed; the shared loop sorts each set's
    indices), same feature blocks, explicit ``alpha <- (1 - eta lam) alpha``
    and a new block ``-eta phi(X_b)^T g``."""
    X, y, Xt, _ = su_problem(n_pairs=40, n_u=60, seed=5)
    est = TSGSU(solver="sgd", prior=0.7, correction="abs", sigma=0.5, lam=1e-2,
                eta0=2.0,
                batch_size=16, block_size=6, max_iter=4, dtype="float64",
                fit_intercept=fit_intercept, random_state=7).fit(X, y)
    sim, _ = split_su(y)
    XS, XU = X[sim], X[~sim]
    spec = FeatureSpec("rbf", 0.5, 2, 1.0, 2, 6, est.seed_, np.float64)
    rng = np.random.Generator(np.random.Philox(key=est.seed_))
    blocks, alphas, b0 = [], [], [0.0]

    def phi(Xq, b):
        W, phase = blocks[b]
        return math.sqrt(2.0 / 6) * np.cos(Xq @ W + phase)

    def f(Xq):
        return sum((phi(Xq, b) @ alphas[b] for b in range(len(alphas))),
                   np.zeros(len(Xq))) + b0[0]

    for t in range(4):
        iS = np.sort(rng.integers(0, len(XS), 16))
        iU = np.sort(rng.integers(0, len(XU), 16))
        bS, bU = XS[iS], XU[iU]
        gS, gU = su_risk_gradient(f(bS), f(bU), 0.7, "squared", "abs")
        eta = 2.0 / math.sqrt(t + 1.0)
        alphas = [(1.0 - eta * 1e-2) * a for a in alphas]
        blocks.append(spec.block(t))
        Xb = np.concatenate([bS, bU])
        alphas.append(-eta * phi(Xb, t).T @ np.concatenate([gS, gU]))
        if fit_intercept:
            b0[0] -= eta * (gS.sum() + gU.sum())
    np.testing.assert_allclose(est.decision_function(Xt), f(Xt), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.coef_[0], np.concatenate(alphas), rtol=1e-9,
                               atol=1e-12)
    assert est.intercept_ == pytest.approx(b0[0], abs=1e-12)
    assert (est.intercept_ != 0.0) == fit_intercept


# ---------------------------------------------------------------------------
# solver="lbfgs": the closed-form minimizer of the same quadratic
# ---------------------------------------------------------------------------
def _su_primal(est, XS, XU):
    """Features ``psi = phi / sqrt(n_blocks)`` of the fitted expansion (so that
    ``psi psi'`` approximates k and ``||v||^2`` is the RKHS norm of
    ``f = psi v``) and the fitted weights ``v``."""
    spec, nb = est.spec_, est.n_blocks_
    W, second = spec.blocks(0, nb)
    PS = spec.features(XS, W, second) / math.sqrt(nb)
    PU = spec.features(XU, W, second) / math.sqrt(nb)
    return PS, PU, est.coef_[0].astype(np.float64) * math.sqrt(nb)


def _su_closed_form(PS, PU, prior, lam, intercept):
    """Minimizer of Eq. (7) + lam/2 ||v||^2 for ``f = psi v (+ b)``, written
    out: with the squared loss the S term is ``-pi_S a f`` and the U term
    ``f^2/4 + a f/2 + 1/4`` (Bao et al. Sec. 3.3), so the stationarity
    conditions are the linear system
    ``(PU'PU/(2 nU) + lam I) v + PU'1 b/(2 nU) = a pi_S PS'1/nS - a PU'1/(2 nU)``
    and ``mean(PU v) + b = a (2 pi_S - 1)`` (the bias row, unregularized)."""
    pS, a = prior**2 + (1 - prior) ** 2, 1.0 / (2 * prior - 1)
    nS, nU, D = PS.shape[0], PU.shape[0], PS.shape[1]
    rhs = a * pS * PS.sum(0) / nS - a * PU.sum(0) / (2 * nU)
    H = PU.T @ PU / (2 * nU) + lam * np.eye(D)
    if not intercept:
        return np.linalg.solve(H, rhs), 0.0
    H = np.block([[H, PU.sum(0)[:, None] / (2 * nU)],
                  [PU.mean(0)[None, :], np.ones((1, 1))]])
    z = np.linalg.solve(H, np.append(rhs, a * (2 * pS - 1)))
    return z[:-1], z[-1]


def _su_objective(PS, PU, v, b, prior, lam, corr):
    """Eq. (9) by the naive loops of :func:`naive_su_risk`."""
    return naive_su_risk(PS @ v + b, PU @ v + b, prior, "squared", corr) + (
        0.5 * lam * v @ v
    )


@pytest.mark.parametrize(("fit_intercept", "corr", "features"), [
    (False, "none", "fourier"), (True, "none", "fourier"),
    (False, "abs", "fourier"), (True, "abs", "fourier"),
    (False, "none", "nystroem"), (True, "abs", "nystroem")])
def test_lbfgs_is_the_closed_form_minimizer(fit_intercept, corr, features):
    """solver="lbfgs" on a tight tolerance returns the minimizer of the
    quadratic objective over the same features (seeded Fourier, or Nyström
    on 96 landmarks). With the abs correction the objective is the same
    quadratic wherever both partial risks are positive, which they are at
    this optimum (checked)."""
    X, y, _, _ = su_problem(n_pairs=200, n_u=600, seed=21)
    sim, _ = split_su(y)
    lam = 0.1  # smaller lam overfits: the partial risks go negative (see below)
    est = TSGSU(prior=0.7, correction=corr, sigma=0.5, lam=lam, block_size=8,
                max_features=96, tol=1e-10, fit_intercept=fit_intercept,
                features=features, dtype="float64", random_state=4).fit(X, y)
    assert est.features_ == features
    PS, PU, v = _su_primal(est, X[sim], X[~sim])
    assert PS.shape[1] == 96
    v_star, b_star = _su_closed_form(PS, PU, 0.7, lam, fit_intercept)
    assert min(su_partial_risks(PS @ v_star + b_star, PU @ v_star + b_star, 0.7,
                                "squared")) > 0.01
    np.testing.assert_allclose(v, v_star, rtol=0, atol=1e-5 * np.abs(v_star).max())
    assert est.intercept_ == pytest.approx(b_star, abs=1e-5)
    assert (est.intercept_ != 0.0) == fit_intercept
    J = _su_objective(PS, PU, v, est.intercept_, 0.7, lam, corr)
    J_star = _su_objective(PS, PU, v_star, b_star, 0.7, lam, corr)
    assert J == pytest.approx(J_star, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("features", ["auto", "fourier"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_lbfgs_default_budget_reaches_the_optimum(fit_intercept, features):
    """Regression test of the default solver: float32 features, default tol,
    max_iter, lam, correction ("none": Eq. 9 is the quadratic) and feature
    budget -- the default basis ("auto": Nyström, every row a landmark
    below 4096 rows) and seeded Fourier features (the _dsg.primal_features
    rule). The objective gap to the closed-form optimum is at most 1e-3 of
    the reduction from f = 0."""
    X, y, _, _ = su_problem(n_pairs=200, n_u=600, seed=22)
    sim, _ = split_su(y)
    est = TSGSU(prior=0.7, sigma=0.5, fit_intercept=fit_intercept,
                features=features, random_state=5).fit(X, y)
    assert TSGSU().features == "auto"
    lam, corr = est.lam, est.correction
    PS, PU, v = _su_primal(est, X[sim], X[~sim])
    from weakkernels._dsg import primal_features

    if features == "auto":
        assert est.features_ == "nystroem" and PS.shape[1] == len(X)
    else:
        assert PS.shape[1] == primal_features(len(X), est.block_size)
    v_star, b_star = _su_closed_form(PS, PU, 0.7, lam, fit_intercept)
    J = _su_objective(PS, PU, v, est.intercept_, 0.7, lam, corr)
    J_star = _su_objective(PS, PU, v_star, b_star, 0.7, lam, corr)
    J0 = _su_objective(PS, PU, 0 * v, 0.0, 0.7, lam, corr)
    assert J_star <= J <= J_star + 1e-3 * (J0 - J_star)
    assert est.n_iter_ < 500  # stopped on the tolerance, not the budget
    assert len(est.risk_curve_) > est.n_iter_  # one per function evaluation


# ---------------------------------------------------------------------------
# class-prior estimation (paper 002 Sec. 3.3)
# ---------------------------------------------------------------------------
def test_prior_from_mixture_proportion_inverts():
    for p in (0.05, 0.2, 0.3, 0.45):
        kappa = p / (p**2 + (1 - p) ** 2)
        assert prior_from_mixture_proportion(kappa) == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("prior", [0.8, 0.25])
def test_prior_estimation_recovers_known_prior(prior):
    """Well-separated classes (the anchor-set assumption holds up to a
    negligible overlap): |estimate - majority prior| <= 0.04 with 1500 pairs
    and 3000 unlabeled points."""
    X, y, _, _ = su_problem(prior=prior, n_pairs=1500, n_u=3000, shift=3.0, seed=6)
    sim, _ = split_su(y)
    est = estimate_class_prior(X[sim], X[~sim], sigma=0.5, n_components=128,
                               random_state=0)
    assert est["prior"] == pytest.approx(max(prior, 1 - prior), abs=0.04)


def test_prior_auto_in_estimator():
    X, y, Xt, yt = su_problem(prior=0.75, n_pairs=800, n_u=1600, shift=3.0, seed=8)
    est = TSGSU(prior="auto", sigma=0.5, random_state=0).fit(X, y)
    assert est.prior_ == pytest.approx(0.75, abs=0.04)
    assert est.score(Xt, yt) > 0.95


# ---------------------------------------------------------------------------
# accuracy
# ---------------------------------------------------------------------------
def test_tsgsu_beats_chance_and_cuu():
    """Non-linear synthetic SU problem, prior 0.7 (chance = 0.70). Same budget:
    100 iterations of 500 + 500 points; CUU on 2000 centers with Adam. The
    default L-BFGS solve of the same objective beats chance too (measured
    0.892); with more regularization than the default (lam = 1e-2: the data
    set is 5 times smaller than cod-rna's 15000 points) it beats the SGD's
    early-stopped solution (measured 0.934 vs 0.924)."""
    X, y, Xt, yt = su_problem(prior=0.7, n_pairs=1000, n_u=2000, n_test=4000, seed=9)
    acc_t = TSGSU(solver="sgd", prior=0.7, sigma=1.0, eta0=1.0, batch_size=500,
                  random_state=0).fit(X, y).score(Xt, yt)
    acc_l = TSGSU(prior=0.7, sigma=1.0, random_state=0).fit(X, y).score(Xt, yt)
    acc_l2 = TSGSU(prior=0.7, sigma=1.0, lam=1e-2, random_state=0).fit(X, y).score(
        Xt, yt)
    acc_c = CUU(prior=0.7, sigma=1.0, n_centers=2000, batch_size=500,
                random_state=0).fit(X, y).score(Xt, yt)
    assert acc_t > 0.85
    assert acc_t >= acc_c - 0.01
    assert acc_l > 0.85
    assert acc_l2 >= acc_t


def test_correction_keeps_partial_risks_from_going_negative():
    """Without the correction a flexible model drives a minibatch partial risk
    negative (the over-fitting of Lu et al. 2020; here below -1 on the training
    points); the absolute value removes the incentive: its training partial
    risks stay within 0.1 of zero."""
    X, y, _, _ = su_problem(prior=0.7, n_pairs=100, n_u=200, seed=10)
    sim, _ = split_su(y)
    mins = {}
    for corr in ("none", "abs"):
        est = TSGSU(solver="sgd", prior=0.7, correction=corr, sigma=5.0, lam=1e-5,
                    eta0=20.0,
                    batch_size=200, block_size=50, max_iter=200,
                    random_state=0).fit(X, y)
        mins[corr] = min(su_partial_risks(est.decision_function(X[sim]),
                                          est.decision_function(X[~sim]), 0.7,
                                          "squared"))
    assert mins["none"] < -1.0
    assert mins["abs"] > -0.1


def test_susl_solves_its_normal_equations():
    """The closed form zeroes the gradient of Eq. (7) + lam/2 ||alpha||^2 computed
    by the (finite-difference-checked) risk gradient."""
    X, y, _, _ = su_problem(n_pairs=100, n_u=200, seed=11)
    est = SUSL(prior=0.7, sigma=0.5, lam=1e-2, random_state=0).fit(X, y)
    sim, _ = split_su(y)
    PS = kernel_matrix(X[sim], est.centers_, "rbf", 0.5)
    PU = kernel_matrix(X[~sim], est.centers_, "rbf", 0.5)
    gS, gU = su_risk_gradient(PS @ est.alpha_, PU @ est.alpha_, 0.7, "squared", "none")
    grad = PS.T @ gS + PU.T @ gU + 1e-2 * est.alpha_
    assert np.max(np.abs(grad)) < 1e-9 * max(1.0, np.max(np.abs(PS.T @ gS)))
    assert np.max(np.abs(est.alpha_)) > 0


# ---------------------------------------------------------------------------
# probabilities, callback
# ---------------------------------------------------------------------------
def test_predict_proba_is_prior_matched():
    X, y, Xt, _ = su_problem(prior=0.3, n_pairs=300, n_u=1500, seed=12)
    est = TSGSU(prior=0.3, batch_size=300, random_state=0).fit(X, y)
    P = est.predict_proba(X[y == -1])  # 1500 <= 4096: all U points calibrate
    assert P[:, 1].mean() == pytest.approx(0.3, abs=1e-6)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    f = est.decision_function(Xt)
    p = est.predict_proba(Xt)[:, 1]
    assert np.all(np.diff(p[np.argsort(f)]) >= 0)
    np.testing.assert_array_equal(est.predict(Xt), (f > 0).astype(int))
    assert set(np.unique(est.predict(Xt))) <= {0, 1}
    np.testing.assert_array_equal(est.classes_, [0, 1])


def test_callback_sees_a_usable_model():
    X, y, Xt, _ = su_problem(n_pairs=100, n_u=200, seed=13)
    seen = []

    def cb(est, it):
        seen.append((it, est.decision_function(Xt[:5]).copy(), est.n_blocks_))

    TSGSU(solver="sgd", prior=0.7, batch_size=50, max_iter=20, callback=cb,
          callback_every=5, random_state=0).fit(X, y)
    assert [s[0] for s in seen] == [5, 10, 15, 20]
    assert [s[2] for s in seen] == [5, 10, 15, 20]
    assert not np.allclose(seen[0][1], seen[-1][1])
    # L-BFGS: one call after the solve, with the final model
    seen.clear()
    est = TSGSU(prior=0.7, block_size=8, callback=cb, random_state=0).fit(X, y)
    assert [s[0] for s in seen] == [est.n_iter_]
    np.testing.assert_array_equal(seen[0][1], est.decision_function(Xt[:5]))
    assert len(est.fit_time_curve_) == 1


# ---------------------------------------------------------------------------
# determinism and artifacts
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [TSGSU, CUU, SUSL])
def test_fit_twice_identical_bytes_and_save_load(cls, tmp_path):
    X, y, Xt, _ = su_problem(n_pairs=100, n_u=200, seed=14)
    kw = {"n_centers": 50} if cls is not TSGSU else {}
    a = cls(prior=0.7, random_state=3, **kw).fit(X, y)
    b = cls(prior=0.7, random_state=3, **kw).fit(X, y)
    assert a.to_bytes() == b.to_bytes()
    a.save(tmp_path / "m.zip")
    c = load(tmp_path / "m.zip")
    assert type(c) is cls
    np.testing.assert_array_equal(a.decision_function(Xt), c.decision_function(Xt))
    np.testing.assert_array_equal(a.predict_proba(Xt), c.predict_proba(Xt))


@pytest.mark.parametrize("features", ["auto", "fourier"])
def test_thread_count_does_not_change_the_model(features):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba was started with one thread")
    X, y, Xt, _ = su_problem(n_pairs=500, n_u=3000, seed=15)
    Xbig = np.repeat(Xt, 2, axis=0)  # large enough for the parallel kernels
    old = numba.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            numba.set_num_threads(n)
            est = TSGSU(prior=0.7, block_size=64, max_iter=40,
                        features=features, random_state=0).fit(X, y)
            out.append((est.to_bytes(), est.decision_function(Xbig)))
    finally:
        numba.set_num_threads(old)
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [TSGSU, CUU, SUSL])
@pytest.mark.parametrize("prior, match", [(0.5, "prior=0.5"), (0.0, "prior"),
                                          (1.0, "prior")])
def test_bad_prior(cls, prior, match):
    X, y, _, _ = su_problem(n_pairs=20, n_u=40)
    with pytest.raises(ValueError, match=match):
        cls(prior=prior).fit(X, y)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda y: np.concatenate([[1], y]), "malformed pairs"),  # odd pair count
        (lambda y: np.where(y == 1, 2, y), "malformed pairs"),  # pair label 2
        (lambda y: np.concatenate([[1, -1], y[:-1]]), "malformed pairs"),  # split pair
        (lambda y: -np.ones_like(y), "No similar pairs"),
        (lambda y: np.ones_like(y), "No unlabeled"),
        (lambda y: np.where(y == 1, 0.5, y), "Unknown label type"),
    ],
    ids=["odd", "label2", "straddle", "no-pairs", "no-unlabeled", "continuous"],
)
def test_malformed_labels(edit, match):
    X, y, _, _ = su_problem(n_pairs=20, n_u=40)
    y2 = edit(y)
    X2 = X if len(y2) == len(X) else np.concatenate([X[:1], X])
    with pytest.raises(ValueError, match=match):
        TSGSU(prior=0.7).fit(X2, y2)


def test_nan_inf_and_feature_count():
    X, y, Xt, _ = su_problem(n_pairs=20, n_u=40)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            TSGSU(prior=0.7).fit(Xb, y)
    yb = y.astype(float)
    yb[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TSGSU(prior=0.7).fit(X, yb)
    est = TSGSU(prior=0.7, max_iter=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((3, 5)))
    Xt = Xt.copy()
    Xt[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.predict(Xt)


def test_step_size_too_large_is_rejected():
    X, y, _, _ = su_problem(n_pairs=20, n_u=40)
    with pytest.raises(ValueError, match="eta0"):
        TSGSU(solver="sgd", prior=0.7, eta0=100.0, lam=0.1).fit(X, y)
    # the step size belongs to the SGD solver only
    TSGSU(prior=0.7, eta0=100.0, lam=0.1, max_iter=5).fit(X, y)


def test_auto_prior_with_too_few_unlabeled_points_is_refused_clearly():
    """RELIABILITY.md, section "Numerics", row 4: numpy's quantile message before."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.r_[np.ones(20, int), -np.ones(60, int)]
    with pytest.raises(ValueError, match="at least 100 unlabeled points"):
        TSGSU(prior="auto", random_state=0).fit(X, y)


@pytest.mark.parametrize(("fit_intercept", "features"), [
    (False, "fourier"), (True, "fourier"), (False, "nystroem")])
def test_direct_solve_is_the_closed_form_and_the_lbfgs_optimum(fit_intercept,
                                                               features):
    """solver="direct" (normal equations accumulated chunk by chunk,
    Cholesky) equals the naive NumPy solve of the same quadratic and
    L-BFGS's optimum on a tight tolerance; its objective is the naive one."""
    X, y, _, _ = su_problem(n_pairs=200, n_u=600, seed=23)
    sim, _ = split_su(y)
    lam = 0.1
    kw = dict(prior=0.7, sigma=0.5, lam=lam, block_size=8, max_features=96,
              fit_intercept=fit_intercept, features=features, dtype="float64",
              random_state=4)
    direct = TSGSU(solver="direct", **kw).fit(X, y)
    again = TSGSU(solver="direct", **kw).fit(X, y)
    np.testing.assert_array_equal(again.coef_, direct.coef_)  # bit for bit
    PS, PU, v = _su_primal(direct, X[sim], X[~sim])
    v_star, b_star = _su_closed_form(PS, PU, 0.7, lam, fit_intercept)
    np.testing.assert_allclose(v, v_star, rtol=0, atol=1e-9 * np.abs(v_star).max())
    assert direct.intercept_ == pytest.approx(b_star, abs=1e-9)
    J = _su_objective(PS, PU, v, direct.intercept_, 0.7, lam, "none")
    assert direct.objective_curve_[-1] == pytest.approx(J, rel=1e-9)
    lbfgs = TSGSU(tol=1e-10, **kw).fit(X, y)
    assert lbfgs.objective_curve_[-1] >= J - 1e-12 * abs(J)
    np.testing.assert_allclose(lbfgs.decision_function(X),
                               direct.decision_function(X), atol=1e-4)
    with pytest.raises(ValueError, match="direct"):
        TSGSU(solver="direct", correction="abs").fit(X, y)
