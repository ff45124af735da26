"""Exact-kernel Ramp-loss SVM and transductive SVM by the concave-convex procedure.

Collobert, Sinz, Weston & Bottou, *Large Scale Transductive SVMs*, JMLR 7 (2006)
(paper 004 in ``shared/papers``):

* :class:`RampSVM` -- Algorithm 1.2: the Ramp loss ``R_s = H_1 - H_s`` (Eq. 1.7,
  1.8) minimised by CCCP (Algorithm 1.1), optionally initialised from a hinge SVM
  trained on a subset of the data (Sec. 1.3.5).
* :class:`CCCPTSVM` -- Algorithm 1.3: hinge loss on the labeled points and the
  symmetric Ramp loss (Eq. 1.11) on the unlabeled ones, each unlabeled point
  appearing twice with both labels (Eq. 1.12), with the balancing constraint
  (Eq. 1.13) enforced through the extra example ``x_0`` (Eq. 1.15).

Every CCCP iteration is one convex dual problem solved by the numba SMO solver in
:mod:`weakkernels._smo`; the CCCP loop itself stays in Python (one convex solve
is the compiled unit), so it can record the objective of Eq. 1.8 / 1.12 after
each iteration (``objective_curve_``).
"""

from __future__ import annotations

import functools
from numbers import Real
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from weakkernels._artifact import register
from weakkernels._cccp import (
    _COMMON_CONSTRAINTS,
    _cccp,
    _CCCPBase,
    _hinge_svm,
    _on_one_blas_thread,
    _solve_problems,
)
from weakkernels._constraints import C_STAR, RAMP_S, RANDOM_STATE
from weakkernels._plan import check_plan, plan_kernel_fit
from weakkernels._selection import c_star_rule
from weakkernels._validation import (
    _SPARSE_FORMATS,
    _canonical_csr,
    check_degenerate_input,
    check_magnitude,
    validate_semi_supervised,
)
from weakkernels.kernels import resolve_sigma

__all__ = ["CCCPTSVM", "RampSVM"]


# --------------------------------------------------------------------------
# Ramp-loss SVM (Algorithm 1.2)
# --------------------------------------------------------------------------


