"""An interrupted tune stage resumes its study: no finished trial lost or repeated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz

ROOT = Path(__file__).resolve().parents[1]

# Runs the tune stage in a child process whose third SVC fit kills the process
# (os._exit: no cleanup, like SIGKILL or a power cut), mid-trial.
CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {pipelines!r})
    import sklearn.svm
    from tune import tune

    calls = [0]
    orig = sklearn.svm.SVC.fit

    def dying_fit(self, *a, **k):
        calls[0] += 1
        if calls[0] == 3:
            os._exit(3)
        return orig(self, *a, **k)

    sklearn.svm.SVC.fit = dying_fit
    cfg = json.loads({cfg!r})
    tune([("svc", "toy")], {prep!r}, {splits!r}, cfg, {{"fixed": {{}}}},
         root={root!r}, log_mlflow=False)
""")


def _toy(tmp: Path) -> None:
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (150, 3)), rng.normal(1.5, 1, (150, 3))]
    y = np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=30, n_unlabeled=[60], n_val=60, n_test=60, seed=0)
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz", **sp)


@pytest.mark.parametrize("backend", ["sqlite", "journal"])
def test_interrupted_tune_resumes_without_losing_or_repeating(tmp_path, backend,
                                                              monkeypatch):
    import optuna
    from optuna.trial import TrialState

    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    storage = (f"sqlite:///{tmp_path}/optuna.db" if backend == "sqlite"
               else f"journal:{tmp_path}/optuna.journal")
    cfg = {"n_trials": 5, "n_startup_trials": 10, "sampler_seed": 7, "split_seed": 0,
           "callback_every": 2, "storage": storage,
           "pruner": {"n_startup_trials": 2}}
    code = CHILD.format(pipelines=str(ROOT / "pipelines"), cfg=json.dumps(cfg),
                        prep=str(tmp_path / "prep"), splits=str(tmp_path / "splits"),
                        root=str(tmp_path))
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]

    sys.path.insert(0, str(ROOT / "pipelines"))
    from tune import study_name
    from weakkernels.pipeline.tuning import _storage_object

    name = study_name("svc", "toy", tmp_path / "splits/toy/ssl_seed0.npz", {}, {},
                      cfg, 60)
    before = optuna.load_study(study_name=name, storage=_storage_object(storage))
    states = [t.state for t in before.trials]
    assert states == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.RUNNING]
    done_before = {t.number: (t.params, t.value) for t in before.trials
                   if t.state == TrialState.COMPLETE}

    from tune import tune

    best = tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                {"fixed": {}}, root=tmp_path, log_mlflow=False)
    after = optuna.load_study(study_name=name, storage=_storage_object(storage))
    finished = [t for t in after.trials
                if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == cfg["n_trials"]  # 2 kept + 3 new, not 5 new
    for number, (params, value) in done_before.items():  # nothing lost
        assert after.trials[number].params == params
        assert after.trials[number].value == value
    # The killed trial is marked failed, never counted as finished.
    assert after.trials[2].state == TrialState.FAIL
    # Nothing repeated: every finished trial evaluated a different configuration.
    keys = {tuple(sorted(t.params.items())) for t in finished}
    assert len(keys) == len(finished)
    assert best["svc/toy"]["n_complete"] + best["svc/toy"]["n_pruned"] == 5
    assert best["svc/toy"]["val_loss"] == min(t.value for t in after.trials
                                              if t.state == TrialState.COMPLETE)

    # A third run with the same budget is a no-op.
    tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
         {"fixed": {}}, root=tmp_path, log_mlflow=False)
    again = optuna.load_study(study_name=name, storage=_storage_object(storage))
    assert len(again.trials) == len(after.trials)
