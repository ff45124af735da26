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

from _pipeline import tune_cfg
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz

ROOT = Path(__file__).resolve().parents[1]

# Runs the tune stage in a child process whose ``die_at``-th SVC fit kills the
# process (os._exit: no cleanup, like SIGKILL or a power cut), mid-trial.
CHILD = textwrap.dedent("""
    import json, os, sys
    import sklearn.svm
    from weakkernels.pipeline.search import tune

    calls = [0]
    orig = sklearn.svm.SVC.fit

    def dying_fit(self, *a, **k):
        calls[0] += 1
        if calls[0] == {die_at}:
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


def _die_in_tune(tmp: Path, cfg: dict, *, die_at: int) -> None:
    code = CHILD.format(cfg=json.dumps(cfg), prep=str(tmp / "prep"),
                        splits=str(tmp / "splits"), root=str(tmp), die_at=die_at)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]


@pytest.mark.parametrize("backend", ["sqlite", "journal"])
def test_interrupted_tune_resumes_without_losing_or_repeating(tmp_path, backend,
                                                              monkeypatch):
    import optuna
    from optuna.trial import TrialState

    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    storage = (f"sqlite:///{tmp_path}/optuna.db" if backend == "sqlite"
               else f"journal:{tmp_path}/optuna.journal")
    # cv_folds=0: one fit per trial, so the third SVC fit is trial 2.
    cfg = tune_cfg(n_trials=5, n_startup_trials=3, sampler_seed=7, split_seed=0,
                   storage=storage, cv_folds=0)
    _die_in_tune(tmp_path, cfg, die_at=3)

    from weakkernels.pipeline.search import study_name
    from weakkernels.pipeline.tuning import _storage_object

    name = study_name("svc", "toy", tmp_path / "splits/toy/ssl_seed0.npz", {}, {},
                      cfg, 60)
    before = optuna.load_study(study_name=name, storage=_storage_object(storage))
    states = [t.state for t in before.trials]
    assert states == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.RUNNING]
    done_before = {t.number: (t.params, t.value) for t in before.trials
                   if t.state == TrialState.COMPLETE}

    from weakkernels.pipeline.search import tune

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

    # Deterministic resume: the same finished trials (parameters and values, in
    # order) and the same best trial as an uninterrupted run of the same study.
    other = tmp_path / "uninterrupted"
    cfg_u = {**cfg, "storage": (f"sqlite:///{other}/optuna.db" if backend == "sqlite"
                                else f"journal:{other}/optuna.journal")}
    best_u = tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg_u,
                  {"fixed": {}}, root=tmp_path, log_mlflow=False)
    plain = optuna.load_study(study_name=name,
                              storage=_storage_object(cfg_u["storage"]))
    seq_u = [(t.params, t.value) for t in plain.trials]
    seq_r = [(t.params, t.value) for t in finished]
    assert seq_r == seq_u
    assert best["svc/toy"]["params"] == best_u["svc/toy"]["params"]
    assert best["svc/toy"]["val_loss"] == best_u["svc/toy"]["val_loss"]

    # A third run with the same budget is a no-op.
    tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
         {"fixed": {}}, root=tmp_path, log_mlflow=False)
    again = optuna.load_study(study_name=name, storage=_storage_object(storage))
    assert len(again.trials) == len(after.trials)


# Holds the study lock of a tune process: a child that sleeps inside its first
# SVC fit, so the study is open and locked while the parent tries to run it.
HOLDER = textwrap.dedent("""
    import json, sys, time
    import sklearn.svm
    from weakkernels.pipeline.search import tune

    def slow_fit(self, *a, **k):
        open({flag!r}, "w").close()
        time.sleep(60)

    sklearn.svm.SVC.fit = slow_fit
    tune([("svc", "toy")], {prep!r}, {splits!r}, json.loads({cfg!r}),
         {{"fixed": {{}}}}, root={root!r}, log_mlflow=False)
""")


def test_second_tune_process_on_one_sqlite_study_is_refused(tmp_path, monkeypatch):
    import time

    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    cfg = tune_cfg(n_trials=3, n_startup_trials=3, storage=f"sqlite:///{tmp_path}/o.db",
                   cv_folds=0)
    flag = tmp_path / "fitting"
    code = HOLDER.format(pipelines=str(ROOT / "pipelines"), cfg=json.dumps(cfg),
                         prep=str(tmp_path / "prep"), splits=str(tmp_path / "splits"),
                         root=str(tmp_path), flag=str(flag))
    child = subprocess.Popen([sys.executable, "-c", code],
                             env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    try:
        for _ in range(600):
            if flag.exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert flag.exists(), "the first tune process never started a trial"
        from weakkernels.pipeline.search import tune
        from weakkernels.pipeline.tuning import StudyLocked

        with pytest.raises(StudyLocked, match=r"another process \(pid \d+"):
            tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                 {"fixed": {}}, root=tmp_path, log_mlflow=False)
    finally:
        child.kill()
        child.wait()
    # The lock dies with its holder (kill -9): the study resumes at once.
    from weakkernels.pipeline.search import tune

    best = tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                {"fixed": {}}, root=tmp_path, log_mlflow=False)
    assert best["svc/toy"]["n_complete"] + best["svc/toy"]["n_pruned"] == 3


def test_small_labeled_sets_are_tuned_by_stratified_cross_validation(tmp_path,
                                                                      monkeypatch):
    """30 labels (<= tune.cv_max_labeled): k-fold CV on the labeled points, k
    capped by the smallest class; the objective is the mean over the folds."""
    import optuna

    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    from weakkernels.pipeline.search import cv_fold_count, study_name, tune
    from weakkernels.pipeline.storage import load_npz
    from weakkernels.pipeline.tuning import _storage_object

    y = load_npz(tmp_path / "prep" / "toy.npz")["y"]
    split = load_npz(tmp_path / "splits" / "toy" / "ssl_seed0.npz")
    cfg = tune_cfg(n_trials=3, n_startup_trials=3, storage=f"sqlite:///{tmp_path}/o.db")
    assert cv_fold_count("svc", y, split, cfg) == min(cfg["cv_folds"], 15)
    assert cv_fold_count("svc", y, split, {**cfg, "cv_max_labeled": 29}) == 0
    assert cv_fold_count("svc", y, split, {**cfg, "cv_folds": 0}) == 0
    few = {**split, "labeled": np.r_[split["labeled"][y[split["labeled"]] == 0][:2],
                                     split["labeled"][y[split["labeled"]] == 1]]}
    assert cv_fold_count("svc", y, few, cfg) == 2  # smallest class has 2 labels

    best = tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                {"fixed": {}}, root=tmp_path, log_mlflow=False)
    rec = best["svc/toy"]
    assert rec["validation"].startswith(f"{cfg['cv_folds']}-fold CV")
    name = study_name("svc", "toy", tmp_path / "splits/toy/ssl_seed0.npz", {}, {},
                      cfg, 60)
    study = optuna.load_study(study_name=name, storage=_storage_object(cfg["storage"]))
    for t in study.trials:
        if t.state.name == "COMPLETE":
            folds = t.user_attrs["fold_losses"]
            assert len(folds) == cfg["cv_folds"]
            assert t.value == pytest.approx(np.mean(folds))
            assert sorted(t.intermediate_values) == list(range(cfg["cv_folds"]))


def test_study_identity_includes_n_trials(tmp_path, monkeypatch):
    """``dvc exp run -S tune.n_trials=2`` after a 4-trial run: a fresh 2-trial
    study, the same result as on a clean workspace (not the resumed 4 trials)."""
    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    from weakkernels.pipeline.search import tune

    used = f"sqlite:///{tmp_path}/used.db"
    run = [("svc", "toy")], tmp_path / "prep", tmp_path / "splits"
    tune(*run, tune_cfg(n_trials=4, storage=used), {"fixed": {}}, root=tmp_path,
         log_mlflow=False)
    two = tune(*run, tune_cfg(n_trials=2, storage=used), {"fixed": {}},
               root=tmp_path, log_mlflow=False)["svc/toy"]
    clean = tune(*run, tune_cfg(n_trials=2, storage=f"sqlite:///{tmp_path}/new.db"),
                 {"fixed": {}}, root=tmp_path, log_mlflow=False)["svc/toy"]
    assert two["n_complete"] + two["n_pruned"] == 2
    assert {k: two[k] for k in ("params", "val_loss", "study")} == \
        {k: clean[k] for k in ("params", "val_loss", "study")}


def test_first_trial_is_the_default_and_is_rerun_when_killed(tmp_path, monkeypatch):
    """``tune.start_with_defaults``: trial 0 is the model's defaults (C = 1,
    sigma = 1/(d Var X) for SVC); a kill inside it leaves it FAIL, the resumed
    study queues it again, and the finished trials are those of an
    uninterrupted run, in the same order."""
    import optuna
    from optuna.trial import TrialState

    from weakkernels.pipeline.registry import start_params
    from weakkernels.pipeline.search import study_name, tune
    from weakkernels.pipeline.tuning import _storage_object

    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path)
    cfg = tune_cfg(n_trials=3, n_startup_trials=2, sampler_seed=7, split_seed=0,
                   storage=f"sqlite:///{tmp_path}/optuna.db", cv_folds=0,
                   start_with_defaults=True)
    start = start_params("svc")
    assert start == {"C": 1.0, "sigma_rel": 1.0}
    _die_in_tune(tmp_path, cfg, die_at=1)
    name = study_name("svc", "toy", tmp_path / "splits/toy/ssl_seed0.npz", {}, {},
                      cfg, 60)
    killed = optuna.load_study(study_name=name, storage=_storage_object(cfg["storage"]))
    assert [t.state for t in killed.trials] == [TrialState.RUNNING]
    assert killed.trials[0].params == start

    tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
         {"fixed": {}}, root=tmp_path, log_mlflow=False)
    resumed = optuna.load_study(study_name=name,
                                storage=_storage_object(cfg["storage"]))
    assert resumed.trials[0].state == TrialState.FAIL
    finished = [t for t in resumed.trials if t.state == TrialState.COMPLETE]
    assert finished[0].params == start and len(finished) == 3

    cfg_u = {**cfg, "storage": f"sqlite:///{tmp_path}/uninterrupted.db"}
    tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg_u,
         {"fixed": {}}, root=tmp_path, log_mlflow=False)
    plain = optuna.load_study(study_name=name,
                              storage=_storage_object(cfg_u["storage"]))
    assert [(t.params, t.value) for t in plain.trials] == \
        [(t.params, t.value) for t in finished]

    # Off: trial 0 is the sampler's draw, and the study is a different one.
    cfg_off = {**cfg, "start_with_defaults": False,
               "storage": f"sqlite:///{tmp_path}/off.db"}
    tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg_off,
         {"fixed": {}}, root=tmp_path, log_mlflow=False)
    name_off = study_name("svc", "toy", tmp_path / "splits/toy/ssl_seed0.npz", {}, {},
                          cfg_off, 60)
    assert name_off != name
    off = optuna.load_study(study_name=name_off,
                            storage=_storage_object(cfg_off["storage"]))
    assert off.trials[0].params != start


def test_start_params_respect_overrides_and_ranges():
    from weakkernels.pipeline.registry import start_params

    # the paper's rules and the constructor defaults of the class
    assert start_params("cccp_tsvm") == {"C": 1.0, "c_star_scale": 1.0, "s": -0.3,
                                         "sigma_rel": 1.0}
    assert start_params("label_spreading") == {"n_neighbors": 7, "alpha": 0.2}
    # a fixed value is not a trial parameter; a default outside an overridden
    # range is left to the sampler
    assert start_params("svc", {"C": 5.0}) == {"sigma_rel": 1.0}
    assert start_params("svc", {"C": [10, 100]}) == {"sigma_rel": 1.0}
    # TSGS3VM's eta0 default (1.0) is outside tsgs3vm_sgd's searched range
    assert "eta0" not in start_params("tsgs3vm_sgd")
