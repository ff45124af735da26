"""Faults lose nothing, and the security basics: a tune stage killed with
SIGKILL mid-study resumes without losing or repeating a trial and leaves no
MLflow run RUNNING; stage outputs are written atomically; model files load
without pickle; servers bind 127.0.0.1; no password reaches MLflow or the log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from _pipeline import tune_cfg
from _reliability import ESTIMATORS, available_estimators
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import atomic_write, save_npz

ROOT = Path(__file__).resolve().parents[1]

# The tune stage as `main` runs it (MLflow parent run + nested study and trial
# runs), killed by SIGKILL in the middle of the third trial when DIE is set.
CHILD = textwrap.dedent("""
    import json, os, signal, sys
    import mlflow
    import sklearn.svm
    import weakkernels.pipeline.search as stage
    from weakkernels.pipeline.search import tune

    # Other developers edit the estimators while tests run; the study name
    # hashes their code, so pin it: both attempts must open the same study.
    stage.estimator_code_hash = lambda: "pinned"
    from weakkernels.pipeline.tracking import setup_mlflow

    if os.environ.get("DIE"):
        calls = [0]
        orig = sklearn.svm.SVC.fit

        def dying_fit(self, *a, **k):
            calls[0] += 1
            if calls[0] == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            return orig(self, *a, **k)

        sklearn.svm.SVC.fit = dying_fit
    setup_mlflow("faults", {root!r})
    with mlflow.start_run(run_name="tune"):
        tune([("svc", "toy")], {prep!r}, {splits!r}, json.loads({cfg!r}),
             {{"fixed": {{}}}}, root={root!r}, log_mlflow=True)
""")


def _toy(tmp: Path) -> None:
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (150, 3)), rng.normal(1.5, 1, (150, 3))]
    y = np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=30, n_unlabeled=[60], n_val=60, n_test=60, seed=0)
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz", **sp)


def _child(tmp: Path, cfg: dict, die: bool) -> subprocess.CompletedProcess:
    code = CHILD.format(pipelines=str(ROOT / "pipelines"), cfg=json.dumps(cfg),
                        prep=str(tmp / "prep"), splits=str(tmp / "splits"),
                        root=str(tmp))
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "WK_OPTUNA_STORAGE")}
    env.update(MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1")
    if die:
        env["DIE"] = "1"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=300)


def _runs(tmp: Path):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp}/mlflow.db")
    exp = client.get_experiment_by_name("faults")
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_sigkilled_tune_resumes_and_leaves_no_run_running(tmp_path):
    import optuna
    from optuna.trial import TrialState

    _toy(tmp_path)
    # cv_folds=0: one SVC fit per trial, so the third fit is trial 2.
    cfg = tune_cfg(n_trials=4, n_startup_trials=10, sampler_seed=7, split_seed=0,
                   storage=f"sqlite:///{tmp_path}/optuna.db", cv_folds=0,
                   fail_stale_running=True)
    proc = _child(tmp_path, cfg, die=True)
    assert proc.returncode == -9, proc.stderr[-2000:]  # really SIGKILLed

    killed = {r.info.run_id: r for r in _runs(tmp_path)}
    running = {i for i, r in killed.items() if r.info.status == "RUNNING"}
    names = sorted(killed[i].data.tags["mlflow.runName"] for i in running)
    # the fault itself: stage, study and the trial being fitted stay RUNNING
    assert names == ["trial-2", "tune", "tune svc / toy"], names
    storage = optuna.storages.RDBStorage(cfg["storage"])
    (summary,) = optuna.get_all_study_summaries(storage)
    before = optuna.load_study(study_name=summary.study_name, storage=storage)
    done_before = {t.number: (t.params, t.value) for t in before.trials
                   if t.state == TrialState.COMPLETE}
    assert sorted(done_before) == [0, 1]

    proc = _child(tmp_path, cfg, die=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    after_runs = _runs(tmp_path)
    status = {r.info.run_id: r.info.status for r in after_runs}
    assert not [i for i, s in status.items() if s == "RUNNING"], "runs left RUNNING"
    assert {status[i] for i in running} == {"KILLED"}
    after = optuna.load_study(study_name=summary.study_name, storage=storage)
    finished = [t for t in after.trials
                if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == cfg["n_trials"]  # 2 kept + 2 new
    for number, (params, value) in done_before.items():  # nothing lost
        assert after.trials[number].params == params
        assert after.trials[number].value == value
    assert after.trials[2].state == TrialState.FAIL
    keys = {tuple(sorted(t.params.items())) for t in finished}
    assert len(keys) == len(finished)  # nothing repeated
    trial_runs = [r for r in after_runs
                  if r.data.tags["mlflow.runName"].startswith("trial-")]
    ok = sorted(int(r.data.params["trial"]) for r in trial_runs
                if r.info.status == "FINISHED")
    assert ok == [t.number for t in finished]


def test_stale_runs_of_dead_processes_are_killed_live_ones_kept(tmp_path):
    """A dead process's runs are KILLED even under another study name (the
    estimator code changed between the kill and the rerun); a live process's
    runs and, on shared storage, live peers' trials stay RUNNING."""
    import mlflow
    import optuna

    from weakkernels.pipeline.stale_runs import PROCESS_TAG, kill_stale_runs

    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = __import__("socket").gethostname()
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/m.db")
    exp = client.create_experiment("stale")

    def family(pid, study):
        stage = client.create_run(exp, run_name="tune")
        tags = {"mlflow.parentRunId": stage.info.run_id, "optuna.study": study,
                PROCESS_TAG: f"{host}:{pid}"}
        run = client.create_run(exp, run_name="tune m / d", tags=tags)
        trial = client.create_run(exp, run_name="trial-0",
                                  tags={"mlflow.parentRunId": run.info.run_id})
        client.log_param(trial.info.run_id, "trial", 0)
        return [stage.info.run_id, run.info.run_id, trial.info.run_id]

    try:
        old = family(dead.pid, "old-study")
        peer = family(live.pid, "new-study")
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/m.db")
        try:
            study = optuna.create_study()  # no FAIL trial: peers' trials live
            marked = kill_stale_runs("new-study", "postgresql://u@h/db", study)
        finally:
            mlflow.set_tracking_uri(previous)
    finally:
        live.kill()
        live.wait()
    assert sorted(marked) == sorted(old)
    assert {client.get_run(i).info.status for i in old} == {"KILLED"}
    assert {client.get_run(i).info.status for i in peer} == {"RUNNING"}


