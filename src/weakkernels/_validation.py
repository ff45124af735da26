"""Input validation shared by every estimator (scikit-learn conventions)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

UNLABELED = -1

# what ``accept_sparse=True`` takes; everything is converted to CSR
_SPARSE_FORMATS = ("csr", "csc", "coo")


def _bad_sparse(X, why: str) -> ValueError:
    return ValueError(
        f"X is not a valid {X.format.upper()} matrix of shape {X.shape}: {why}. "
        "Was an index array edited by hand? Rebuild it with scipy.sparse "
        "(e.g. csr_matrix((data, indices, indptr), shape=...)) or call its "
        "check_format()."
    )


def _check_index_range(X, name: str, idx: np.ndarray, bound: int) -> None:
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= bound:
        at = int(np.argmax(idx < 0)) if lo < 0 else int(np.argmax(idx >= bound))
        raise _bad_sparse(
            X, f"{name}[{at}] = {int(idx[at])} is outside [0, {bound})"
        )


def check_sparse_structure(X) -> None:
    """Refuse a scipy.sparse matrix whose index arrays are inconsistent.

    scipy builds a matrix from ``(data, indices, indptr)`` with O(1) checks
    only, and its attributes can be reassigned afterwards; format conversion
    (C++) and our numba kernels then index memory with those values unchecked
    -- an out-of-range column killed the process with SIGSEGV (RELIABILITY.md,
    section "Sparse structure"). This is ``check_format(full_check=True)``
    without its side effects (scipy's prunes and recasts the arrays in
    place): a few vectorized O(nnz + n_rows) reductions, run before any
    conversion or kernel. Raises
    ``ValueError`` naming the first bad entry.
    """
    fmt = X.format
    if fmt in ("csr", "csc", "bsr"):
        indptr, indices, data = X.indptr, X.indices, X.data
        for name, arr in (("indptr", indptr), ("indices", indices)):
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or (
                arr.dtype.kind not in "iu"
            ):
                raise _bad_sparse(X, f"{name} must be a 1-D integer array")
        if not isinstance(data, np.ndarray):
            raise _bad_sparse(X, "data must be an array")
        if fmt == "bsr":
            R, C = X.blocksize
            major, minor = X.shape[0] // R, X.shape[1] // C
            if data.ndim != 3 or data.shape[1:] != (R, C):
                raise _bad_sparse(X, f"data must have shape (nnz, {R}, {C})")
        else:
            major, minor = X.shape if fmt == "csr" else X.shape[::-1]
            if data.ndim != 1:
                raise _bad_sparse(X, "data must be 1-D")
        if indptr.size != major + 1:
            raise _bad_sparse(
                X, f"indptr has {indptr.size} entries, expected {major + 1}"
            )
        if indptr[0] != 0:
            raise _bad_sparse(X, f"indptr[0] = {int(indptr[0])}, expected 0")
        if indices.shape[0] != data.shape[0]:
            raise _bad_sparse(
                X, f"{indices.shape[0]} indices but {data.shape[0]} data values"
            )
        nnz = int(indptr[-1])
        if not 0 <= nnz <= indices.shape[0]:
            raise _bad_sparse(
                X, f"indptr[-1] = {nnz} but indices has {indices.shape[0]} entries"
            )
        if major > 0:
            steps = np.diff(indptr)
            if steps.min() < 0:
                at = int(np.argmax(steps < 0))
                raise _bad_sparse(
                    X, f"indptr decreases at {at + 1} ({int(indptr[at])} -> "
                    f"{int(indptr[at + 1])}); it must be non-decreasing"
                )
        _check_index_range(X, "indices", indices[:nnz], minor)
    elif fmt == "coo":
        coords = getattr(X, "coords", None) or (X.row, X.col)
        data = X.data
        if len(coords) != 2 or not isinstance(data, np.ndarray) or data.ndim != 1:
            raise _bad_sparse(X, "expected 2 coordinate arrays and 1-D data")
        for name, idx, bound in zip(("row", "col"), coords, X.shape, strict=True):
            if (not isinstance(idx, np.ndarray) or idx.ndim != 1
                    or idx.dtype.kind not in "iu"):
                raise _bad_sparse(X, f"{name} must be a 1-D integer array")
            if idx.shape[0] != data.shape[0]:
                raise _bad_sparse(
                    X, f"{idx.shape[0]} {name} indices but {data.shape[0]} values"
                )
            _check_index_range(X, name, idx, bound)


def _canonical_csr(X):
    """CSR with sorted, duplicate-free indices and int64-safe index arrays.

    The numba kernels walk ``indptr/indices/data`` and assume one entry per
    (row, column); scipy allows duplicates and unsorted indices in a valid
    matrix, so they are summed and sorted here, once, at the boundary -- after
    :func:`check_sparse_structure` has refused inconsistent index arrays.
    """
    if not sp.issparse(X):
        return X
    check_sparse_structure(X)
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _precheck_sparse(X, accept_sparse: bool) -> None:
    """Check a sparse input that ``validate_data`` would convert (C++) itself.

    CSR/CSC/COO pass through ``validate_data`` untouched (no index is read)
    and are checked in :func:`_canonical_csr`; other formats (BSR) would be
    converted first, so they are checked here.
    """
    if accept_sparse and sp.issparse(X) and X.format not in _SPARSE_FORMATS:
        check_sparse_structure(X)


def check_numeric_target(y, expected: str) -> np.ndarray:
    """``y`` as an array, refused with ``ValueError`` when it holds NaN or
    infinity or is not numeric (``expected`` says what the estimator takes)."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    if y.dtype.kind not in "iufb":
        raise ValueError(f"{expected}; got dtype {y.dtype}.")
    return y


