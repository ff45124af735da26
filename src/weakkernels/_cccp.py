"""The concave-convex procedure of paper 004 over the SMO solver, and the base
class of the exact-kernel machines (RampSVM, CCCPTSVM in
:mod:`weakkernels.cccp_tsvm`): kernel problem, numerics checks, fitted
state, prediction and model files.

Collobert, Sinz, Weston & Bottou, *Large Scale Transductive SVMs*, JMLR 7
(2006), Algorithm 1.1: every CCCP iteration is one convex dual problem solved
by the numba SMO solver of :mod:`weakkernels._smo`; the loop stays in Python
so it can record the objective after each iteration.
"""

from __future__ import annotations

import functools
import logging
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from weakkernels._artifact import (
    ArtifactMixin,
    ModelFormatError,
    stored_sigma,
)
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._constraints import KERNEL_CONSTRAINTS, N_JOBS, SIGMA_OR_SCALE, TOL, C
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
    LabeledScoreMixin,
    check_divergence,
    check_fitted_model,
    validate_predict,
)
from weakkernels.kernels import KERNEL_CODES

# the exact-kernel machines' log (the public module's name)
_LOG = logging.getLogger("weakkernels.cccp_tsvm")


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
    "C": C,
    "tol": TOL,
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