@register
class RampSVM(_CCCPBase):
    """Ramp-loss SVM trained by CCCP (paper 004, Algorithm 1.2).

    Minimises ``J^s = ||w||^2 / 2 + C sum_i R_s(y_i f(x_i))`` (Eq. 1.8) with the
    Ramp loss ``R_s = H_1 - H_s`` (Eq. 1.7). Points with ``y_i f(x_i) < s`` stop
    being support vectors, so the solution is sparser than the hinge SVM's
    (Sec. 1.3.3, Table 1.1). This is a *supervised* estimator: every ``y`` is a
    class label (``-1`` included).

    Parameters
    ----------
    C : float, default=1.0
        Loss weight (> 0).
    s : float, default=-0.3
        Ramp cut-off (< 1): losses are flat below ``y f(x) = s``. ``s -> -inf``
        recovers the hinge SVM.
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    sigma : float or "scale", default="scale"
        Kernel width: ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``);
        also the scale of ``poly``. ``"scale"`` is ``1 / (d Var X)`` over the
        training rows, as ``SVC(gamma="scale")``; the value used is
        ``sigma_``. The default was the fixed 1.0, at chance on scaled
        inputs of many features (see :class:`CCCPTSVM`).
    degree : int, default=3
        Degree of the ``poly`` kernel ``(sigma <x, x'> + coef0) ** degree``.
    coef0 : float, default=1.0
    init_fraction : float in (0, 1] or None, default=None
        Sec. 1.3.5: initialise ``beta^0`` from a hinge SVM trained on this
        (stratified, random) fraction of the data. ``None`` uses ``beta^0 = 0``,
        i.e. the first CCCP iteration is the hinge SVM on all the data.
    tol : float, default=1e-3
        KKT tolerance of every SMO solve (the LIBSVM/``SVC`` stopping rule).
    cache_size : float or None, default=None
        Kernel-row cache in MB. ``None``: a quarter of the memory available
        when ``fit`` starts (``weakkernels._smo.CACHE_MEMORY_FRACTION`` of
        ``MemAvailable``), at most the full kernel matrix. The model does not
        depend on it (only the time does).
    cache_dtype : {"float64", "float32"}, default="float64"
        Storage of the cached kernel rows; float32 halves the memory (rows are
        rounded to float32; the solver's arithmetic stays float64), so the
        model changes slightly.
    max_iter : int or None, default=None
        SMO iterations per convex solve. ``None``: LIBSVM's cap
        ``max(10**7, 100 * n_variables)``, generous enough never to stop a
        well-posed solve; -1 for no limit (as ``SVC``). Reaching the cap
        warns (``ConvergenceWarning``).
    max_cccp_iter : int, default=50
        Maximum number of CCCP iterations (convex solves).
    shrinking : bool, default=True
        LIBSVM-style shrinking in the SMO solver.
    n_jobs : int or None, default=None
        Threads for the kernel cache fill and the one-vs-rest problems (more
        than two classes): ``None`` one, ``-1`` every core (scikit-learn's
        convention, through joblib's ``effective_n_jobs``). The fill computes
        spans of kernel rows on the threads (one BLAS thread each), for any
        number of classes. The problems run concurrently only when
        the whole kernel matrix is in the cache (``cache_rows_`` covers every
        point, the default when it fits in ``cache_size``): they then only read
        the shared rows. With a partial cache, or two classes, they run one
        after another. The model is the same bit for bit for every ``n_jobs``;
        it is a resource setting, not a model parameter.
    random_state : int, RandomState instance or None, default=None
        Draws the subset of ``init_fraction``; unused otherwise.

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    sigma_ : float
        The kernel width used (``sigma`` resolved).
    support_vectors_, support_ : ndarray
        Support vectors (union over one-vs-rest problems) and their row indices
        in the training data.
    dual_coef_ : ndarray (n_problems, n_SV)
        Signed expansion coefficients (``y_i alpha_i`` in LIBSVM terms).
    intercept_ : ndarray (n_problems,)
    n_support_ : ndarray (n_problems,)
        Number of support vectors of each binary problem.
    n_iter_ : ndarray (n_problems,)
        CCCP iterations of each binary problem.
    objective_curve_ : ndarray, or list of ndarray for more than two classes
        Objective (Eq. 1.8) after each CCCP iteration; non-increasing up to the
        SMO tolerance (Eq. 1.2-1.3).
    probA_, probB_ : ndarray (n_problems,)
        Platt sigmoid parameters.
    cache_rows_ : int
        Kernel rows the cache held (``cache_size`` over the row length).
    cache_hit_rate_ : float
        Fraction of the solver's row requests served by the cache during
        ``fit`` (rows stored when the cache was filled count as hits).
    kernel_rows_computed_ : int
        Kernel rows computed during ``fit``, the cache fill included.

    See Also
    --------
    CCCPTSVM : the transductive SVM of the same paper.

    References
    ----------
    .. [1] Collobert, R., Sinz, F., Weston, J., Bottou, L. Trading convexity
       for scalability. ICML 2006; Large scale transductive SVMs. JMLR 7,
       2006 (Sec. 1.3).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import RampSVM
    >>> X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    >>> clf = RampSVM(C=10).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "s": RAMP_S,
        "init_fraction": [Interval(Real, 0, 1, closed="right"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        C: float = 1.0,
        s: float = -0.3,
        kernel: str = "rbf",
        sigma: float | str = "scale",
        degree: int = 3,
        coef0: float = 1.0,
        init_fraction: float | None = None,
        tol: float = 1e-3,
        cache_size: float | None = None,
        cache_dtype: str = "float64",
        max_iter: int | None = None,
        max_cccp_iter: int = 50,
        shrinking: bool = True,
        n_jobs: int | None = None,
        random_state=None,
    ):
        self.C = C
        self.s = s
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.init_fraction = init_fraction
        self.tol = tol
        self.cache_size = cache_size
        self.cache_dtype = cache_dtype
        self.max_iter = max_iter
        self.max_cccp_iter = max_cccp_iter
        self.shrinking = shrinking
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    @_on_one_blas_thread
    def fit(self, X, y):
        """Fit by CCCP (Algorithm 1.2); one-vs-rest beyond two classes.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_samples, n_features)
            Sparse input (CSR, CSC, COO) is read as CSR and never densified:
            kernel rows come from sparse dot products, and ``support_vectors_``
            is then a CSR matrix.
        y : array-like (n_samples,)
            Class labels (fully supervised; ``-1`` is an ordinary label here).

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2,
                             accept_sparse=_SPARSE_FORMATS)
        X = _canonical_csr(X)  # CSR/CSC/COO -> canonical CSR; dense stays dense
        check_magnitude(self, X)  # squared distances must not overflow
        check_degenerate_input(self, X)
        self.sigma_ = resolve_sigma(self.sigma, X)
        self._check_numerics(X, self.C, "C")
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"Only one class ({self.classes_[0]!r}) in y; need at least two."
            )
        rng = check_random_state(self.random_state)
        n_classes = self.classes_.size
        self.fit_plan_ = check_plan(self, plan_kernel_fit(
            self, n_rows=X.shape[0], n_features_in=X.shape[1],
            n_outputs=1 if n_classes == 2 else n_classes, n_variables=X.shape[0],
            n_base=X.shape[0], n_steps=self.max_cccp_iter),
            np.bincount(y_enc))
        kp = self._kernel_problem(X)
        n = X.shape[0]
        C = float(self.C)
        opts = dict(tol=self.tol, max_iter=self.max_iter, shrinking=self.shrinking)
        pov = np.arange(n)
        targets = self._binary_targets(y_enc, self.classes_.size)
        subsets = [None] * len(targets)
        if self.init_fraction is not None and self.init_fraction < 1.0:
            # drawn here, in class order: the random stream does not depend
            # on the order in which the class problems run
            subsets = [_stratified_subset(yb, self.init_fraction, rng)
                       for yb in targets]

        def problem(kp, task):
            yb, sub = task
            beta0 = np.zeros(n)
            cap0 = False
            if sub is not None:
                # Sec. 1.3.5: beta^0 from a hinge SVM on a subset (1/P-th).
                a_sub, b_sub, cap0 = _hinge_svm(kp, sub, yb[sub], C, **opts)
                w = np.zeros(kp.m)
                np.add.at(w, sub, a_sub)
                f0 = kp.kernel_times(w) + b_sub
                beta0 = np.where(yb * f0 < self.s, C, 0.0)
            res = _cccp(
                kp, pov, yb, yb.copy(), np.full(n, C), np.ones(n, dtype=bool),
                np.zeros(n, dtype=bool), float(self.s), beta0, np.zeros(n),
                max_cccp_iter=self.max_cccp_iter, **opts,
            )
            res["hit_cap"] |= cap0
            return res

        coefs, intercepts, f_lab, curves, n_iters = [], [], [], [], []
        hit_cap = False
        for res in _solve_problems(kp, problem, list(zip(targets, subsets,
                                                          strict=True)),
                                   self.n_jobs):
            hit_cap |= res["hit_cap"]
            coefs.append(res["alpha"])
            intercepts.append(res["b"])
            f_lab.append(res["f"])
            curves.append(res["curve"])
            n_iters.append(res["n_iter"])
        self._store_cache_stats(kp)
        del kp  # free the kernel cache before the support vectors are copied
        self._store_solution(X, coefs, intercepts, f_lab, y_enc, curves, n_iters,
                             hit_cap, f_lab)
        return self