def validate_semi_supervised(
    estimator,
    X,
    y,
    *,
    require_unlabeled: bool = True,
    keep_float32: bool = False,
    accept_sparse: bool = False,
):
    """Validate ``fit(X, y)`` input where ``y == -1`` marks unlabeled samples.

    Returns ``(X, y, labeled_mask, classes)``. ``classes`` holds the real classes
    only (never -1), as in scikit-learn's ``SelfTrainingClassifier``.

    Raises ``ValueError`` with a message naming the problem for: NaN/inf, empty X,
    sparse X (unless ``accept_sparse``), non-numeric features, continuous targets,
    no labeled samples, a single labeled class, and (when ``require_unlabeled``)
    no unlabeled samples.

    With ``keep_float32``, float32 input (including a read-only ``np.memmap``) is
    kept as it is, without a copy, so out-of-core data stays on disk.

    With ``accept_sparse``, scipy.sparse input is returned as CSR with sorted
    indices (the layout the numba kernels read); dense input stays dense.
    """
    if getattr(X, "row_source", False):
        X, y = validate_row_source(estimator, X, y)
    else:
        _precheck_sparse(X, accept_sparse)
        X, y = validate_data(
            estimator,
            X,
            y,
            accept_sparse=_SPARSE_FORMATS if accept_sparse else False,
            dtype=[np.float64, np.float32] if keep_float32 else np.float64,
            ensure_all_finite=True,
            y_numeric=False,
            reset=True,
        )
        X = _canonical_csr(X)
        check_magnitude(estimator, X)
        check_degenerate_input(estimator, X)
    y = check_numeric_target(y, "y must be numeric with -1 marking unlabeled samples")
    labeled = y != UNLABELED
    if not labeled.any():
        raise ValueError("No labeled samples: every y is -1 (unlabeled).")
    target_type = type_of_target(y[labeled])
    if target_type not in ("binary", "multiclass"):
        raise ValueError(
            f"Unknown label type: {target_type!r}. Labels must be class labels; "
            "-1 marks unlabeled samples."
        )
    classes = np.unique(y[labeled])
    if classes.size < 2:
        raise ValueError(
            "Only one class among the labeled samples "
            f"({classes[0]!r}); at least two are needed."
        )
    if require_unlabeled and labeled.all():
        raise ValueError(
            "No unlabeled samples: mark them with y == -1 (a semi-supervised "
            "estimator needs some)."
        )
    return X, y, labeled, classes


