"""MLflow pyfunc wrapper around a weakkernels model file (``est.save(path)``).

Logged as *code* (MLflow's models-from-code: ``python_model=<this file>``), not
as a cloudpickled object, so loading a served model runs this file and reads
two plain artifacts -- nothing is unpickled:

* ``model_file`` -- the pickle-free weakkernels model;
* ``scaler`` (optional) -- ``scaler.json`` with the ``prepare`` stage's
  per-feature ``lo`` and ``span`` and its ``kind``: raw rows are scaled
  exactly as ``prepare`` did before scoring (:func:`scale_rows`), so the
  served model takes *raw* feature rows.

Input: a pandas DataFrame, a numpy array or a ``scipy.sparse`` matrix (CSR or
CSC; MLflow passes those through when the signature is a tensor spec, as
:func:`weakkernels.pipeline.tracking.log_pyfunc` declares for sparse sets, and
``WeakKernelsModel().predict`` takes them directly). DataFrame columns are
matched by name; the width, finiteness and range of the raw rows are checked
before scaling (:func:`check_rows`). Sparse rows stay sparse
for a ``maxabs`` model (a sparse set); a ``minmax`` model (a dense set, small
``d``) densifies them, since min-max scaling turns zeros into non-zeros.
"""

from __future__ import annotations

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import scipy.sparse as sp

from weakkernels._validation import check_sparse_structure


def scale_rows(X, lo: np.ndarray, span: np.ndarray, kind: str = "minmax"):
    """The ``prepare`` stage's scaling of raw rows ``X`` (dense or sparse).

    ``minmax``: ``clip((x - lo) / span, 0, 1)`` (sparse input is densified);
    ``maxabs``: ``clip(x / span, -1, 1)`` on the stored entries only, so CSR
    stays CSR and zeros stay zero.
    """
    if kind == "maxabs":
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            X.data = np.clip(X.data / span[X.indices], -1.0, 1.0)
            return X
        return np.clip(np.asarray(X, dtype=np.float64) / span, -1.0, 1.0)
    if kind != "minmax":
        raise ValueError(f"unknown scaler kind {kind!r} (minmax | maxabs)")
    X = X.toarray() if sp.issparse(X) else X
    return np.clip((np.asarray(X, dtype=np.float64) - lo) / span, 0.0, 1.0)


def unscale_rows(X, lo: np.ndarray, span: np.ndarray, kind: str = "minmax"):
    """The raw rows the ``prepare`` stage scaled into ``X``: the inverse of
    :func:`scale_rows` on rows of the scaled set (``minmax``: ``x span + lo``;
    ``maxabs``: ``x span``, CSR kept), up to rounding."""
    if kind == "maxabs":
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            X.data = X.data * span[X.indices]
            return X
        return np.asarray(X, dtype=np.float64) * span
    if kind != "minmax":
        raise ValueError(f"unknown scaler kind {kind!r} (minmax | maxabs)")
    X = X.toarray() if sp.issparse(X) else X
    return np.asarray(X, dtype=np.float64) * span + lo


# A raw value this many training ranges (``span``) away from the training
# minimum is a unit or parsing error, not data: min-max clipping would give it
# the score of the edge of the training range.
MAX_SPANS = 1e6


def expected_columns(model) -> list[str]:
    """The input column names: ``feature_names_in_`` if the model was fitted on
    a DataFrame, else the signature's ``x0 .. x{d-1}`` (``log_pyfunc``)."""
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    return [f"x{i}" for i in range(model.n_features_in_)]


