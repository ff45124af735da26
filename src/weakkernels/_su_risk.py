"""The SU risk of paper 002 (Eq. 6-8, 17: losses, correction functions,
partial risks and their derivatives) and the SU input layout (``y == 1`` on
similar-pair rows, ``-1`` on unlabeled rows): what TSGSU and the SU
baselines share, re-exported by :mod:`weakkernels.tsgsu`.
"""

from __future__ import annotations

import numpy as np

from weakkernels._validation import check_numeric_target

LOSSES = ("squared", "double_hinge")
CORRECTIONS = ("abs", "relu", "none")
SIMILAR, UNLABELED = 1, -1


# ---------------------------------------------------------------------------
# Losses, correction functions and the SU risk (paper 002 Eq. 6-8, 17)
# ---------------------------------------------------------------------------
def su_loss(name: str, z: np.ndarray, t: float) -> np.ndarray:
    """Margin losses ``l(z, t)`` of paper 002 Sec. 6 (from Bao et al. Sec. 3.3).

    * ``"squared"``: ``l(z, t) = (z t - 1)^2 / 4``;
    * ``"double_hinge"``: ``l(z, t) = max(-z t, max(0, 1/2 - z t / 2))``.

    Both satisfy ``l(z, +1) - l(z, -1) = -z``, which makes the uncorrected SU
    risk (Eq. 7) convex (Bao et al. Theorem 4).
    """
    m = np.asarray(z, dtype=np.float64) * t
    if name == "squared":
        return 0.25 * (m - 1.0) ** 2
    if name == "double_hinge":
        return np.maximum(-m, np.maximum(0.0, 0.5 - 0.5 * m))
    raise ValueError(f"unknown loss {name!r}; expected one of {list(LOSSES)}")


def su_loss_grad(name: str, z: np.ndarray, t: float) -> np.ndarray:
    """``dl(z, t)/dz`` of :func:`su_loss` (double hinge: the left derivative at
    the kinks ``z t = -1`` and ``z t = 1``)."""
    m = np.asarray(z, dtype=np.float64) * t
    if name == "squared":
        return 0.5 * t * (m - 1.0)
    if name == "double_hinge":
        return t * np.where(m <= -1.0, -1.0, np.where(m <= 1.0, -0.5, 0.0))
    raise ValueError(f"unknown loss {name!r}; expected one of {list(LOSSES)}")


def correction(name: str, r: float) -> float:
    """Consistent correction function ``delta`` (Lu et al. 2020; paper 002 Eq. 8):
    ``"abs"`` ``|r|``, ``"relu"`` ``max(0, r)``, ``"none"`` ``r``."""
    if name == "abs":
        return abs(r)
    if name == "relu":
        return max(0.0, r)
    if name == "none":
        return r
    raise ValueError(f"unknown correction {name!r}")


def correction_grad(name: str, r: float) -> float:
    """``delta'(r)``; at ``r = 0`` the right derivative (1 for abs and ReLU), so
    a partial risk sitting at zero is still minimized."""
    if name == "abs":
        return 1.0 if r >= 0 else -1.0
    if name == "relu":
        return 1.0 if r >= 0 else 0.0
    if name == "none":
        return 1.0
    raise ValueError(f"unknown correction {name!r}")


def class_prior_terms(prior: float) -> tuple[float, float]:
    """``(pi_S, a)`` with ``pi_S = pi+^2 + pi-^2`` (Eq. 2) and ``a = 1/(2 pi+ - 1)``."""
    prior = float(prior)
    if not 0.0 < prior < 1.0:
        raise ValueError(f"prior must be in (0, 1); got {prior}.")
    if prior == 0.5:
        raise ValueError(
            "prior=0.5 makes the SU risk undefined (it divides by 2*prior - 1): "
            "with balanced classes similar pairs cannot tell the classes apart."
        )
    return prior**2 + (1.0 - prior) ** 2, 1.0 / (2.0 * prior - 1.0)


def su_partial_risks(fS, fU, prior: float, loss: str) -> tuple[float, float]:
    """Empirical partial risks ``(R+, R-)`` of the SU risk (module docstring;
    paper 002 Eq. 7 split as in Lu et al. Eq. 9). ``fS`` are the values of ``f``
    at the pair points (both points of every pair, Eq. 6), ``fU`` at the
    unlabeled points."""
    return _partials_from_means(
        (su_loss(loss, fS, 1.0).mean(), su_loss(loss, fS, -1.0).mean()),
        (su_loss(loss, fU, 1.0).mean(), su_loss(loss, fU, -1.0).mean()), prior)


def _partials_from_means(mS, mU, prior: float) -> tuple[float, float]:
    """``(R+, R-)`` from the mean losses ``(E[l(f, +1)], E[l(f, -1)])`` over
    the pair points ``mS`` and the unlabeled points ``mU``."""
    pi_S, a = class_prior_terms(prior)
    r_pos = a * (pi_S * mS[0] - (1.0 - prior) * mU[0])
    r_neg = a * (prior * mU[1] - pi_S * mS[1])
    return float(r_pos), float(r_neg)


