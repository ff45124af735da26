"""A TSGS3VM logged as an MLflow pyfunc answers real HTTP requests on raw rows.

The model is fitted on min-max scaled features (as the pipeline's ``prepare``
stage scales them) and logged with the pipeline's ``log_pyfunc`` together with
that scaler (as the train stage does), served by ``mlflow models serve
--env-manager local -h 127.0.0.1`` on a free port, and queried on
``/invocations`` with *raw* (unscaled) rows; the answers must equal the
in-process ones on the scaled rows.  Everything is written under a temporary
directory (tracking store, artifacts, the server's working directory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from _data import two_gaussians
from scale_servers import free_port, stop_process, wait_http

ROOT = Path(__file__).resolve().parents[1]

_START = __import__("time").time()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    import mlflow

    from weakkernels import TSGS3VM
    from weakkernels.pipeline.preparation import fit_scaler, scale_features
    from weakkernels.pipeline.tracking import log_pyfunc

    tmp = tmp_path_factory.mktemp("serve")
    X0, y_semi, y_true = two_gaussians(n=400, d=5, n_labeled=40, seed=3)
    # Raw features far from [0, 1] (cod-rna's span from ~1 to ~1e3): a model that
    # skipped the scaling would answer nonsense.
    X_raw = X0 * np.array([1.0, 10.0, 100.0, 1000.0, 0.1]) + 50.0
    lo, span = fit_scaler(X_raw, "minmax")
    X = scale_features(X_raw, "minmax")
    est = TSGS3VM(sigma=2.0, max_iter=60, random_state=0).fit(X, y_semi)
    est.save(tmp / "model.wk")
    mlflow.set_tracking_uri(f"sqlite:///{tmp}/mlflow.db")
    try:
        # An explicit artifact location: the default is ./mlruns in the cwd.
        exp = mlflow.create_experiment("serve",
                                       artifact_location=(tmp / "art").as_uri())
        mlflow.set_experiment(experiment_id=exp)
        with mlflow.start_run():
            info = log_pyfunc(tmp / "model.wk", X[:5], scaler=(lo, span))
        local = mlflow.artifacts.download_artifacts(info.model_uri,
                                                    dst_path=str(tmp / "dl"))
    finally:
        mlflow.set_tracking_uri(None)
    port = free_port()
    log = tmp / "serve.log"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1",
           # `mlflow models serve` execs `uvicorn` by name: the venv's bin first
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "models", "serve", "-m", local,
             "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port),
             "--workers", "1"],
            stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp,
            start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/ping", 180, proc, log)
        # a few rows of each true class, from the unlabeled part
        rows = np.r_[np.flatnonzero((y_true == 0) & (y_semi == -1))[:4],
                     np.flatnonzero((y_true == 1) & (y_semi == -1))[:4]]
        yield f"http://127.0.0.1:{port}", est, X_raw[rows], X[rows]
    finally:
        stop_process(proc)


def _post(url: str, payload: dict) -> dict:
    req = urllib.request.Request(
        f"{url}/invocations", data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310
        assert r.status == 200
        return json.loads(r.read())


def test_invocations_on_raw_rows_match_in_process_predictions(served):
    url, est, raw, scaled = served
    cols = [f"x{i}" for i in range(raw.shape[1])]
    out = _post(url, {"dataframe_split": {"columns": cols,
                                          "data": raw.tolist()}})
    preds = out["predictions"]
    assert len(preds) == len(raw)
    labels = np.array([p["label"] for p in preds])
    score = np.array([p["score"] for p in preds])
    np.testing.assert_array_equal(labels, est.predict(scaled))
    # JSON round trip of float64 is exact; the served scaling is prepare's
    np.testing.assert_allclose(score, est.decision_function(scaled), rtol=1e-12,
                               atol=1e-12)
    assert len(set(labels.tolist())) == 2  # rows of both classes, told apart
    # Scoring the raw rows without the scaler would give other answers.
    assert not np.allclose(score, est.decision_function(np.asarray(raw, float)))


def test_nothing_written_outside_tmp(served):
    assert not (ROOT / "mlruns").exists() or not any(
        p.stat().st_mtime > _START for p in (ROOT / "mlruns").rglob("*"))


def test_bad_request_is_rejected(served):
    url = served[0]
    req = urllib.request.Request(
        f"{url}/invocations", data=b'{"dataframe_split": {"columns": ["x0"], '
        b'"data": [[1.0]]}}', headers={"Content-Type": "application/json"},
        method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=60)  # noqa: S310
    assert 400 <= err.value.code < 600
