"""Model files saved by an older commit still load and predict the same.

``tests/fixtures/*_6ad07db.wkm`` were written by the code at commit 6ad07db
(``tests/fixtures/make_models_6ad07db.py``, run with that commit's ``src`` on
``PYTHONPATH``); ``models_6ad07db.json`` holds the predictions it recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import weakkernels

FIXTURES = Path(__file__).parent / "fixtures"
RECORD = json.loads((FIXTURES / "models_6ad07db.json").read_text())


@pytest.mark.parametrize("name", sorted(RECORD["models"]))
def test_model_file_from_6ad07db_loads_and_predicts_the_same(name):
    rec = RECORD["models"][name]
    est = weakkernels.load(FIXTURES / rec["file"])
    X = np.asarray(RECORD["X_query"])
    np.testing.assert_array_equal(est.predict(X), rec["predict"])
    np.testing.assert_allclose(est.decision_function(X), rec["decision_function"],
                               rtol=1e-6, atol=1e-9)
