"""Baselines of paper 003 (semi-supervised AUC): exact-kernel pairwise AUC.

Paper 003 -- Shi, Gu, Li, Geng, Huang, *Quadruply Stochastic Gradients for
Large Scale Nonlinear Semi-Supervised AUC Optimization*, IJCAI 2019 -- compares
:class:`weakkernels.qsg_s2auc.QSGS2AUC` in its Sec. 6 with exact-kernel
methods. All three here minimize a weighted sum of pairwise square-loss AUC
risks plus ``lam/2 ||f||_H^2`` in closed form
(:func:`pairwise_square_closed_form`, O(n^3); they refuse ``n > max_samples``):

* :class:`PNUAUC` -- Sakai, Niu, Sugiyama, *Semi-supervised AUC optimization
  based on positive-unlabeled learning*, Machine Learning 2018, the PNU-AUC
  risk with the square loss;
* :class:`SupervisedKernelAUC` -- the PN risk of paper 003 Eq. (2) on the
  labeled points only;
* :class:`ExactS2AUC` -- the exact minimizer of paper 003 Eq. (8)-(9), the
  target QSG-S2AUC converges to (in the role of SAMULT in paper 003's
  comparison).

They share QSG-S2AUC's threshold, Platt scaling and AUC scoring
(:class:`weakkernels.qsg_s2auc._AUCRankerMixin`); unlabeled samples are marked
``y == -1`` in ``fit(X, y)``. All save to and load from model files
(``weakkernels.load``); the kernel width used, ``sigma_``, is stored in the
file.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from weakkernels._artifact import ArtifactMixin, register, stored_sigma
from weakkernels._constraints import (
    AUC_GAMMA,
    CLASS_PRIOR,
    KERNEL_CONSTRAINTS,
    LAM,
    SIGMA_OR_SCALE,
)
from weakkernels._threads import one_blas_thread
from weakkernels._validation import (
    check_divergence,
    validate_predict,
    validate_semi_supervised,
)
from weakkernels.kernels import kernel_matrix, resolve_sigma
from weakkernels.qsg_s2auc import _AUCRankerMixin


def pairwise_square_closed_form(K, sets, terms, lam):
    """Exact minimizer of ``sum_s w_s R_s(f) + lam/2 ||f||_H^2`` over the span
    of the training points, for pairwise square-loss risks.

    ``R_s = mean_{i in A_s, j in B_s} (1 - f(x_i) + f(x_j))^2`` (all pairs;
    ``A_s == B_s`` allowed, i = j included as in Sakai et al.'s code). With
    ``f = K theta`` the gradient in ``f`` is ``sum_s w_s (2 D_s f - 2 e_s)``,
    ``e_s = 1_A/|A| - 1_B/|B|``,
    ``D_s = diag(1_A/|A| + 1_B/|B|) - a b^T - b a^T``; stationarity
    ``K (2 D K theta - 2 e) + lam K theta = 0`` holds when
    ``(D K + lam/2 I) theta = e`` -- an n x n LU solve, O(n^3).

    Parameters
    ----------
    K : ndarray (n, n), kernel matrix of the training points.
    sets : dict name -> index array.
    terms : list of ``(A, B, w)`` set names and weights.
    lam : float > 0.
    """
    n = K.shape[0]
    dvec = np.zeros(n)
    e = np.zeros(n)
    DK = np.zeros((n, n))
    for A, B, w in terms:
        if w == 0.0:
            continue
        a = np.zeros(n)
        a[sets[A]] = 1.0 / sets[A].size
        b = np.zeros(n)
        b[sets[B]] = 1.0 / sets[B].size
        dvec += w * (a + b)
        e += w * (a - b)
        DK -= w * (np.outer(a, b @ K) + np.outer(b, a @ K))
    DK += dvec[:, None] * K
    DK[np.diag_indices(n)] += lam / 2.0
    return scipy.linalg.solve(DK, e, check_finite=False)


# A sparse training set is densified (the closed form is O(n^3) in time and
# O(n^2) in memory anyway, n <= max_samples); its dense copy is capped here.
_DENSE_ENTRIES = 1 << 25


def _dense_training_rows(X):
    """CSR training rows as a dense array, or a ValueError naming the cost."""
    n, d = X.shape
    if n * d > _DENSE_ENTRIES:
        raise ValueError(
            f"the exact-kernel AUC baselines hold their training rows dense: "
            f"{n} x {d} = {n * d} entries > {_DENSE_ENTRIES} "
            f"({_DENSE_ENTRIES * 8 >> 20} MiB). Subsample the rows, reduce the "
            "features, or use QSGS2AUC, which keeps CSR input sparse.")
    return X.toarray()


class _ExactAUCBase(_AUCRankerMixin, ArtifactMixin, ClassifierMixin, BaseEstimator):
    """Exact-kernel pairwise square-loss AUC by :func:`pairwise_square_closed_form`.

    Sparse ``X`` is accepted and densified (training rows up to 2^25 entries;
    prediction a block of rows at a time): the closed form is O(n^3) anyway.
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        "sigma": SIGMA_OR_SCALE,  # resolved at fit time, as QSGS2AUC's
        "prior": CLASS_PRIOR,
        "lam": LAM,
        "max_samples": [Interval(Integral, 1, None, closed="left")],
    }
    _require_unlabeled = True
    _labeled_only = False

    def __init__(self, *, prior=None, lam=1e-3, kernel="rbf", sigma="scale",
                 degree=2, coef0=1.0, max_samples=5000):
        # The parameters every exact AUC learner takes, stored once here; a
        # subclass adds its trade-off and passes these on.
        self.prior = prior
        self.lam = lam
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.max_samples = max_samples

    def _terms(self):
        raise NotImplementedError

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on labeled and unlabeled samples (``y == -1`` unlabeled); two
        labeled classes, ``classes_[1]`` positive."""
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, require_unlabeled=False, accept_sparse=True
        )
        # over every row given, labeled and unlabeled (as QSGS2AUC), also for
        # the learners that fit on the labeled rows only
        self.sigma_ = resolve_sigma(self.sigma, X)
        if sp.issparse(X):
            X = _dense_training_rows(X)
        self.classes_ = classes
        pos, neg = self._split_classes(
            y, labeled, classes, require_unlabeled=self._require_unlabeled
        )
        keep = labeled if self._labeled_only else np.ones(X.shape[0], bool)
        Xfit = X[keep]
        if Xfit.shape[0] > self.max_samples:
            raise ValueError(
                f"{type(self).__name__} solves an n x n system (O(n^3)); "
                f"n={Xfit.shape[0]} > max_samples={self.max_samples}. "
                "Subsample the unlabeled data or raise max_samples."
            )
        sets = {
            "P": np.flatnonzero(pos[keep]),
            "N": np.flatnonzero(neg[keep]),
            "U": np.flatnonzero(~labeled[keep]),
        }
        self.prior_ = self._resolve_prior(sets["P"].size, sets["N"].size)
        K = self._kernel(Xfit, Xfit)
        with one_blas_thread():
            theta = pairwise_square_closed_form(K, sets, self._terms(), self.lam)
        check_divergence(theta, "lam (regularization) upwards")
        self.X_fit_ = Xfit
        self.coef_ = theta
        f = K @ theta
        ref = sets["U"] if sets["U"].size else np.concatenate([sets["P"], sets["N"]])
        self.threshold_ = self._quantile_threshold(f[ref])
        self._fit_platt(X[labeled], (y[labeled] == classes[1]).astype(float))
        return self

    def _kernel(self, A, B):
        return kernel_matrix(A, B, self.kernel, self.sigma_, self.degree, self.coef0)

    def decision_function(self, X):
        """``sum_i theta_i k(x_i, x) - threshold_`` over the training points."""
        check_is_fitted(self)
        return self._decision(validate_predict(self, X, accept_sparse=True))

    def _decision(self, X):
        """:meth:`decision_function` on validated rows."""
        if not sp.issparse(X):
            return self._kernel(X, self.X_fit_) @ self.coef_ - self.threshold_
        # CSR rows are densified a block at a time: any number of test rows
        step = max(1, _DENSE_ENTRIES // max(1, X.shape[1]))
        return np.concatenate([
            self._kernel(X[r:r + step].toarray(), self.X_fit_) @ self.coef_
            for r in range(0, X.shape[0], step)]) - self.threshold_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified (see _dense_training_rows)
        return tags

    def _artifact_state(self):
        meta = {"prior": self.prior_, "threshold": self.threshold_,
                "sigma": self.sigma_, "n_features_in": self.n_features_in_}
        arrays = {"X_fit": self.X_fit_, "coef": self.coef_,
                  "classes": self.classes_, "platt": self.platt_}
        return meta, arrays

    def _set_artifact_state(self, meta, arrays):
        self.prior_ = float(meta["prior"])
        self.threshold_ = float(meta["threshold"])
        self.sigma_ = stored_sigma(meta, self.sigma)
        self.n_features_in_ = int(meta["n_features_in"])
        self.X_fit_ = arrays["X_fit"]
        self.coef_ = arrays["coef"]
        self.classes_ = arrays["classes"]
        self.platt_ = arrays["platt"]


@register
class PNUAUC(_ExactAUCBase):
    """PNU-AUC (Sakai, Niu, Sugiyama 2018) with the square loss, exact kernel.

    For ``eta >= 0`` the risk is ``(1 - eta) R_PN + eta R~_PU`` with the
    unbiased PU-AUC risk ``R~_PU = (R_PU - pi R_PP) / (1 - pi)``; for
    ``eta < 0`` it is ``(1 + eta) R_PN - eta R~_NU`` with
    ``R~_NU = (R_NU - (1 - pi) R_NN) / pi`` (Sakai et al. 2018, the square-loss
    solver of their released code, ``PNU_AUC_SL.m``). Unlike Sakai's code,
    which uses 200 random basis functions and a Euclidean penalty, we use
    every training point as a basis function and the RKHS penalty
    ``lam/2 ||f||_H^2`` of paper 003 Eq. (9), so ``lam`` means the same as in
    :class:`QSGS2AUC`. O(n^3): refuses ``n > max_samples``.

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    eta : float in [-1, 1], default=0.5
        PNU trade-off (paper 003 searches it in [-1, 1]).
    prior : float or None, default=None
        Class prior ``pi`` of the positives; it enters the risk. None uses the
        labeled fraction (paper 003 sets it to the training-set proportion).
    lam, kernel, degree, coef0 : as :class:`QSGS2AUC`.
    sigma : float or "scale", default="scale"
        Kernel width, ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``);
        ``"scale"`` is ``1 / (d Var X)`` over every row given to ``fit``,
        labeled and unlabeled, as ``SVC(gamma="scale")``. The value used is
        ``sigma_``. The default was the fixed 1.0, with which QSGS2AUC and
        the SU estimators sat at chance on standardised rows of many
        features; with "scale" PNUAUC gains on ijcnn1 and skin and loses a
        little on min-max scaled cod-rna (docs/fidelity.md, paper 003's
        departure 6).
    max_samples : int, default=5000

    Attributes
    ----------
    X_fit_, coef_ : the training points and their coefficients.
    sigma_ : float, the kernel width used.
    prior_, threshold_, platt_ : as :class:`QSGS2AUC`.

    See Also
    --------
    weakkernels.QSGS2AUC : semi-supervised AUC optimization at scale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from weakkernels.baselines.auc import PNUAUC
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> y_semi = np.full(200, -1)
    >>> y_semi[:40] = y[:40]
    >>> clf = PNUAUC(prior=0.5).fit(X, y_semi)
    >>> bool(clf.auc(X[40:], y[40:]) > 0.8)
    True
    """

    _parameter_constraints = {
        **_ExactAUCBase._parameter_constraints,
        "eta": [Interval(Real, -1, 1, closed="both")],
    }

    def __init__(self, *, eta=0.5, prior=None, lam=1e-3, kernel="rbf", sigma="scale",
                 degree=2, coef0=1.0, max_samples=5000):
        super().__init__(prior=prior, lam=lam, kernel=kernel, sigma=sigma,
                         degree=degree, coef0=coef0, max_samples=max_samples)
        self.eta = eta

    def _terms(self):
        pi, eta = self.prior_, float(self.eta)
        if eta >= 0:
            w = eta / (1.0 - pi)
            return [("P", "N", 1.0 - eta), ("P", "U", w), ("P", "P", -pi * w)]
        w = -eta / pi
        return [("P", "N", 1.0 + eta), ("U", "N", w), ("N", "N", -(1.0 - pi) * w)]


@register
class SupervisedKernelAUC(_ExactAUCBase):
    """Supervised kernel AUC: the PN square-loss AUC risk (paper 003 Eq. 2)
    plus ``lam/2 ||f||_H^2`` on the labeled points only, exact kernel.

    ``fit(X, y)`` accepts ``y == -1`` (those samples are ignored by the
    risk), so it runs in the same harness as the semi-supervised methods.
    Parameters as :class:`PNUAUC` without ``eta``; ``sigma="scale"`` is
    resolved over every row given, the ``y == -1`` ones too, as for the
    semi-supervised learners it is compared with (same data, same width).

    See Also
    --------
    weakkernels.QSGS2AUC : semi-supervised AUC optimization at scale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from weakkernels.baselines.auc import SupervisedKernelAUC
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> y_semi = np.full(200, -1)
    >>> y_semi[:40] = y[:40]
    >>> clf = SupervisedKernelAUC(prior=0.5).fit(X, y_semi)
    >>> bool(clf.auc(X[40:], y[40:]) > 0.8)
    True
    """

    _require_unlabeled = False
    _labeled_only = True

    def _terms(self):
        return [("P", "N", 1.0)]


@register
class ExactS2AUC(_ExactAUCBase):
    """Exact-kernel minimizer of paper 003 Eq. (8)-(9) (square loss): the
    objective :class:`QSGS2AUC` approximates with random features and
    stochastic steps. It plays SAMULT's role in paper 003's comparison
    (a prior-free PU + NU risk solved in O(n^3)); it is *not* a port of Xie &
    Li's SAMULT code, which we did not have.

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    gamma : float in [0, 1], default=0.5
        Trade-off of Eq. (8).
    prior, lam, kernel, sigma, degree, coef0, max_samples : as :class:`PNUAUC`
        (``prior`` only sets the threshold).

    See Also
    --------
    weakkernels.QSGS2AUC : semi-supervised AUC optimization at scale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from weakkernels.baselines.auc import ExactS2AUC
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> y_semi = np.full(200, -1)
    >>> y_semi[:40] = y[:40]
    >>> clf = ExactS2AUC(prior=0.5).fit(X, y_semi)
    >>> bool(clf.auc(X[40:], y[40:]) > 0.8)
    True
    """

    _parameter_constraints = {
        **_ExactAUCBase._parameter_constraints,
        "gamma": AUC_GAMMA,
    }

    def __init__(self, *, gamma=0.5, prior=None, lam=1e-3, kernel="rbf",
                 sigma="scale", degree=2, coef0=1.0, max_samples=5000):
        super().__init__(prior=prior, lam=lam, kernel=kernel, sigma=sigma,
                         degree=degree, coef0=coef0, max_samples=max_samples)
        self.gamma = gamma

    def _terms(self):
        g = float(self.gamma)
        return [("P", "N", g), ("P", "U", 1.0 - g), ("U", "N", 1.0 - g)]
