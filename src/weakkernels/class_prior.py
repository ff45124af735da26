"""Class-prior estimation from similar-unlabeled (SU) data (paper 002 Sec. 3.3).

Shi, Gu, Li, Deng, Huang, *Triply stochastic gradient method for large-scale
nonlinear similar unlabeled classification*, Machine Learning 110 (2021) --
paper 002 -- Sec. 3.3: the SU risk needs the class prior ``pi+``; with
``prior="auto"`` every SU estimator (:class:`weakkernels.tsgsu.TSGSU` and the
baselines of :mod:`weakkernels.baselines.su`) estimates it here from the pair
points and the unlabeled points. See :func:`estimate_class_prior` for the
estimator and why it differs from the paper's sketch.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from weakkernels.random_features import RandomFeatures, seed_from_random_state

# Smallest anchor set of the mixture-proportion estimate (unlabeled points): a
# binomial ratio on fewer points is too noisy to pick the set by.
_MIN_UNLABELED = 100

def prior_from_mixture_proportion(kappa: float) -> float:
    """Minority class prior from ``kappa = inf_x p~_S(x) / p(x)``.

    ``p~_S(x) / p(x) = (pi- + (pi+ - pi-) eta(x)) / pi_S`` with ``eta`` the
    positive posterior, so where only the minority class lives the ratio is
    ``pi_min / pi_S = pi_min / (pi_min^2 + (1 - pi_min)^2)``, increasing on
    (0, 1/2]; this solves ``kappa (2 p^2 - 2 p + 1) = p`` for ``p``.

    Parameters
    ----------
    kappa : float
        The mixture proportion, in (0, 1].

    Returns
    -------
    float
        The minority class prior, in (0, 1/2].

    See Also
    --------
    estimate_class_prior : estimates ``kappa`` from pairs and unlabeled rows.

    Examples
    --------
    >>> from weakkernels.class_prior import prior_from_mixture_proportion
    >>> p = 0.3
    >>> round(prior_from_mixture_proportion(p / (p**2 + (1 - p) ** 2)), 6)
    0.3
    """
    k = float(np.clip(kappa, 1e-12, 1.0))
    b = 2.0 * k + 1.0
    disc = max(b * b - 8.0 * k * k, 0.0)
    return float((b - math.sqrt(disc)) / (4.0 * k))


def _as_rows(X):
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def estimate_class_prior(
    XS,
    XU,
    *,
    kernel: str = "rbf",
    sigma: float = 1.0,
    degree: int = 2,
    coef0: float = 1.0,
    n_components: int = 512,
    max_samples: int = 10000,
    random_state=None,
) -> dict:
    """Estimate the class prior from similar pairs and unlabeled data.

    Paper 002 Sec. 3.3 writes ``p = pi_S p~_S + pi_D p~_D`` and proposes a
    mixture-proportion estimator (MPE) of ``p~_S`` in ``p``. That MPE does not
    return ``pi_S``: ``p~_D = (p+ + p-)/2`` itself contains a multiple of ``p~_S``
    (the mixture is not irreducible), and for separable classes it returns
    ``pi_S / pi_max``, which is not even monotone in ``pi+`` (it equals 0.83 for
    both pi+ = 0.7 and 0.714). We estimate the proportion in the other direction,
    which is identifiable:

    ``kappa = inf_x p~_S(x) / p(x) = pi_min / pi_S``

    (attained where only the minority class lives -- the usual anchor-set
    assumption of MPE, Scott 2015), and get ``pi_min`` from
    :func:`prior_from_mixture_proportion`, then ``pi+ = 1 - pi_min`` (paper 002
    Sec. 3.3 also takes the positive class to be the majority) and ``pi_S =
    pi+^2 + pi-^2``.

    Estimator (classifier-based MPE, Blanchard et al. 2010 / Scott 2015): a
    kernel logistic regression (seeded random features + L2 logistic regression)
    separates pair points from unlabeled points; its held-out scores (2-fold
    cross-fitting) order the points by ``p~_S / p``. Over the sets ``A_q = {score
    <= q-quantile of the unlabeled scores}``, ``q >= max(0.02, 100 / n_U)``, we
    pick the set minimizing an upper confidence bound of ``P_S(A) / P_U(A)``
    (binomial standard error, 2 sigma) -- the bound keeps tiny, noisy sets from
    winning by chance -- and return the plain ratio on that set.

    Parameters
    ----------
    XS : array-like or sparse matrix of shape (n_pair_rows, n_features)
        The rows of the similar pairs.
    XU : array-like or sparse matrix of shape (n_unlabeled, n_features)
        The unlabeled rows (at least 100).
    kernel, sigma, degree, coef0 : kernel of the random features
        (``exp(-sigma ||x - x'||^2)`` for ``"rbf"``).
    n_components : int, default=512
        Random features of the kernel logistic regression.
    max_samples : int, default=10000
        Rows of each set used at most (a seeded sample).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    dict
        ``prior`` (positive = majority class), ``pi_S``, ``kappa``, ``q``
        (the chosen set's fraction of unlabeled points).

    See Also
    --------
    prior_from_mixture_proportion : ``kappa`` to the minority prior.
    weakkernels.TSGSU : uses this estimate with ``prior="auto"``.

    References
    ----------
    .. [1] Scott, C. A rate of convergence for mixture proportion estimation,
       with application to learning from noisy labels. AISTATS 2015.
    .. [2] Blanchard, G., Lee, G., Scott, C. Semi-supervised novelty
       detection. JMLR 11, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from weakkernels.class_prior import estimate_class_prior
    >>> rng = np.random.default_rng(0)
    >>> pairs = np.repeat(rng.random(300) < 0.7 ** 2 / 0.58, 2)
    >>> unlabeled = rng.random(1000) < 0.7
    >>> XS = rng.normal(size=(600, 2)) + 4.0 * pairs[:, None]
    >>> XU = rng.normal(size=(1000, 2)) + 4.0 * unlabeled[:, None]
    >>> est = estimate_class_prior(XS, XU, sigma=0.5, random_state=0)
    >>> bool(0.6 < est["prior"] < 0.8)
    True
    """
    # scipy.sparse rows stay sparse (CSR): the random features read them as is
    XS = _as_rows(XS)
    XU = _as_rows(XU)
    if XU.shape[0] < _MIN_UNLABELED:
        # the anchor sets A_q hold at least 100 unlabeled points (below); with
        # fewer there is no set to estimate the ratio on
        raise ValueError(
            f"prior='auto' needs at least {_MIN_UNLABELED} unlabeled points to "
            f"estimate the class prior (got {XU.shape[0]}); pass the prior as a "
            "number, e.g. prior=0.7."
        )
    seed = seed_from_random_state(random_state)
    rng = np.random.Generator(np.random.Philox(key=seed))
    if XS.shape[0] > max_samples:
        XS = XS[np.sort(rng.choice(XS.shape[0], max_samples, replace=False))]
    if XU.shape[0] > max_samples:
        XU = XU[np.sort(rng.choice(XU.shape[0], max_samples, replace=False))]
    nS, nU = XS.shape[0], XU.shape[0]
    X = sp.vstack([XS, XU], format="csr") if sp.issparse(XS) else (
        np.concatenate([XS, XU]))
    s = np.concatenate([np.ones(nS), np.zeros(nU)])
    rf = RandomFeatures(
        kernel=kernel, sigma=sigma, degree=degree, coef0=coef0,
        n_components=n_components, dtype="float64", random_state=seed,
    ).fit(X)
    Z = rf.transform(X)
    fold = rng.integers(0, 2, size=X.shape[0])
    score = np.empty(X.shape[0])
    for k in (0, 1):
        tr, te = fold != k, fold == k
        # Balanced class weights: the score only needs to rank by p~_S / p.
        clf = LogisticRegression(C=1.0, max_iter=500, class_weight="balanced")
        clf.fit(Z[tr], s[tr])
        score[te] = clf.decision_function(Z[te])
    sS, sU = np.sort(score[:nS]), np.sort(score[nS:])
    q_min = max(0.02, _MIN_UNLABELED / nU)
    qs = np.linspace(q_min, 1.0, 200)
    tau = np.quantile(sU, qs)
    pU = np.searchsorted(sU, tau, side="right") / nU
    pS = np.searchsorted(sS, tau, side="right") / nS
    ratio = pS / pU
    se = np.sqrt(pS * (1 - pS) / nS + 1.0 / nS**2) / pU
    best = int(np.argmin(ratio + 2.0 * se))
    kappa = float(min(ratio[best], 1.0))
    pi_min = prior_from_mixture_proportion(kappa)
    prior = 1.0 - pi_min
    return {
        "prior": prior,
        "pi_S": prior**2 + pi_min**2,
        "kappa": kappa,
        "q": float(pU[best]),
    }
