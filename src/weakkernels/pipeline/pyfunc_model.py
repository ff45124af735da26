"""MLflow pyfunc wrapper around a weakkernels model file (``est.save(path)``).

Logged as *code* (MLflow's models-from-code: ``python_model=<this file>``), not
as a cloudpickled object, so loading a served model runs this file and reads
two plain artifacts -- nothing is unpickled:

* ``model_file`` -- the pickle-free weakkernels model;
* ``scaler`` (optional) -- ``scaler.json`` with the ``prepare`` stage's
  per-feature ``lo`` and ``span``: raw rows are mapped to ``[0, 1]`` exactly as
  ``prepare`` did (``clip((x - lo) / span, 0, 1)``) before scoring, so the
  served model takes *raw* feature rows.
"""

from __future__ import annotations

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd


class WeakKernelsModel(mlflow.pyfunc.PythonModel):
    """Serve a seed-based weakkernels model through ``mlflow.pyfunc``.

    ``predict`` takes raw feature rows (the ``prepare`` stage's scaling is
    applied inside) and returns a DataFrame with the predicted ``label`` and the
    continuous ``score`` (``decision_function``) of each row.
    """

    def load_context(self, context) -> None:
        from weakkernels.pipeline.registry import load_model

        self.model = load_model(context.artifacts["model_file"])
        self.lo = self.span = None
        if "scaler" in context.artifacts:
            with open(context.artifacts["scaler"], encoding="utf-8") as fh:
                sc = json.load(fh)
            self.lo = np.asarray(sc["lo"], dtype=np.float64)
            self.span = np.asarray(sc["span"], dtype=np.float64)

    def predict(self, context, model_input: pd.DataFrame,
                params: dict | None = None) -> pd.DataFrame:
        from weakkernels.pipeline.registry import scores

        X = np.asarray(model_input.to_numpy(), dtype=np.float64)
        if self.lo is not None:
            X = np.clip((X - self.lo) / self.span, 0.0, 1.0)
        return pd.DataFrame(
            {
                "label": np.asarray(self.model.predict(X)).astype(np.int64),
                "score": scores(self.model, X),
            }
        )


mlflow.models.set_model(WeakKernelsModel())
