"""QSG-S2AUC: semi-supervised AUC optimization by quadruply stochastic gradients.

Shi, Gu, Li, Geng, Huang, *Quadruply Stochastic Gradients for Large Scale
Nonlinear Semi-Supervised AUC Optimization*, IJCAI 2019 (paper 003).

Objective, paper 003 Eq. (8)-(9), with the square pairwise loss
``l(u, v) = (1 - u + v)^2`` of Sec. 6.1::

    R_PNU(f) = (1 - gamma) (R_PU + R_NU - 1/2) + gamma R_PN
    L(f)     = R_PNU(f) + lam / 2 ||f||_H^2

``R_PN`` (Eq. 2) ranks labeled positives above labeled negatives, ``R_PU``
(Eq. 3) labeled positives above unlabeled points, ``R_NU`` (Eq. 4) unlabeled
points above labeled negatives. Eq. (5)-(7) (after Xie & Li 2018) show
``R_PU + R_NU - 1/2 = R_PN`` for the 0-1 loss *without the class prior*, which is
why the paper's training needs no prior. For the square loss the identity holds
up to a within-class spread term: ``R_PU + R_NU = R_PN + 1 + 2 pi Var_+(f) +
2 (1 - pi) Var_-(f)``, i.e. the PU/NU part also pulls each class together. We
implement Eq. (8) as printed; ``prior`` is used only to place the decision
threshold (see :class:`QSGS2AUC`).

With ``solver="sgd"`` every iteration samples a positive, a negative and an
unlabeled minibatch and a fresh block of random features -- the four sources of
randomness of Eq. (13) -- and applies the update Eq. (14)-(16) (Algorithm 1)
with step ``eta_t = theta/t`` (Lemma 2; an optional offset ``t0`` gives
``theta/(t + t0)``). The default ``solver="lbfgs"`` minimizes the same Eq. (9)
-- a convex quadratic in the weights of a fixed expansion, Nyström landmarks
by default (``features="auto"``) or the same seeded features
(``features="fourier"``) -- by L-BFGS. Both run the shared loop
:func:`weakkernels._dsg.fit_expansion`; prediction regenerates Fourier
features from their seeds (Algorithm 2), Nyström ones from the stored
landmarks.

The exact-kernel baselines of paper 003 (PNU-AUC, the supervised kernel AUC and
the exact minimizer of Eq. (8)-(9)) are in :mod:`weakkernels.baselines.auc`;
they share :class:`_AUCRankerMixin` with QSG-S2AUC.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.utils._param_validation import Interval

from weakkernels._artifact import register
from weakkernels._base import FitData, RandomFeatureClassifier
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._constraints import AUC_GAMMA, CLASS_PRIOR
from weakkernels._dask import is_dask_collection, map_rows
from weakkernels._dsg import (
    FunctionalModel,
    Problem,
    check_sgd_curve,
    seeded_sample,
)
from weakkernels._validation import (
    LabeledScoreMixin,
    check_fitted_model,
    validate_semi_supervised,
)
from weakkernels.random_features import as_compute_rows

# Unlabeled points on which the threshold (prior quantile) is computed.
_THRESHOLD_SAMPLE = 4096
# Warn when the labeled-fraction prior estimate has a standard error above this.
_PRIOR_SE_WARN = 0.05


# ----------------------------------------------------------------- the risk --
def square_pair_loss(u, v):
    """Square pairwise loss ``l(u, v) = (1 - u + v)^2`` (paper 003 Sec. 6.1):
    ``u`` is the score that should rank higher."""
    return (1.0 - np.asarray(u) + np.asarray(v)) ** 2


def square_pair_loss_grad(u, v):
    """``(dl/du, dl/dv)`` of :func:`square_pair_loss`: the ``l'_1 .. l'_6`` of
    paper 003 Eq. (11) for the square loss."""
    r = 1.0 - np.asarray(u) + np.asarray(v)
    return -2.0 * r, 2.0 * r


def _pair_mean(a, b):
    """Mean of ``(1 - a_i + b_j)^2`` over all pairs, in O(len(a) + len(b)):
    ``(1 - mean a + mean b)^2 + Var a + Var b``."""
    return (1.0 - a.mean() + b.mean()) ** 2 + a.var() + b.var()


def _pair_grad(a, b):
    """Gradient of :func:`_pair_mean` w.r.t. ``a`` and ``b`` (all-pairs sums of
    ``l'`` in O(len(a) + len(b)))."""
    ga = -2.0 / a.size * (1.0 - a + b.mean())
    gb = 2.0 / b.size * (1.0 - a.mean() + b)
    return ga, gb


def pnu_auc_risk(fP, fN, fU, gamma: float) -> float:
    """Empirical PNU AUC risk, paper 003 Eq. (8) with the square loss.

    ``R_PN``, ``R_PU`` and ``R_NU`` (Eq. 2-4) are means over all pairs of the
    given positive, negative and unlabeled scores.
    """
    fP, fN, fU = (np.asarray(v, dtype=np.float64) for v in (fP, fN, fU))
    r_pn = _pair_mean(fP, fN)
    r_pu = _pair_mean(fP, fU)
    r_nu = _pair_mean(fU, fN)
    return (1.0 - gamma) * (r_pu + r_nu - 0.5) + gamma * r_pn


def pnu_auc_risk_grad(fP, fN, fU, gamma: float):
    """Derivative of :func:`pnu_auc_risk` w.r.t. each score: ``(gP, gN, gU)``.

    These are the per-point weights of the stochastic functional gradient,
    paper 003 Eq. (12) summed over all pairs of a minibatch: the functional
    gradient is ``sum_i g_i k(x_i, .)``, and with random features Eq. (13)
    ``sum_i g_i phi(x_i) phi(.)``. With one point per set it is exactly
    ``gamma (l'_1, l'_2) + (1 - gamma) (l'_3 + 0, l'_6, l'_4 + l'_5)``.
    """
    fP, fN, fU = (np.asarray(v, dtype=np.float64) for v in (fP, fN, fU))
    gP_pn, gN_pn = _pair_grad(fP, fN)
    gP_pu, gU_pu = _pair_grad(fP, fU)
    gU_nu, gN_nu = _pair_grad(fU, fN)
    gP = gamma * gP_pn + (1.0 - gamma) * gP_pu
    gN = gamma * gN_pn + (1.0 - gamma) * gN_nu
    gU = (1.0 - gamma) * (gU_pu + gU_nu)
    return gP, gN, gU


def pnu_auc_risk_of_moments(totals, ms, gamma: float):
    """:func:`pnu_auc_risk` from the sums ``(sum f, sum f^2)`` of the scores
    of P, N and U (``ms`` rows each), and its derivatives w.r.t. those sums
    (``Problem.moments``; the chain rule gives :func:`pnu_auc_risk_grad`).
    The all-pairs means of the square loss depend on the scores only through
    these moments, so on a level that streams its features the L-BFGS
    solver makes one pass over the rows per evaluation and no score leaves
    its chunk.

    With ``mu`` a set's mean and ``S2`` its sum of squares, the pair mean of
    ``(a, b)`` is ``r^2 + S2_a / n_a - mu_a^2 + S2_b / n_b - mu_b^2``, ``r = 1
    - mu_a + mu_b``."""
    mu = [t[0] / n for t, n in zip(totals, ms, strict=True)]
    d_mu, d_s2 = np.zeros(3), np.zeros(3)
    value = -0.5 * (1.0 - gamma)

    def pair(i, j, weight):
        """Add ``weight`` times the pair mean of sets ``(i, j)`` (``i``
        ranked above ``j``)."""
        nonlocal value
        r = 1.0 - mu[i] + mu[j]
        var_i = totals[i][1] / ms[i] - mu[i] ** 2
        var_j = totals[j][1] / ms[j] - mu[j] ** 2
        value += weight * (r * r + var_i + var_j)
        d_mu[i] += weight * (-2.0 * r - 2.0 * mu[i])
        d_mu[j] += weight * (2.0 * r - 2.0 * mu[j])
        d_s2[i] += weight / ms[i]
        d_s2[j] += weight / ms[j]

    P, N, U = 0, 1, 2
    pair(P, N, gamma)
    pair(P, U, 1.0 - gamma)
    pair(U, N, 1.0 - gamma)
    return value, [np.array([d_mu[k] / ms[k], d_s2[k]]) for k in range(3)]


def step_theta(eta0: float, t: int, t0: float = 0.0) -> float:
    """Step size ``eta_t = theta / (t + t0)``, ``t`` from 1.

    ``t0 = 0`` is the ``theta / t`` of paper 003 Lemma 2 / Theorem 1. An offset
    ``t0 > 0`` (as in Dai et al. 2014's experiments) keeps the first steps from
    overshooting when ``theta`` is large; it changes only constants of the
    O(1/t) analysis.
    """
    return eta0 / (t + t0)


# --------------------------------------------------- shared AUC behaviour --
class _AUCRankerMixin(LabeledScoreMixin):
    """predict / predict_proba / score shared by QSG-S2AUC and the baselines.

    A pairwise loss only sees differences ``f(x) - f(x')``: the scores have no
    natural zero. ``decision_function`` therefore returns ``f(x) - threshold_``
    with ``threshold_`` the ``(1 - prior_)`` quantile of ``f`` on the unlabeled
    training points (on the labeled ones when there are none), so that a
    fraction ``prior_`` of the unlabeled data is predicted positive and
    ``predict`` is the sign of ``decision_function``.
    """

    def _split_classes(self, y, labeled, classes, require_unlabeled=True):
        """P and N masks; raise for more than two classes or no unlabeled.

        The class count is checked before the unlabeled set so that a
        multiclass y gets the binary-only message in either case.
        """
        if classes.size != 2:
            raise ValueError(
                "Only binary classification is supported: "
                f"{type(self).__name__} ranks two classes (AUC); got "
                f"{classes.size} labeled classes {classes.tolist()}."
            )
        if require_unlabeled and labeled.all():
            raise ValueError(
                "No unlabeled samples: mark them with y == -1 (the PU and NU "
                "terms of paper 003 Eq. (8) need some)."
            )
        pos = labeled & (y == classes[1])
        neg = labeled & (y == classes[0])
        return pos, neg

    def _resolve_prior(self, n_pos: int, n_neg: int) -> float:
        """``prior`` if given, else the labeled class fraction.

        The labeled fraction is unbiased for ``pi`` when labels are missing
        completely at random (the setting of paper 003 Sec. 3.2, and of its
        protocol: 200 points drawn at random are labeled). Its standard error
        ``sqrt(pi (1 - pi) / n_l)`` is reported in a warning when above 0.05.
        """
        if self.prior is not None:
            return float(self.prior)
        n_l = n_pos + n_neg
        pi = n_pos / n_l
        se = math.sqrt(pi * (1.0 - pi) / n_l)
        if se > _PRIOR_SE_WARN:
            warnings.warn(
                f"prior=None: using the labeled fraction {pi:.3f} of class "
                f"{self.classes_[1]!r} as the class prior; with {n_l} labeled "
                f"points its standard error is {se:.3f}. Pass prior= if known "
                "(it only sets the decision threshold of predict).",
                UserWarning,
                stacklevel=3,
            )
        return float(min(max(pi, 1e-3), 1.0 - 1e-3))

    def _quantile_threshold(self, f_ref: np.ndarray) -> float:
        return float(np.quantile(f_ref, 1.0 - self.prior_))

    def _fit_platt(self, XL, y01):
        # XL: training rows, validated with X (re-validating the ndarray
        # warned "X does not have valid feature names" after fit(DataFrame))
        fL = self._decision(XL)
        # non-finite -> ValueError naming the kernel; constant -> warning
        check_fitted_model(self, fL, fL)
        self.platt_ = np.array(fit_platt(fL, y01))

    def predict(self, X):
        """Class labels: ``classes_[1]`` where ``decision_function > 0``."""
        if is_dask_collection(X):
            return map_rows(self.predict, X, None)
        f = self.decision_function(X)  # checks fitted before classes_ is read
        return self.classes_[(f > 0).astype(int)]

    def predict_proba(self, X):
        """Probabilities by Platt scaling fitted on the labeled training
        points' decision values (the only points with known labels)."""
        if is_dask_collection(X):
            return map_rows(self.predict_proba, X, 2)
        p = platt_proba(self.decision_function(X), *self.platt_)
        return np.column_stack([1.0 - p, p])

    def auc(self, X, y, sample_weight=None):
        """AUC of ``decision_function`` on the labeled samples of ``(X, y)``
        (Eq. (3) of paper 003 estimated on them; ``y == -1`` ignored, both
        classes needed)."""
        X, yl, sw = self._labeled(X, y, sample_weight)
        if yl.size == 0 or np.unique(yl).size < 2:
            raise ValueError("auc needs labeled samples of both classes.")
        f = self.decision_function(X)
        return float(roc_auc_score(yl == self.classes_[1], f, sample_weight=sw))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = False
        return tags


# ------------------------------------------------------------- QSG-S2AUC ---
@register
class QSGS2AUC(_AUCRankerMixin, RandomFeatureClassifier):
    """Semi-supervised AUC maximization on random or Nyström features (paper 003).

    Minimizes paper 003 Eq. (9): the PNU AUC risk Eq. (8) with the square
    pairwise loss plus ``lam / 2 ||f||_H^2``, over an expansion of random
    features generated from ``(seed, block)`` (prediction regenerates the
    features from their seeds, Algorithm 2) or, by default with L-BFGS, of
    Nyström features on landmarks drawn from the training rows
    (``features``). Both solvers run the one training loop of the
    random-feature estimators,
    :func:`weakkernels._dsg.fit_expansion`:

    * ``solver="sgd"`` is Algorithm 1: iteration ``t`` samples
      ``batch_size`` positives, negatives and unlabeled points (with
      replacement; fewer when a set is smaller) and a fresh block of
      ``block_size`` random features, forms the quadruply stochastic
      functional gradient Eq. (13) over all P-N, P-U and U-N pairs of the
      minibatches, and applies Eq. (14)-(16)::

          f_{t+1} = (1 - eta_t lam) f_t - eta_t zeta_t,   eta_t = eta0 / (t + t0).

      With ``batch_size=1``, ``block_size=1`` and ``t0=0`` this is the
      printed algorithm with one triplet per step (our feature is
      ``sqrt(2) cos(w'x + b)`` rather than the paper's ``[cos, sin]`` pair
      Eq. (10); both are unbiased for k), i.e. ``QSGS2AUC(solver="sgd",
      batch_size=1, block_size=1, t0=0, eta0=theta, lam=lam)``. The minibatch
      estimate over all pairs stays unbiased because the P, N and U
      minibatches are drawn independently.
    * ``solver="lbfgs"`` (default) minimizes the same Eq. (9) over a fixed
      expansion (``features``: Nyström by default, or the first
      ``max_features`` of the same seeded features), in its primal, by
      L-BFGS over every row of P, N and U (nested seeded samples from 4096
      rows per set up to all; the all-pairs means are computed in O(n) by
      :func:`pnu_auc_risk`). With the square pairwise loss Eq. (8) is a
      convex quadratic in ``f``, so the primal is a convex quadratic of the
      weights: L-BFGS solves exactly the problem the stochastic steps
      approximate, whose ``theta / t`` schedule with the paper's ``lam``
      stops short of it (docs/fidelity.md, paper 003's departure 1).

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``; exactly two
    labeled classes are required, ``classes_[1]`` is the positive class.

    Parameters
    ----------
    gamma : float in [0, 1], default=0.5
        Trade-off of Eq. (8): weight of the supervised PN risk; ``1 - gamma``
        weighs the PU + NU part. ``gamma=1`` ignores the unlabeled data.
    prior : float in (0, 1) or None, default=None
        Positive class prior ``pi``. Training does not use it (Eq. 8 is
        prior-free); it sets the threshold: ``predict`` labels positive the
        top ``prior`` fraction of the unlabeled training scores. None estimates
        it by the labeled class fraction (unbiased when labels are missing at
        random; a warning is issued when its standard error exceeds 0.05).
    lam : float > 0, default=1e-3
        RKHS regularization ``lambda`` of Eq. (9). 1e-3 at the default width
        ``"scale"`` gains on the mean AUC of every set measured, 1e-2 loses
        ijcnn1; at a tuned width 1e-4 wins (docs/fidelity.md, paper 003's
        departure 2). With very few labels and a flexible kernel the exact
        minimizer overfits (as ExactS2AUC does): raise lam there.
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float or "scale", default="scale"
        Kernel width, ``exp(-sigma ||x - x'||^2)`` (paper 003 Sec. 6.1);
        ``"scale"`` is ``1 / (d Var X)`` over the training rows, as
        ``SVC(gamma="scale")`` and the pipeline's rule. The value used is
        ``sigma_``. The default was the fixed 1.0, at chance on standardised
        rows of many features (docs/fidelity.md, paper 003's departure 6).
    degree, coef0 : polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        See above.
    tol : float, default=1e-5
        ``solver="lbfgs"``: stop when the largest gradient entry falls below
        ``tol`` times its value at ``f = 0``.
    batch_size : int, default=256
        ``solver="sgd"``: size of each of the P, N and U minibatches.
    block_size : int, default=32
        Random features per block (``solver="sgd"``: drawn per iteration, the
        fourth source of randomness).
    n_passes : float, default=1.0
        ``solver="sgd"``: iterations ``T = ceil(n_passes * n_u / batch_size)``
        (one pass over the unlabeled data); at least ``min_iter``.
    min_iter : int, default=300
        ``solver="sgd"``: lower bound on ``T`` so that small unlabeled sets
        still get enough steps for the ``theta / t`` schedule.
    max_iter : int or None, default=None
        ``solver="sgd"``: overrides ``n_passes``/``min_iter`` when given;
        ``solver="lbfgs"``: L-BFGS iterations at most (None: 500).
    eta0 : float, default=100.0
        ``solver="sgd"``: ``theta`` of the step ``eta_t = theta / (t + t0)``;
        the first step is ``eta0 / (1 + t0)`` (about 2 by default).
        ``eta0 * lam / (1 + t0)`` must be at most 2, else ``1 - eta_t lam``
        falls below -1 and the update amplifies ``f``. Paper 003's Theorem 1
        asks for ``theta lam in (1, 2)``; with a small ``lam`` this is not
        met and the method behaves as ``1/t`` SGD with early stopping.
    t0 : float, default=50.0
        ``solver="sgd"``: step offset. ``t0=0`` is paper 003's ``theta / t``
        exactly; with it and a large ``theta`` the first steps overshoot
        (docs/benchmarks/design_notes.md, "The estimators' defaults").
    features : {"fourier", "nystroem", "auto"}, default="auto"
        The basis of the fixed expansion on which Eq. (9) is minimized.
        ``"fourier"``: the paper's seeded random Fourier features (Eq. 10;
        the model file holds seeds and coefficients only). ``"nystroem"``
        (``solver="lbfgs"``, RBF kernel): Eq. (9) over ``span{k(z_j, .)}``
        of landmarks ``z_j`` drawn from the training rows -- the labeled
        positives and negatives first (all of them while they are at most
        half the landmarks), then unlabeled rows -- by the whitened Nyström
        features of :class:`weakkernels.random_features.NystromSpec`; the
        model file stores the landmarks. Landmark count: ``max_features`` if
        given, else every row up to 4096 rows (then the solve is the exact
        minimizer of Eq. 8-9, ExactS2AUC's, up to the jitter) and
        :func:`weakkernels._dsg.nystroem_size` beyond. ``"auto"``: Nyström
        where it applies (:func:`weakkernels._dsg.resolve_basis`, the rule
        of TSGS3VM), else Fourier. ``solver="sgd"`` draws fresh Fourier
        blocks (Algorithm 1) and refuses ``"nystroem"``. The basis used is
        ``features_``.
        Why ``"auto"`` by default: on many rows Nyström's AUC stays above
        the Fourier default's, also at equal CPU, and on the paper 003
        protocol it is level or better at several times the fit CPU of
        those small fits (docs/fidelity.md, paper 003's departure 7).
    max_features : int or None, default=None
        Feature budget. ``solver="lbfgs"``: the expansion's size (None:
        :func:`weakkernels._dsg.primal_features`, 1024 to ~5 000, growing
        with n; with Nyström features :func:`weakkernels._dsg.nystroem_size`).
        ``solver="sgd"``:
        once reached no block is added and steps
        update the existing blocks cyclically (None: unbounded, as the paper).
    dtype : {"float32", "float64"}, default="float32"
    random_state : int, RandomState instance or None
        Seeds the minibatch stream, the row samples and the feature blocks.
    callback : callable or None
        ``callback(estimator, n_iter)`` every ``callback_every`` SGD
        iterations, or once after the L-BFGS solve, with the estimator usable
        for ``decision_function``/``score``.
    callback_every : int, default=10
    solver_options : SolverOptions or None, default=None
        The solvers' tunables (:class:`weakkernels.SolverOptions`: sample
        levels, feature-count rules, caches, caps); None: the defaults.

    Attributes
    ----------
    classes_ : ndarray of shape (2,), the real classes (never -1).
    coef_ : ndarray of shape (1, ``n_features_model_``)
        The expansion's coefficients.
    spec_ : FeatureSpec (the seeds and layout that regenerate the features)
        or NystromSpec (the landmarks).
    features_ : str, the basis used ("fourier" or "nystroem").
    threshold_ : float, the ``(1 - prior_)`` quantile of ``f`` on unlabeled data.
    prior_ : float, the prior used for the threshold.
    sigma_ : float, the kernel width used.
    n_iter_ : SGD steps or L-BFGS iterations.
    objective_curve_ : the minibatch risk Eq. (8) of each SGD step, or the
        final objective Eq. (9) of the L-BFGS solve.
    n_blocks_, seed_, platt_, fit_time_curve_

    See Also
    --------
    weakkernels.baselines.auc.ExactS2AUC : the exact-kernel minimizer of the
        same objective.
    weakkernels.baselines.auc.SupervisedKernelAUC : the labeled rows only.

    References
    ----------
    .. [1] Shi, W., Gu, B., Li, X., Huang, H. Quadruply stochastic gradients
       for large scale nonlinear semi-supervised AUC optimization. IJCAI 2019.
    .. [2] Xie, Z., Li, M. Semi-supervised AUC optimization without guessing
       labels of unlabeled data. AAAI 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from weakkernels import QSGS2AUC
    >>> X, y = make_classification(n_samples=400, n_features=5, random_state=0)
    >>> y_semi = np.full(400, -1)
    >>> y_semi[:40] = y[:40]
    >>> clf = QSGS2AUC(prior=0.5, random_state=0).fit(X, y_semi)
    >>> bool(clf.auc(X[40:], y[40:]) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "block_size", "max_features", "lam", "n_passes",
        gamma=AUC_GAMMA,
        prior=CLASS_PRIOR,
        min_iter=[Interval(Integral, 1, None, closed="left")],
        t0=[Interval(Real, 0, None, closed="left")],
    )

    def __init__(
        self,
        *,
        gamma=0.5,
        prior=None,
        lam=1e-3,
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        solver="lbfgs",
        tol=1e-5,
        batch_size=256,
        block_size=32,
        n_passes=1.0,
        min_iter=300,
        max_iter=None,
        eta0=100.0,
        t0=50.0,
        features="auto",
        max_features=None,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.gamma = gamma
        self.prior = prior
        self.lam = lam
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.block_size = block_size
        self.n_passes = n_passes
        self.min_iter = min_iter
        self.max_iter = max_iter
        self.eta0 = eta0
        self.t0 = t0
        self.features = features
        self.max_features = max_features
        self.solver_options = solver_options
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every

    # -- fit hooks (RandomFeatureClassifier) --------------------------------
    def _fit_data(self, X, y) -> FitData:
        """The positive, negative and unlabeled rows: two class labels
        (``classes_[1]`` is positive) and ``-1`` on unlabeled rows, both
        classes and at least one unlabeled row required."""
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, require_unlabeled=False, accept_sparse=True
        )
        self.classes_ = classes
        pos, neg = self._split_classes(y, labeled, classes)
        if self.solver == "sgd" and self.eta0 * self.lam / (1.0 + self.t0) > 2.0:
            raise ValueError(
                f"eta0 * lam / (1 + t0) = "
                f"{self.eta0 * self.lam / (1.0 + self.t0):g} > 2: the shrink "
                "factor 1 - eta_t lam of Eq. (16) would fall below -1 and "
                "amplify f. Lower eta0 or lam, or raise t0."
            )
        # Rows are gathered from X by index (no copy of the sets).
        idx_p, idx_n = np.flatnonzero(pos), np.flatnonzero(neg)
        idx_u = np.flatnonzero(~labeled)
        self.prior_ = self._resolve_prior(idx_p.size, idx_n.size)
        # Nyström landmarks: the labeled rows (positives and negatives) first,
        # up to half, then unlabeled ones
        return FitData(
            X=X, set_sizes=(idx_p.size, idx_n.size, idx_u.size),
            n_columns=X.shape[1], first=(X, np.flatnonzero(labeled)),
            rest=(X, idx_u), idx=(idx_p, idx_n, idx_u), labeled=labeled, y=y)

    def _make_problem(self, data: FitData):
        X, (idx_p, idx_n, idx_u) = data.X, data.idx
        # Fixed unlabeled sample for the threshold (identical at every callback).
        data.XU_thr = as_compute_rows(
            X[idx_u[seeded_sample(idx_u.size, _THRESHOLD_SAMPLE, data.seed)]],
            np.dtype(self.dtype)
        )
        gamma, eta0, t0 = float(self.gamma), float(self.eta0), float(self.t0)

        def loss(fs, idx, sizes, w):
            """Eq. (8) and its per-point derivatives (the weights of Eq. 13):
            all-pairs means, so a minibatch's value is already unbiased. The
            convex loss has no annealed part: ``w`` is unused."""
            fP, fN, fU = (f[:, 0] for f in fs)
            gP, gN, gU = pnu_auc_risk_grad(fP, fN, fU, gamma)
            value = pnu_auc_risk(fP, fN, fU, gamma)
            return value, [gP[:, None], gN[:, None], gU[:, None]]

        # The pairwise loss sees only differences of scores: no intercept.
        problem = Problem(
            [(X, idx_p), (X, idx_n), (X, idx_u)], 1, loss, lam=float(self.lam),
            # L-BFGS: one pass per evaluation where features stream
            moments=None if self.solver == "sgd" else (
                lambda totals, ms, w: pnu_auc_risk_of_moments(totals, ms, gamma)),
            options=data.opts,
        )
        return problem, dict(step=lambda t, T: step_theta(eta0, t + 1, t0))

    def _set_offset(self, model: FunctionalModel, b, data: FitData) -> None:
        """The threshold on the fixed unlabeled sample."""
        self.threshold_ = self._quantile_threshold(
            model.evaluate(data.XU_thr)[:, 0])
        if not hasattr(self, "platt_"):
            # predict_proba mid-fit: a neutral sigmoid until Platt is fitted.
            self.platt_ = np.array([-1.0, 0.0])

    def _finish(self, result, data: FitData) -> None:
        check_sgd_curve(self, result)
        labeled, y = data.labeled, data.y
        XL = data.X[labeled]
        self._fit_platt(XL, (y[labeled] == self.classes_[1]).astype(float))

    # -- prediction --------------------------------------------------------
    def decision_function(self, X):
        """``f(x) - threshold_``, ``f`` regenerated from the seeds
        (Algorithm 2; Nyström models: from the stored landmarks). Larger
        means more likely positive; AUC-ranked. ``X``
        may be dense or scipy.sparse (CSR, CSC, COO)."""
        return super().decision_function(X)

    def _decision(self, X):
        """:meth:`decision_function` on validated rows."""
        f = self.spec_.decision(X, self.coef_, self.n_blocks_)[:, 0]
        return f - self.threshold_

    # -- model files -------------------------------------------------------
    def _add_state(self, meta, arrays):
        meta.update(prior=self.prior_, threshold=self.threshold_)
        arrays.update(platt=self.platt_)

    def _set_own_state(self, meta, arrays):
        self.prior_ = float(meta["prior"])
        self.threshold_ = float(meta["threshold"])
        self.platt_ = arrays["platt"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sparse rows are projected from their entries (the exact-kernel
        # rankers of _AUCRankerMixin take dense rows only)
        tags.input_tags.sparse = True
        return tags