def validate_row_source(estimator, X, y):
    """``validate_data`` for rows held elsewhere (a Dask array's chunks on its
    workers, :class:`weakkernels._dask.DaskRows`): the values are checked
    where they are, in one pass (finite, :func:`check_magnitude`'s bound),
    never gathered; ``y`` is checked as ``validate_data`` would."""
    finite, peak = X.value_range()
    if not finite:
        raise ValueError("Input X contains NaN or infinity.")
    if X.shape[0] == 0:
        raise ValueError("Found array with 0 sample(s) (shape=(0, "
                         f"{X.shape[1]})) while a minimum of 1 is required.")
    y = column_or_1d(y, warn=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
    estimator.n_features_in_ = X.shape[1]
    estimator.__dict__.pop("feature_names_in_", None)
    # a 1 x 1 sparse stand-in: the bound then reads n_features_in_
    check_magnitude(estimator, sp.csr_matrix(np.array([[peak]])))
    return X, y


def validate_predict(
    estimator, X, *, keep_float32: bool = False, accept_sparse: bool = False
):
    """Validate prediction input against the fitted feature count.

    With ``keep_float32``, float32 input (e.g. a ``np.memmap``) is not copied;
    with ``accept_sparse``, sparse input comes back as canonical CSR.
    """
    _precheck_sparse(X, accept_sparse)
    X = validate_data(
        estimator,
        X,
        accept_sparse=_SPARSE_FORMATS if accept_sparse else False,
        dtype=[np.float64, np.float32] if keep_float32 else np.float64,
        ensure_all_finite=True,
        reset=False,
    )
    X = _canonical_csr(X)
    check_magnitude(estimator, X)
    return X


def check_magnitude(estimator, X) -> None:
    """Refuse finite features too large for the kernel arithmetic.

    Squared distances ``||x||^2 + ||x'||^2 - 2 <x, x'>`` overflow float64 once
    ``|x|`` nears ``sqrt(max float / n_features)`` (inf - inf = NaN: a silent
    NaN model), and an estimator computing in float32 (``dtype="float32"``)
    turns values beyond the float32 range into inf. Either way the message
    names the input, not a step size.
    """
    if sp.issparse(X):
        # the implicit zeros never set the peak; only the stored values can
        X = X.data
        if X.size == 0:
            return
        peak = max(abs(float(np.max(X))), abs(float(np.min(X))))
        n_features = estimator.n_features_in_
    else:
        if X.size == 0:
            return
        # two reductions, no |X| temporary: X may be a memmap larger than RAM
        peak = max(abs(float(np.max(X))), abs(float(np.min(X))))
        n_features = X.shape[1]
    limit = float(np.sqrt(np.finfo(np.float64).max / (4.0 * n_features)))
    where = "float64"
    if getattr(estimator, "dtype", None) == "float32":
        limit, where = min(limit, float(np.sqrt(np.finfo(np.float32).max))), "float32"
    if peak > limit:
        raise ValueError(
            f"X holds values up to {peak:.3g}; beyond {limit:.3g} squared "
            f"distances overflow {where}. Scale the features (e.g. min-max to "
            "[0, 1], params.yaml prepare.scale: minmax)."
        )


def check_divergence(values, parameter_hint: str) -> None:
    """Stop with a clear error instead of returning a silently broken model."""
    if not np.all(np.isfinite(values)):
        raise FloatingPointError(
            "the solver diverged (non-finite coefficients); reduce "
            f"{parameter_hint}."
        )


class DegenerateModelWarning(UserWarning):
    """A fitted model is constant, or predicts one class, on its training data."""


_KERNEL_PARAMS = ("kernel", "sigma", "degree", "coef0", "dtype")


def _kernel_description(estimator) -> str:
    params = estimator.get_params(deep=False)
    if "sigma" in params and hasattr(estimator, "sigma_"):
        params["sigma"] = estimator.sigma_  # the width used ("scale" resolved)
    shown = [f"{k}={params[k]!r}" for k in _KERNEL_PARAMS if k in params]
    return ", ".join(shown) if shown else "the estimator's parameters"


def check_fitted_model(estimator, coef, decision_on_train) -> None:
    """Refuse a non-finite model; warn about a degenerate one.

    Called at the end of ``fit``, before the model is used. ``coef`` is every
    fitted coefficient (expansion coefficients, weights, intercepts) in any
    shape; ``decision_on_train`` the decision values on the training points,
    shape ``(n_samples,)`` for one binary problem or ``(n_samples,
    n_problems)`` (one-vs-rest; the prediction is the arg-max).

    Raises
    ------
    ValueError
        Non-finite coefficients or decision values. Extreme kernel parameters
        (``kernel="poly", degree=1000``, ``coef0=1e300``) overflow the kernel
        values, so the message names them.

    Warns
    -----
    DegenerateModelWarning
        The decision function is constant on the training data (e.g. kernel
        values underflow to 0, so ``f = b``), or the model predicts one class
        on every training point.
    """
    coef = np.asarray(coef, dtype=np.float64)
    F = np.asarray(decision_on_train, dtype=np.float64)
    name = type(estimator).__name__
    desc = _kernel_description(estimator)
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(F))):
        what = "coefficients" if not np.all(np.isfinite(coef)) else "decision values"
        raise ValueError(
            f"{name} fitted non-finite (NaN or inf) {what} with {desc}: the "
            "kernel values or the solver overflowed. Use a smaller degree, "
            "coef0 or sigma, scale the features, or lower C."
        )
    if F.size == 0:
        return
    F2 = F.reshape(F.shape[0], -1)
    scale = float(np.max(np.abs(F2)))
    spread = float(np.max(np.ptp(F2, axis=0)))
    if spread <= 64.0 * np.finfo(np.float64).eps * scale:
        warnings.warn(
            f"{name}: the decision function is constant ({F2[0, 0]:.6g}) on the "
            f"training data with {desc}; the kernel values are all (nearly) "
            "equal, e.g. underflowed. The model ignores its input.",
            DegenerateModelWarning,
            stacklevel=3,
        )
        return
    if F2.shape[1] == 1:
        one_class = bool(np.all(F2[:, 0] > 0) or np.all(F2[:, 0] <= 0))
    else:
        one_class = np.unique(np.argmax(F2, axis=1)).size == 1
    if one_class:
        warnings.warn(
            f"{name} predicts a single class on every training point with "
            f"{desc}; check the kernel parameters and C.",
            DegenerateModelWarning,
            stacklevel=3,
        )


