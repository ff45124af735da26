"""The serving edge (RELIABILITY.md, section "Sparse structure", causes H and
I): the pyfunc model validates raw rows -- column names by name, width,
finiteness, range -- before the ``prepare`` scaling, whose clipping used to
hide bad values."""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from weakkernels import TSGS3VM
from weakkernels.pipeline.pyfunc_model import MAX_SPANS, WeakKernelsModel

_SCALE = np.array([1.0, 10.0, 100.0, 1000.0, 0.1])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A pyfunc model as ``mlflow`` loads it: model file + scaler.json."""
    tmp = tmp_path_factory.mktemp("edge")
    rng = np.random.default_rng(0)
    X_raw = rng.normal(size=(120, 5)) * _SCALE + 50.0
    lo, span = X_raw.min(axis=0), np.ptp(X_raw, axis=0)
    X = (X_raw - lo) / span
    y = np.full(120, -1)
    y[:10], y[10:20] = 0, 1
    y[:20] = (X[:20, 0] > 0.5).astype(int)
    y[:2] = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TSGS3VM(max_iter=20, random_state=0).fit(X, y).save(tmp / "m.wk")
    (tmp / "scaler.json").write_text(json.dumps(
        {"lo": lo.tolist(), "span": span.tolist(), "kind": "minmax"}))
    model = WeakKernelsModel()
    model.load_context(SimpleNamespace(artifacts={
        "model_file": str(tmp / "m.wk"), "scaler": str(tmp / "scaler.json")}))
    return model, X_raw[:6]


def _frame(rows, columns=None):
    return pd.DataFrame(rows, columns=columns or [f"x{i}" for i in range(5)])


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_input_is_refused_before_scaling(served, value):
    # Before: clip((inf - lo) / span, 0, 1) = 1, and inf got a score.
    model, rows = served
    bad = rows.copy()
    bad[2, 3] = value
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.predict(None, _frame(bad))
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.predict(None, bad)


def test_absurd_values_are_refused_naming_row_and_column(served):
    # Before: 1e300 was clipped to the edge of the training range and scored.
    model, rows = served
    bad = rows.copy()
    bad[4, 1] = 1e300
    with pytest.raises(ValueError, match=r"1e\+300 at row 4, column 1 is more than"):
        model.predict(None, _frame(bad))
    # values beyond the training range but plausible are still scored (clipped)
    ok = rows.copy()
    ok[4, 1] += 3 * np.ptp(rows[:, 1]) + 1.0
    assert np.isfinite(model.predict(None, _frame(ok))["score"]).all()
    assert MAX_SPANS >= 1e3


def test_wrong_width_is_refused_naming_the_width(served):
    model, rows = served
    with pytest.raises(ValueError, match="takes 5 features per row"):
        model.predict(None, rows[:, :4])


def test_columns_are_matched_by_name(served):
    # Before: to_numpy() took columns by position: reversed columns changed the
    # scores by up to 3.0, renamed ones were scored as if nothing happened.
    model, rows = served
    want = model.predict(None, _frame(rows))
    cols = [f"x{i}" for i in range(5)]
    reversed_df = _frame(rows, cols)[cols[::-1]]
    got = model.predict(None, reversed_df)
    np.testing.assert_array_equal(got["score"], want["score"])
    np.testing.assert_array_equal(got["label"], want["label"])
    renamed = _frame(rows, ["a", "x1", "x2", "x3", "x4"])
    with pytest.raises(ValueError, match=r"missing \['x0'\], unknown \['a'\]"):
        model.predict(None, renamed)
    # a frame without names (columns 0..d-1) is taken by position
    np.testing.assert_array_equal(
        model.predict(None, pd.DataFrame(rows))["score"], want["score"])


def test_sparse_input_is_checked_too(served):
    model, rows = served
    X = sp.csr_matrix(rows)
    want = model.predict(None, rows)
    np.testing.assert_allclose(model.predict(None, X)["score"], want["score"])
    bad = X.copy()
    bad.data[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.predict(None, bad)
    bad = X.copy()
    bad.indices[0] = 50
    with pytest.raises(ValueError, match="not a valid CSR"):
        model.predict(None, bad)
