"""Two tune-stage worker processes share one Optuna study on a real PostgreSQL.

The server is started on loopback for the test (``benchmarks/scale_servers.py``);
the test is skipped, with the reason, where the PostgreSQL server binaries are
not installed (``.ci/run`` tries ``apt-get install -y postgresql``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from _pipeline import tune_cfg
from scale_servers import ServerUnavailable, postgres_server
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz

ROOT = Path(__file__).resolve().parents[1]

N_TRIALS = 12

# One worker: the real `tune` function of the stage script, its trials logged
# (trial number, params, outcome) to a file so the test can count evaluations.
WORKER = textwrap.dedent("""
    import json, sys, time
    import sklearn.svm
    import weakkernels.pipeline.search as stage

    orig_fit = sklearn.svm.SVC.fit

    def slow_fit(self, *a, **k):  # long enough for the two workers to overlap
        time.sleep(0.3)
        return orig_fit(self, *a, **k)

    sklearn.svm.SVC.fit = slow_fit
    orig_trial = stage.run_trial

    def logged_trial(trial, *a, **k):
        try:
            value = orig_trial(trial, *a, **k)
            outcome = "COMPLETE"
            return value
        except Exception as exc:
            outcome = type(exc).__name__
            raise
        finally:
            with open({log!r}, "a") as fh:
                fh.write(json.dumps({{"number": trial.number, "params": trial.params,
                                     "outcome": outcome}}) + "\\n")

    stage.run_trial = logged_trial
    cfg = json.loads({cfg!r})
    stage.tune([("svc", "toy")], {prep!r}, {splits!r}, cfg, {{"fixed": {{}}}},
               root={root!r}, log_mlflow=True)
""")


@pytest.fixture(scope="module")
def pg():
    try:
        with postgres_server() as server:
            yield server
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")


def _toy(tmp: Path) -> None:
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (150, 3)), rng.normal(1.5, 1, (150, 3))]
    y = np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=30, n_unlabeled=[60], n_val=60, n_test=60, seed=0)
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz", **sp)


def test_two_workers_one_postgres_study_exact_count(pg, tmp_path):
    import optuna
    from optuna.trial import TrialState

    _toy(tmp_path)
    cfg = tune_cfg(n_trials=N_TRIALS, n_startup_trials=4, sampler_seed=7,
                   split_seed=0, cv_folds=0,
                   storage=pg.url)  # no password: libpq reads PGPASSWORD
    assert pg.password not in json.dumps(cfg)
    procs, logs = [], []
    for w in range(2):
        logs.append(tmp_path / f"worker{w}.jsonl")
        code = WORKER.format(pipelines=str(ROOT / "pipelines"), cfg=json.dumps(cfg),
                             prep=str(tmp_path / "prep"),
                             splits=str(tmp_path / "splits"), root=str(tmp_path),
                             log=str(logs[-1]))
        env = {**os.environ, **pg.env(), "MLFLOW_DISABLE_TELEMETRY": "true",
               "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow{w}.db"}
        for leaked in ("WK_OPTUNA_STORAGE", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID",
                       "MLFLOW_EXPERIMENT_NAME"):
            env.pop(leaked, None)
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            outs.append(out + err)
            assert p.returncode == 0, err[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    os.environ.update(pg.env())
    summaries = optuna.get_all_study_summaries(storage=pg.url)
    assert len(summaries) == 1  # both workers joined the same study
    study = optuna.load_study(study_name=summaries[0].study_name, storage=pg.url)
    trials = study.get_trials(deepcopy=False)
    finished = [t for t in trials if t.state in (TrialState.COMPLETE,
                                                  TrialState.PRUNED)]
    assert len(finished) == N_TRIALS  # exact: not 2 x N_TRIALS, not fewer
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert all(t.user_attrs.get("surplus") for t in failed)  # only budget refusals
    assert sorted(t.number for t in trials) == list(range(len(trials)))

    evaluated = {}
    per_worker = []
    for log in logs:
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        done = [r for r in rows if r["outcome"] in ("COMPLETE", "TrialPruned")]
        per_worker.append(len(done))
        for r in done:
            assert r["number"] not in evaluated  # no trial evaluated twice
            evaluated[r["number"]] = r["params"]
    assert all(n > 0 for n in per_worker), per_worker  # both really worked
    # nothing lost: every evaluation is in the study, with its parameters
    assert evaluated == {t.number: t.params for t in finished}
    # no duplicated configuration (each worker has its own sampler stream)
    assert len({json.dumps(t.params, sort_keys=True) for t in finished}) == N_TRIALS

    # the password is in no output, MLflow param or tag
    for text in outs:
        assert pg.password not in text
    for w in range(2):
        con = sqlite3.connect(tmp_path / f"mlflow{w}.db")
        try:
            rows = con.execute("SELECT key, value FROM tags UNION ALL "
                               "SELECT key, value FROM params").fetchall()
        finally:
            con.close()
        assert rows and all(pg.password not in str(v) for _, v in rows)
        assert ("optuna.storage", pg.url) in rows