def check_unlabeled_predictions(estimator, f_unlabeled, Y) -> None:
    """Warn when a semi-supervised model gives (almost) no unlabeled point to
    a class its labels hold: ``DegenerateModelWarning`` if a class of at least
    a fiftieth of the labeled points is predicted on fewer than a tenth of
    that share of the unlabeled ones (a collapse to the majority that no
    other check saw: docs/benchmarks/design_notes.md, "The estimators'
    defaults"). ``Y`` (n_l, K): the +-1 targets per output (one column for
    a binary problem), ``f_unlabeled`` (n_u, K)."""
    F = np.asarray(f_unlabeled, dtype=np.float64).reshape(len(f_unlabeled), -1)
    Y = np.asarray(Y).reshape(len(Y), -1)
    if F.shape[0] == 0:
        return
    if F.shape[1] == 1:
        labeled = np.array([np.mean(Y[:, 0] <= 0), np.mean(Y[:, 0] > 0)])
        predicted = np.array([np.mean(F[:, 0] <= 0), np.mean(F[:, 0] > 0)])
    else:
        labeled = np.mean(Y > 0, axis=0)
        predicted = np.bincount(np.argmax(F, axis=1), minlength=F.shape[1]) / len(F)
    starved = (labeled >= 0.02) & (predicted < 0.1 * labeled)
    if starved.any():
        k = int(np.flatnonzero(starved)[0])
        warnings.warn(
            f"{type(estimator).__name__} predicts output {k} on "
            f"{100 * predicted[k]:.2f} % of the unlabeled points where its "
            f"labels hold {100 * labeled[k]:.1f} %: the model is close to "
            "predicting the majority class only (balanced error near chance). "
            "Try more labels, a larger C, or C_star=0 (the supervised machine).",
            DegenerateModelWarning,
            stacklevel=3,
        )


def _meminfo_available() -> int:
    """``MemAvailable`` of /proc/meminfo (Linux), else the free physical
    pages, else ``2**30`` bytes."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return 2**30


def _own_status_bytes(field: str) -> int | None:
    """``VmSize`` / ``VmData`` of /proc/self/status in bytes (None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rlimit_headroom() -> int | None:
    """Bytes this process may still map under its soft ``RLIMIT_AS`` /
    ``RLIMIT_DATA`` (``ulimit -v`` / ``-d``), None when neither is set."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    room = None
    for limit, field in ((resource.RLIMIT_AS, "VmSize"),
                         (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        used = _own_status_bytes(field)
        if soft != resource.RLIM_INFINITY and used is not None:
            room = max(0, soft - used) if room is None else min(room,
                                                              max(0, soft - used))
    return room


def _cgroup_headroom() -> int | None:
    """Bytes left under this process's cgroup v2 ``memory.max`` (None when
    unlimited or not readable)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            path = fh.read().strip().rsplit(":", 1)[-1]
        base = "/sys/fs/cgroup" + path
        with open(base + "/memory.max", encoding="ascii") as fh:
            cap = fh.read().strip()
        if cap == "max":
            return None
        with open(base + "/memory.current", encoding="ascii") as fh:
            return max(0, int(cap) - int(fh.read().strip()))
    except (OSError, ValueError):
        return None