# ------------------------------------------------------------- atomic writes


def test_interrupted_write_keeps_the_old_output_and_leaves_no_temp(tmp_path):
    out = tmp_path / "metrics.json"
    out.write_text('{"old": true}\n')

    def half_then_interrupt(p: Path):
        p.write_text('{"new": ')  # half a JSON document
        raise KeyboardInterrupt  # Ctrl-C / SIGTERM handler mid-write

    with pytest.raises(KeyboardInterrupt):
        atomic_write(out, half_then_interrupt)
    assert out.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


_DIRECT_WRITE = re.compile(
    r"\.write_text\(|\.write_bytes\(|open\([^)]*['\"][wax]b?['\"]|np\.save|"
    r"json\.dump\(|\.savefig\(|\.to_csv\(|\.to_parquet\("
)


def test_every_stage_writes_through_the_atomic_helpers():
    """Stage scripts and the pipeline package never write a file in place: only
    through the temporary-file-and-rename helpers, to an in-memory buffer, or to
    a temporary name they rename afterwards."""
    files = [*(ROOT / "pipelines").glob("*.py"),
             *(ROOT / "src" / "weakkernels" / "pipeline").glob("*.py"),
             *(ROOT / "src" / "weakkernels").glob("*.py")]
    offenders = []
    for path in sorted(files):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if not _DIRECT_WRITE.search(code) or "atomic_write" in code:
                continue
            # in-memory buffers and named temporaries (renamed afterwards)
            if re.search(r"\(\s*buf\b|\btmp\w*\b|\(fd,", code):
                continue
            offenders.append(f"{path.name}:{no}: {line.strip()}")
    assert not offenders, offenders


# ------------------------------------------------------------------ security


def test_model_files_load_without_pickle(tmp_path, monkeypatch):
    """Every estimator's file loads with pickle disabled outright."""
    import pickle

    import weakkernels as wk

    paths = {}
    for name in available_estimators():
        spec = ESTIMATORS[name]
        X, y = spec.data()
        est = spec.make().fit(X, y)
        paths[name] = (tmp_path / f"{name}.wkm", est.decision_function(X), X)
        est.save(paths[name][0])

    def no_pickle(*a, **k):
        raise AssertionError("pickle used while loading a model file")

    monkeypatch.setattr(pickle, "load", no_pickle)
    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(pickle, "Unpickler", no_pickle)
    for name, (path, f, X) in paths.items():
        est = wk.load(path)
        assert type(est).__name__ == name
        np.testing.assert_array_equal(est.decision_function(X), f)