def su_risk_of_moments(totals, ms, prior: float, correction_name: str):
    """Eq. (8) with the squared loss from each set's ``(sum f, sum f^2)``
    over the pair points (``totals[0]``, ``ms[0]`` rows) and the unlabeled
    points, and its derivatives w.r.t. those sums (``Problem.moments``; the
    chain rule gives :func:`su_risk_gradient`). ``l(z, +-1) = (z -+ 1)^2 / 4``
    sums to ``(S2 -+ 2 S1 + m) / 4``."""
    pi_S, a = class_prior_terms(prior)
    means = [((t[1] - 2.0 * t[0] + m) / (4.0 * m), (t[1] + 2.0 * t[0] + m) / (4.0 * m))
             for t, m in zip(totals, ms, strict=True)]
    r_pos, r_neg = _partials_from_means(means[0], means[1], prior)
    d_pos = correction_grad(correction_name, r_pos)
    d_neg = correction_grad(correction_name, r_neg)
    value = correction(correction_name, r_pos) + correction(correction_name, r_neg)
    # d value / d (mean l(f, +1), mean l(f, -1)) on each set
    d_means = [(a * pi_S * d_pos, -a * pi_S * d_neg),
               (-a * (1.0 - prior) * d_pos, a * prior * d_neg)]
    coefs = [((dn - dp) / (2.0 * m), (dp + dn) / (4.0 * m))
             for (dp, dn), m in zip(d_means, ms, strict=True)]
    return value, coefs


def su_risk(fS, fU, prior: float, loss: str, correction_name: str = "abs") -> float:
    """Corrected empirical SU risk ``delta(R+) + delta(R-)`` (paper 002 Eq. 8;
    with ``"none"`` the unbiased risk of Eq. 7)."""
    r_pos, r_neg = su_partial_risks(fS, fU, prior, loss)
    return correction(correction_name, r_pos) + correction(correction_name, r_neg)


def su_zero_one_risk(fS, fU, prior: float) -> float:
    """Uncorrected SU risk (paper 002 Eq. 7) with the zero-one loss
    ``l(z, t) = [z t <= 0]``: an unbiased estimate of the misclassification
    rate from SU data alone (Bao et al. Theorem 1 holds for any loss), used for
    model selection on held-out SU data."""
    fS = np.asarray(fS, dtype=np.float64)
    fU = np.asarray(fU, dtype=np.float64)
    pi_S, a = class_prior_terms(prior)
    e_pos_S, e_neg_S = np.mean(fS <= 0), np.mean(fS >= 0)
    e_pos_U, e_neg_U = np.mean(fU <= 0), np.mean(fU >= 0)
    return float(
        a * (pi_S * (e_pos_S - e_neg_S) - (1 - prior) * e_pos_U + prior * e_neg_U)
    )


def su_risk_gradient(
    fS, fU, prior: float, loss: str, correction_name: str = "abs"
) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of :func:`su_risk` with respect to every ``f(x_i)``.

    Returns ``(gS, gU)`` such that the functional gradient of the risk is
    ``sum_i gS[i] k(xS_i, .) + sum_j gU[j] k(xU_j, .)`` -- paper 002 Eq. (17)
    without the ``lam f`` term. On a minibatch this is the stochastic gradient
    of Eq. (18); with ``correction_name="none"`` it is an unbiased estimate of
    Eq. (17). With a correction the factor ``delta'`` is evaluated at the
    minibatch partial risks (Lu et al.'s minibatch rule), so the estimate is
    unbiased only given the signs of the partial risks.
    """
    fS = np.asarray(fS, dtype=np.float64)
    fU = np.asarray(fU, dtype=np.float64)
    pi_S, a = class_prior_terms(prior)
    pi_m = 1.0 - prior
    r_pos, r_neg = su_partial_risks(fS, fU, prior, loss)
    d_pos = correction_grad(correction_name, r_pos)
    d_neg = correction_grad(correction_name, r_neg)
    lpS, lnS = su_loss_grad(loss, fS, 1.0), su_loss_grad(loss, fS, -1.0)
    lpU, lnU = su_loss_grad(loss, fU, 1.0), su_loss_grad(loss, fU, -1.0)
    gS = a * pi_S * (d_pos * lpS - d_neg * lnS) / fS.size
    gU = a * (-d_pos * pi_m * lpU + d_neg * prior * lnU) / fU.size
    return gS, gU


# ---------------------------------------------------------------------------
# Input layout
# ---------------------------------------------------------------------------
def split_su(y) -> tuple[np.ndarray, np.ndarray]:
    """Check the SU label layout and return the masks ``(similar, unlabeled)``.

    ``y == 1`` marks similar-pair rows, each pair two consecutive rows;
    ``y == -1`` marks unlabeled rows. Raises ``ValueError`` ("malformed pairs")
    for other labels or a run of pair rows of odd length, and when there are no
    pairs or no unlabeled points.
    """
    y = check_numeric_target(y, "malformed pairs: y must be numeric, 1 on "
                             "similar-pair rows and -1 on unlabeled rows")
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise ValueError(
            "Unknown label type: continuous. malformed pairs: y must be 1 on "
            "similar-pair rows and -1 on unlabeled rows."
        )
    bad = (y != SIMILAR) & (y != UNLABELED)
    if bad.any():
        raise ValueError(
            "malformed pairs: y must be 1 (similar-pair rows, two consecutive rows "
            "per pair) or -1 (unlabeled rows); found "
            f"{np.unique(y[bad])[:5].tolist()}."
        )
    sim = y == SIMILAR
    if not sim.any():
        raise ValueError("No similar pairs: no row has y == 1.")
    if sim.all():
        raise ValueError("No unlabeled points: mark them with y == -1.")
    # Runs of consecutive pair rows must have even length: a pair never straddles
    # an unlabeled row.
    edges = np.diff(np.concatenate([[0], sim.astype(np.int8), [0]]))
    run_lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    if np.any(run_lengths % 2):
        raise ValueError(
            "malformed pairs: similar-pair rows (y == 1) must come as consecutive "
            f"pairs; found a run of {int(run_lengths[run_lengths % 2 == 1][0])} rows "
            f"({int(sim.sum())} pair rows in total)."
        )
    return sim, ~sim
