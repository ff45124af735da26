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
import logging
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from weakkernels._artifact import (
    ArtifactMixin,
    ModelFormatError,
    register,
    stored_sigma,
)
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._constraints import KERNEL_CONSTRAINTS, N_JOBS, SIGMA_OR_SCALE
from weakkernels._plan import check_plan, plan_kernel_fit
from weakkernels._selection import c_star_rule
from weakkernels._smo import (
    STATUS_MAX_ITER,
    KernelProblem,
    bounds_from_margins,
    check_precision,
    decision_values,
    default_max_iter,
    kernel_bound,
)
from weakkernels._threads import one_blas_thread
from weakkernels._validation import (
    _SPARSE_FORMATS,
    LabeledScoreMixin,
    _canonical_csr,
    check_degenerate_input,
    check_divergence,
    check_fitted_model,
    check_magnitude,
    validate_predict,
    validate_semi_supervised,
)
from weakkernels.kernels import KERNEL_CODES, resolve_sigma

__all__ = ["CCCPTSVM", "RampSVM"]

_LOG = logging.getLogger(__name__)


# --------------------------------------------------------------------------
# the CCCP loop shared by Algorithms 1.2 and 1.3
# --------------------------------------------------------------------------


def _hinge(z):
    return np.maximum(0.0, 1.0 - z)


def _ramp(z, s):
    """Ramp loss ``R_s(z) = min(1 - s, max(0, 1 - z)) = H_1(z) - H_s(z)`` (Eq. 1.7)."""
    return np.minimum(1.0 - s, np.maximum(0.0, 1.0 - z))


def _make_feasible(alpha, A, B, free):
    """Warm start: clip the previous solution into the new box, restore sum = 0.

    Bounds move between CCCP iterations (the linearised concave part shifts them,
    Algorithm 1.2), so the previous ``alpha`` is generally infeasible. With the
    free balancing variable the sum is absorbed there; otherwise the excess is
    removed from the variables with room, in index order (deterministic).
    """
    alpha = np.clip(alpha, A, B)
    excess = float(alpha.sum())
    if excess == 0.0:
        return alpha
    if free.any():
        k = int(np.flatnonzero(free)[0])
        alpha[k] -= excess
        return alpha
    room = alpha - A if excess > 0 else B - alpha
    cum = np.cumsum(room)
    take = np.clip(abs(excess) - (cum - room), 0.0, room)
    # clip again: alpha - (alpha - A) can round to one ulp below A, which the
    # SMO's feasibility check rejects (seen in a tune trial of ramp_svm)
    alpha = np.clip(alpha - np.sign(excess) * take, A, B)
    if abs(alpha.sum()) > 1e-9 * max(1.0, abs(excess)):
        # Cannot happen for CCCP boxes (alpha = 0 is always feasible); fall back.
        alpha = np.zeros_like(alpha)
    return alpha