# A command that starts a server: shell `mlflow ui|server --...` or the Python
# argument-list form `"mlflow", "server"`.
_SERVE = re.compile(r"mlflow\s+(ui|server)\s+--|[\"']mlflow[\"'],\s*[\"'](ui|server)")
_HOST = re.compile(r"--host[\s=\"',]+([\w.:\[\]]+)")
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with shell continuations (trailing backslash) joined."""
    out, buf, start = [], "", 0
    for no, line in enumerate(text.splitlines(), 1):
        if not buf:
            start = no
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    return out


def test_servers_bind_localhost_in_docs_and_scripts():
    """Every documented or scripted `mlflow ui/server` binds the loopback
    interface, and nothing anywhere binds 0.0.0.0."""
    files = [*ROOT.glob("*.md"), ROOT / "MLproject", ROOT / "Makefile",
             *ROOT.glob("pipelines/*"), *ROOT.glob("benchmarks/*.py"),
             *ROOT.glob(".ci/*")]
    seen, bad = 0, []
    for path in files:
        if not path.is_file():
            continue
        for no, line in _logical_lines(path.read_text(errors="replace")):
            if "0.0.0.0" in line:
                bad.append(f"{path.name}:{no}: {line.strip()}")
            if _SERVE.search(line):
                seen += 1
                host = _HOST.search(line)
                if host is None or host.group(1) not in _LOOPBACK:
                    bad.append(f"{path.name}:{no}: {line.strip()}")
    assert not bad, bad
    assert seen >= 2, "the README and RELIABILITY.md show `mlflow ui --host ...`"


def test_storage_password_from_env_never_reaches_mlflow_or_log(tmp_path,
                                                                 monkeypatch,
                                                                 capsys):
    import mlflow

    import weakkernels.pipeline.search as tune_stage
    from weakkernels.pipeline import tuning
    from weakkernels.pipeline.tracking import provenance_tags

    secret = "s3cr3t-Pa55"
    monkeypatch.setenv("WK_OPTUNA_STORAGE",
                       f"postgresql+psycopg2://bob:{secret}@db.invalid/optuna")
    local = f"sqlite:///{tmp_path}/optuna.db"
    real_open = tuning.open_study
    monkeypatch.setattr(tune_stage, "open_study",
                        lambda name, storage, **kw: real_open(name, local, **kw))
    _toy(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    old_uri = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        exp = mlflow.set_experiment("secrets")
        cfg = tune_cfg(n_trials=2, n_startup_trials=2, sampler_seed=1,
                       split_seed=0, storage=None)
        with mlflow.start_run(run_name="tune"):
            mlflow.set_tags(provenance_tags(tmp_path, "tune", {"tune": cfg}))
            tune_stage.tune([("svc", "toy")], tmp_path / "prep",
                            tmp_path / "splits", cfg, {"fixed": {}},
                            root=tmp_path, log_mlflow=True)
        runs = mlflow.MlflowClient().search_runs([exp.experiment_id])
    finally:
        mlflow.set_tracking_uri(old_uri)
    assert len(runs) >= 4  # stage, study, two trials
    logged = []
    for r in runs:
        logged += [*r.data.params.items(), *r.data.tags.items()]
    assert any(v.startswith("postgresql+psycopg2://bob:***@") for _, v in logged)
    leaks = [(k, v) for k, v in logged if secret in k or secret in v]
    assert not leaks, leaks
    out = capsys.readouterr()
    assert secret not in out.out and secret not in out.err


def test_synthetic_set_survives_an_interrupted_metadata_write(tmp_path,
                                                               monkeypatch):
    """A run killed while writing meta.json must not break the rerun."""
    from weakkernels.pipeline.synthetic import (
        SyntheticSpec,
        open_synthetic,
        write_synthetic,
    )

    spec = SyntheticSpec(name="tiny", n_rows=500, n_features=3, seed=1)
    real = Path.write_text

    def half_then_die(self, text, *a, **k):
        real(self, text[: len(text) // 2], *a, **k)
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(Path, "write_text", half_then_die)
        with pytest.raises(KeyboardInterrupt):
            write_synthetic(spec, tmp_path / "tiny")
    write_synthetic(spec, tmp_path / "tiny")  # the rerun
    X, y = open_synthetic(tmp_path / "tiny")
    assert X.shape == (500, 3) and y.shape == (500,)
    meta = json.loads((tmp_path / "tiny" / "meta.json").read_text())
    assert meta["n_rows"] == 500
