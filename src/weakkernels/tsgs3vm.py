"""TSGS3VM and FRS3VM: semi-supervised SVM by triply stochastic functional gradients.

Geng, Gu, Li, Shi, Zheng, Huang, *Scalable Semi-Supervised SVM via Triply
Stochastic Gradients*, IJCAI 2019 (paper 000; arXiv copy with appendix: 001).

Objective, paper 000 Eq. (1)::

    R(f) = 1/2 ||f||_H^2 + C/n_l sum_{(x,y) in L} l(f(x), y) + C* E_{x~P} u(f(x))

with the hinge loss ``l`` on labeled points and a non-convex symmetric loss ``u``
on unlabeled points (Table 2). Each iteration samples a labeled minibatch, an
unlabeled minibatch and a block of random features -- three sources of
randomness, Eq. (5)-(6) -- and applies the update rule Eq. (7) (Algorithm 1);
prediction regenerates the features from their seeds (Algorithm 2).

Two options from the S3VM literature are added (see the class docstring): the
balancing constraint of Collobert et al. (paper 004 Eq. 1.13; by default on
outputs clipped to the margin, ``balance="clipped"``, for a binary problem;
as printed, ``"mean"``, with the symmetric hinge, for one-vs-rest) and an
annealing of C*. Both are on by default because they win on the benchmarks
(docs/fidelity.md, paper 000's departures); ``balance="none", anneal=0`` is the
algorithm exactly as printed.
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels._artifact import register
from weakkernels._base import FitData, RandomFeatureClassifier
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._dask import is_dask_collection, map_rows
from weakkernels._dsg import (
    SCHEDULES,
    FunctionalModel,
    Problem,
    check_sgd_curve,
    default_blocks,
    seeded_sample,
    step_size,
)
from weakkernels._options import options_of
from weakkernels._selection import c_star_rule, one_se_stage
from weakkernels._validation import (
    LabeledScoreMixin,
    check_fitted_model,
    check_unlabeled_predictions,
    validate_semi_supervised,
)
from weakkernels.random_features import as_compute_rows

UNLABELED_LOSSES = ("shg", "sshg", "ramp", "da", "ramp_cccp")


def unlabeled_loss(name: str, f: np.ndarray, s: float = -0.3) -> np.ndarray:
    """Unlabeled losses ``u(f)`` of paper 000 Table 2.

    * ``"shg"``  symmetric hinge ``max(0, 1 - |f|)``;
    * ``"sshg"`` squared symmetric hinge ``1/2 max(0, 1 - |f|)^2``;
    * ``"ramp"`` symmetric ramp ``R_s(f) + R_s(-f)``, ``R_s = H_1 - H_s``,
      ``H_s(z) = max(0, s - z)`` (Table 2 with paper 004 Eq. 1.11's symmetric
      form; ``s < 0`` gives the flat top on ``|f| < -s``);
    * ``"da"``   ``exp(-5 f^2)``, the differentiable approximation to SSHG;
    * ``"ramp_cccp"`` the symmetric ramp with both hinges smoothed as
      ``loss="smooth_hinge"`` (``R_s = S_1 - S_s``, ``S_a(z)`` the smooth hinge
      at margin ``a``; bounded, ``1 - s`` for ``z << s``), which the L-BFGS
      solver minimises by the concave-convex procedure
      (:func:`ramp_cccp_slope`).
    """
    if name == "ramp_cccp":
        return (_smooth_hinge_at(f, 1.0) - _smooth_hinge_at(f, s)
                + _smooth_hinge_at(-f, 1.0) - _smooth_hinge_at(-f, s))
    a = np.abs(f)
    if name == "shg":
        return np.maximum(0.0, 1.0 - a)
    if name == "sshg":
        return 0.5 * np.maximum(0.0, 1.0 - a) ** 2

    def ramp(z):
        return np.maximum(0.0, 1.0 - z) - np.maximum(0.0, s - z)

    if name == "ramp":
        return ramp(f) + ramp(-f)
    if name == "da":
        return np.exp(-5.0 * f * f)
    raise ValueError(f"unknown unlabeled loss {name!r}")


def unlabeled_loss_grad(name: str, f: np.ndarray, s: float = -0.3) -> np.ndarray:
    """Derivative ``u'(f)`` of :func:`unlabeled_loss` (paper 000 Table 2, right
    column; subgradient 0 at the kinks' inner side)."""
    if name == "shg":
        return np.where(np.abs(f) < 1.0, -np.sign(f), 0.0)
    if name == "sshg":
        return np.where(np.abs(f) < 1.0, -np.sign(f) * (1.0 - np.abs(f)), 0.0)
    if name == "ramp":
        return (
            -(f < 1.0).astype(float)
            + (f < s)
            + (f > -1.0)
            - (f > -s)
        )
    if name == "da":
        return -10.0 * f * np.exp(-5.0 * f * f)
    if name == "ramp_cccp":
        return (_smooth_hinge_grad_at(f, 1.0) - _smooth_hinge_grad_at(f, s)
                - _smooth_hinge_grad_at(-f, 1.0) + _smooth_hinge_grad_at(-f, s))
    raise ValueError(f"unknown unlabeled loss {name!r}")


def _smooth_hinge_at(f: np.ndarray, a: float) -> np.ndarray:
    """The smooth hinge at margin ``a``: ``loss="smooth_hinge"`` of ``f - a + 1``."""
    return labeled_loss("smooth_hinge", f - a + 1.0)


def _smooth_hinge_grad_at(f: np.ndarray, a: float) -> np.ndarray:
    """``d/df`` of :func:`_smooth_hinge_at`."""
    return labeled_loss_grad("smooth_hinge", f - a + 1.0)