def _stratified_subset(yb, fraction, rng):
    """Sorted indices of a random subset holding ``fraction`` of each class."""
    parts = []
    for label in (-1.0, 1.0):
        idx = np.flatnonzero(yb == label)
        k = max(1, int(np.ceil(fraction * idx.size)))
        parts.append(rng.permutation(idx)[:k])
    return np.sort(np.concatenate(parts))


# --------------------------------------------------------------------------
# CCCP transductive SVM (Algorithm 1.3)
# --------------------------------------------------------------------------


@register
class CCCPTSVM(_CCCPBase):
    """Transductive SVM trained by CCCP (paper 004, Algorithm 1.3).

    Minimises Eq. 1.12, ``||w||^2 / 2 + C sum_{labeled} H_1(y_i f(x_i)) + C*
    sum_{unlabeled, both labels} R_s(y_i f(x_i))`` -- the hinge loss on labeled
    points and the symmetric Ramp loss ``R_s(f) + R_s(-f)`` (Eq. 1.11) on the
    unlabeled ones -- subject to the balancing constraint Eq. 1.13,
    ``mean_{unlabeled} f(x) = mean_{labeled} y``, imposed by the extra example
    ``x_0`` of Eq. 1.15. CCCP starts from a hinge SVM on the labeled points and
    stops when ``beta`` repeats. More than two classes: one-vs-rest, as the paper
    does for coil20 and uspst.

    ``fit(X, y)``: ``y == -1`` marks unlabeled samples (scikit-learn's
    semi-supervised convention), so ``-1`` cannot be a class label here; there
    must be unlabeled samples and at least two labeled classes.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the labeled hinge losses (> 0).
    C_star : float or None, default=None
        Weight ``C*`` of the unlabeled Ramp losses (>= 0). ``None`` is the
        paper's heuristic ``U C* = L C`` (Sec. 1.6.1.1), ``C_star = C *
        n_labeled / n_unlabeled`` (the value used is ``C_star_``); the same
        rule as the random-feature S3VMs' default. One-vs-rest problems share
        it: every binary problem has the same L and U.
    s : float in (-1, 0], default=-0.3
        Ramp cut-off; ``s = 0`` is the symmetric hinge ``H_1(|f|)`` and
        ``s < 0`` gives a flat plateau of width ``2|s|`` around ``f = 0``.
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    sigma : float or "scale", default="scale"
        Kernel width: ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``).
        ``"scale"`` is ``1 / (d Var X)`` over every training row, labeled and
        unlabeled, as ``SVC(gamma="scale")`` and TSGS3VM; the value used is
        ``sigma_``. The default was the fixed 1.0, which put scaled inputs
        of many features at chance (docs/fidelity.md, paper 004's departure
        5).
    degree : int, default=3
    coef0 : float, default=1.0
    balance : bool, default=True
        Enforce Eq. 1.13 through ``x_0`` (Eq. 1.15). Its kernel column is
        computed once per fit (O(U (L + U)) kernel evaluations, O(L + U)
        memory); ``alpha_0`` spreads over all unlabeled points, which therefore
        all enter the expansion.
    init : {"labeled", "balanced"}, default="labeled"
        The starting point ``theta^0`` of Algorithm 1.3. ``"labeled"``: the
        hinge SVM on the labeled points (the paper's text). ``"balanced"``:
        the same SVM solved together with the balancing variable ``alpha_0``
        (Eq. 1.15), so that ``f_theta^0`` already meets Eq. 1.13 when
        ``beta^0`` is read off it -- what the authors' code (UniverSVM's first
        CCCP pass, unlabeled boxes closed) does. Without ``balance`` both are
        the labeled SVM. On MNIST (Table 1.5) ``"balanced"`` did not lower
        the validation error, hence not the default.
    tol, cache_size, cache_dtype, max_iter, max_cccp_iter, shrinking, n_jobs
        As in :class:`RampSVM`.

    Notes
    -----
    There is no ``random_state``: the algorithm is deterministic (SMO with
    deterministic tie-breaking, fixed initialisation).

    Attributes
    ----------
    classes_, support_vectors_, support_, dual_coef_, intercept_, n_support_,
    n_iter_, probA_, probB_, cache_rows_, cache_hit_rate_, kernel_rows_computed_,
    sigma_
        As in :class:`RampSVM` (``support_`` indexes the rows of ``X`` in fit).
    objective_curve_ : ndarray, or list of ndarray for more than two classes
        Objective of Eq. 1.12 after each CCCP iteration (non-increasing up to
        the SMO tolerance, Eq. 1.2-1.3).
    transduction_ : ndarray (n_samples,)
        Predicted labels of the training samples (given labels for labeled ones).

    See Also
    --------
    RampSVM : the supervised ramp-loss SVM of the same paper.
    weakkernels.TSGS3VM : the random-feature S3VM for many rows.

    References
    ----------
    .. [1] Collobert, R., Sinz, F., Weston, J., Bottou, L. Large scale
       transductive SVMs. JMLR 7, 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import CCCPTSVM
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> y_semi = np.full(300, -1)
    >>> y_semi[:20] = y[:20]
    >>> clf = CCCPTSVM(C=10).fit(X, y_semi)
    >>> bool(clf.score(X[20:], y[20:]) > 0.8)
    True
    """

    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "C_star": C_STAR,
        # the symmetric ramp of the unlabeled loss: s in (-1, 0], not RAMP_S
        "s": [Interval(Real, -1, 0, closed="right")],
        "balance": ["boolean"],
        "init": [StrOptions({"labeled", "balanced"})],
    }

    def __init__(
        self,
        *,
        C: float = 1.0,
        C_star: float | None = None,
        s: float = -0.3,
        kernel: str = "rbf",
        sigma: float | str = "scale",
        degree: int = 3,
        coef0: float = 1.0,
        balance: bool = True,
        init: str = "labeled",
        tol: float = 1e-3,
        cache_size: float | None = None,
        cache_dtype: str = "float64",
        max_iter: int | None = None,
        max_cccp_iter: int = 50,
        shrinking: bool = True,
        n_jobs: int | None = None,
    ):
        self.C = C
        self.C_star = C_star
        self.s = s
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.balance = balance
        self.init = init
        self.tol = tol
        self.cache_size = cache_size
        self.cache_dtype = cache_dtype
        self.max_iter = max_iter
        self.max_cccp_iter = max_cccp_iter
        self.shrinking = shrinking
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    @_on_one_blas_thread
    def fit(self, X, y):
        """Fit by CCCP (Algorithm 1.3).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_samples, n_features)
            Labeled and unlabeled samples. Sparse input (CSR, CSC, COO) is
            read as CSR and never densified: kernel rows come from sparse dot
            products, and ``support_vectors_`` is then a CSR matrix.
        y : array-like (n_samples,)
            Class labels; ``-1`` marks unlabeled samples.

        Returns
        -------
        self
        """
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, accept_sparse=True
        )
        n_lab = int(np.count_nonzero(labeled))
        C_star = (c_star_rule(self.C, n_lab, labeled.size - n_lab)
                  if self.C_star is None else self.C_star)
        # over every row, labeled and unlabeled (as the random-feature S3VMs)
        self.sigma_ = resolve_sigma(self.sigma, X)
        if C_star > self.C:
            self._check_numerics(X, C_star, "C_star")
        else:
            self._check_numerics(X, self.C, "C")
        self.classes_ = classes
        lab = np.flatnonzero(labeled)
        unl = np.flatnonzero(~labeled)
        L, U = lab.size, unl.size
        # bytes and steps from the shapes, refused before anything is allocated
        self.fit_plan_ = check_plan(self, plan_kernel_fit(
            self, n_rows=X.shape[0], n_features_in=X.shape[1],
            n_outputs=1 if classes.size == 2 else classes.size,
            n_variables=L + 2 * U + int(bool(self.balance)),
            n_base=L + U + int(bool(self.balance)), n_steps=self.max_cccp_iter),
            np.unique(y[lab], return_counts=True)[1])
        # Base points: labeled first, then unlabeled, then (virtually) x_0.
        order = np.concatenate([lab, unl])
        y_enc = np.searchsorted(classes, y[lab])
        mean_idx = np.arange(L, L + U) if self.balance else None
        if sp.issparse(X):
            # sparse rows are read in place through `order`: no reordered copy
            kp = self._kernel_problem(X, mean_idx, rows=order)
        else:
            kp = self._kernel_problem(X[order], mean_idx)
        self.C_star_ = C_star = float(C_star)
        var = self._variables(L, U, float(self.C), C_star)
        coefs, intercepts, f_lab, f_unl, curves, n_iters, hit_cap = (
            self._solve_targets(kp, var, y_enc, classes.size, order, X.shape[0]))
        f_train = [
            np.concatenate([fl, fu]) for fl, fu in zip(f_lab, f_unl, strict=True)
        ]
        self._store_cache_stats(kp)
        del kp  # free the kernel cache (and reordered dense rows) first
        self._store_solution(X, coefs, intercepts, f_lab, y_enc, curves, n_iters,
                             hit_cap, f_train)
        transduction = y.copy()
        if classes.size == 2:
            transduction[unl] = classes[(f_unl[0] > 0).astype(np.intp)]
        else:
            transduction[unl] = classes[np.argmax(np.column_stack(f_unl), axis=1)]
        self.transduction_ = transduction
        return self

    def _variables(self, L: int, U: int, C: float, C_star: float):
        """The dual variables of Sec. 1.5.3: L labeled, U unlabeled with
        y = +1, the same U with y = -1, then alpha_0 of the balancing example
        (Eq. 1.15): their base points ``pov``, the unlabeled copies' targets,
        caps, which are concave (ramp) and which free (alpha_0)."""
        n_bal = 1 if self.balance else 0
        return SimpleNamespace(
            L=L, U=U, C=C, C_star=C_star, n_bal=n_bal,
            pov=np.concatenate(
                [np.arange(L), np.arange(L, L + U), np.arange(L, L + U),
                 np.full(n_bal, L + U)]
            ).astype(np.int64),
            y_dup=np.concatenate([np.ones(U), -np.ones(U)]),
            cap=np.concatenate([np.full(L, C), np.full(2 * U, C_star),
                                np.zeros(n_bal)]),
            concave=np.concatenate(
                [np.zeros(L, bool), np.ones(2 * U, bool), np.zeros(n_bal, bool)]
            ),
            free=np.concatenate([np.zeros(L + 2 * U, bool), np.ones(n_bal, bool)]),
        )

    def _cccp_target(self, kp, yl, var):
        """Algorithm 1.3 for one binary target ``yl`` of the labeled points."""
        L, U, pov, concave = var.L, var.U, var.pov, var.concave
        s = float(self.s)
        opts = dict(tol=self.tol, max_iter=self.max_iter, shrinking=self.shrinking)
        balanced_init = self.balance and self.init == "balanced"
        yv = np.concatenate([yl, var.y_dup, np.ones(var.n_bal)])
        zeta = yv.copy()
        if self.balance:
            zeta[-1] = yl.mean()  # zeta_0 of Algorithm 1.3 (Eq. 1.13)
        # theta^0: hinge SVM on the labeled points (with alpha_0 when
        # balanced_init: the labeled SVM under Eq. 1.13)
        w = np.zeros(kp.m)
        if balanced_init:
            a_lab, b0, cap0 = _hinge_svm(kp, np.arange(L), yl, var.C,
                                         x0=(L + U, zeta[-1]), **opts)
            w[L + U] = a_lab[-1]
        else:
            a_lab, b0, cap0 = _hinge_svm(kp, np.arange(L), yl, var.C, **opts)
        w[:L] = a_lab[:L]
        f0 = kp.kernel_times(w)[: L + U] + b0
        f_var = f0[pov[: L + 2 * U]]
        beta0 = np.zeros(pov.size)
        beta0[: L + 2 * U] = np.where(
            concave[: L + 2 * U] & (yv[: L + 2 * U] * f_var < s), var.C_star, 0.0
        )
        alpha0 = np.zeros(pov.size)
        alpha0[:L] = a_lab[:L]
        if balanced_init:
            alpha0[-1] = a_lab[-1]
        res = _cccp(
            kp, pov, yv, zeta, var.cap, concave, var.free, s, beta0, alpha0,
            max_cccp_iter=self.max_cccp_iter, **opts,
        )
        res["hit_cap"] |= cap0
        return res

    def _solve_targets(self, kp, var, y_enc, n_classes, order, n_rows):
        """Algorithm 1.3 for every binary target (one-vs-rest), each solution
        collapsed onto the training rows: the two copies of an unlabeled point
        add up, and x_0 = mean of the unlabeled points."""
        L, U, pov = var.L, var.U, var.pov
        coefs, intercepts, f_lab, f_unl, curves, n_iters = [], [], [], [], [], []
        hit_cap = False
        for res in _solve_problems(kp, functools.partial(self._cccp_target, var=var),
                                   self._binary_targets(y_enc, n_classes),
                                   self.n_jobs):
            hit_cap |= res["hit_cap"]
            wb = np.bincount(pov, weights=res["alpha"], minlength=kp.m)
            coef_b = wb[: L + U].copy()
            if self.balance:
                coef_b[L:] += wb[L + U] / U
            coef = np.zeros(n_rows)
            coef[order] = coef_b
            coefs.append(coef)
            intercepts.append(res["b"])
            f_lab.append(res["f"][:L])
            f_unl.append(res["f"][L : L + U])
            curves.append(res["curve"])
            n_iters.append(res["n_iter"])
        return coefs, intercepts, f_lab, f_unl, curves, n_iters, hit_cap

    def _artifact_state(self):
        meta, arrays = super()._artifact_state()
        meta["C_star"] = float(self.C_star_)
        arrays["transduction"] = self.transduction_
        return meta, arrays

    def _set_artifact_state(self, meta, arrays):
        super()._set_artifact_state(meta, arrays)
        # files written before C_star_ was stored: the parameter, or C
        c_star = meta.get("C_star", self.C if self.C_star is None else self.C_star)
        self.C_star_ = float(c_star)
        self.transduction_ = arrays["transduction"]
