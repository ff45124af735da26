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
balancing constraint of Collobert et al. (paper 004 Eq. 1.13) and an annealing of
C*. Both are on by default because they win on the benchmarks (BENCHMARKS.md);
``balance="none", anneal=0`` is the algorithm exactly as printed.
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from weakkernels._artifact import ArtifactMixin, register
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._dsg import (
    SCHEDULES,
    FunctionalModel,
    expansion_state,
    set_expansion_state,
    step_size,
)
from weakkernels._validation import (
    check_divergence,
    validate_predict,
    validate_semi_supervised,
)
from weakkernels.kernels import RANDOM_FEATURE_KERNELS
from weakkernels.random_features import (
    FeatureSpec,
    blas_single_thread,
    seed_from_random_state,
)

UNLABELED_LOSSES = ("shg", "sshg", "ramp", "da")


def unlabeled_loss(name: str, f: np.ndarray, s: float = -0.3) -> np.ndarray:
    """Unlabeled losses ``u(f)`` of paper 000 Table 2.

    * ``"shg"``  symmetric hinge ``max(0, 1 - |f|)``;
    * ``"sshg"`` squared symmetric hinge ``1/2 max(0, 1 - |f|)^2``;
    * ``"ramp"`` symmetric ramp ``R_s(f) + R_s(-f)``, ``R_s = H_1 - H_s``,
      ``H_s(z) = max(0, s - z)`` (Table 2 with paper 004 Eq. 1.11's symmetric
      form; ``s < 0`` gives the flat top on ``|f| < -s``);
    * ``"da"``   ``exp(-5 f^2)``, the differentiable approximation to SSHG.
    """
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
    raise ValueError(f"unknown unlabeled loss {name!r}")


# balance option -> code: 0 off, 1 mean constraint, 2 quantile constraint
_BALANCE = {False: 0, "none": 0, True: 1, "mean": 1, "quantile": 2}


