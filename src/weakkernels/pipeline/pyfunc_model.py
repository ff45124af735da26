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
``WeakKernelsModel().predict`` takes them directly). Sparse rows stay sparse
for a ``maxabs`` model (a sparse set); a ``minmax`` model (a dense set, small
``d``) densifies them, since min-max scaling turns zeros into non-zeros.
"""

from __future__ import annotations

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import scipy.sparse as sp


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


def as_rows(model_input):
    """Float64 rows from a DataFrame, an array or a sparse matrix (CSR kept)."""
    if sp.issparse(model_input):
        return sp.csr_matrix(model_input, dtype=np.float64)
    if isinstance(model_input, pd.DataFrame):
        model_input = model_input.to_numpy()
    return np.asarray(model_input, dtype=np.float64)


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
            self.kind = sc.get("kind", "minmax")  # files before issue 16: minmax

    # The hint stays pd.DataFrame although arrays and sparse matrices are
    # accepted: MLflow skips its type-hint validation for that hint (and warns
    # without one), so the declared signature alone decides what gets through.
    def predict(self, context, model_input: pd.DataFrame,
                params: dict | None = None) -> pd.DataFrame:
        from weakkernels.pipeline.registry import scores

        X = as_rows(model_input)
        if self.lo is not None:
            X = scale_rows(X, self.lo, self.span, self.kind)
        return pd.DataFrame(
            {
                "label": np.asarray(self.model.predict(X)).astype(np.int64),
                "score": scores(self.model, X),
            }
        )


mlflow.models.set_model(WeakKernelsModel())
