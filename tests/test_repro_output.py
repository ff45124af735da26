"""What ``make repro`` prints besides the stages' own lines: a header per
stage from DVC (its echo of each command dropped, its errors kept), and none
of MLflow's registration lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DVC_YAML = """\
stages:
  a:
    cmd: echo a-result > a.txt && echo a-result
    outs: [a.txt]
  b:
    cmd: cat a.txt missing.txt > b.txt
    deps: [a.txt]
    outs: [b.txt]
"""


def _repro(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "weakkernels.pipeline.dvc_repro", *args], cwd=root,
        env=env, capture_output=True, text=True, timeout=120)


def test_dvc_repro_prints_stage_headers_and_keeps_errors(tmp_path):
    for cmd in (["git", "init", "-q"],
                [sys.executable, "-m", "dvc", "init", "-q"],
                [sys.executable, "-m", "dvc", "config", "core.analytics", "false"]):
        subprocess.run(cmd, cwd=tmp_path, check=True, timeout=60)
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    ok = _repro(tmp_path, "a")
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert "Running stage 'a':" in lines and "a-result" in lines
    assert not [ln for ln in lines if ln.startswith("> ")], ok.stdout  # the echo
    failed = _repro(tmp_path, "b")
    assert failed.returncode != 0
    # DVC's own error names the stage (what `dvc repro --quiet` would hide)
    assert re.search(r"ERROR: failed to reproduce 'b'", failed.stderr), failed.stderr


def test_make_repro_runs_the_launcher():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\nrepro:", 1)[1].split("\n\n", 1)[0]
    assert "-m weakkernels.pipeline.dvc_repro" in recipe
    assert "dvc repro" not in recipe.replace("pipeline.dvc_repro", "")
    # make echoes no recipe line
    assert all(ln.startswith("\t@") for ln in recipe.splitlines()[1:]), recipe


def test_registry_lines_are_dropped_and_other_stderr_kept(capsys):
    from mlflow.utils.logging_utils import eprint

    from weakkernels.pipeline.tracking import without_registry_lines

    with without_registry_lines():
        eprint("Successfully registered model 'weakkernels-g50c'.")
        eprint("Created version '1' of model 'weakkernels-g50c'.")
        print("a warning", file=sys.stderr)
    assert capsys.readouterr().err == "a warning\n"


def test_a_study_prints_one_line_that_counts_its_warned_trials(tmp_path, capsys,
                                                               monkeypatch):
    """The warned trials are named on the study's result line, not on a
    line of their own."""
    import warnings

    import numpy as np

    import weakkernels.pipeline.search as search
    from _pipeline import tune_cfg
    from weakkernels.pipeline.splits import ssl_split
    from weakkernels.pipeline.storage import save_npz

    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (60, 3)), rng.normal(1.5, 1, (60, 3))]
    y = np.r_[np.zeros(60, np.int64), np.ones(60, np.int64)]
    save_npz(tmp_path / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    save_npz(tmp_path / "splits" / "toy" / "ssl_seed0.npz",
             **ssl_split(y, n_labeled=30, n_unlabeled=[20], n_val=30, n_test=20,
                         seed=0))
    fit = search._run_trial

    def warning_fit(*args, **kwargs):
        warnings.warn("did not converge", RuntimeWarning, stacklevel=1)
        return fit(*args, **kwargs)

    monkeypatch.setattr(search, "_run_trial", warning_fit)
    cfg = tune_cfg(n_trials=2, storage=f"sqlite:///{tmp_path}/o.db")
    search.tune([("svc", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                {"fixed": {}}, root=tmp_path, log_mlflow=False)
    lines = [ln for ln in capsys.readouterr().out.splitlines()
             if ln.startswith("tune svc/toy:")]
    assert len(lines) == 1, lines
    assert "best val loss" in lines[0]
    assert "2 of 2 trials warned (RuntimeWarning" in lines[0]
