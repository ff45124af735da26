"""Input validation shared by every estimator (scikit-learn conventions)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import validate_data

UNLABELED = -1


def validate_semi_supervised(
    estimator, X, y, *, require_unlabeled: bool = True, keep_float32: bool = False
):
    """Validate ``fit(X, y)`` input where ``y == -1`` marks unlabeled samples.

    Returns ``(X, y, labeled_mask, classes)``. ``classes`` holds the real classes
    only (never -1), as in scikit-learn's ``SelfTrainingClassifier``.

    Raises ``ValueError`` with a message naming the problem for: NaN/inf, empty X,
    sparse X, non-numeric features, continuous targets, no labeled samples, a single
    labeled class, and (when ``require_unlabeled``) no unlabeled samples.

    With ``keep_float32``, float32 input (including a read-only ``np.memmap``) is
    kept as it is, without a copy, so out-of-core data stays on disk.
    """
    X, y = validate_data(
        estimator,
        X,
        y,
        accept_sparse=False,
        dtype=[np.float64, np.float32] if keep_float32 else np.float64,
        ensure_all_finite=True,
        y_numeric=False,
        reset=True,
    )
    check_magnitude(estimator, X)
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity.")
    if y.dtype.kind not in "iufb":
        raise ValueError(
            "y must be numeric with -1 marking unlabeled samples; "
            f"got dtype {y.dtype}."
        )
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


def validate_predict(estimator, X, *, keep_float32: bool = False):
    """Validate prediction input against the fitted feature count.

    With ``keep_float32``, float32 input (e.g. a ``np.memmap``) is not copied.
    """
    X = validate_data(
        estimator,
        X,
        accept_sparse=False,
        dtype=[np.float64, np.float32] if keep_float32 else np.float64,
        ensure_all_finite=True,
        reset=False,
    )
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
    if X.size == 0:
        return
    # two reductions, no |X| temporary: X may be a memmap larger than RAM
    peak = max(abs(float(np.max(X))), abs(float(np.min(X))))
    limit = float(np.sqrt(np.finfo(np.float64).max / (4.0 * X.shape[1])))
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