def _cccp(kp, pov, yv, zeta, cap, concave, free, s, beta, alpha, *, tol, max_iter,
          shrinking, max_cccp_iter):
    """CCCP (Algorithm 1.1) for Algorithms 1.2/1.3 over the variables ``pov``.

    Variable ``k`` has label ``yv[k]``, linear term ``zeta[k]`` and loss weight
    ``cap[k]`` (C or C*); ``concave[k]`` marks the Ramp-loss variables whose
    ``beta_k`` (Sec. 1.3.4, Eq. 1.16) is updated, ``free[k]`` the balancing
    variable ``alpha_0`` (no box). Each iteration solves the dual with
    ``-beta_k <= y_k alpha_k <= cap_k - beta_k``, then sets
    ``beta_k = cap_k`` where ``y_k f(x_k) < s``; it stops when ``beta`` repeats
    (the paper's ``beta^{t+1} = beta^t``; an earlier ``beta`` -- a cycle caused
    by the finite solver tolerance -- also stops it).

    Returns a dict with the final ``alpha``, bias ``b``, decision values ``f``
    of every variable, the objective after each iteration (Eq. 1.8 / 1.12),
    the number of CCCP iterations and of SMO iterations, and whether any SMO
    solve hit ``max_iter``.
    """
    seen = {(beta > 0).tobytes()}
    curve = []
    smo_iters = 0
    hit_cap = False
    objective_weight = np.where(free, 0.0, cap)
    max_iter = _resolve_max_iter(max_iter, pov.size)
    for _ in range(max_cccp_iter):
        A, B = bounds_from_margins(yv, -beta, cap - beta)
        A[free] = -np.inf
        B[free] = np.inf
        alpha = _make_feasible(alpha, A, B, free)
        alpha, g, b, n_it, status = kp.solve(
            pov, zeta, A, B, alpha, tol=tol, max_iter=max_iter, shrinking=shrinking
        )
        check_divergence(alpha, "C (and C_star)")
        smo_iters += n_it
        hit_cap |= status == STATUS_MAX_ITER
        f = zeta - g + b  # (K alpha)_k + b, since g = zeta - K alpha
        z = yv * f
        # J = ||w||^2 / 2 + sum_k cap_k loss_k, with ||w||^2 = alpha' K alpha.
        losses = np.where(concave, _ramp(z, s), _hinge(z))
        curve.append(
            0.5 * float(alpha @ (zeta - g))
            + float(np.sum(objective_weight * losses))
        )
        beta = np.where(concave & (z < s), cap, 0.0)
        key = (beta > 0).tobytes()
        if key in seen:
            break
        seen.add(key)
    return {
        "alpha": alpha,
        "b": b,
        "f": f,
        "curve": np.asarray(curve),
        "n_iter": len(curve),
        "smo_iter": smo_iters,
        "hit_cap": hit_cap,
    }


def _solve_problems(kp, problem, tasks, n_jobs):
    """``[problem(kp, task) for task in tasks]``, on ``n_jobs`` threads when safe.

    The one-vs-rest problems of one fit share ``kp`` and its kernel cache.
    Threads (the compiled solver releases the GIL) are used only when every
    row is cached (:attr:`~weakkernels._smo.KernelProblem.fully_cached`): no
    row is then computed or evicted, each problem reads the same rows and
    keeps its own LRU bookkeeping (:meth:`~weakkernels._smo.KernelProblem.
    solver_view`), so every result -- and the summed hit counts -- equals
    the serial one bit for bit. With a partial cache the problems run one
    after another whatever ``n_jobs`` is: their misses would evict rows
    another problem is reading.
    """
    n_threads = min(len(tasks), effective_n_jobs(n_jobs))
    if n_threads <= 1 or not kp.fully_cached:
        return [problem(kp, task) for task in tasks]
    views = [kp.solver_view() for _ in tasks]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        results = list(pool.map(problem, views, tasks))
    kp.absorb_counters(views)
    return results


def _resolve_max_iter(max_iter, n_vars):
    """``None`` -> LIBSVM's cap ``max(10^7, 100 n)`` (see ``default_max_iter``)."""
    return default_max_iter(n_vars) if max_iter is None else int(max_iter)


def _hinge_svm(kp, idx, y, C, *, tol, max_iter, shrinking, x0=None):
    """Plain hinge-loss SVM (Eq. 1.4) on base points ``idx``; returns (alpha, b).

    ``x0 = (base point, zeta_0)`` adds the free balancing variable of Eq. 1.15
    as the last variable (its ``alpha`` is then the last entry): the SVM
    under the balancing constraint Eq. 1.13.
    """
    A, B = bounds_from_margins(y, np.zeros(y.size), np.full(y.size, C))
    zeta = y.astype(np.float64)
    if x0 is not None:
        idx = np.append(idx, x0[0])
        zeta = np.append(zeta, x0[1])
        A, B = np.append(A, -np.inf), np.append(B, np.inf)
    alpha, _, b, _, status = kp.solve(
        idx, zeta, A, B, tol=tol,
        max_iter=_resolve_max_iter(max_iter, len(idx)), shrinking=shrinking,
    )
    return alpha, b, status == STATUS_MAX_ITER