def ramp_cccp_convex(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The convex part of ``unlabeled_loss="ramp_cccp"``, ``S_1(f) + S_1(-f)``,
    and its derivative (paper 004 Eq. 1.11's ``H_1`` terms, smoothed)."""
    return (_smooth_hinge_at(f, 1.0) + _smooth_hinge_at(-f, 1.0),
            _smooth_hinge_grad_at(f, 1.0) - _smooth_hinge_grad_at(-f, 1.0))


def ramp_cccp_slope(f0: np.ndarray, s: float) -> np.ndarray:
    """The slope ``beta`` of the linearised concave part of ``"ramp_cccp"`` at
    the outputs ``f0``: ``-S_s(f) - S_s(-f) ~ beta f`` + const, with
    ``beta = -S_s'(f0) + S_s'(-f0)`` (paper 004 Eq. 1.12 / Algorithm 1.3's
    ``beta``, one per unlabeled point and output)."""
    return -_smooth_hinge_grad_at(f0, s) + _smooth_hinge_grad_at(-f0, s)


# unlabeled_loss="auto" / balance="auto" -> (binary, one-vs-rest) choice.
# Binary: the smooth "da" and the clipped balance (chosen on imbalanced binary
# sets: cod-rna, ijcnn1). One-vs-rest: the symmetric hinge and paper 004's
# mean balance (Eq. 1.13) -- with "da" the ten MNIST problems pile their
# unlabeled outputs onto two digits (100 labels: 37 % error against 29 % for
# SVC and 19 % with this pair); BENCHMARKS.md, "Multiclass defaults".
_AUTO = {"unlabeled_loss": ("da", "shg"), "balance": ("clipped", "mean")}


def resolve_auto(name: str, value, n_outputs: int):
    """``value`` of the parameter ``name``, with ``"auto"`` resolved for a
    problem of ``n_outputs`` one-vs-rest outputs (1: binary)."""
    if isinstance(value, str) and value == "auto":
        return _AUTO[name][n_outputs > 1]
    return value


# balance option -> code: 0 off, 1 mean constraint, 2 quantile constraint,
# 3 mean anchored on the supervised stage, 4 mean of the clipped outputs
_BALANCE = {False: 0, "none": 0, True: 1, "mean": 1, "quantile": 2,
            "supervised": 3, "clipped": 4}


# anchored balance codes (L-BFGS): the target of mean_U f, re-taken from the
# current outputs f_U at every annealing stage after the supervised one
_ANCHORS = {
    3: lambda r: lambda fU: fU.mean(axis=0),
    4: lambda r: lambda fU: fU.mean(axis=0) + balancing_bias(4, fU, r),
}


def balancing_bias(code: int, g_unlabeled: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Bias that makes the unlabeled outputs match the labeled class balance.

    ``r`` (per output) is the mean of the labeled +-1 targets.

    * code 1, the mean constraint of paper 004 Eq. (1.13):
      ``mean_U (g + b) = r``, i.e. ``b = r - mean_U g``;
    * code 2, the fraction constraint of Joachims' TSVM (1999): the fraction of
      unlabeled points with ``g + b > 0`` equals the labeled positive fraction
      ``(1 + r) / 2``, i.e. ``b = -quantile(g, 1 - (1 + r) / 2)``. It does not
      depend on the scale of ``g``, which matters with imbalanced classes;
    * code 4, the mean constraint on outputs clipped to the margin,
      ``mean_U clip(g + b, -1, 1) = r``: points beyond the margin count as
      +-1 whatever their ``|g|``, so it reads as ``"mean"`` when the outputs
      are small and as a class fraction when they are saturated. ``b`` by
      bisection (the clipped mean is monotone in ``b``).
    """
    if code == 1:
        return r - g_unlabeled.mean(axis=0)
    if code == 4:
        lo = -1.0 - g_unlabeled.max(axis=0)
        hi = 1.0 - g_unlabeled.min(axis=0)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            low = np.clip(g_unlabeled + mid, -1.0, 1.0).mean(axis=0) < r
            lo = np.where(low, mid, lo)
            hi = np.where(low, hi, mid)
        return 0.5 * (lo + hi)
    q = 1.0 - (1.0 + r) / 2.0
    return -np.array(
        [np.quantile(g_unlabeled[:, k], q[k]) for k in range(g_unlabeled.shape[1])]
    )


def check_sgd_outputs(est, f: np.ndarray, j0: float) -> bool:
    """Warn when an SGD iterate has outputs no minimiser of its objective has.

    With ``lam = 1`` a minimiser has ``||f||_H^2 <= 2 J(0)`` (else ``f = 0``
    is better), so ``|f(x)| <= sqrt(2 J(0) k(x, x))``; random Fourier
    features (RBF and Laplacian kernels) give ``k(x, x) <= 2``, and the
    balancing bias moves the outputs by at most their own range plus the
    margin. Ten times that is an iterate
    that diverged (the default ``eta0 = 1`` at C = 10, 40 steps on 300 rows:
    outputs ~ 10^5 where the bound is ~ 10^3), which check_fitted_model does
    not see while the values stay finite. It also sees an iterate whose norm
    exploded while its loss stayed low, which :func:`weakkernels._dsg.
    check_sgd_curve` does not. Returns whether it warned."""
    bound = 10.0 * (2.0 * math.sqrt(4.0 * max(j0, 0.0)) + 1.0)
    top = float(np.max(np.abs(f))) if np.size(f) else 0.0
    diverged = top > bound
    if diverged:
        warnings.warn(
            f"{type(est).__name__}(solver='sgd') returned decision values up to "
            f"{top:.3g} on its labeled points, beyond {bound:.3g} (ten times "
            "what any minimiser of its objective reaches): the SGD iterate "
            "diverged or is far from converged. Lower eta0 or raise max_iter.",
            ConvergenceWarning, stacklevel=3)
    return diverged


def hinge_grad(margin: np.ndarray) -> np.ndarray:
    """``dl/dz`` of the hinge ``l(z) = max(0, 1 - z)`` at ``z = y f(x)``."""
    return np.where(margin < 1.0, -1.0, 0.0)


LABELED_LOSSES = ("hinge", "squared_hinge", "smooth_hinge")
# Width of the quadratic piece of the smooth hinge: small enough that the loss
# stays within delta/2 of the hinge (so C keeps SVC's meaning), large enough
# for L-BFGS's curvature pairs.
_SMOOTH_DELTA = 0.5


def labeled_loss(name: str, margin: np.ndarray) -> np.ndarray:
    """Labeled losses at ``z = y f(x)``: the hinge of paper 000 Eq. (1),
    the squared hinge ``max(0, 1 - z)^2`` (L2-SVM), and the smooth hinge
    (the hinge with its kink replaced by a quadratic over ``1 - delta < z < 1``,
    ``delta = 0.5``: differentiable, and within ``delta / 2`` of the hinge)."""
    h = np.maximum(0.0, 1.0 - margin)
    if name == "hinge":
        return h
    if name == "squared_hinge":
        return h * h
    d = _SMOOTH_DELTA
    return np.where(h > d, h - 0.5 * d, h * h / (2.0 * d))


def labeled_loss_grad(name: str, margin: np.ndarray) -> np.ndarray:
    """``dl/dz`` of :func:`labeled_loss`."""
    h = np.maximum(0.0, 1.0 - margin)
    if name == "hinge":
        return hinge_grad(margin)
    if name == "squared_hinge":
        return -2.0 * h
    return -np.minimum(h / _SMOOTH_DELTA, 1.0)


def _held_out_errors(Y: np.ndarray, f: np.ndarray, rows) -> np.ndarray:
    """0/1 errors of the outputs ``f`` (m, K) on the held-out rows ``rows``
    (None: all) of targets ``Y`` (+1/-1, (n, K)), decided as ``predict``
    does: the sign of one output, the arg max of one-vs-rest outputs."""
    Y = Y if rows is None else Y[rows]
    if Y.shape[1] == 1:
        return ((f[:, 0] > 0) != (Y[:, 0] > 0)).astype(np.float64)
    return (np.argmax(f, axis=1) != np.argmax(Y, axis=1)).astype(np.float64)


# validation_fraction="auto": hold out this fraction of the labels to choose
# C* (paper 004's validation set) when there are at least this many labels,
# as HistGradientBoosting's early_stopping="auto" validates from 10 000
# samples on. From there a tenth of the labels resolves the differences the
# C* stages make: 10 000 labels of a uniform-density teacher (synthetic,
# d = 28), the paper's C* rule 8.79 / 8.66 % test error at 10^5 / 10^7 rows,
# the held-out choice (C* = 0) 8.41 / 8.31 %, SVC on the labels 8.43 %
# (BENCHMARKS.md, "C* on held-out labels"); below it the labels are too few
# to spare (MNIST's 1 000: 100 held-out rows resolve about +-3 pp).
AUTO_VALIDATION_MIN_LABELS = 10_000
AUTO_VALIDATION_FRACTION = 0.1
# Below that, on a problem of at most this many rows (every row a Nystrom
# landmark: the exact kernel machine, a fit of seconds), "auto" chooses by
# this many folds of cross-validation over the labels instead, with ramp_cccp
# one more candidate for the binary default loss. On SSL-book g241n (100
# labels, 1 400 unlabeled) the rule falls to chance at C <= 10; the choice
# does not (20.6 % best of C against CCCP-TSVM's 21.6 %; BENCHMARKS.md,
# "SSL-book sets"); MNIST, 1 000 labels, 2 000 unlabeled: 6.87 against
# 7.06 % (3 seeds), at about 10x the rule's CPU. Not above this size, where the
# k + 1 fits would cost minutes.
AUTO_CV_MAX_ROWS = 4096
AUTO_CV_FOLDS = 5


def resolve_validation_fraction(value, y_labeled: np.ndarray, solver: str,
                                n_rows: int, distributed: bool = False):
    """What ``validation_fraction`` does on this fit: a fraction of the labels
    to hold out (float), a number of cross-validation folds (int) or nothing
    (None). ``n_rows``: labeled + unlabeled rows; ``distributed``: a Dask
    input (no cross-validation by default)."""
    if value is None:
        return None
    counts = np.unique(y_labeled, return_counts=True)[1]
    if value != "auto":
        if solver != "lbfgs":
            raise ValueError('validation_fraction needs solver="lbfgs" (it chooses '
                             "among the annealing stages of the L-BFGS solver).")
        if isinstance(value, Integral):
            if counts.min() < value:
                raise ValueError(
                    f"validation_fraction={value} folds need at least {value} "
                    f"labels of every class; the fewest are {counts.min()}.")
            return int(value)
        held = math.ceil(float(value) * y_labeled.size)  # train_test_split's
        if counts.min() < 2:
            raise ValueError(
                f"validation_fraction={value} needs at least 2 labels of every "
                f"class (one on each side); the fewest are {counts.min()}: "
                "pass validation_fraction=None.")
        if held < counts.size or y_labeled.size - held < counts.size:
            raise ValueError(
                f"validation_fraction={value} holds out {held} of the "
                f"{y_labeled.size} labels; both parts need at least one label "
                f"of each of the {counts.size} classes: pass a fraction in "
                f"[{counts.size / y_labeled.size:.3g}, "
                f"{1 - counts.size / y_labeled.size:.3g}], a number of folds "
                "(an int) or None.")
        return float(value)
    if solver != "lbfgs":
        return None
    if y_labeled.size >= AUTO_VALIDATION_MIN_LABELS:
        return (AUTO_VALIDATION_FRACTION
                if counts.min() * AUTO_VALIDATION_FRACTION >= 1 else None)
    if (not distributed and n_rows <= AUTO_CV_MAX_ROWS
            and counts.min() >= AUTO_CV_FOLDS):
        return AUTO_CV_FOLDS
    return None


# the S3VMs' own parameters (the shared ones: weakkernels._base)
_S3VM_CONSTRAINTS = {
    "C": [Interval(Real, 0, None, closed="neither")],
    "C_star": [Interval(Real, 0, None, closed="left"), None],
    "loss": [StrOptions(set(LABELED_LOSSES))],
    "unlabeled_loss": [StrOptions({*UNLABELED_LOSSES, "auto"})],
    "s": [Interval(Real, None, 1, closed="neither")],
    "learning_rate": [StrOptions(set(SCHEDULES))],
    "balance": [StrOptions({"auto", "mean", "quantile", "none", "supervised",
                            "clipped"}),
                    "boolean"],
    "anneal": [Interval(Real, 0, 1, closed="left")],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither"),
                            Interval(Integral, 2, None, closed="left"),
                            StrOptions({"auto"}), None],
}


class _S3VMBase(LabeledScoreMixin, RandomFeatureClassifier):
    """Shared fit/predict of TSGS3VM and FRS3VM (they differ in the feature
    layout): paper 000 Eq. (1) on labeled (``y`` a class) and unlabeled
    (``y == -1``) rows."""

    _divergence_hint = "eta0 (step size) or C"
    _keep_float32 = True

    # -- fit hooks (RandomFeatureClassifier) --------------------------------
    def _fit_data(self, X, y) -> FitData:
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, keep_float32=True, accept_sparse=True
        )
        self.classes_ = classes
        # Only the (few) labeled rows are copied; unlabeled rows are gathered
        # from X by index, so X may be a memory-mapped file larger than RAM
        # (out-of-core training).
        idx_u = np.flatnonzero(~labeled)
        XL = as_compute_rows(X[labeled], np.dtype(self.dtype))
        yl = y[labeled]
        return FitData(
            X=X, set_sizes=(XL.shape[0], idx_u.size), n_columns=X.shape[1],
            first=(X, np.flatnonzero(labeled)), rest=(X, idx_u),
            n_outputs=1 if classes.size == 2 else classes.size,
            label_counts=np.unique(yl, return_counts=True)[1],
            n_labeled=XL.shape[0], XL=XL, yl=yl, idx_u=idx_u)

    def _prepare(self, data: FitData) -> None:
        """The targets, the resolved defaults and C*."""
        K, yl, classes = data.n_outputs, data.yl, self.classes_
        # +1/-1 targets per output: binary uses classes_[1] as the positive
        # class, multiclass is one-vs-rest over shared features and shared
        # unlabeled data.
        if K == 1:
            data.Y = np.where(yl == classes[1], 1.0, -1.0)[:, None]
        else:
            data.Y = np.where(yl[:, None] == classes[None, :], 1.0, -1.0)
        # Balancing constraint (paper 004 Eq. 1.13): mean f on U = mean y on L.
        data.r = data.Y.mean(axis=0)
        self.unlabeled_loss_ = resolve_auto("unlabeled_loss", self.unlabeled_loss, K)
        self.balance_ = resolve_auto("balance", self.balance, K)
        n_l, n_u = data.set_sizes
        # Paper 004's rule C* = C L / U (per-point weights): the unlabeled term
        # as a whole weighs as much as the labeled one.
        C_star = (c_star_rule(float(self.C), n_l, n_u) if self.C_star is None
                  else float(self.C_star))
        self.C_star_ = C_star
        # (C* = 0 leaves nothing to choose: every candidate is a multiple)
        self.validation_fraction_ = resolve_validation_fraction(
            self.validation_fraction, yl, self.solver, data.X.shape[0],
            hasattr(data.X, "primal_set")) if C_star > 0 else None

    def _check_s3vm_params(self, data: FitData) -> None:
        """Refuse the parameter combinations the solver cannot run."""
        sgd = self.solver == "sgd"
        schedule = SCHEDULES[self.learning_rate]
        if sgd and self.balance_ == "supervised":
            raise ValueError(
                'balance="supervised" needs solver="lbfgs" (it anchors the '
                "constraint on the first, supervised annealing stage)."
            )
        if (sgd and step_size(schedule, float(self.eta0), 0, data.n_iter) >= 1.0
                and schedule != 1):
            raise ValueError(
                f"eta0={self.eta0} gives a step >= 1 with learning_rate="
                f"{self.learning_rate!r} and T={data.n_iter} iterations; the "
                "update (1 - step) f would flip f. Lower eta0."
            )
        cccp = self.unlabeled_loss_ == "ramp_cccp"
        if sgd and cccp:
            raise ValueError('unlabeled_loss="ramp_cccp" needs solver="lbfgs" '
                             "(its concave-convex steps are L-BFGS solves).")
        if cccp and hasattr(data.X, "primal_set"):
            # a Dask point set ships its loss to the workers once: the slopes
            # the solver re-linearises would not follow
            raise NotImplementedError(
                'unlabeled_loss="ramp_cccp" is not available on Dask inputs.')

    def _make_problem(self, data: FitData):
        self._check_s3vm_params(data)
        n_u, K = data.set_sizes[1], data.n_outputs
        data.uname = uname = self.unlabeled_loss_
        # a cross-validated choice (validation_fraction = k folds) with the
        # binary default loss: ramp_cccp at the rule is one more candidate,
        # the loss that follows CCCP-TSVM on cluster-structured sets (g241n)
        vf = self.validation_fraction_
        ramp_candidate = (isinstance(vf, Integral) and K == 1
                          and self.unlabeled_loss == "auto")
        # ramp_cccp: the slope of the linearised concave part per unlabeled
        # row and output, set by the solver at each concave-convex step
        data.slope = (np.zeros((n_u, K))
                      if uname == "ramp_cccp" or ramp_candidate else None)
        uname, C_star = self._select(data, self.C_star_, uname, ramp_candidate)
        return (self._problem(data, data.XL, data.Y, C_star, uname=uname),
                self._solve_keywords(uname))

    def _solve_keywords(self, uname: str) -> dict:
        """The step and annealing keywords of :func:`fit_expansion`."""
        schedule, eta0 = SCHEDULES[self.learning_rate], float(self.eta0)
        return dict(
            step=lambda t, T: step_size(schedule, eta0, t, T),
            # the concave-convex steps are their own continuation from their
            # start (the supervised machine, or the constant mean_L y with
            # balance="mean"): the C*-fraction stages cost accuracy on g241n
            anneal=0.0 if uname == "ramp_cccp" else float(self.anneal))

    def _fit_candidate(self, data: FitData, problem: Problem, uname: str):
        """One fit of the model selection (no monitor)."""
        return self._solve(problem, data, **self._solve_keywords(uname))

    def _majorize(self, data: FitData, f, rows):
        """Re-linearise the concave part at the outputs ``f`` of the unlabeled
        ``rows``; the fraction of slopes (in [-1, 1]) that moved by more than
        1 % of their range."""
        slope = data.slope
        rows = np.arange(data.set_sizes[1]) if rows is None else rows
        new = ramp_cccp_slope(f, self.s)
        moved = float(np.mean(np.abs(new - slope[rows]) > 0.02))
        slope[rows] = new
        return moved

    def _problem(self, data: FitData, XL, Y, C_star, held=None, uname=None):
        """Eq. (1) on the labeled rows ``XL`` (targets ``Y``) and every
        unlabeled row, with the unlabeled loss ``uname`` (None: the resolved
        ``unlabeled_loss_`` before any model selection); ``held``: rows and
        targets of held-out labels that only score the annealing stages
        (:class:`Problem`'s ``select``)."""
        uname = data.uname if uname is None else uname
        n_l, n_u = XL.shape[0], data.set_sizes[1]
        cccp = uname == "ramp_cccp"
        C, lname, slope = float(self.C), self.loss, data.slope
        sgd = self.solver == "sgd"
        balance, r = _BALANCE[self.balance_], data.r

        def pointwise(s, f, rows, m, w):
            """Eq. (1) with C and C* on sums (scikit-learn's SVC
            convention): set ``s``'s part at the outputs ``f`` of its
            ``rows`` (of ``m`` drawn), so that the sum over a sample
            estimates the full sum."""
            if s == 0:
                YL = Y[rows]
                k = C * n_l / m
                margin = YL * f
                return (k * labeled_loss(lname, margin).sum(),
                        k * labeled_loss_grad(lname, margin) * YL)
            k = C_star * w * n_u / m
            if cccp:
                # the convex majorant of paper 004 Eq. 1.12 at the last
                # linearisation: convex part + slope * f (the objective
                # up to a constant that does not depend on f)
                val, grad = ramp_cccp_convex(f)
                b = slope[rows]
                return k * (val.sum() + float(np.sum(b * f))), k * (grad + b)
            return (k * unlabeled_loss(uname, f, self.s).sum(),
                    k * unlabeled_loss_grad(uname, f, self.s))

        def loss(fs, idx, sizes, w):
            parts = [pointwise(s, f, np.arange(f.shape[0]) if i is None else i,
                               f.shape[0], w)
                     for s, (f, i) in enumerate(zip(fs, idx, strict=True))]
            return sum(p[0] for p in parts), [p[1] for p in parts]

        return Problem(
            [(XL, None), (data.X, data.idx_u)] + ([(held[0], None)] if held else []),
            data.n_outputs, loss, lam=1.0,
            intercept="balance" if balance else ("none" if sgd else "free"),
            balance=lambda gU: balancing_bias(balance, gU, r),
            balance_target=_ANCHORS[balance](r) if balance in _ANCHORS
            and not sgd else r,
            uses=lambda w: [True, w * C_star > 0] + [False] * bool(held),
            pointwise=pointwise, outputs_on=1,
            majorize=partial(self._majorize, data) if cccp else None,
            select=(2, partial(_held_out_errors, held[1])) if held else None,
            options=data.opts,
        )

    def _select(self, data: FitData, C_star: float, uname: str,
                ramp_candidate: bool):
        """Paper 004's choice of C* on labeled validation rows
        (``validation_fraction_``): by k-fold cross-validation or on one
        held-out part. Returns the unlabeled loss and the C* kept (the given
        ones without a choice)."""
        vf, seed, slope = self.validation_fraction_, data.seed, data.slope
        XL, Y, yl, n_l = data.XL, data.Y, data.yl, data.set_sizes[0]
        cccp = uname == "ramp_cccp"

        def fit(problem, uname=uname):
            return self._fit_candidate(data, problem, uname)

        def problem_for(XL, Y, C_star, held=None, uname=uname):
            return self._problem(data, XL, Y, C_star, held, uname)

        if isinstance(vf, Integral):
            # paper 004's choice of C* on labeled validation rows, by k-fold
            # cross-validation where the labels are too few to hold a part
            # out: every candidate fitted without each fold and scored on
            # it; the errors pooled over the folds (each label scored once,
            # by machines that did not see it) decide by the one-SE rule
            # against paper 004's rule (the given C*, the given loss)
            folds = StratifiedKFold(vf, shuffle=True, random_state=seed % 2**32)
            pooled = {}
            for tr, va in folds.split(np.zeros((n_l, 1)), yl):
                held = (XL[va], Y[va])
                runs = [(uname, fit(problem_for(XL[tr], Y[tr], C_star, held)))]
                if ramp_candidate:
                    slope[:] = 0.0  # each run starts from its own linearisation
                    runs.append(("ramp_cccp", fit(problem_for(
                        XL[tr], Y[tr], C_star, held, "ramp_cccp"), "ramp_cccp")))
                for loss, run in runs:
                    for w, err in run.stage_scores:
                        if loss == uname or w > 0:  # one supervised candidate
                            pooled.setdefault((loss, w), []).append(err)
            cands = list(pooled)
            # the reference is the rule, not the supervised machine: see
            # one_se_stage
            keep = cands[one_se_stage([np.concatenate(pooled[c]) for c in cands],
                                      ref=cands.index((uname, 1.0)))]
            self.validation_errors_ = np.array(
                [(C_star * w, np.concatenate(pooled[(loss, w)]).mean())
                 for loss, w in cands])
            self.validation_losses_ = tuple(loss for loss, _ in cands)
            uname = self.unlabeled_loss_ = keep[0]
            C_star = self.C_star_ = C_star * keep[1]
            if slope is not None:
                slope[:] = 0.0
        elif vf is not None:
            # paper 004's choice of C* on labeled validation rows: the
            # stages fitted without a seeded, stratified part of the labels,
            # carried up to the largest held sample level and scored there
            # on it; then the fit on every label at the C* kept
            tr, va = (np.sort(i) for i in train_test_split(
                np.arange(n_l), test_size=vf, stratify=yl,
                random_state=seed % 2**32))
            chosen = fit(problem_for(XL[tr], Y[tr], C_star, (XL[va], Y[va])))
            self.validation_errors_ = np.array(
                [(C_star * w, err) for w, err in chosen.stage_errors])
            self.validation_losses_ = (uname,) * len(chosen.stage_errors)
            C_star = self.C_star_ = C_star * chosen.weight
            if cccp:
                slope[:] = 0.0  # the fit starts from its own linearisation
        return uname, C_star

    def _set_offset(self, model: FunctionalModel, b, data: FitData) -> None:
        balance = _BALANCE[self.balance_]
        # solver="lbfgs" holds the mean and clipped constraints on all its
        # unlabeled rows (the bias it returns); SGD's per-minibatch bias and
        # the quantile rule are set here, on a fixed sample.
        if balance == 2 or (balance in (1, 4) and self.solver == "sgd"):
            # Final bias from a fixed sample of unlabeled points.
            idx_u = data.idx_u
            rows = idx_u[seeded_sample(idx_u.size, 4096, data.seed)]
            XB = as_compute_rows(data.X[rows], model.spec.dtype)
            self.intercept_ = balancing_bias(balance, model.evaluate(XB), data.r)
        else:
            self.intercept_ = np.array(b, dtype=np.float64).reshape(model.K)

    def _check_solution(self, result, data: FitData) -> None:
        if result.balance_outputs is not None and _BALANCE[self.balance_] != 2:
            # the outputs on every unlabeled row, as the machine predicts them
            # ("quantile" moves the bias after the solve: not these outputs)
            check_unlabeled_predictions(self, result.balance_outputs, data.Y)

    def _finish(self, result, data: FitData) -> None:
        """The fitted-model checks, then Platt scaling on the labeled points:
        the only ones with known labels."""
        XL, Y, K = data.XL, data.Y, data.n_outputs
        # XL was validated with X: not again (a DataFrame's feature names are
        # not on the ndarray, and re-validating warned on every fit).
        fL = self._decision(XL)
        # non-finite -> ValueError naming the kernel; constant -> warning
        check_fitted_model(self, np.r_[self.coef_.ravel(), self.intercept_], fL)
        diverged = False
        if self.solver == "sgd" and self.kernel in ("rbf", "laplacian"):
            # Fourier features. J(0), Eq. (1) at f = 0, bounds every
            # minimiser: ||f||_H^2 <= 2 J(0)
            n_l, n_u = data.set_sizes
            j0 = (float(self.C) * n_l
                  * float(labeled_loss(self.loss, np.zeros(1))[0])
                  + self.C_star_ * n_u * float(unlabeled_loss(
                      self.unlabeled_loss_, np.zeros(1), self.s)[0]))
            diverged = check_sgd_outputs(self, fL, j0)
        if not diverged:  # one warning a fit
            # the loss along the run: any kernel (the bound above needs the
            # Fourier features' k(x, x) <= 2), and a rise of the loss below it
            check_sgd_curve(self, result)
        fL = fL[:, None] if fL.ndim == 1 else fL
        self.platt_ = np.array(
            [fit_platt(fL[:, k], (Y[:, k] > 0).astype(float)) for k in range(K)]
        )

    # -- prediction --------------------------------------------------------
    def _width(self):
        """Columns of the decision values (None: one value per row)."""
        return None if self.classes_.size == 2 else self.classes_.size

    def _decision(self, X):
        """:meth:`decision_function` on validated rows: ``f(x) + b``, shape
        (n,) for binary, (n, n_classes) for one-vs-rest."""
        f = self.spec_.decision(X, self.coef_, self.n_blocks_) + self.intercept_
        return f[:, 0] if f.shape[1] == 1 else f

    def predict_proba(self, X):
        """Class probabilities by Platt scaling fitted on the labeled points;
        one-vs-rest probabilities are normalized to sum to one."""
        if is_dask_collection(X):
            return map_rows(self.predict_proba, X, self.classes_.size)
        f = self.decision_function(X)
        f = f[:, None] if f.ndim == 1 else f
        P = np.column_stack(
            [platt_proba(f[:, k], *self.platt_[k]) for k in range(f.shape[1])]
        )
        if P.shape[1] == 1:
            return np.column_stack([1.0 - P[:, 0], P[:, 0]])
        P = np.clip(P, 1e-12, None)
        return P / P.sum(axis=1, keepdims=True)

    # -- model files -------------------------------------------------------
    def _add_state(self, meta, arrays):
        meta.update(C_star=self.C_star_, unlabeled_loss=self.unlabeled_loss_,
                    balance=self.balance_)
        arrays.update(intercept=np.asarray(self.intercept_, dtype=np.float64),
                      platt=self.platt_)

    def _set_own_state(self, meta, arrays):
        self.C_star_ = float(meta["C_star"])
        self.intercept_ = arrays["intercept"]
        self.platt_ = arrays["platt"]
        # files written before "auto" existed: the parameters were what ran
        self.unlabeled_loss_ = meta.get("unlabeled_loss", self.unlabeled_loss)
        self.balance_ = meta.get("balance", self.balance)


_SHARED_PARAMS_DOC = """C : float, default=1.0
        Weight of the *sum* of the labeled losses, as ``C`` of scikit-learn's
        ``SVC``: ``1/2 ||f||^2 + C sum_L l(y f(x)) + C* sum_U u(f(x))``. Paper
        000 Eq. (1) weighs the *mean* by its ``C``: ``C_paper = C * n_l``.
    C_star : float or None, default=None
        Weight of the sum of the unlabeled losses; None uses paper 004's rule
        ``C * n_l / n_u`` (the unlabeled term weighs as much as the labeled
        one; with Eq. (1)'s means this is ``C*_paper = C_paper``). The value
        used is ``C_star_``.
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float or "scale", default="scale"
        Kernel width, ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``);
        ``"scale"`` is ``1 / (d Var X)`` as ``SVC(gamma="scale")``. The value
        used is ``sigma_``.
    degree, coef0 : polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    loss : {"squared_hinge", "smooth_hinge", "hinge"}, default="squared_hinge"
        Labeled loss (:func:`labeled_loss`). The hinge of Eq. (1) is not
        differentiable, which L-BFGS needs; the squared hinge (L2-SVM,
        ``LinearSVC``'s default) and the smooth hinge are. The squared hinge
        weighs a margin error more than the hinge at the same ``C`` (a larger
        effective C where errors are large), the smooth hinge stays within
        0.25 of the hinge (``SVC``'s scale of ``C``) but underfits at scale
        (docs/fidelity.md, paper 000's departure 3).
        Use "hinge" with ``solver="sgd"`` for the paper as printed.
    unlabeled_loss : {"auto", "da", "shg", "sshg", "ramp", "ramp_cccp"}, \
default="auto"
        Table 2 of paper 000 (see :func:`unlabeled_loss`); "da" is smooth.
        ``"auto"``: ``"da"`` for a binary problem, ``"shg"`` for one-vs-rest
        (with ``balance="auto"``; the pair measured on MNIST, SSL-book COIL
        and COIL-20, docs/fidelity.md). The value used is
        ``unlabeled_loss_``. ``"ramp_cccp"`` (``solver="lbfgs"``, not on Dask
        inputs): paper 004's symmetric ramp with smoothed hinges, minimised
        as CCCP-TSVM minimises it -- concave-convex steps (Algorithm 1.3),
        each an L-BFGS solve of the convex majorant from the previous
        solution, no annealing (``anneal`` is ignored): from the
        supervised machine with an anchored balance (``"clipped"``,
        ``"supervised"``), from the constant ``mean_L y`` with ``"mean"``.
        On the SSL-book sets g241c / g241n it follows CCCP-TSVM where paper
        004's C* rule with ``"da"`` falls to chance.
    s : float, default=-0.3
        Ramp parameter (``unlabeled_loss="ramp"`` and ``"ramp_cccp"``).
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        ``"sgd"`` is paper 000's Algorithm 1: triply stochastic functional
        gradient steps (labeled minibatch, unlabeled minibatch, fresh block
        of random features). ``"lbfgs"`` minimises the same objective over a
        fixed expansion by L-BFGS in its primal over every row (annealed on
        every row at once while the features are held, else on nested
        seeded samples from 4096 rows per set up to all,
        :func:`weakkernels._dsg.primal_levels`; the basis is ``features``):
        the SGD reaches the exact SVM's accuracy only with far more
        iterations than a default can afford when ``C`` is large
        (docs/fidelity.md, paper 000's departure 1).
    tol : float, default=1e-5
        ``solver="lbfgs"``: stop a stage when the largest gradient entry falls
        below ``tol`` times its value at the stage's start.
    batch_size : int, default=256
        ``solver="sgd"``: labeled and unlabeled minibatch size (paper: 256).
    n_passes : float
        ``solver="sgd"``: iterations ``T = ceil(n_passes * n_u / batch_size)``.
    max_iter : int or None, default=None
        ``solver="sgd"``: overrides ``n_passes``; ``solver="lbfgs"``: L-BFGS
        iterations per annealing stage (None: 500).
    learning_rate : {"decay", "constant", "fixed"}, default="decay"
        ``solver="sgd"``: ``"decay"`` is ``eta0 / (eta0 + t)``, ``"constant"``
        ``eta0 / T^(3/4)`` (paper 000 Theorem 1), ``"fixed"`` ``eta0`` (paper
        000 Sec. 6's ``gamma = 1/eta``). ``"decay"``'s first step is 1 for any
        ``eta0``: with the squared hinge and a large ``C`` (C = 10 on 30
        labels) it lands where the loss is 10^4 times that of ``f = 0`` and
        the run does not recover (a ``ConvergenceWarning`` says so); use the
        hinge, as the papers do, or ``"constant"``.
    eta0 : float, default=1.0
    balance : {"auto", "clipped", "mean", "supervised", "quantile", "none"} \
or bool, default="auto"
        Balancing constraint on the bias (see :func:`balancing_bias`).
        ``"auto"``: ``"clipped"`` for a binary problem, ``"mean"`` for
        one-vs-rest (see ``unlabeled_loss``); the value used is ``balance_``.
        ``"clipped"`` (binary default): ``mean_U clip(f, -1, 1) = mean_L y`` --
        paper 004's Eq. (1.13) with the outputs clipped to the margin. With
        ``solver="lbfgs"`` the first annealing stage (C* = 0, the supervised
        machine) runs with a free bias, every later stage holds ``mean_U f``
        where the clipped constraint puts it for the outputs the stage starts
        from, and the returned machine holds it exactly; ``solver="sgd"``
        sets the bias from each unlabeled minibatch, as for ``"mean"``. With
        small outputs it is ``"mean"``; with saturated ones it fixes the class
        fraction, so it does not pull the bias on imbalanced sets as ``"mean"``
        does (docs/fidelity.md, paper 000's departures).
        ``"mean"`` (or True) is paper 004 Eq. (1.13), ``mean_U f = mean_L y``;
        with ``solver="lbfgs"`` it holds exactly (features centred on the
        unlabeled rows); it assumes ``|f| ~ 1``. ``"quantile"`` fixes the
        fraction of unlabeled points predicted positive to the labeled one
        (Joachims' TSVM); with ``solver="lbfgs"`` it replaces the mean-balanced
        bias after the solve. ``"supervised"`` (``solver="lbfgs"`` only) holds
        ``mean_U f`` where the supervised first stage put it (it collapses
        with that machine at small C). ``"none"``: no constraint
        (``solver="lbfgs"`` then learns a free bias, ``solver="sgd"`` has
        none, as printed).
    anneal : float in [0, 1), default=0.5
        Raise C* from 0, as S3VMlight and nabla-TSVM anneal the unlabeled
        weight: the labeled points first place the boundary that the
        non-convex unlabeled loss then refines. ``solver="sgd"``: linearly over
        this fraction of the steps; ``solver="lbfgs"``: any value > 0 solves
        the C*-fractions 0, .1, 1 in turn, each from the previous solution
        (on to 3 and 10 with ``validation_fraction``).
    validation_fraction : float in (0, 1), int >= 2, "auto" or None, \
default="auto"
        ``solver="lbfgs"``: choose C* as paper 004 does, on labeled
        validation rows. This fraction of the labels (seeded, stratified) is
        held out while the C* multiples 0, .1, 1, 3, 10 (0 and 1 with
        ``anneal=0``) are fitted (an annealing path on the first sample
        level, then each candidate
        warm-started on every larger sample whose features are held:
        :data:`weakkernels._dsg.SELECT_STAGES`); the one kept is the
        supervised machine (C* = 0) unless another makes fewer errors on the
        held-out rows by more than one standard error of the paired
        difference (:func:`weakkernels._dsg.one_se_stage`). The machine
        returned is then the fit on every label at that C*, bit for bit the
        one ``C_star=C_star_, validation_fraction=None`` gives (the choice
        costs about five fits up to the largest held level -- the whole fit
        below 2 GiB of features -- and one more). ``C_star_`` is the C* kept,
        ``validation_errors_`` each stage's (C*, held-out error). An int
        ``k >= 2``: ``k``-fold cross-validation over the labels (stratified,
        seeded) instead of one held-out part, for labels too few to spare:
        the candidates are fitted without each fold, scored on it, and their
        errors pooled over the folds (every label scored once) decide by the
        one-SE rule against the given C* (not C* = 0: a few labels do not
        resolve a gain of the unlabeled term, they do resolve a collapse;
        :func:`weakkernels._dsg.one_se_stage`); with
        ``unlabeled_loss="auto"`` on a binary problem ``"ramp_cccp"`` at the
        given C* is one more candidate (``unlabeled_loss_`` says which loss
        was kept, ``validation_losses_`` each candidate's). It costs about
        ``k`` fits of every candidate, and one more. None: C* as given
        (paper 004's rule by default). ``"auto"``: 0.1 from
        :data:`AUTO_VALIDATION_MIN_LABELS` (10 000) labels on; below, 5 folds
        where the problem has at most :data:`AUTO_CV_MAX_ROWS` (4 096) rows
        and 5 labels of each class, a NumPy input and ``C_star > 0``
        (where the rule falls to chance on small problems, this follows
        CCCP-TSVM); else None, paper 004's
        rule (what was used is ``validation_fraction_``).
    features : {"auto", "fourier", "nystroem"}
        The basis of the fixed expansion (TSGS3VM's default ``"auto"``,
        FRS3VM's ``"fourier"``: the paper's fixed-feature baseline).
        ``"fourier"``: seeded random Fourier features (the papers'; the model
        file holds seeds and coefficients only). ``"nystroem"``
        (``solver="lbfgs"``, RBF kernel): Nyström features on landmarks drawn
        from the training rows (the labeled ones first), whitened
        (:class:`weakkernels.random_features.NystromSpec`); the model file
        stores the landmarks. Landmark count: ``max_features`` /
        ``n_components`` if given, else every row up to 4096 rows (the exact
        kernel machine) and :func:`weakkernels._dsg.nystroem_size` beyond. ``"auto"``:
        Nyström where it applies (L-BFGS, RBF, at most 2^26 landmark entries,
        features that fit 2 GiB or rows of at most 32 768 columns, streamed),
        else Fourier. Why Nyström by default: at equal or lower cost it is as
        accurate or more (docs/fidelity.md, paper 000's departures). The basis
        used is ``features_``.
    dtype : {"float32", "float64"}, default="float32"
        Compute precision of the features.
    random_state : int, RandomState instance or None
        Seeds the minibatch stream, the samples and the feature blocks.
    callback : callable or None
        ``callback(estimator, n_iter)`` every ``callback_every`` SGD iterations
        or after each L-BFGS stage, with the estimator usable for
        ``decision_function`` (Optuna pruning, curves).
    callback_every : int, default=10
    solver_options : SolverOptions or None, default=None
        The solvers' tunables (:class:`weakkernels.SolverOptions`: sample
        levels, feature-count rules, caches, caps); None: the defaults."""

_ATTRIBUTES_DOC = """classes_ : ndarray, the real classes (never -1).
    coef_ : ndarray of shape (n_outputs, ``n_features_model_``)
    intercept_ : ndarray (n_outputs,)
    spec_ : FeatureSpec, the seeds and layout that regenerate the features.
    C_star_, sigma_, unlabeled_loss_, balance_ : the values used (resolved
        defaults; ``C_star_`` the one kept with ``validation_fraction``).
    validation_errors_ : ndarray (n_candidates, 2), with
        ``validation_fraction`` only: each candidate's C* and error on the
        held-out labels (pooled over the folds with cross-validation).
    validation_losses_ : tuple of str, each candidate's unlabeled loss.
    features_ : str, the basis used ("nystroem" or "fourier").
    n_iter_ : SGD steps, or L-BFGS iterations summed over the stages.
    objective_curve_ : minibatch loss estimate per SGD step, or the objective
        at the end of each L-BFGS stage.
    n_blocks_, seed_, platt_"""


def _fill_doc(cls):
    """Insert the parameter and attribute texts the two estimators share."""
    cls.__doc__ = cls.__doc__.replace("{shared}", _SHARED_PARAMS_DOC).replace(
        "{attributes}", _ATTRIBUTES_DOC
    )
    return cls


@register
@_fill_doc
class TSGS3VM(_S3VMBase):
    """Semi-supervised SVM on seeded random features (paper 000).

    Minimises paper 000 Eq. (1) (with ``C`` on sums, see below) over an
    expansion of random features generated from ``(seed, block)``; the model
    stores only seeds and coefficients and prediction regenerates the features
    (Algorithm 2). ``solver="sgd"`` is the triply stochastic Algorithm 1: every
    iteration samples ``batch_size`` labeled and unlabeled points and a fresh
    block of ``block_size`` features and applies Eq. (7). The default
    ``solver="lbfgs"`` solves the same objective on ``max_features`` seeded
    features deterministically; it gets the exact-kernel SVM's accuracy where
    Algorithm 1 needs orders of magnitude more steps (the documentation's
    benchmark pages; docs/fidelity.md, paper 000's departure 1).

    The paper's algorithm as printed is ``TSGS3VM(solver="sgd", loss="hinge",
    unlabeled_loss="shg", balance="none", anneal=0, learning_rate="fixed",
    eta0=1/eta, C=C_paper/n_l)`` (with ``C_star`` set explicitly).

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    {shared}
    block_size : int, default=32
        Random features per block (``solver="sgd"``: added per iteration).
    max_features : int or None, default=None
        Feature budget. ``solver="lbfgs"``: the expansion's size (None: the
        rule of :func:`weakkernels._dsg.primal_features`, 1024 to ~5 000,
        growing as ~16 sqrt(n); with Nyström features
        :func:`weakkernels._dsg.nystroem_size`).
        ``solver="sgd"``: once reached, no new blocks are added and steps
        update existing blocks cyclically (None: unbounded, as the paper).

    Attributes
    ----------
    {attributes}

    See Also
    --------
    FRS3VM : the same objective on one fixed block of random features.
    weakkernels.CCCPTSVM : the exact-kernel transductive SVM of paper 004.
    weakkernels.model_selection.LabeledKFold : cross-validation folds over
        the labeled rows only.

    References
    ----------
    .. [1] Geng, X., Gu, B., Li, X., Shi, W., Zheng, G., Huang, H. Scalable
       semi-supervised SVM via triply stochastic gradients. IJCAI 2019.
    .. [2] Collobert, R., Sinz, F., Weston, J., Bottou, L. Large scale
       transductive SVMs. JMLR 7, 2006 (the ``C* = C n_l / n_u`` rule and the
       balancing constraint).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import TSGS3VM
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> y_semi = np.full(300, -1)            # -1 marks unlabeled rows
    >>> y_semi[:20] = y[:20]
    >>> clf = TSGS3VM(C=10, validation_fraction=None, random_state=0).fit(X, y_semi)
    >>> clf.classes_
    array([0, 1])
    >>> bool(clf.score(X[20:], y[20:]) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "n_passes", "block_size", "max_features", **_S3VM_CONSTRAINTS)

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        loss="squared_hinge",
        unlabeled_loss="auto",
        s=-0.3,
        solver="lbfgs",
        tol=1e-5,
        batch_size=256,
        block_size=32,
        n_passes=1.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="auto",
        anneal=0.5,
        validation_fraction="auto",
        features="auto",
        max_features=None,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.block_size = block_size
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.validation_fraction = validation_fraction
        self.features = features
        self.max_features = max_features
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every
        self.solver_options = solver_options


@register
@_fill_doc
class FRS3VM(_S3VMBase):
    """The same S3VM objective on one fixed block of ``n_components`` random
    features: paper 000's FRS3VM baseline.

    With ``solver="sgd"`` (the paper's baseline) every step is a stochastic
    gradient step in the primal of the fixed features, against TSGS3VM's fresh
    block per step. With the default ``solver="lbfgs"`` both estimators solve
    the same problem on a fixed expansion; they differ only in how the seeded
    features are laid out (one block of ``n_components`` here).

    The paper's baseline as printed is ``FRS3VM(solver="sgd", loss="hinge",
    unlabeled_loss="shg", balance="none", anneal=0, n_components="sqrt",
    n_passes=10)``.

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    {shared}
    n_components : int, "sqrt" or None, default=None
        Number of random features; ``"sqrt"`` is the paper's
        ``ceil(sqrt(n))``, None the L-BFGS default of TSGS3VM's
        ``max_features`` (:func:`weakkernels._dsg.primal_features`).

    Attributes
    ----------
    {attributes}

    See Also
    --------
    TSGS3VM : the same objective, Nyström features by default.
    weakkernels.CCCPTSVM : the exact-kernel transductive SVM of paper 004.
    weakkernels.model_selection.LabeledKFold : cross-validation folds over
        the labeled rows only.

    References
    ----------
    .. [1] Geng, X., Gu, B., Li, X., Shi, W., Zheng, G., Huang, H. Scalable
       semi-supervised SVM via triply stochastic gradients. IJCAI 2019.
    .. [2] Collobert, R., Sinz, F., Weston, J., Bottou, L. Large scale
       transductive SVMs. JMLR 7, 2006 (the ``C* = C n_l / n_u`` rule and the
       balancing constraint).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import FRS3VM
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> y_semi = np.full(300, -1)            # -1 marks unlabeled rows
    >>> y_semi[:20] = y[:20]
    >>> clf = FRS3VM(C=10, validation_fraction=None, random_state=0).fit(X, y_semi)
    >>> clf.classes_
    array([0, 1])
    >>> bool(clf.score(X[20:], y[20:]) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "n_passes", **_S3VM_CONSTRAINTS,
        n_components=[Interval(Integral, 1, None, closed="left"),
                      StrOptions({"sqrt"}), None])

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        loss="squared_hinge",
        unlabeled_loss="auto",
        s=-0.3,
        solver="lbfgs",
        tol=1e-5,
        batch_size=256,
        n_components=None,
        n_passes=10.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="auto",
        anneal=0.5,
        validation_fraction="auto",
        features="fourier",
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.n_components = n_components
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.validation_fraction = validation_fraction
        self.features = features
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every
        self.solver_options = solver_options

    _size_param = "n_components"

    def _features_given(self):
        return self.n_components is not None

    def _layout(self, n_rows, set_sizes, d):
        if self.n_components == "sqrt":
            D = math.ceil(math.sqrt(n_rows))
        else:
            D = self.n_components or default_blocks("lbfgs", set_sizes, None, 1, d,
                                                    options_of(self))
        # One block holding all features, revisited every step.
        return int(D), 1
