"""``make ui`` (pipelines/ui.py): the command on the project's own store and the
address of the experiment's runs table in the model-training view."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ui_command_names_the_project_store_and_the_runs_view(tmp_path):
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID")}
    out = subprocess.run([sys.executable, str(ROOT / "pipelines" / "ui.py"),
                          "--dry-run", "--port", "5123"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0] == (f"mlflow ui --backend-store-uri sqlite:///{tmp_path}/mlflow.db"
                        " --host 127.0.0.1 --port 5123")
    assert lines[1].startswith("the runs: http://127.0.0.1:5123/#/experiments/")
    assert "workflowType=machine_learning" in lines[1]