def as_rows(model_input, columns: list[str] | None = None):
    """Float64 rows from a DataFrame, an array or a sparse matrix (CSR kept).

    With ``columns``, a DataFrame's columns are matched *by name* (reordered
    as needed); missing or unknown names are a ``ValueError`` naming them. A
    DataFrame whose columns are the default ``0 .. d-1`` carries no names and
    is taken by position.
    """
    if sp.issparse(model_input):
        check_sparse_structure(model_input)
        return sp.csr_matrix(model_input, dtype=np.float64)
    if isinstance(model_input, pd.DataFrame):
        got = list(model_input.columns)
        if columns is not None and got != list(range(len(got))):
            names = [str(c) for c in got]
            missing = [c for c in columns if c not in names]
            unknown = [c for c in names if c not in columns]
            if missing or unknown or len(set(names)) != len(names):
                raise ValueError(
                    "model input columns do not match the model's: missing "
                    f"{missing[:10]}, unknown {unknown[:10]}"
                    f"{', duplicated names' if len(set(names)) != len(names) else ''}"
                    f" (expected {columns[:10]}{' ...' if len(columns) > 10 else ''})"
                )
            model_input = model_input.set_axis(names, axis=1)[columns]
        model_input = model_input.to_numpy()
    return np.asarray(model_input, dtype=np.float64)


def check_rows(X, n_features: int, lo=None, span=None, kind: str = "minmax"):
    """Refuse raw rows the scaling would hide: wrong width, NaN/inf, or values
    more than :data:`MAX_SPANS` training ranges outside it (clipping used to
    turn ``inf`` and ``1e300`` into ordinary scores)."""
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"model input has shape {X.shape}; the model takes "
                         f"{n_features} features per row")
    values = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(values)):
        raise ValueError("model input holds NaN or infinity")
    if span is None or values.size == 0:
        return
    cols = X.indices if sp.issparse(X) else slice(None)
    shift = 0.0 if kind == "maxabs" or lo is None else lo[cols]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        z = np.abs((values - shift) / span[cols])
    bad = ~(z <= MAX_SPANS)
    if bad.any():
        if sp.issparse(X):
            k = int(np.argmax(bad))
            row = int(np.searchsorted(X.indptr, k, side="right")) - 1
            value, at = values[k], (row, int(X.indices[k]))
        else:
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            value = values[at]
        raise ValueError(
            f"model input value {float(value):.3g} at row {at[0]}, column "
            f"{at[1]} is more than "
            f"{MAX_SPANS:g} training ranges outside the training data: raw "
            "feature rows are expected (in the units the model was trained on)"
        )


class WeakKernelsModel(mlflow.pyfunc.PythonModel):
    """Serve a seed-based weakkernels model through ``mlflow.pyfunc``.

    ``predict`` takes raw feature rows -- a DataFrame, an array or a
    ``scipy.sparse`` matrix (the ``prepare`` stage's scaling is applied
    inside) -- and returns a DataFrame with the predicted ``label`` and the
    continuous ``score`` (``decision_function``) of each row.
    """

    def load_context(self, context) -> None:
        from weakkernels.pipeline.registry import load_model

        self.model = load_model(context.artifacts["model_file"])
        self.lo = self.span = None
        self.kind = "minmax"
        if "scaler" in context.artifacts:
            with open(context.artifacts["scaler"], encoding="utf-8") as fh:
                sc = json.load(fh)
            self.lo = np.asarray(sc["lo"], dtype=np.float64)
            self.span = np.asarray(sc["span"], dtype=np.float64)
            self.kind = sc.get("kind", "minmax")  # older files have no "kind": minmax

    # The hint stays pd.DataFrame although arrays and sparse matrices are
    # accepted: MLflow skips its type-hint validation for that hint (and warns
    # without one), so the declared signature alone decides what gets through.
    def predict(self, context, model_input: pd.DataFrame,
                params: dict | None = None) -> pd.DataFrame:
        from weakkernels.pipeline.registry import scores

        # Validate raw rows (names, width, finite, range) before scaling:
        # clip() would otherwise hide inf and absurd values.
        X = as_rows(model_input, expected_columns(self.model))
        check_rows(X, self.model.n_features_in_, self.lo, self.span, self.kind)
        if self.lo is not None:
            X = scale_rows(X, self.lo, self.span, self.kind)
        return pd.DataFrame(
            {
                "label": np.asarray(self.model.predict(X)).astype(np.int64),
                "score": scores(self.model, X),
            }
        )


mlflow.models.set_model(WeakKernelsModel())
