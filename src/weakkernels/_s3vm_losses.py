"""The losses of the S3VM objective (paper 000 Eq. (1) and Table 2), the
balancing constraint of paper 004 Eq. (1.13) and the resolution of the
``"auto"`` defaults: the arithmetic TSGS3VM and FRS3VM hand to the solver,
re-exported by :mod:`weakkernels.tsgs3vm`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

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
# unlabeled outputs onto two digits (docs/benchmarks/design_notes.md,
# "The estimators' defaults").
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


# the losses without curvature (piecewise linear): labeled, unlabeled
FLAT_LABELED = ("hinge",)
FLAT_UNLABELED = ("shg", "ramp")


def labeled_loss_curvature(name: str, margin: np.ndarray) -> np.ndarray:
    """``d^2 l / dz^2`` of :func:`labeled_loss` (0 at and beyond the kinks:
    the generalised Hessian of a piecewise quadratic)."""
    h = np.maximum(0.0, 1.0 - margin)
    if name in FLAT_LABELED:
        return np.zeros_like(h)
    if name == "squared_hinge":
        return 2.0 * (h > 0.0)
    return ((h > 0.0) & (h < _SMOOTH_DELTA)) / _SMOOTH_DELTA


def unlabeled_loss_curvature(name: str, f: np.ndarray, s: float = -0.3) -> np.ndarray:
    """The convex part of ``u''(f)`` of :func:`unlabeled_loss`, negative
    curvature clipped to 0 (for ``"ramp_cccp"``: of its convex majorant,
    :func:`ramp_cccp_convex`)."""
    if name in FLAT_UNLABELED:
        return np.zeros_like(f)
    if name == "sshg":
        return (np.abs(f) < 1.0).astype(np.float64)
    if name == "da":
        return np.maximum(0.0, (100.0 * f * f - 10.0) * np.exp(-5.0 * f * f))
    if name == "ramp_cccp":
        return (labeled_loss_curvature("smooth_hinge", f)
                + labeled_loss_curvature("smooth_hinge", -f))
    raise ValueError(f"unknown unlabeled loss {name!r}")
