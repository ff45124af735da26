"""MLflow pyfunc wrapper around a weakkernels model file (``est.save(path)``).

Kept in its own module (importing mlflow at import time) so that the class is
importable by reference when MLflow loads a logged model.
"""

from __future__ import annotations

import mlflow.pyfunc
import numpy as np


class WeakKernelsModel(mlflow.pyfunc.PythonModel):
    """Serve a seed-based weakkernels model through ``mlflow.pyfunc``.

    The only artifact is the pickle-free model file (``artifacts["model_file"]``);
    ``predict`` returns a DataFrame with the predicted ``label`` and the
    continuous ``score`` (``decision_function``) of each input row.
    """

    def load_context(self, context):
        from weakkernels.pipeline.models import load_model

        self.model = load_model(context.artifacts["model_file"])

    def predict(self, context, model_input, params=None):
        import pandas as pd

        from weakkernels.pipeline.models import scores

        raw = getattr(model_input, "to_numpy", lambda: model_input)()
        X = np.asarray(raw, dtype=np.float64)
        return pd.DataFrame(
            {
                "label": np.asarray(self.model.predict(X)).astype(np.int64),
                "score": scores(self.model, X),
            }
        )