# --------------------------------------------------------------------------
# shared estimator machinery
# --------------------------------------------------------------------------


_COMMON_CONSTRAINTS = {
    **KERNEL_CONSTRAINTS,
    "sigma": SIGMA_OR_SCALE,  # resolved at fit time into sigma_
    # The exact polynomial kernel takes any real coef0 (as SVC does); the
    # random-feature kernels need coef0 >= 0.
    "coef0": [Interval(Real, None, None, closed="neither")],
    "C": [Interval(Real, 0, None, closed="neither")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "cache_size": [Interval(Real, 0, None, closed="neither"), None],
    "cache_dtype": [StrOptions({"float64", "float32"})],
    "max_iter": [Interval(Integral, -1, None, closed="left"), None],
    "max_cccp_iter": [Interval(Integral, 1, None, closed="left")],
    "shrinking": ["boolean"],
    "n_jobs": N_JOBS,
}


def _on_one_blas_thread(fit):
    """``fit`` with BLAS on one thread (:func:`~weakkernels._threads.one_blas_thread`):
    the kernel rows of the fill and of every cache miss keep their bits, so
    the model is the same for every ``n_jobs`` and every cache size; the
    fit's parallelism is ``n_jobs``."""

    @functools.wraps(fit)
    def fit_on_one_blas_thread(self, *args, **kwargs):
        with one_blas_thread():
            return fit(self, *args, **kwargs)

    return fit_on_one_blas_thread


class _CCCPBase(LabeledScoreMixin, ArtifactMixin, ClassifierMixin, BaseEstimator):
    """Prediction, probability calibration and model files for both estimators.

    Fitted model: ``f_c(x) = sum_s dual_coef_[c, s] k(x, support_vectors_[s])
    + intercept_[c]`` for each binary problem ``c`` (one for two classes, one
    per class -- one-vs-rest -- otherwise).
    """

    def _kernel_problem(self, X, extra_mean_idx=None, rows=None):
        return KernelProblem(
            X,
            KERNEL_CODES[self.kernel],
            float(self.sigma_),
            int(self.degree),
            float(self.coef0),
            None if self.cache_size is None else float(self.cache_size),
            extra_mean_idx,
            rows,
            np.dtype(self.cache_dtype),
            effective_n_jobs(self.n_jobs),
        )

    def _store_cache_stats(self, kp):
        """Fitted cache diagnostics, also logged (``logging``, this module)."""
        self.cache_rows_ = int(kp.capacity)
        self.cache_hit_rate_ = float(kp.hit_rate)
        self.kernel_rows_computed_ = int(kp.rows_computed)
        _LOG.info(
            "kernel cache: %d of %d rows (%s, %.0f MB), hit rate %.4f, %d rows "
            "computed", kp.capacity, kp.m, kp.data.dtype, kp.data.nbytes / 2**20,
            self.cache_hit_rate_, self.kernel_rows_computed_,
        )

    def _check_numerics(self, X, C, c_name):
        """Refuse tol, C and kernel parameters that make SMO meaningless.

        Runs before any solve (and before fitted state changes): an overflowing
        kernel (``degree=1000``, ``coef0=1e300``) or ``eps * C * max|k| >= tol``
        (``C=1e17``) or ``tol < 1e-12`` would otherwise loop without end or
        return NaN (see :func:`weakkernels._smo.check_precision`).
        """
        desc = f"kernel={self.kernel!r}, sigma={self.sigma_!r}"
        if self.kernel == "poly":
            desc += f", degree={self.degree!r}, coef0={self.coef0!r}"
        bound = kernel_bound(X, KERNEL_CODES[self.kernel], float(self.sigma_),
                             int(self.degree), float(self.coef0))
        check_precision(float(C), float(self.tol), bound, c_name=c_name,
                        kernel_desc=desc)

    def _binary_targets(self, y_enc, n_classes):
        """(target in {-1, +1} per binary problem) -- OvR beyond two classes."""
        if n_classes == 2:
            return [np.where(y_enc == 1, 1.0, -1.0)]
        return [np.where(y_enc == c, 1.0, -1.0) for c in range(n_classes)]

    def _store_solution(self, X, coefs, intercepts, f_labeled, y_enc, curves,
                        n_iters, hit_cap, f_train):
        """Set fitted attributes from per-problem coefficients over rows of X.

        ``f_train`` holds the decision values of every training point, one
        column per binary problem; the model is checked on them
        (:func:`weakkernels._validation.check_fitted_model`) before any
        attribute is set.
        """
        coefs = np.vstack(coefs)
        check_fitted_model(
            self,
            np.concatenate([coefs.ravel(), np.asarray(intercepts, dtype=float)]),
            np.column_stack(f_train),
        )
        support = np.flatnonzero(np.any(coefs != 0.0, axis=0))
        self.support_ = support
        # CSR rows of a sparse X stay a CSR matrix (never densified); row
        # indexing copies (dense and CSR), so no second copy
        self.support_vectors_ = X[support]
        self.dual_coef_ = coefs[:, support]
        self.intercept_ = np.asarray(intercepts, dtype=np.float64)
        self.n_support_ = np.count_nonzero(coefs, axis=1).astype(np.int64)
        self.n_iter_ = np.asarray(n_iters, dtype=np.int64)
        self.objective_curve_ = curves[0] if len(curves) == 1 else list(curves)
        # Platt scaling on the labeled points, the only ones with known labels.
        platt = []
        for c, f in enumerate(f_labeled):
            target = (y_enc == (1 if len(f_labeled) == 1 else c)).astype(float)
            platt.append(fit_platt(f, target))
        self.probA_ = np.array([a for a, _ in platt])
        self.probB_ = np.array([b for _, b in platt])
        if hit_cap:
            warnings.warn(
                "SMO stopped at max_iter before reaching tol; increase max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def decision_function(self, X):
        """Decision values ``f(x)``.

        Returns shape ``(n_samples,)`` for two classes (positive means
        ``classes_[1]``), ``(n_samples, n_classes)`` one-vs-rest otherwise.
        """
        check_is_fitted(self)
        X = validate_predict(self, X, accept_sparse=True)
        F = decision_values(
            X,
            self.support_vectors_,
            self.dual_coef_,
            self.intercept_,
            KERNEL_CODES[self.kernel],
            self.sigma_,
            self.degree,
            self.coef0,
        )
        return F[:, 0] if F.shape[1] == 1 else F

    def predict(self, X):
        """Class labels: sign of ``f`` (binary) or arg-max one-vs-rest score."""
        F = self.decision_function(X)
        if F.ndim == 1:
            return self.classes_[(F > 0).astype(np.intp)]
        return self.classes_[np.argmax(F, axis=1)]

    def predict_proba(self, X):
        """Platt-scaled probabilities, shape ``(n_samples, n_classes)``.

        The sigmoid of each binary problem is fitted on the decision values of
        the labeled training points (:func:`weakkernels._calibration.fit_platt`);
        one-vs-rest probabilities are normalised to sum to one.
        """
        F = self.decision_function(X)
        if F.ndim == 1:
            p1 = platt_proba(F, self.probA_[0], self.probB_[0])
            return np.column_stack([1.0 - p1, p1])
        P = np.column_stack(
            [platt_proba(F[:, c], self.probA_[c], self.probB_[c])
             for c in range(F.shape[1])]
        )
        total = P.sum(axis=1, keepdims=True)
        total[total == 0.0] = 1.0
        return P / total

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ---- model files (weakkernels._artifact)

    def _artifact_state(self):
        classes = np.asarray(self.classes_)
        if classes.dtype == object:
            classes = classes.astype(str)  # never store object arrays
        curves = (
            [self.objective_curve_]
            if isinstance(self.objective_curve_, np.ndarray)
            else list(self.objective_curve_)
        )
        meta = {
            "n_features_in": int(self.n_features_in_),
            "sigma": float(self.sigma_),
            "n_curves": len(curves),
            "binary_curve": isinstance(self.objective_curve_, np.ndarray),
        }
        arrays = {
            "classes": classes,
            "support": self.support_,
            "dual_coef": self.dual_coef_,
            "intercept": self.intercept_,
            "n_support": self.n_support_,
            "n_iter": self.n_iter_,
            "probA": self.probA_,
            "probB": self.probB_,
        }
        for c, curve in enumerate(curves):
            arrays[f"objective_curve_{c:04d}"] = curve
        sv = self.support_vectors_
        if sp.issparse(sv):
            # a sparse model stays sparse on disk: CSR as its three arrays
            sv = sp.csr_matrix(sv)
            meta["support_vectors_csr_shape"] = [int(n) for n in sv.shape]
            arrays["support_vectors_indptr"] = sv.indptr.astype(np.int64)
            arrays["support_vectors_indices"] = sv.indices.astype(np.int64)
            arrays["support_vectors_data"] = sv.data
        else:
            arrays["support_vectors"] = sv
        return meta, arrays

    @staticmethod
    def _load_support_vectors(meta, arrays):
        """Dense ``support_vectors.npy``, or CSR stored as three arrays + shape."""
        if "support_vectors_csr_shape" not in meta:  # dense (every older file)
            return np.asarray(arrays["support_vectors"], dtype=np.float64)
        n_rows, n_cols = (int(v) for v in meta["support_vectors_csr_shape"])
        indptr = np.asarray(arrays["support_vectors_indptr"])
        indices = np.asarray(arrays["support_vectors_indices"])
        data = np.asarray(arrays["support_vectors_data"], dtype=np.float64)
        if (
            indptr.dtype.kind != "i" or indices.dtype.kind != "i"
            or indptr.shape != (n_rows + 1,) or indptr[0] != 0
            or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size
            or data.shape != indices.shape
            or (indices.size and (indices.min() < 0 or indices.max() >= n_cols))
        ):
            raise ModelFormatError("support_vectors_*.npy: inconsistent CSR arrays")
        sv = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
        if not sv.has_canonical_format:
            sv.sum_duplicates()
        return sv

    def _set_artifact_state(self, meta, arrays):
        n_features = int(meta["n_features_in"])
        sv = self._load_support_vectors(meta, arrays)
        coef = np.asarray(arrays["dual_coef"], dtype=np.float64)
        intercept = np.asarray(arrays["intercept"], dtype=np.float64)
        classes = arrays["classes"]
        n_problems = 1 if classes.size == 2 else classes.size
        if (
            sv.ndim != 2
            or sv.shape[1] != n_features
            or coef.shape != (n_problems, sv.shape[0])
            or intercept.shape != (n_problems,)
            or arrays["probA"].shape != (n_problems,)
            or not np.all(np.isfinite(coef))
            or not np.all(np.isfinite(sv.data if sp.issparse(sv) else sv))
        ):
            raise ModelFormatError("model file has inconsistent array shapes")
        self.classes_ = classes
        self.n_features_in_ = n_features
        # files written before sigma_ was stored: sigma was a number then
        self.sigma_ = stored_sigma(meta, self.sigma)
        self.support_ = arrays["support"]
        self.support_vectors_ = sv
        self.dual_coef_ = coef
        self.intercept_ = intercept
        self.n_support_ = arrays["n_support"]
        self.n_iter_ = arrays["n_iter"]
        self.probA_ = arrays["probA"]
        self.probB_ = arrays["probB"]
        curves = [arrays[f"objective_curve_{c:04d}"] for c in range(meta["n_curves"])]
        self.objective_curve_ = curves[0] if meta["binary_curve"] else curves


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
        "s": [Interval(Real, None, 1, closed="neither")],
        "init_fraction": [Interval(Real, 0, 1, closed="right"), None],
        "random_state": ["random_state"],
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
        "C_star": [Interval(Real, 0, None, closed="left"), None],
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
