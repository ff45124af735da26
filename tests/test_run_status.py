"""MLflow run statuses say what happened: a fit that raised leaves its seed run
(and the runs above it) FAILED, never FINISHED; the runs of a stage killed with
``kill -9`` are marked KILLED by the next stage that opens runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from _pipeline import params as project_params
from weakkernels.pipeline import fitting
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz
from weakkernels.pipeline.tracking import stage_run

pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")

KILLED_STAGE = textwrap.dedent("""
    import json, os, signal
    from weakkernels.pipeline.tracking import nested_run, stage_run

    params = json.loads({params!r})
    with stage_run(params, {path!r}, "train", ("train",)):
        with nested_run("svc / toy / nu=40"):
            with nested_run("seed 1"):
                os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.fixture
def toy(tmp_path):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (100, 3)), rng.normal(1.5, 1, (100, 3))]
    y = np.r_[np.zeros(100, np.int64), np.ones(100, np.int64)]
    save_npz(tmp_path / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    for seed in (1, 2):
        sp = ssl_split(y, n_labeled=30, n_unlabeled=[40], n_val=40, n_test=40,
                       seed=seed)
        save_npz(tmp_path / "splits" / "toy" / f"ssl_seed{seed}.npz", **sp)
    return tmp_path


def _runs(store):
    exp = store.get_experiment_by_name("weakkernels")
    return {r.info.run_name: r.info.status
            for r in store.search_runs([exp.experiment_id], max_results=100)}


def test_failed_fit_leaves_its_runs_failed(toy, store, monkeypatch):
    params = project_params(train={"seeds": [1, 2], "log_pyfunc": False})
    orig = fitting.train_one

    def train_one(*args, seed, **kwargs):
        if seed == 2:
            raise OSError(f"[Errno 30] Read-only file system: 'models/seed{seed}'")
        return orig(*args, seed=seed, **kwargs)

    monkeypatch.setattr(fitting, "train_one", train_one)
    best = {"svc/toy": {"params": {"C": 1.0, "sigma_rel": 1.0}}}
    with pytest.raises(OSError, match="Read-only"):
        with stage_run(params, toy / "params.yaml", "train", ("train",)):
            fitting.train([("svc", "toy")], best, toy / "prep", toy / "splits",
                          toy / "models", toy / "pred", params["train"],
                          {"fixed": {}})
    assert _runs(store) == {"train": "FAILED", "svc / toy / nu=40": "FAILED",
                            "seed 1": "FINISHED", "seed 2": "FAILED"}


def test_runs_of_a_killed_stage_are_killed_by_the_next_stage(tmp_path, store):
    params = project_params()
    code = KILLED_STAGE.format(params=json.dumps(params),
                               path=str(tmp_path / "params.yaml"))
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert set(_runs(store).values()) == {"RUNNING"}
    with stage_run(params, tmp_path / "params.yaml", "evaluate", ("evaluate",)):
        during = _runs(store)
    assert during == {"train": "KILLED", "svc / toy / nu=40": "KILLED",
                      "seed 1": "KILLED", "evaluate": "RUNNING"}
    assert _runs(store)["evaluate"] == "FINISHED"