def balancing_bias(code: int, g_unlabeled: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Bias that makes the unlabeled outputs match the labeled class balance.

    ``r`` (per output) is the mean of the labeled +-1 targets.

    * code 1, the mean constraint of paper 004 Eq. (1.13):
      ``mean_U (g + b) = r``, i.e. ``b = r - mean_U g``;
    * code 2, the fraction constraint of Joachims' TSVM (1999): the fraction of
      unlabeled points with ``g + b > 0`` equals the labeled positive fraction
      ``(1 + r) / 2``, i.e. ``b = -quantile(g, 1 - (1 + r) / 2)``. It does not
      depend on the scale of ``g``, which matters with imbalanced classes.
    """
    if code == 1:
        return r - g_unlabeled.mean(axis=0)
    q = 1.0 - (1.0 + r) / 2.0
    return -np.array(
        [np.quantile(g_unlabeled[:, k], q[k]) for k in range(g_unlabeled.shape[1])]
    )


def hinge_grad(margin: np.ndarray) -> np.ndarray:
    """``dl/dz`` of the hinge ``l(z) = max(0, 1 - z)`` at ``z = y f(x)``."""
    return np.where(margin < 1.0, -1.0, 0.0)


_COMMON_CONSTRAINTS = {
    "C": [Interval(Real, 0, None, closed="neither")],
    "C_star": [Interval(Real, 0, None, closed="left"), None],
    "kernel": [StrOptions(set(RANDOM_FEATURE_KERNELS))],
    "sigma": [Interval(Real, 0, None, closed="neither")],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, 0, None, closed="left")],
    "unlabeled_loss": [StrOptions(set(UNLABELED_LOSSES))],
    "s": [Interval(Real, None, 1, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "n_passes": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "learning_rate": [StrOptions(set(SCHEDULES))],
    "eta0": [Interval(Real, 0, None, closed="neither")],
    "balance": [StrOptions({"mean", "quantile", "none"}), "boolean"],
    "anneal": [Interval(Real, 0, 1, closed="left")],
    "dtype": [StrOptions({"float32", "float64"})],
    "random_state": ["random_state"],
    "callback": [callable, None],
    "callback_every": [Interval(Integral, 1, None, closed="left")],
}


class _S3VMBase(ArtifactMixin, ClassifierMixin, BaseEstimator):
    """Shared fit/predict of TSGS3VM and FRS3VM (they differ in the feature layout)."""

    _parameter_constraints = dict(_COMMON_CONSTRAINTS)

    # -- subclass hooks --------------------------------------------------------
    def _layout(self, n_samples: int) -> tuple[int, int]:
        """Return ``(block_size, max_blocks)``."""
        raise NotImplementedError

    # -- fit ---------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on labeled and unlabeled samples.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; ``-1`` marks an unlabeled sample (scikit-learn's
            semi-supervised convention). At least two labeled classes and at
            least one unlabeled sample are required.
        """
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, keep_float32=True
        )
        self.classes_ = classes
        dtype = np.dtype(self.dtype)
        # Only the (few) labeled rows are copied; unlabeled minibatches are
        # gathered from X by index, so X may be a memory-mapped file larger
        # than RAM (out-of-core training, one pass).
        idx_u = np.flatnonzero(~labeled)
        XL = np.ascontiguousarray(X[labeled], dtype=dtype)
        yl = y[labeled]
        n_l, n_u = XL.shape[0], idx_u.size
        K = 1 if classes.size == 2 else classes.size
        # +1/-1 targets per output: binary uses classes_[1] as the positive class,
        # multiclass is one-vs-rest over shared features and shared unlabeled data.
        if K == 1:
            Y = np.where(yl == classes[1], 1.0, -1.0)[:, None]
        else:
            Y = np.where(yl[:, None] == classes[None, :], 1.0, -1.0)
        # Balancing constraint (paper 004 Eq. 1.13): mean f on U = mean y on L.
        r = Y.mean(axis=0)
        C = float(self.C)
        C_star = C * n_l / n_u if self.C_star is None else float(self.C_star)
        self.C_star_ = C_star

        seed = seed_from_random_state(self.random_state)
        self.seed_ = seed
        B, max_blocks = self._layout(X.shape[0])
        spec = FeatureSpec(
            self.kernel, self.sigma, self.degree, self.coef0, X.shape[1], B, seed,
            dtype,
        )
        model = FunctionalModel(spec, K, max_blocks)
        if self.max_iter is not None:
            T = int(self.max_iter)
        else:
            T = max(1, math.ceil(self.n_passes * n_u / self.batch_size))
        schedule = SCHEDULES[self.learning_rate]
        if schedule == 0 and self.eta0 / T**0.75 >= 1.0:
            raise ValueError(
                f"eta0={self.eta0} gives a constant step eta0/T^(3/4) >= 1 for "
                f"T={T} iterations; the update (1 - step) f would flip f. "
                "Lower eta0."
            )
        # Minibatch sampling uses its own stream (data order), independent of the
        # feature seeds: Philox keyed by the seed.
        rng = np.random.Generator(np.random.Philox(key=seed))
        m_l = min(self.batch_size, n_l)
        m_u = min(self.batch_size, n_u)
        bias = np.zeros(K)
        balance = _BALANCE[self.balance]
        self.n_iter_ = 0
        self.fit_time_curve_ = []
        t_start = time.perf_counter()
        with blas_single_thread():
            for t in range(T):
                il = rng.integers(0, n_l, size=m_l)
                # sorted: sequential reads when X is on disk
                iu = np.sort(rng.integers(0, n_u, size=m_u))
                Xb = np.concatenate([XL[il], X[idx_u[iu]].astype(dtype)])
                fb = model.evaluate(Xb)
                check_divergence(fb, "eta0 (step size) or C")
                gL, gU = fb[:m_l], fb[m_l:]
                if balance:
                    bias = balancing_bias(balance, gU, r)
                fL = gL + bias
                fU = gU + bias
                c_star_t = C_star
                if self.anneal > 0:
                    c_star_t = C_star * min(1.0, (t + 1) / (self.anneal * T))
                Yb = Y[il]
                G = np.empty((m_l + m_u, K))
                G[:m_l] = (C / m_l) * hinge_grad(Yb * fL) * Yb
                G[m_l:] = (c_star_t / m_u) * unlabeled_loss_grad(
                    self.unlabeled_loss, fU, self.s
                )
                gamma = step_size(schedule, float(self.eta0), t, T)
                model.step(Xb, G, gamma, t)
                self.n_iter_ = t + 1
                if self.callback is not None and (t + 1) % self.callback_every == 0:
                    self._set_model_state(model, X, idx_u, r, rng_seed=seed)
                    self.fit_time_curve_.append(
                        (t + 1, time.perf_counter() - t_start)
                    )
                    self.callback(self, t + 1)
            self._set_model_state(model, X, idx_u, r, rng_seed=seed)
        model.release()
        # Platt scaling on the labeled points: the only ones with known labels.
        fL = self.decision_function(XL)
        fL = fL[:, None] if fL.ndim == 1 else fL
        self.platt_ = np.array(
            [fit_platt(fL[:, k], (Y[:, k] > 0).astype(float)) for k in range(K)]
        )
        return self

    def _set_model_state(self, model: FunctionalModel, X, idx_u, r, rng_seed: int):
        """Expose the current expansion as fitted attributes (usable mid-fit)."""
        self.spec_ = model.spec
        self.n_blocks_ = model.n_blocks
        self.coef_ = model.coefficients()
        balance = _BALANCE[self.balance]
        if balance:
            # Final bias from a fixed sample of unlabeled points.
            n_bal = min(idx_u.size, 4096)
            idx = np.random.Generator(np.random.Philox(key=rng_seed + 1)).choice(
                idx_u.size, size=n_bal, replace=False
            )
            XB = np.ascontiguousarray(X[idx_u[np.sort(idx)]], dtype=model.spec.dtype)
            gU = model.evaluate(XB)
            self.intercept_ = balancing_bias(balance, gU, r)
        else:
            self.intercept_ = np.zeros(model.K)
        check_divergence(self.coef_, "eta0 (step size) or C")
        self.n_features_model_ = model.n_features

    # -- prediction --------------------------------------------------------
    def decision_function(self, X):
        """Decision values ``f(x) + b`` (Algorithm 2: features regenerated from
        the seed). Shape (n,) for binary, (n, n_classes) for one-vs-rest."""
        check_is_fitted(self)
        X = validate_predict(self, X, keep_float32=True)
        f = self.spec_.decision(X, self.coef_, self.n_blocks_) + self.intercept_
        return f[:, 0] if f.shape[1] == 1 else f

    def predict(self, X):
        f = self.decision_function(X)
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]

    def predict_proba(self, X):
        """Class probabilities by Platt scaling fitted on the labeled points;
        one-vs-rest probabilities are normalized to sum to one."""
        f = self.decision_function(X)
        f = f[:, None] if f.ndim == 1 else f
        P = np.column_stack(
            [platt_proba(f[:, k], *self.platt_[k]) for k in range(f.shape[1])]
        )
        if P.shape[1] == 1:
            return np.column_stack([1.0 - P[:, 0], P[:, 0]])
        P = np.clip(P, 1e-12, None)
        return P / P.sum(axis=1, keepdims=True)

    # -- artifacts ---------------------------------------------------------
    def _artifact_state(self):
        meta, arrays = expansion_state(self)
        meta.update(C_star=self.C_star_, seed=self.seed_,
                    n_features_in=self.n_features_in_)
        arrays.update(
            intercept=np.asarray(self.intercept_, dtype=np.float64),
            classes=self.classes_,
            platt=self.platt_,
        )
        return meta, arrays

    def _set_artifact_state(self, meta, arrays):
        set_expansion_state(self, meta, arrays)
        self.C_star_ = float(meta["C_star"])
        self.seed_ = int(meta["seed"])
        self.n_features_in_ = int(meta["n_features_in"])
        self.intercept_ = arrays["intercept"]
        self.classes_ = arrays["classes"]
        self.platt_ = arrays["platt"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


@register
class TSGS3VM(_S3VMBase):
    """Semi-supervised SVM by triply stochastic functional gradients (paper 000).

    Every iteration samples ``batch_size`` labeled and ``batch_size`` unlabeled
    points and a fresh block of ``block_size`` random features generated from
    ``(seed, iteration)``, and applies Eq. (7) of paper 000 (Algorithm 1). The
    model stores only seeds and coefficients; prediction regenerates the features
    (Algorithm 2).

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the mean hinge loss on labeled points.
    C_star : float or None, default=None
        Weight of the unlabeled loss; None uses the paper's ``C * n_l / n_u``.
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float, default=1.0
        Kernel width, ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``).
    degree, coef0 : polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    unlabeled_loss : {"shg", "sshg", "ramp", "da"}, default="shg"
        Table 2 of paper 000 (see :func:`unlabeled_loss`).
    s : float, default=-0.3
        Ramp parameter (``unlabeled_loss="ramp"`` only).
    batch_size : int, default=256
        Labeled and unlabeled minibatch size (paper: 256).
    block_size : int, default=32
        Random features added per iteration.
    n_passes : float, default=1.0
        Iterations ``T = ceil(n_passes * n_u / batch_size)`` (paper: one pass).
    max_iter : int or None, default=None
        Overrides ``n_passes`` when given.
    learning_rate : {"constant", "decay"}, default="decay"
        ``"constant"``: ``eta0 / T^(3/4)`` (paper 000 Theorem 1); ``"decay"``:
        ``eta0 / (eta0 + t)``.
    eta0 : float, default=1.0
    balance : {"quantile", "mean", "none"} or bool, default="quantile"
        Balancing constraint, enforced through the bias, estimated on each
        unlabeled minibatch and, at the end, on up to 4096 unlabeled points (see
        :func:`balancing_bias`). ``"mean"`` (or True) is paper 004 Eq. (1.13),
        ``mean_U f = mean_L y``; ``"quantile"`` fixes the fraction of unlabeled
        points predicted positive to the labeled one (Joachims' TSVM) and does
        not depend on the scale of f. Without a constraint the unlabeled loss
        can push every point to one class. Measured (BENCHMARKS.md): on g50c
        (balanced) "mean" 5.62%, "quantile" 6.62%, none 8.78%; on cod-rna (2:1
        imbalanced) "mean" 15-18%, "quantile" ~10%, none ~9-11%.
    anneal : float in [0, 1), default=0.5
        Ramp C* linearly from 0 over this fraction of the iterations, as S3VMlight
        and nabla-TSVM anneal the unlabeled weight: the labeled points first fix a
        sensible boundary that the non-convex unlabeled loss then refines.
    max_features : int or None, default=None
        Feature budget: once reached, no new blocks are added and steps update
        existing blocks cyclically (bounded cost per step).
    dtype : {"float32", "float64"}, default="float32"
        Compute precision of the features.
    random_state : int, RandomState instance or None
        Seeds both the minibatch stream and the feature blocks.
    callback : callable or None
        ``callback(estimator, n_iter)`` every ``callback_every`` iterations, with
        the estimator usable for ``decision_function`` (Optuna pruning, curves).
    callback_every : int, default=10

    Attributes
    ----------
    classes_ : ndarray, the real classes (never -1).
    coef_ : ndarray (n_outputs, n_features_model_)
    intercept_ : ndarray (n_outputs,)
    spec_ : FeatureSpec, the seeds and layout that regenerate the features.
    n_blocks_, n_iter_, C_star_, seed_, platt_
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "block_size": [Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma=1.0,
        degree=2,
        coef0=1.0,
        unlabeled_loss="shg",
        s=-0.3,
        batch_size=256,
        block_size=32,
        n_passes=1.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="quantile",
        anneal=0.5,
        max_features=None,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.batch_size = batch_size
        self.block_size = block_size
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.max_features = max_features
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every

    def _layout(self, n_samples):
        B = int(self.block_size)
        if self.max_features is None:
            return B, 2**62
        if self.max_features < B:
            raise ValueError(
                f"max_features={self.max_features} is smaller than one block "
                f"(block_size={B})."
            )
        return B, int(self.max_features) // B


@register
class FRS3VM(_S3VMBase):
    """The same S3VM objective on a fixed set of random features (paper 000's
    FRS3VM baseline): stochastic gradient descent in the primal of
    ``n_components`` seeded random features; every step updates them all.

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``. Parameters as in
    :class:`TSGS3VM`, except

    n_components : int or None, default=None
        Number of random features; None uses the paper's ``ceil(sqrt(n))``.
    n_passes : float, default=10.0
        The paper runs FRS3VM for 10 passes.
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma=1.0,
        degree=2,
        coef0=1.0,
        unlabeled_loss="shg",
        s=-0.3,
        batch_size=256,
        n_components=None,
        n_passes=10.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="quantile",
        anneal=0.5,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.batch_size = batch_size
        self.n_components = n_components
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every

    def _layout(self, n_samples):
        D = self.n_components or math.ceil(math.sqrt(n_samples))
        # One block holding all features, revisited every step.
        return int(D), 1
