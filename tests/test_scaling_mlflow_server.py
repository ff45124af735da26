"""The pipeline logs to a real MLflow tracking server on loopback.

``mlflow server`` (sqlite backend, ``--artifacts-destination`` in a temp dir) is
started for the test; a child process with ``MLFLOW_TRACKING_URI=http://...`` runs
the tune stage function and logs a trained TSGS3VM as a pyfunc model through the
pipeline helpers; the test then queries the runs back from the server and loads
the model through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from _pipeline import tune_cfg
from scale_servers import mlflow_server
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz

ROOT = Path(__file__).resolve().parents[1]

N_TRIALS = 3

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mlflow
    from weakkernels.pipeline.search import tune
    from weakkernels import TSGS3VM
    from weakkernels.pipeline.tracking import log_pyfunc, setup_mlflow

    setup_mlflow("wk-server", {root!r})
    cfg = json.loads({cfg!r})
    with mlflow.start_run(run_name="tune") as parent:
        tune([("svc", "toy")], {prep!r}, {prep!r} + "/../splits", cfg,
             {{"fixed": {{}}}}, root={root!r}, log_mlflow=True)
    d = np.load({prep!r} + "/toy.npz")
    y = np.full_like(d["y"], -1)
    y[:15], y[150:165] = d["y"][:15], d["y"][150:165]  # 15 labeled per class
    est = TSGS3VM(sigma=0.3, max_iter=40, random_state=0).fit(d["X"], y)
    est.save({model!r})
    with mlflow.start_run(run_name="train") as run:
        mlflow.log_metric("train_error", float(np.mean(est.predict(d["X"]) != d["y"])))
        info = log_pyfunc({model!r}, d["X"][:5])
    print(json.dumps({{"tune_run": parent.info.run_id, "train_run": run.info.run_id,
                      "model_uri": info.model_uri}}))
""")


def _toy(tmp: Path):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (150, 3)), rng.normal(1.5, 1, (150, 3))]
    y = np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=30, n_unlabeled=[60], n_val=60, n_test=60, seed=0)
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz", **sp)
    return X


def test_pipeline_logs_to_tracking_server(tmp_path):
    import mlflow
    from mlflow.tracking import MlflowClient

    X = _toy(tmp_path)
    cfg = tune_cfg(n_trials=N_TRIALS, n_startup_trials=10, sampler_seed=1,
                   split_seed=0, storage=f"sqlite:///{tmp_path}/optuna.db")
    with mlflow_server(workdir=tmp_path) as uri:
        assert uri.startswith("http://127.0.0.1:")
        code = CHILD.format(pipelines=str(ROOT / "pipelines"), root=str(tmp_path),
                            cfg=json.dumps(cfg), prep=str(tmp_path / "prep"),
                            model=str(tmp_path / "model.wk"))
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri,
               "MLFLOW_DISABLE_TELEMETRY": "true"}
        env.pop("WK_OPTUNA_STORAGE", None)
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ids = json.loads(proc.stdout.strip().splitlines()[-1])

        # nothing went to a local store: the client wrote only through the server
        assert not (tmp_path / "mlflow.db").exists()
        assert not (tmp_path / "mlartifacts").exists()

        client = MlflowClient(tracking_uri=uri)
        exp = client.get_experiment_by_name("wk-server")
        assert exp is not None
        assert exp.artifact_location.startswith("mlflow-artifacts:")
        runs = client.search_runs([exp.experiment_id], max_results=100)
        by_id = {r.info.run_id: r for r in runs}
        assert ids["tune_run"] in by_id and ids["train_run"] in by_id
        children = [r for r in runs
                    if r.data.tags.get("mlflow.parentRunId") == ids["tune_run"]]
        study_runs = [r for r in children if r.data.tags.get("model") == "svc"]
        assert len(study_runs) == 1
        trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId")
                  == study_runs[0].info.run_id]
        assert len(trials) == N_TRIALS
        assert all("val_loss_final" in r.data.metrics for r in trials)
        assert "best_val_loss" in study_runs[0].data.metrics
        train = by_id[ids["train_run"]]
        assert 0.0 <= train.data.metrics["train_error"] < 0.3
        assert train.info.status == "FINISHED"

        # the model is served back by the server's artifact proxy
        mlflow.set_tracking_uri(uri)
        try:
            model = mlflow.pyfunc.load_model(ids["model_uri"])
            import pandas as pd

            from weakkernels.pipeline.registry import load_model

            cols = [f"x{i}" for i in range(3)]
            got = model.predict(pd.DataFrame(X[:20], columns=cols))
            est = load_model(tmp_path / "model.wk")
            np.testing.assert_array_equal(got["label"].to_numpy(),
                                          est.predict(X[:20]))
        finally:
            mlflow.set_tracking_uri(None)
    # the fixture stopped the server: nothing listens on its port any more
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{uri}/health", timeout=5)  # noqa: S310