def available_memory() -> int:
    """Bytes of memory this process may still use now: the memory the OS
    reports available (``MemAvailable``), lowered by the process's own limits
    -- the headroom under a soft ``RLIMIT_AS`` / ``RLIMIT_DATA`` (``ulimit
    -v`` counts address space, so what is mapped already is subtracted) and
    under its cgroup's ``memory.max``. The kernel cache of the exact solvers,
    the feature cache of the random-feature solvers and the pre-fit plans
    (:mod:`weakkernels._plan`) are sized from it; no model depends on it."""
    room = _meminfo_available()
    for limit in (_rlimit_headroom(), _cgroup_headroom()):
        if limit is not None:
            room = min(room, limit)
    return int(room)


def size_text(n_bytes: float) -> str:
    """``n_bytes`` as a message names it: ``"2.5 GiB"``, ``"48 KiB"``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.3g} {unit}"
    return f"{int(n_bytes)} bytes"


class PlanWarning(UserWarning):
    """A fit's plan (:mod:`weakkernels._plan`) is far costlier than usual:
    the warning names the parameter and the planned size."""


# rows per block of check_degenerate_input's comparison with the first row
_CONSTANT_CHECK_ROWS = 4096


def check_degenerate_input(estimator, X) -> None:
    """Warn (:class:`DegenerateModelWarning`) when every training row is the
    same point: every column of ``X`` is constant, so every kernel value is
    equal and no model can tell the rows apart. One helper for every
    estimator, called where its ``fit`` validates ``X`` (dense or CSR; a
    Dask input is not read for it). Dense rows are compared with the first
    row block by block, stopping at the first block that differs (usually
    the first: a memory-mapped X is not read through); CSR by its column
    ranges."""
    if X.shape[0] < 2 or X.shape[1] == 0:
        return
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        # column ranges as 1 x d sparse rows: no dense copy of anything
        if (X.min(axis=0) != X.max(axis=0)).nnz:
            return
        first = X[0].data  # the stored values of the (repeated) first row
    else:
        first = np.asarray(X[0])
        for r0 in range(0, X.shape[0], _CONSTANT_CHECK_ROWS):
            if np.any(X[r0 : r0 + _CONSTANT_CHECK_ROWS] != first):
                return
    where = "zero" if not np.any(first) else "constant"
    warnings.warn(
        f"{type(estimator).__name__}: X is {where} -- all {X.shape[0]} "
        f"training rows are the same point (every one of the "
        f"{X.shape[1]} columns is constant), so every kernel value is "
        "equal and the model cannot depend on its input. Check the "
        "features (a column selection or a scaling that erased them).",
        DegenerateModelWarning,
        stacklevel=3,
    )


class LabeledScoreMixin:
    """``score(X, y)``: accuracy of ``predict`` on the labeled rows of a
    semi-supervised ``y`` (``y == -1`` rows ignored, as in ``fit``), the same
    for every estimator of the package. Labels outside ``classes_`` and a
    ``y`` with no labeled row are a ValueError (scikit-learn's inherited
    ``score`` counted them as errors and returned 0.0)."""

    def _labeled(self, X, y, sample_weight):
        """The labeled rows of ``(X, y)`` (``y == -1`` dropped), checked."""
        check_is_fitted(self)
        y = np.asarray(y)
        lab = y != UNLABELED
        yl = y[lab]
        unknown = np.setdiff1d(np.unique(yl), self.classes_)
        if unknown.size:
            raise ValueError(f"y holds labels {unknown.tolist()} not in classes_.")
        # sparse X: the labeled rows, still sparse (COO cannot be indexed)
        X = sp.csr_matrix(X)[np.flatnonzero(lab)] if sp.issparse(X) else (
            X.iloc[lab] if hasattr(X, "iloc") else np.asarray(X)[lab])
        sw = None if sample_weight is None else np.asarray(sample_weight)[lab]
        return X, yl, sw

    def score(self, X, y, sample_weight=None):
        """Accuracy of :meth:`predict` on the labeled samples of ``(X, y)``
        (``y == -1`` ignored) -- scikit-learn's ``score`` for a classifier."""
        X, yl, sw = self._labeled(X, y, sample_weight)
        if yl.size == 0:
            raise ValueError("score needs labeled samples (y != -1).")
        return float(np.average(self.predict(X) == yl, weights=sw))

