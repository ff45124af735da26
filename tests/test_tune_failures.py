"""Failed trials in the tune stage: the sampler moves on, the reason is printed
once and stored on the trial, resuming stays deterministic, and a study whose
trials all fail stops early with the reason."""

from __future__ import annotations

import re
import shutil
import time

import numpy as np
import optuna
import pytest
import sklearn.svm

from _pipeline import tune_cfg
from weakkernels.pipeline.search import tune
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz
from weakkernels.pipeline.timings import heartbeat
from weakkernels.pipeline.tuning import (
    ALL_FAIL_STOP,
    FailureReport,
    _storage_object,
    resolve_storage,
)

N_TRIALS = 12


@pytest.fixture
def toy(tmp_path):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (100, 3)), rng.normal(1.5, 1, (100, 3))]
    y = np.r_[np.zeros(100, np.int64), np.ones(100, np.int64)]
    save_npz(tmp_path / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=30, n_unlabeled=[40], n_val=40, n_test=40, seed=0)
    save_npz(tmp_path / "splits" / "toy" / "ssl_seed0.npz", **sp)
    return tmp_path


def _failing_fit(monkeypatch, fails):
    """SVC.fit raises ValueError where ``fails(C)``: the study's failure region."""
    orig = sklearn.svm.SVC.fit

    def fit(self, *a, **k):
        if fails(self.C):
            raise ValueError(f"solver diverged (C region {fails.__name__})")
        return orig(self, *a, **k)

    monkeypatch.setattr(sklearn.svm.SVC, "fit", fit)


def _run(root, n_trials=N_TRIALS):
    cfg = tune_cfg(n_trials=n_trials, n_startup_trials=3, cv_max_labeled=0,
                   storage=None)
    best = tune([("svc", "toy")], root / "prep", root / "splits", cfg,
                {"fixed": {}}, root=root, log_mlflow=False)
    return best["svc/toy"]


def _trials(root, name):
    storage = _storage_object(resolve_storage(None, root))
    return optuna.load_study(study_name=name, storage=storage).trials


def test_failure_region_spends_the_budget_on_distinct_configurations(
        toy, monkeypatch, capsys):
    def large(c):
        return c > 1.0

    _failing_fit(monkeypatch, large)
    rec = _run(toy)
    trials = _trials(toy, rec["study"])
    assert len(trials) == N_TRIALS
    failed = [t for t in trials if t.state == optuna.trial.TrialState.FAIL]
    assert failed and len(failed) < N_TRIALS
    configs = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(configs)) == N_TRIALS  # every trial a new configuration
    for t in failed:
        assert t.params["C"] > 1.0
        assert t.user_attrs["error"] == "ValueError: solver diverged (C region large)"
    out = capsys.readouterr().out
    assert out.count("solver diverged") == 1  # once per distinct error
    assert rec["n_complete"] + rec["n_pruned"] == N_TRIALS - len(failed)


def test_resumed_study_with_failures_runs_the_uninterrupted_trials(
        toy, tmp_path_factory, monkeypatch):
    def large(c):
        return c > 1.0

    _failing_fit(monkeypatch, large)
    whole = _run(toy)
    other = tmp_path_factory.mktemp("resumed")
    for sub in ("prep", "splits"):
        shutil.copytree(toy / sub, other / sub)
    half = _run(other, n_trials=N_TRIALS // 2)
    # a larger n_trials is another study: resume the half under the whole's name
    storage = _storage_object(resolve_storage(None, other))
    optuna.copy_study(from_study_name=half["study"], from_storage=storage,
                      to_storage=storage, to_study_name=whole["study"])
    resumed = _run(other)
    assert resumed["study"] == whole["study"]
    a, b = _trials(toy, whole["study"]), _trials(other, whole["study"])
    assert [t.params for t in a] == [t.params for t in b]
    assert [t.state for t in a] == [t.state for t in b]
    assert resumed["params"] == whole["params"]


def test_study_whose_trials_all_fail_stops_early_with_the_reason(toy, monkeypatch):
    def every(c):
        return True

    _failing_fit(monkeypatch, every)
    numbers = ", ".join(map(str, range(ALL_FAIL_STOP)))
    reason = (f"{ALL_FAIL_STOP} failed with ValueError: solver diverged "
              f"(C region every) (trials {numbers})")
    with pytest.raises(RuntimeError, match="no trial completed .*" + re.escape(reason)):
        _run(toy)  # N_TRIALS > ALL_FAIL_STOP: it stopped early


def test_progress_line_every_interval_while_a_study_runs(capsys):
    study = optuna.create_study()
    report = FailureReport("tune toy/x", study, 3)

    def slow(t):
        time.sleep(0.25)
        return t.suggest_float("x", 0, 1)

    with heartbeat(lambda: report.status, every=0.1):
        study.optimize(slow, n_trials=3, callbacks=[report])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 5  # ~7 intervals of 0.1 s in 0.75 s
    assert lines[0].startswith("tune toy/x: trials running (0 s)")
    assert any(line.startswith("tune toy/x: 2 of 3 trials done, best ")
               for line in lines)
    best = study.best_value
    assert report.status == f"tune toy/x: 3 of 3 trials done, best {best:.4f}"
    with heartbeat(lambda: report.status):  # the default interval: 30 s
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    assert capsys.readouterr().out == ""
