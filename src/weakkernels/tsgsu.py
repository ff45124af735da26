"""TSGSU: similar-unlabeled (SU) classification by triply stochastic gradients.

Shi, Gu, Li, Deng, Huang, *Triply stochastic gradient method for large-scale
nonlinear similar unlabeled classification*, Machine Learning 110 (2021) -- paper
002 -- built on Bao, Niu, Sugiyama, *Classification from Pairwise Similarity and
Unlabeled Data*, ICML 2018 (Bao et al.) and the consistent risk correction of Lu,
Zhang, Niu, Sugiyama, AISTATS 2020 (Lu et al.).

Data: similar pairs ``(x, x')`` drawn from ``p_S(x, x') = (pi+^2 p+(x) p+(x') +
pi-^2 p-(x) p-(x')) / pi_S`` with ``pi_S = pi+^2 + pi-^2`` (paper 002 Eq. 2) and
unlabeled points from ``p(x) = pi+ p+(x) + pi- p-(x)``. Marginalizing the pairs
(Eq. 5-6) each pair point is a draw from ``p~_S = (pi+^2 p+ + pi-^2 p-) / pi_S``.

Risk (paper 002 Eq. 6-7 = Bao et al. Theorem 1), with ``a = 1 / (2 pi+ - 1)``::

    R(f) = pi_S E_S[L~(f(x))] + E_U[L-(f(x))]
    L~(z) = a (l(z, +1) - l(z, -1)),   L-(z) = a (-pi- l(z, +1) + pi+ l(z, -1)).

Regrouped by the label the loss is evaluated at, it is the sum of two partial
risks that are non-negative in expectation (Lu et al. Eq. 9, SU as a special
case of UU learning)::

    R+(f) = a (pi_S E_S[l(f, +1)] - pi- E_U[l(f, +1)])   (= pi+ E+[l(f, +1)])
    R-(f) = a (pi+ E_U[l(f, -1)] - pi_S E_S[l(f, -1)])   (= pi- E-[l(f, -1)])

The empirical partial risks go negative with a flexible model (over-fitting);
the corrected risk (paper 002 Eq. 8, Lu et al. Eq. 10) is ``delta(R+) + delta(R-)``
with a consistent correction function ``delta`` (absolute value or ReLU; "none" is
the identity, i.e. Eq. 7). TSGSU minimizes ``J(f) = Rhat_delta(f) + lam/2
||f||_H^2`` (Eq. 9) with the functional gradient (Eq. 17)::

    grad J = sum_{x in S} g_S(x) k(x, .) + sum_{x in U} g_U(x) k(x, .) + lam f,

estimated per iteration on a minibatch of pair points, a minibatch of unlabeled
points and a seeded block of random features (Eq. 18-19: the three sources of
randomness), and the update ``f <- (1 - eta lam) f - eta zeta`` (Eq. 22-23,
``a_t^i = eta_i prod_{j>i} (1 - eta_j lam)``): that is ``solver="sgd"``. The
default ``solver="lbfgs"`` minimizes the same ``J`` over a fixed expansion --
Nyström landmarks by default (``features="auto"``), the same seeded features
with ``features="fourier"`` -- by L-BFGS; both run the shared loop
:func:`weakkernels._dsg.fit_expansion` (see :class:`TSGSU`).

The class prior ``pi+`` is given, or estimated from the SU data (paper 002 Sec.
3.3; see :func:`weakkernels.class_prior.estimate_class_prior` for the estimator
and why it differs from the paper's sketch). The baselines of paper 002 Sec. 6,
SUSL and CUU, are in :mod:`weakkernels.baselines.su`; they share this module's
risk functions and :class:`_SUBase`.

Argument layout shared by all estimators here: ``fit(X, y)`` with ``y == 1`` on
similar-pair rows (each pair is two consecutive rows) and ``y == -1`` on
unlabeled rows; ``predict`` returns 0/1 with 1 the class whose prior is ``prior``.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from weakkernels._artifact import ArtifactMixin, register
from weakkernels._base import FitData, RandomFeatureClassifier
from weakkernels._dask import dask_inputs, is_dask_collection, map_rows
from weakkernels._dsg import (
    FunctionalModel,
    Problem,
    check_feature_memory,
    check_sgd_curve,
    seeded_sample,
    sgd_tail,
    solve_quadratic,
)
from weakkernels._su_risk import (
    CORRECTIONS,
    LOSSES,
    class_prior_terms,
    correction,
    split_su,
    su_partial_risks,
    su_risk,
    su_risk_gradient,
    su_risk_of_moments,
)

# public here as before the split (the baselines, model_selection, tests)
from weakkernels._su_risk import SIMILAR as SIMILAR
from weakkernels._su_risk import UNLABELED as UNLABELED
from weakkernels._su_risk import correction_grad as correction_grad
from weakkernels._su_risk import su_loss as su_loss
from weakkernels._su_risk import su_loss_grad as su_loss_grad
from weakkernels._su_risk import su_zero_one_risk as su_zero_one_risk
from weakkernels._threads import one_blas_thread
from weakkernels._validation import (
    _SPARSE_FORMATS,
    _canonical_csr,
    _precheck_sparse,
    check_degenerate_input,
    check_fitted_model,
    check_magnitude,
    validate_predict,
    validate_row_source,
)
from weakkernels.class_prior import estimate_class_prior
from weakkernels.kernels import resolve_sigma
from weakkernels.random_features import seed_from_random_state

# eta_t schedules of TSGSU (integer codes, as sklearn's SGD does):
# "constant" = eta0 / sqrt(T), the fixed step theta / sqrt(T) of paper 002
# Theorem 1; "invscaling" = eta0 / sqrt(t + 1).
SU_SCHEDULES = {"constant": 0, "invscaling": 1}
# solver="sgd" with max_iter=None: paper 002's T = 100 iterations.
SGD_MAX_ITER = 100


# With prior="auto" the estimate is clipped into this range: the risk carries a
# factor 1 / (2 pi+ - 1), which explodes as the estimate approaches 1/2.
_AUTO_PRIOR_RANGE = (0.55, 0.99)



# ---------------------------------------------------------------------------
# Shared estimator plumbing
# ---------------------------------------------------------------------------
def _prior_matched_offset(f: np.ndarray, slope: float, prior: float) -> float:
    """``B`` with ``mean(sigmoid(slope f + B)) = prior`` (bisection; the mean is
    increasing in ``B``)."""
    lo, hi = -50.0 - slope * float(np.max(f)), 50.0 - slope * float(np.min(f))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.mean(np.exp(-np.logaddexp(0.0, -(slope * f + mid)))) < prior:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


_PRIOR = [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})]
# the SU risk's loss and correction (TSGSU, and the CUU baseline)
SU_RISK_CONSTRAINTS = {"loss": [StrOptions(set(LOSSES))],
                       "correction": [StrOptions(set(CORRECTIONS))]}


class _SUBase(ArtifactMixin, ClassifierMixin, BaseEstimator):
    """Validation, prior handling, prediction and calibration shared by TSGSU,
    CUU and SUSL. The baselines implement ``_fit_su(XS, XU, seed)`` and
    ``_raw_decision(X)`` and their ``_state``/``_set_state``; TSGSU takes
    ``fit`` from :class:`weakkernels._base.RandomFeatureClassifier` and these
    parts from here."""

    # Slope of the probability link: the squared loss l(z, t) = (z t - 1)^2 / 4 is
    # minimized by f = 2 eta - 1, whose logit has slope 2 at f = 0.
    _PROBA_SLOPE = 2.0

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on similar pairs and unlabeled points.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Sparse input (CSR, CSC, COO) is used as CSR, never densified by
            TSGSU (the kernel-basis baselines hold their centers dense).
        y : array-like of shape (n_samples,)
            ``1`` on similar-pair rows -- each pair is two consecutive rows, so
            the pair rows come in runs of even length -- and ``-1`` on unlabeled
            rows (scikit-learn's unlabeled marker). Anything else raises
            ``ValueError`` ("malformed pairs").
        """
        X, y = dask_inputs(X, y)  # a dask X: rows stay on the workers
        X, XS, XU = self._validate_su(X, y)
        seed = seed_from_random_state(self.random_state)
        self.seed_ = seed
        # a number, or "scale" (all SU estimators' default)
        self.sigma_ = resolve_sigma(self.sigma, X)
        self._resolve_su_prior(XS, XU, seed)
        self._fit_su(XS, XU, seed)
        self._calibrate(XU, seed)
        return self

    def _validate_su(self, X, y):
        """The validated rows ``X`` and their pair and unlabeled rows
        ``(XS, XU)``; sets ``classes_``."""
        on_workers = getattr(X, "row_source", False)
        if on_workers:
            X, y = validate_row_source(self, X, y)
        else:
            _precheck_sparse(X, True)  # structure checked before any conversion
            X, y = validate_data(
                self, X, y, accept_sparse=_SPARSE_FORMATS, dtype=np.float64,
                ensure_all_finite=True, y_numeric=False, reset=True,
            )
            X = _canonical_csr(X)  # CSR with sorted, duplicate-free indices
            check_magnitude(self, X)  # squared distances must not overflow
            check_degenerate_input(self, X)
        sim, unl = split_su(y)
        self.classes_ = np.array([0, 1])
        if on_workers:  # views: the sets' rows stay where they are
            return X, X.take(sim), X.take(unl)
        XS = X[sim] if sp.issparse(X) else np.ascontiguousarray(X[sim])
        XU = X[unl] if sp.issparse(X) else np.ascontiguousarray(X[unl])
        return X, XS, XU

    def _resolve_su_prior(self, XS, XU, seed):
        """``prior_`` and ``pi_S_``: the given prior, or with ``prior="auto"``
        its estimate from the SU data (paper 002 Sec. 3.3)."""
        if isinstance(self.prior, str):  # "auto": paper 002 Sec. 3.3
            est = estimate_class_prior(
                XS, XU, kernel=getattr(self, "kernel", "rbf"), sigma=self.sigma_,
                degree=getattr(self, "degree", 2), coef0=getattr(self, "coef0", 1.0),
                random_state=seed,
            )
            lo, hi = _AUTO_PRIOR_RANGE
            prior = float(np.clip(est["prior"], lo, hi))
            if prior != est["prior"]:
                warnings.warn(
                    f"estimated class prior {est['prior']:.3f} clipped to "
                    f"{prior:.3f} (the SU risk divides by 2*prior - 1).",
                    stacklevel=2,
                )
            self.prior_estimate_ = est
        else:
            prior = float(self.prior)
            self.__dict__.pop("prior_estimate_", None)  # from an earlier "auto" fit
        self.pi_S_, _ = class_prior_terms(prior)  # rejects prior 0.5
        self.prior_ = prior

    def _calibrate(self, XU, seed):
        """Prior-matched sigmoid for ``predict_proba``.

        SU data has no labeled points, so Platt scaling has nothing to fit on.
        We use ``P(y=1|x) = sigmoid(2 f(x) + B)``: slope 2 is the squared-loss
        link (``f = 2 eta - 1``) at the boundary, and ``B`` makes the mean
        predicted positive probability on (up to 4096 seeded) unlabeled training
        points equal ``prior_`` -- the only calibration target SU data supports.
        """
        f = self._raw_decision(XU[seeded_sample(XU.shape[0], 4096, seed)])
        # non-finite -> ValueError naming the kernel; constant -> warning
        check_fitted_model(self, f, f)
        self.calibration_ = np.array(
            [self._PROBA_SLOPE, _prior_matched_offset(f, self._PROBA_SLOPE,
                                                      self.prior_)]
        )

    def decision_function(self, X):
        """Decision values ``f(x)``; positive means class 1 (the class whose
        prior is ``prior_``). ``X`` may be dense or scipy.sparse."""
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self.decision_function, X, None)
        X = validate_predict(self, X, accept_sparse=True)
        return self._raw_decision(X)

    def predict(self, X):
        """Class 1 (the class of prior ``prior_``) where ``f(x) > 0``, else 0."""
        if is_dask_collection(X):
            return map_rows(self.predict, X, None)
        return (self.decision_function(X) > 0).astype(np.int64)

    def predict_proba(self, X):
        """``[P(y=0|x), P(y=1|x)]`` by the prior-matched sigmoid (see
        ``_calibrate``): their mean over the unlabeled training points is
        ``[1 - prior_, prior_]``."""
        if is_dask_collection(X):
            return map_rows(self.predict_proba, X, 2)
        f = self.decision_function(X)
        A, B = self.calibration_
        p = np.exp(-np.logaddexp(0.0, -(A * f + B)))
        return np.column_stack([1.0 - p, p])

    def _artifact_state(self):
        meta, arrays = self._state()
        meta.update(seed=self.seed_, n_features_in=self.n_features_in_)
        arrays.update(classes=self.classes_)
        self._add_su_state(meta, arrays)
        return meta, arrays

    def _set_artifact_state(self, meta, arrays):
        self._set_su_state(meta, arrays)
        self.seed_ = int(meta["seed"])
        self.n_features_in_ = int(meta["n_features_in"])
        self.classes_ = arrays["classes"]
        self._set_state(meta, arrays)

    def _add_su_state(self, meta, arrays):
        """The SU part of a model file: the prior and the calibration."""
        meta.update(prior=self.prior_, pi_S=self.pi_S_)
        arrays.update(calibration=self.calibration_)

    def _set_su_state(self, meta, arrays):
        """Inverse of :meth:`_add_su_state`."""
        self.prior_ = float(meta["prior"])
        self.pi_S_ = float(meta["pi_S"])
        self.calibration_ = arrays["calibration"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# ---------------------------------------------------------------------------
# TSGSU (paper 002 Algorithms 1-2)
# ---------------------------------------------------------------------------
@register
class TSGSU(RandomFeatureClassifier, _SUBase):
    """SU classification on random or Nyström features (paper 002).

    Minimizes paper 002 Eq. (9), ``J(f) = delta(R+) + delta(R-) + lam/2
    ||f||_H^2`` (the corrected risk of Eq. 8; see the module docstring), over
    an expansion of random features generated from ``(seed, block)`` (the
    model stores only seeds and coefficients and prediction regenerates the
    features, Algorithm 2) or, by default with L-BFGS, of Nyström features on
    landmarks drawn from the training rows (``features``). Both solvers run
    the one training loop of the random-feature estimators,
    :func:`weakkernels._dsg.fit_expansion`:

    * ``solver="sgd"`` is Algorithm 1: each iteration samples ``batch_size``
      pair points and ``batch_size`` unlabeled points and a fresh block of
      ``block_size`` features, computes the minibatch functional gradient
      (Eq. 18-19, :func:`su_risk_gradient`) and applies ``f <- (1 - eta_t lam)
      f - eta_t zeta_t`` (Eq. 22-23). The paper's algorithm as printed is
      ``TSGSU(solver="sgd", correction="abs", lam=lam, eta0=eta0,
      learning_rate="constant", batch_size=1000, block_size=10,
      max_iter=100)``.
    * ``solver="lbfgs"`` (default) minimizes the same Eq. (9) over a fixed
      expansion (``features``: Nyström by default, or the first
      ``max_features`` of the same seeded features), in its primal, by
      L-BFGS over every row (nested seeded samples from 4096 rows per set up
      to all, :func:`weakkernels._dsg.primal_levels`). With
      the squared loss and ``correction="none"`` (the defaults)
      the risk Eq. (7) is a convex quadratic in ``f`` (``l(z, +1) - l(z, -1)
      = -z``, Bao et al. Theorem 4): ``-a pi_S f`` on pair points, ``f^2/4 +
      a f / 2 + 1/4`` on unlabeled ones. The primal is then a convex
      quadratic of the weights -- SUSL's objective on random features with
      the RKHS penalty -- and L-BFGS solves exactly what 100 SGD steps
      approximate: on cod-rna it is as accurate as SUSL where Algorithm 1
      stays well below (docs/fidelity.md, paper 002's departure 1).

    ``fit(X, y)``: ``y == 1`` on similar-pair rows (two consecutive rows per
    pair), ``y == -1`` on unlabeled rows. ``predict`` returns 1 for the class
    whose prior is ``prior`` and 0 for the other.

    Parameters
    ----------
    prior : float in (0, 1) except 0.5, or "auto", default=0.7
        Class prior ``pi+`` of the class predicted as 1. SU data identifies the
        classes only through their priors, so this choice names the positive
        class. ``"auto"`` estimates it
        (:func:`weakkernels.class_prior.estimate_class_prior`, with the kernel
        width ``sigma_``); the class 1 is then the majority class
        (paper 002 Sec. 3.3).
    loss : {"squared", "double_hinge"}, default="squared"
        ``"double_hinge"`` is piecewise linear: L-BFGS needs a smooth
        objective, use ``solver="sgd"`` with it.
    correction : {"none", "abs", "relu"}, default="none"
        Consistent correction function of the partial risks: "none" is the
        unbiased risk of Eq. 7; paper 002 uses the absolute value (Eq. 8).
        The correction makes the objective non-convex with kinks where a
        partial risk crosses zero, where L-BFGS stalls (docs/fidelity.md,
        paper 002's departure 2). Use "abs" with ``solver="sgd"``, where
        the minibatch rule of Lu et al. applies.
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float or "scale", default="scale"
        ``exp(-sigma ||x - x'||^2)`` for RBF (scikit-learn's ``gamma``);
        ``"scale"`` is ``1 / (d Var X)`` over the training rows, as
        ``SVC(gamma="scale")`` and the pipeline's rule. The value used is
        ``sigma_``. The default was the fixed 1.0, at chance on standardised
        rows of many features (docs/fidelity.md, paper 002's departure 8).
    degree, coef0 : polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    lam : float, default=3e-4
        Weight of ``||f||_H^2 / 2`` (paper 002 Eq. 9's lambda), chosen for
        the exact ``solver="lbfgs"`` on a sigma x lam grid on cod-rna with
        the paper 002 protocol: the best lam grows with sigma, and 3e-4 loses
        the least over the widths (docs/fidelity.md, paper 002's departure
        4). Small data sets need a larger lam (the exact minimizer overfits
        where 100 SGD steps stop early).
    solver : {"lbfgs", "sgd", "direct"}, default="lbfgs"
        See above. ``"direct"`` (squared loss, ``correction="none"`` only):
        the exact minimizer of the quadratic Eq. (9) over the fixed
        expansion, by its normal equations accumulated in one pass over the
        rows and a Cholesky solve (:func:`weakkernels._dsg.solve_quadratic`):
        ``O(n D^2)`` work and a ``D x D`` float64 matrix (512 MB at D = 8192)
        against L-BFGS's ``O(n D)`` per iteration.
    tol : float, default=1e-5
        ``solver="lbfgs"``: stop when the largest gradient entry falls below
        ``tol`` times its value at ``f = 0``.
    batch_size : int, default=1000
        ``solver="sgd"``: pair points and unlabeled points per iteration
        (paper: 1000 each).
    block_size : int, default=10
        Random features per block; ``solver="sgd"`` adds one block per
        iteration (paper: 1000 features over 100 iterations).
    max_iter : int or None, default=None
        ``solver="sgd"``: iterations T (None: 100, the paper's);
        ``solver="lbfgs"``: L-BFGS iterations at most (None: 500).
    learning_rate : {"constant", "invscaling"}, default="invscaling"
        ``solver="sgd"``: ``eta_t = eta0 / sqrt(T)`` (Theorem 1) or
        ``eta0 / sqrt(t + 1)``.
    eta0 : float, default=1.0
        ``solver="sgd"``: ``eta_t * lam < 1`` is required (``1 - eta lam``
        scales the old model).
    fit_intercept : bool, default=False
        Learn an unregularized offset ``b`` (``f(x) + b``): with
        ``solver="sgd"`` by SGD with the same step sizes, with
        ``solver="lbfgs"`` jointly with the weights. Not in paper 002 (its
        model is a pure RKHS function); it did not help on cod-rna, so the
        default is the model as printed.
    features : {"fourier", "nystroem", "auto"}, default="auto"
        The basis of the fixed expansion on which Eq. (9) is minimized.
        ``"fourier"``: the paper's seeded random Fourier features (the model
        file holds seeds and coefficients only). ``"nystroem"``
        (``solver="lbfgs"``, RBF kernel): Eq. (9) over ``span{k(z_j, .)}``
        of landmarks ``z_j`` drawn from the training rows -- the pair rows
        first (all of them while they are at most half the landmarks), then
        unlabeled rows; also with ``solver="direct"`` -- by the whitened
        Nyström features of
        :class:`weakkernels.random_features.NystromSpec`; the model file
        stores the landmarks. Landmark count: ``max_features`` if given,
        else every row up to 4096 rows (the exact kernel minimizer of Eq. 9,
        up to the jitter) and
        :func:`weakkernels._dsg.nystroem_size` beyond. ``"auto"``: Nyström
        where it applies (:func:`weakkernels._dsg.resolve_basis`, the rule of
        TSGS3VM), else Fourier. ``solver="sgd"`` draws fresh Fourier blocks
        (Algorithm 1) and refuses ``"nystroem"``. The basis used is
        ``features_``.
        Why ``"auto"`` by default: with Fourier features the count falls as
        the rows grow (the 2 GiB bound of
        :func:`weakkernels._dsg.primal_features`) and the error rose past
        10^5 rows where Nyström's kept falling, at about equal CPU; on the
        paper 002 protocol Nyström is level or better at a few times the fit
        CPU of those small fits, where ``features="fourier"`` is the fast
        choice (docs/fidelity.md, paper 002's departure 9).
    max_features : int or None, default=None
        Feature budget (see :mod:`weakkernels._dsg`). ``solver="lbfgs"``:
        the expansion's size (None: :func:`weakkernels._dsg.primal_features`,
        1024 to ~5 000, growing with n; with Nyström features
        :func:`weakkernels._dsg.nystroem_size`); ``solver="sgd"``: once
        reached, steps revisit the existing blocks (None: unbounded, as the paper).
    dtype : {"float32", "float64"}, default="float32"
    random_state : int, RandomState instance or None
        Seeds the minibatches, the feature blocks, the row samples and the
        prior estimator.
    callback : callable or None
        ``callback(estimator, n_iter)`` every ``callback_every`` SGD
        iterations, or once after the L-BFGS solve, with the estimator usable
        for ``decision_function``.
    callback_every : int, default=10
    solver_options : SolverOptions or None, default=None
        The solvers' tunables (:class:`weakkernels.SolverOptions`: sample
        levels, feature-count rules, caches, caps); None: the defaults.

    Attributes
    ----------
    classes_ : ndarray ``[0, 1]``
    prior_, pi_S_ : the class prior used and ``prior_^2 + (1 - prior_)^2``.
    prior_estimate_ : dict, only with ``prior="auto"``.
    sigma_ : float, the kernel width used.
    coef_ : ndarray of shape (1, ``n_features_model_``)
    spec_ : FeatureSpec or NystromSpec
    features_ : str, the basis used ("fourier" or "nystroem").
    intercept_ : float, the offset ``b`` (0 with ``fit_intercept=False``).
    calibration_ : ``(A, B)`` of the prior-matched sigmoid.
    risk_curve_ : list of float, the corrected risk (Eq. 8) at every
        evaluation of the loss: the minibatch risk of each SGD step, or the
        risk on the training sets at each L-BFGS function evaluation (the
        first at ``f = 0``).
    objective_curve_ : the optimizer's record (:func:`fit_expansion`): the
        SGD minibatch risks, or the final objective ``J`` of the L-BFGS solve.
    n_iter_ : SGD steps or L-BFGS iterations.
    n_blocks_, seed_, fit_time_curve_

    See Also
    --------
    weakkernels.baselines.su.SUSL : the exact SU baseline (closed form).
    weakkernels.class_prior.estimate_class_prior : the prior of ``prior="auto"``.
    weakkernels.model_selection.PairedKFold : folds of whole similar pairs.

    References
    ----------
    .. [1] Shi, W., Gu, B., Li, X., Deng, C., Huang, H. Triply stochastic
       gradient method for large-scale nonlinear similar unlabeled
       classification. Machine Learning 110, 2021.
    .. [2] Bao, H., Niu, G., Sugiyama, M. Classification from pairwise
       similarity and unlabeled data. ICML 2018.

    Examples
    --------
    Rows 0-1, 2-3, ... are similar pairs (``y == 1``); the rest are unlabeled.

    >>> import numpy as np
    >>> from weakkernels import TSGSU
    >>> rng = np.random.default_rng(0)
    >>> def rows(c):
    ...     return rng.normal(size=(c.size, 2)) + 3.0 * c[:, None]
    >>> pairs = np.repeat((rng.random(300) < 0.7 ** 2 / 0.58).astype(float), 2)
    >>> c_unlabeled = (rng.random(1000) < 0.7).astype(float)
    >>> X = np.vstack([rows(pairs), rows(c_unlabeled)])
    >>> y = np.r_[np.ones(600, dtype=int), -np.ones(1000, dtype=int)]
    >>> clf = TSGSU(prior=0.7, random_state=0).fit(X, y)
    >>> bool(clf.score(rows(c_unlabeled), c_unlabeled) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "block_size", "max_features", "lam",
        prior=_PRIOR,
        **SU_RISK_CONSTRAINTS,
        learning_rate=[StrOptions(set(SU_SCHEDULES))],
        fit_intercept=["boolean"],
        # the family's solvers and the closed form of the quadratic Eq. (9)
        solver=[StrOptions({"lbfgs", "sgd", "direct"})],
    )

    def __init__(
        self,
        *,
        prior=0.7,
        loss="squared",
        correction="none",
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        lam=3e-4,
        solver="lbfgs",
        tol=1e-5,
        batch_size=1000,
        block_size=10,
        max_iter=None,
        learning_rate="invscaling",
        eta0=1.0,
        fit_intercept=False,
        features="auto",
        max_features=None,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.prior = prior
        self.loss = loss
        self.correction = correction
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.block_size = block_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.fit_intercept = fit_intercept
        self.features = features
        self.max_features = max_features
        self.dtype = dtype
        self.solver_options = solver_options
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every

    def _eta(self, t: int, T: int) -> float:
        """Step size ``eta_t`` (see ``learning_rate``)."""
        if SU_SCHEDULES[self.learning_rate] == 0:
            return self.eta0 / math.sqrt(T)
        return self.eta0 / math.sqrt(t + 1.0)

    def _sgd_steps(self) -> int:
        """``solver="sgd"``: the iterations T (paper 002's 100 by default)."""
        return SGD_MAX_ITER if self.max_iter is None else int(self.max_iter)

    # -- fit hooks (RandomFeatureClassifier) --------------------------------
    def _fit_data(self, X, y) -> FitData:
        X, XS, XU = self._validate_su(X, y)
        if self.solver == "direct" and (self.loss, self.correction) != (
                "squared", "none"):
            raise ValueError(
                'solver="direct" needs loss="squared" and correction="none" '
                f"(the quadratic Eq. 7); got loss={self.loss!r}, "
                f"correction={self.correction!r}.")
        # The largest step is the first for both schedules.
        if self.solver == "sgd" and self._eta(0, self._sgd_steps()) * float(
                self.lam) >= 1.0:
            raise ValueError(
                f"eta0={self.eta0}, lam={float(self.lam)}: the first step has "
                "eta*lam >= 1, so (1 - eta lam) f would flip or zero the model. "
                "Lower eta0."
            )
        # Nyström landmarks: the pair rows first (up to half), as the labeled
        # rows of the S3VM: the points the risk weighs individually
        return FitData(X=X, set_sizes=(XS.shape[0], XU.shape[0]),
                       n_columns=XS.shape[1], first=(XS, None), rest=(XU, None),
                       XS=XS, XU=XU)

    def _n_iter(self, data: FitData) -> int:
        if self.solver == "sgd":
            return self._sgd_steps()
        return int(self.max_iter or data.opts.lbfgs_max_iter)

    def _prepare(self, data: FitData) -> None:
        self._resolve_su_prior(data.XS, data.XU, data.seed)

    def _make_problem(self, data: FitData):
        sgd = self.solver == "sgd"
        prior, loss_name, corr = self.prior_, self.loss, self.correction
        self.risk_curve_ = []
        # solver="sgd": each step's partial risks (R+, R-). The corrected risk
        # of a minibatch is biased upwards (delta of a noisy estimate), so the
        # end of the run is judged on their mean, corrected once
        partials = data.partials = [] if sgd else None

        def loss(fs, idx, sizes, w):
            """Eq. (8) and its derivatives (Eq. 17 without ``lam f``): means
            over the sets, so a minibatch's value is already unbiased. The
            convex loss has no annealed part: ``w`` is unused."""
            fS, fU = fs[0][:, 0], fs[1][:, 0]
            value = su_risk(fS, fU, prior, loss_name, corr)
            self.risk_curve_.append(value)
            if partials is not None:
                partials.append(su_partial_risks(fS, fU, prior, loss_name))
            gS, gU = su_risk_gradient(fS, fU, prior, loss_name, corr)
            return value, [gS[:, None], gU[:, None]]

        def moments(totals, ms, w):
            """:func:`loss` of the squared loss from the outputs' moments."""
            value, coefs = su_risk_of_moments(totals, ms, prior, corr)
            self.risk_curve_.append(value)
            return value, coefs

        problem = Problem(
            [(data.XS, None), (data.XU, None)], 1, loss, lam=float(self.lam),
            intercept="free" if self.fit_intercept else "none",
            # L-BFGS, squared loss: one pass per evaluation where features
            # stream
            moments=moments if not sgd and loss_name == "squared" else None,
            options=data.opts,
        )
        return problem, dict(step=lambda t, T: self._eta(t, T))

    def _solve(self, problem, data: FitData, monitor=None, **kwargs):
        if self.solver == "direct":
            return self._fit_direct(data, monitor)
        return super()._solve(problem, data, monitor=monitor, **kwargs)

    def _fit_direct(self, data: FitData, monitor):
        """``solver="direct"``: the exact minimizer of Eq. (9) with the
        squared loss and no correction. Eq. (7) is then ``-a pi_S f`` on the
        pair points and ``f^2/4 + a f/2 + 1/4`` on the unlabeled ones (Bao
        et al. Sec. 3.3; see :class:`TSGSU`), a quadratic in ``f`` solved by
        its normal equations (:func:`weakkernels._dsg.solve_quadratic`)."""
        XS, XU, spec, n_blocks = data.XS, data.XU, data.spec, data.max_blocks
        pi_S, a = class_prior_terms(self.prior_)
        check_feature_memory(spec, n_blocks * spec.block_size)
        model, b = solve_quadratic(
            spec, n_blocks, [(XS, None), (XU, None)], q=[0.0, 0.5],
            lin=[-a * pi_S, 0.5 * a], lam=float(self.lam),
            intercept=bool(self.fit_intercept), opts=data.opts)
        with one_blas_thread():
            fS, fU = model.evaluate(XS)[:, 0] + b[0], model.evaluate(XU)[:, 0] + b[0]
        risk = su_risk(fS, fU, self.prior_, "squared", "none")
        # ||v||^2 of the primal psi v: the model's coefficients are v / sqrt(D_b)
        coef = model.coefficients().astype(np.float64)
        v2 = float(np.sum(coef**2)) * model.n_blocks
        self.risk_curve_ = [risk]
        self.objective_curve_ = [risk + 0.5 * float(self.lam) * v2]
        monitor(1, model, b)
        return SimpleNamespace(model=model, intercept=b, n_iter=1,
                               objective_curve=self.objective_curve_)

    def _expose(self, data: FitData, model: FunctionalModel, b) -> None:
        self._set_model_state(model, b, data)
        self._calibrate(data.XU, data.seed)

    def _set_offset(self, model: FunctionalModel, b, data: FitData) -> None:
        self.intercept_ = float(np.asarray(b, dtype=np.float64).reshape(-1)[0])

    def _finish(self, result, data: FitData) -> None:
        """The end of an SGD run judged on its mean partial risks, then the
        prior-matched calibration."""
        if data.partials is not None:
            corr = self.correction
            r_pos, r_neg = np.mean(data.partials[-sgd_tail(len(data.partials)):],
                                   axis=0)
            check_sgd_curve(self, result, end=correction(corr, r_pos)
                            + correction(corr, r_neg))
        self._calibrate(data.XU, data.seed)

    def _raw_decision(self, X):
        f = self.spec_.decision(X, self.coef_, self.n_blocks_)[:, 0]
        return f + self.intercept_

    # decision_function (RandomFeatureClassifier) and _calibrate (_SUBase)
    # read the same values
    _decision = _raw_decision

    def _add_state(self, meta, arrays):
        meta["intercept"] = self.intercept_
        self._add_su_state(meta, arrays)

    def _set_own_state(self, meta, arrays):
        self._set_su_state(meta, arrays)
        self.intercept_ = float(meta["intercept"])
