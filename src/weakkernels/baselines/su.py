"""Baselines of paper 002 (SU classification): kernel-basis SU learners.

Paper 002 -- Shi, Gu, Li, Deng, Huang, *Triply stochastic gradient method for
large-scale nonlinear similar unlabeled classification*, Machine Learning 110
(2021) -- compares :class:`weakkernels.tsgsu.TSGSU` in its Sec. 6 with

* :class:`SUSL` -- Bao, Niu, Sugiyama, *Classification from Pairwise Similarity
  and Unlabeled Data*, ICML 2018, Sec. 3.3: the closed-form minimizer of the
  uncorrected squared-loss SU risk (paper 002 Eq. 7) on Gaussian basis
  functions;
* :class:`CUU` -- Lu, Zhang, Niu, Sugiyama, AISTATS 2020: the corrected risk
  (paper 002 Eq. 8) minimized by minibatch stochastic gradients (Adam) on
  Gaussian basis functions.

Both share TSGSU's risk functions, input layout, prior handling and
calibration (:class:`weakkernels.tsgsu._SUBase`): ``fit(X, y)`` with ``y == 1``
on similar-pair rows (each pair is two consecutive rows) and ``y == -1`` on
unlabeled rows; ``predict`` returns 0/1 with 1 the class whose prior is
``prior``. Both save to and load from model files (``weakkernels.load``); the
kernel width used, ``sigma_``, is stored in the file.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels._artifact import register, stored_sigma
from weakkernels._constraints import (
    BATCH_SIZE,
    ETA0,
    LAM,
    N_CENTERS,
    RANDOM_STATE,
    SIGMA_OR_SCALE,
)
from weakkernels._threads import one_blas_thread
from weakkernels._validation import check_divergence
from weakkernels.tsgsu import (
    _PRIOR,
    SU_RISK_CONSTRAINTS,
    _SUBase,
    class_prior_terms,
    su_risk,
    su_risk_gradient,
)


def _stack(parts):
    """Rows of several sets, one after another (CSR stays CSR)."""
    if sp.issparse(parts[0]):
        return sp.vstack(parts, format="csr")
    return np.concatenate(parts)


def _row_sq_norms(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


class _KernelBasisSU(_SUBase):
    """``f(x) = sum_c alpha_c k(x, c)`` over kernel centers (Bao et al.'s and Lu
    et al.'s Gaussian basis-function model).

    Sparse X: the points stay CSR, the centers are held (and saved) dense,
    ``n_centers x d`` -- with many features pick ``n_centers``, as the
    default ``None`` of SUSL keeps every training point."""

    def _pick_centers(self, XS, XU, seed):
        X = _stack([XS, XU])
        n_c = self.n_centers
        if n_c is None or n_c >= X.shape[0]:
            C = X.copy()
        else:
            rng = np.random.Generator(np.random.Philox(key=seed + 2))
            C = X[np.sort(rng.choice(X.shape[0], size=int(n_c), replace=False))]
        return C.toarray() if sp.issparse(C) else C

    def _kernel(self, X, C):
        """Gaussian kernel rows ``k(X, C)``: the same values as
        :func:`weakkernels.kernels.kernel_matrix`, computed in place (one n x n_c
        buffer, no temporaries) so the baseline is not slowed by allocation.
        ``X`` may be CSR (``X @ C.T`` is then scipy's sparse x dense product)."""
        K = np.asarray(X @ C.T)
        K *= -2.0
        K += _row_sq_norms(X)[:, None]
        K += np.einsum("ij,ij->i", C, C)[None, :]
        np.maximum(K, 0.0, out=K)
        K *= -self.sigma_
        return np.exp(K, out=K)

    def _raw_decision(self, X):
        out = np.empty(X.shape[0])
        step = max(1, (1 << 22) // max(1, self.centers_.shape[0]))
        for r0 in range(0, X.shape[0], step):
            K = self._kernel(X[r0 : r0 + step], self.centers_)
            out[r0 : r0 + step] = K @ self.alpha_
        return out

    def _state(self):
        return {"sigma": self.sigma_}, {"centers": self.centers_,
                                        "alpha": self.alpha_}

    def _set_state(self, meta, arrays):
        self.sigma_ = stored_sigma(meta, self.sigma)
        self.centers_ = arrays["centers"]
        self.alpha_ = arrays["alpha"]


@register
class SUSL(_KernelBasisSU):
    """SU learning with the squared loss in closed form (Bao et al. 2018 Sec.
    3.3, "SUSL"; paper 002 Sec. 6 baseline 1).

    With ``l(z, t) = (z t - 1)^2 / 4`` the uncorrected risk (paper 002 Eq. 7) of
    ``f = Phi alpha`` (Gaussian basis on the centers) plus ``lam/2 ||alpha||^2``
    is the quadratic ``alpha^T Phi_U^T Phi_U alpha / (4 n_U) + b^T alpha``, with
    ``b = a (Phi_U^T 1 / (2 n_U) - pi_S Phi_S^T 1 / n_S)``, ``a = 1/(2 pi+ - 1)``
    (``n_S`` counts pair points), minimized by

    ``alpha = -(Phi_U^T Phi_U / (2 n_U) + lam I)^{-1} b``.

    Cost O(n_U n_c^2 + n_c^3) time, O(n_c^2) memory; ``n_centers=None`` uses all
    training points, as Bao et al.'s code does. Same ``fit(X, y)`` layout as
    :class:`TSGSU`.

    Parameters
    ----------
    prior : float in (0, 1) except 0.5, or "auto", default=0.7
        As :class:`TSGSU`.
    sigma : float or "scale", default="scale"
        Width of the basis ``exp(-sigma ||x - c||^2)`` (scikit-learn's
        ``gamma``); ``"scale"`` is ``1 / (d Var X)`` over the rows given to
        ``fit``, as ``SVC(gamma="scale")``. The value used is ``sigma_``.
        The default was the fixed 1.0, which put the SU estimators at chance
        on standardised rows of many features; on a low-dimensional set
        "scale" can lose a little (docs/fidelity.md, paper 002's departure
        8).
    lam : float, default=1e-3
        Weight of ``||alpha||^2 / 2``.
    n_centers : int or None, default=None
        Centers drawn from the training points; None uses them all.
    random_state : int, RandomState or None, default=None
        Seeds the draw of the centers (and ``prior="auto"``).

    Attributes
    ----------
    centers_, alpha_ : the basis centers and their coefficients.
    sigma_ : float, the kernel width used.
    prior_, pi_S_, calibration_ : as :class:`TSGSU`.

    See Also
    --------
    weakkernels.TSGSU : the same risk on random or Nyström features, at scale.

    References
    ----------
    .. [1] Bao, H., Niu, G., Sugiyama, M. Classification from pairwise
       similarity and unlabeled data. ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from weakkernels.baselines.su import SUSL
    >>> rng = np.random.default_rng(0)
    >>> c = np.r_[np.repeat(rng.random(300) < 0.84, 2), rng.random(1000) < 0.7]
    >>> X = rng.normal(size=(1600, 2)) + 3.0 * c[:, None]
    >>> y = np.r_[np.ones(600, dtype=int), -np.ones(1000, dtype=int)]
    >>> clf = SUSL(prior=0.7).fit(X, y)
    >>> bool(clf.score(X[600:], c[600:].astype(int)) > 0.8)
    True
    """

    _parameter_constraints = {
        "prior": _PRIOR,
        "sigma": SIGMA_OR_SCALE,
        "lam": LAM,
        "n_centers": N_CENTERS,
        "random_state": RANDOM_STATE,
    }

    def __init__(self, *, prior=0.7, sigma="scale", lam=1e-3, n_centers=None,
                 random_state=None):
        self.prior = prior
        self.sigma = sigma
        self.lam = lam
        self.n_centers = n_centers
        self.random_state = random_state

    def _fit_su(self, XS, XU, seed):
        C = self._pick_centers(XS, XU, seed)
        _, a = class_prior_terms(self.prior_)
        nc = C.shape[0]
        H = np.zeros((nc, nc))
        sU = np.zeros(nc)
        sS = np.zeros(nc)
        rows = max(1, (1 << 23) // nc)
        for r0 in range(0, XU.shape[0], rows):
            P = self._kernel(XU[r0 : r0 + rows], C)
            H += P.T @ P  # BLAS may use every core here: this is the O(n^3) part
            sU += P.sum(axis=0)
        for r0 in range(0, XS.shape[0], rows):
            sS += self._kernel(XS[r0 : r0 + rows], C).sum(axis=0)
        nU, nS = XU.shape[0], XS.shape[0]
        b = a * (sU / (2.0 * nU) - self.pi_S_ * sS / nS)
        H /= 2.0 * nU
        H[np.diag_indices_from(H)] += self.lam
        self.centers_ = C
        self.alpha_ = -np.linalg.solve(H, b)
        check_divergence(self.alpha_, "lam")


@register
class CUU(_KernelBasisSU):
    """Corrected SU/UU learning by minibatch stochastic gradients on Gaussian
    basis functions (Lu et al. 2020; paper 002 Sec. 6 baseline "CUU").

    Model ``f(x) = sum_c alpha_c exp(-sigma ||x - c||^2)`` on ``n_centers``
    centers drawn from the training points (paper: 2000, "CUU(2000)", or all,
    "CUU(All)" with ``n_centers=None``); objective ``delta(R+) + delta(R-) +
    lam/2 ||alpha||^2`` (paper 002 Eq. 8 with Lu et al.'s weight decay); each
    iteration samples ``batch_size`` pair and unlabeled points, computes their
    kernel rows to the centers and takes an Adam step (Lu et al.'s optimizer;
    ``optimizer="sgd"`` is plain SGD with ``eta0 / sqrt(t + 1)``). Same ``fit(X,
    y)`` layout as :class:`TSGSU`.

    Parameters
    ----------
    prior, loss, correction : as :class:`TSGSU` (``correction="abs"`` here, as
        Lu et al.).
    sigma : float or "scale", default="scale"
        As :class:`SUSL`; the value used is ``sigma_``.
    lam : float >= 0, default=1e-4
        Weight decay ``lam/2 ||alpha||^2``.
    n_centers : int or None, default=2000
        As :class:`SUSL`.
    batch_size, max_iter, optimizer, eta0 : see above.
    random_state : int, RandomState or None, default=None
        Seeds the centers, the minibatches (and ``prior="auto"``).

    See Also
    --------
    SUSL : the squared-loss SU baseline in closed form.
    weakkernels.TSGSU : SU learning at scale.

    References
    ----------
    .. [1] Lu, N., Zhang, T., Niu, G., Sugiyama, M. Mitigating overfitting in
       supervised classification from two unlabeled datasets: a consistent
       risk correction approach. AISTATS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from weakkernels.baselines.su import CUU
    >>> rng = np.random.default_rng(0)
    >>> c = np.r_[np.repeat(rng.random(50) < 0.84, 2), rng.random(300) < 0.7]
    >>> X = rng.normal(size=(400, 2)) + 3.0 * c[:, None]
    >>> y = np.r_[np.ones(100, dtype=int), -np.ones(300, dtype=int)]
    >>> clf = CUU(prior=0.7, random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {
        "prior": _PRIOR,
        **SU_RISK_CONSTRAINTS,  # loss, correction
        "sigma": SIGMA_OR_SCALE,
        # weight decay, which may be off (lam = 0), unlike SUSL's ridge
        "lam": [Interval(Real, 0, None, closed="left")],
        "n_centers": N_CENTERS,
        "batch_size": BATCH_SIZE,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "optimizer": [StrOptions({"adam", "sgd"})],
        "eta0": ETA0,
        "random_state": RANDOM_STATE,
    }

    def __init__(self, *, prior=0.7, loss="squared", correction="abs", sigma="scale",
                 lam=1e-4, n_centers=2000, batch_size=1000, max_iter=100,
                 optimizer="adam", eta0=0.01, random_state=None):
        self.prior = prior
        self.loss = loss
        self.correction = correction
        self.sigma = sigma
        self.lam = lam
        self.n_centers = n_centers
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.optimizer = optimizer
        self.eta0 = eta0
        self.random_state = random_state

    def _fit_su(self, XS, XU, seed):
        C = self._pick_centers(XS, XU, seed)
        rng = np.random.Generator(np.random.Philox(key=seed))
        mS, mU = min(self.batch_size, XS.shape[0]), min(self.batch_size, XU.shape[0])
        alpha = np.zeros(C.shape[0])
        self.risk_curve_ = []
        with one_blas_thread():  # same BLAS setting as TSGSU: fair timings
            self._sgd(XS, XU, C, rng, alpha, mS, mU)
        self.n_iter_ = int(self.max_iter)
        self.centers_ = C
        self.alpha_ = alpha

    def _sgd(self, XS, XU, C, rng, alpha, mS, mU):
        nS, nU = XS.shape[0], XU.shape[0]
        m1 = np.zeros_like(alpha)
        m2 = np.zeros_like(alpha)
        b1, b2, eps = 0.9, 0.999, 1e-8
        for t in range(int(self.max_iter)):
            iS = rng.integers(0, nS, size=mS)
            iU = rng.integers(0, nU, size=mU)
            P = self._kernel(_stack([XS[iS], XU[iU]]), C)
            f = P @ alpha
            check_divergence(f, "eta0 (step size)")
            self.risk_curve_.append(
                su_risk(f[:mS], f[mS:], self.prior_, self.loss, self.correction)
            )
            gS, gU = su_risk_gradient(
                f[:mS], f[mS:], self.prior_, self.loss, self.correction
            )
            grad = P.T @ np.concatenate([gS, gU]) + self.lam * alpha
            if self.optimizer == "adam":
                m1 = b1 * m1 + (1 - b1) * grad
                m2 = b2 * m2 + (1 - b2) * grad * grad
                mh = m1 / (1 - b1 ** (t + 1))
                vh = m2 / (1 - b2 ** (t + 1))
                alpha -= self.eta0 * mh / (np.sqrt(vh) + eps)
            else:
                alpha -= self.eta0 / math.sqrt(t + 1.0) * grad
