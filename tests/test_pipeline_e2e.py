"""End to end: `dvc repro` of the real dvc.yaml on a tiny config, then checks of
the metrics files, plots, MLflow runs and pyfunc models; `mlflow run . -e
benchmark --env-manager local` on the same project copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data" / "raw"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw"),
]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID",
                        "WK_OPTUNA_STORAGE", "VIRTUAL_ENV")}
    env.update(MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1",
               DVC_NO_ANALYTICS="1", WK_PYTHON=sys.executable,
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return env


def _run(cmd, cwd, env, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{cmd} failed ({proc.returncode}):\n--- stdout\n"
                    f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}",
                    pytrace=False)
    return proc


def build_project(tmp: Path, *, models: list[str] | None = None,
                  n_trials: int = 2, su: bool = True, edit=None,
                  repro: bool = True) -> dict:
    """A copy of the pipeline in ``tmp`` with a tiny params.yaml (g50c and
    cod-rna), reproduced with DVC.  ``models``: the compared models (default:
    every model of params.yaml plus tsgs3vm, tsgsu, qsgs2auc); ``su=False``
    drops the SU splits (no SU model then runs); ``edit(params)`` changes the
    params before they are written; ``repro=False`` leaves the stages to the
    caller. The stages run the installed package (``src`` is a link to the
    repository's), so numba's cache, keyed by the source path, serves the
    kernels other tests compiled."""
    from weakkernels.pipeline.registry import MODELS

    for name in ("dvc.yaml", "MLproject", "python_env.yaml"):
        shutil.copy(ROOT / name, tmp / name)
    shutil.copytree(ROOT / "pipelines", tmp / "pipelines",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "data" / "local").mkdir(parents=True)  # a dependency of prepare
    shutil.copy(ROOT / "data" / "local" / "README.md", tmp / "data" / "local")
    # dvc.yaml's deps name src/weakkernels
    (tmp / "src").symlink_to(ROOT / "src", target_is_directory=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["data"]["datasets"] = ["g50c", "cod-rna"]
    params["download"].update(mirror=str(MIRROR), use_network=False)
    params["split"].update(seeds=[0, 1])
    params["split"]["ssl"].update(n_labeled=40, n_unlabeled=[150, 300], n_val=100,
                                  n_test=300)
    params["split"]["su"].update(datasets=["cod-rna"] if su else [], n_pairs=100,
                                 n_unlabeled=[300], n_val=100)
    avail = set(MODELS)
    if models is None:
        models = [m for m in params["models"]["names"] if m in avail]
        for extra in ("tsgs3vm", "tsgsu", "qsgs2auc"):
            if extra in avail and extra not in models:
                models.append(extra)
    params["models"]["names"] = list(models)
    params["tune"].update(n_trials=n_trials, n_startup_trials=n_trials)
    params["train"].update(seeds=[1])
    if edit is not None:
        edit(params)
    (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = _env(tmp)
    _run(["git", "init", "-q"], tmp, env)
    _run([sys.executable, "-m", "dvc", "init", "-q"], tmp, env)
    _run([sys.executable, "-m", "dvc", "config", "core.analytics", "false"], tmp, env)
    shutil.copy(ROOT / ".dvcignore", tmp / ".dvcignore")  # __pycache__ of the copy
    if not repro:
        return {"root": tmp, "params": params, "env": env}
    # A hang guard, not a speed check: `make test` runs one test file per core
    # (pytest-xdist), so this repro of every model shares the machine.
    proc = _run([sys.executable, "-m", "dvc", "repro"], tmp, env, timeout=1800)
    return {"root": tmp, "params": params, "env": env, "log": proc.stdout,
            "stderr": proc.stderr}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the pipeline with a tiny params.yaml, reproduced with DVC."""
    return build_project(tmp_path_factory.mktemp("wkproj"))


def test_metrics_files_hold_sane_values(project):
    root, params = project["root"], project["params"]
    test = json.loads((root / "results/timings/summary.json").read_text())
    tune = json.loads((root / "results/tune/val_loss.json").read_text())
    from weakkernels.pipeline.registry import MODELS

    su_models = [m for m in params["models"]["names"] if MODELS[m].task == "su"]
    for model in params["models"]["names"]:
        datasets = ["cod-rna"] if model in su_models else ["g50c", "cod-rna"]
        for ds in datasets:
            assert 0.0 <= tune[model][ds]["val_loss"] <= 1.0
            entries = test[model][ds]
            assert set(entries) == ({"nu300"} if model in su_models else
                                    ({"nu500"} if ds == "g50c" else
                                     {"nu150", "nu300"}))
            for e in entries.values():
                assert 0.0 <= e["test_error_mean"] <= 1.0
                assert abs(e["test_error_mean"] + e["test_accuracy_mean"] - 1) < 1e-12
                assert e["fit_time_s_mean"] > 0.0 and e["n_seeds"] == 1
    # g50c has a Bayes error of 5%: some model must be far better than chance.
    best_g50c = min(test[m]["g50c"]["nu500"]["test_error_mean"]
                    for m in params["models"]["names"] if "g50c" in test[m])
    assert best_g50c < 0.2
    per_seed = json.loads((root / "results/evaluate/per_seed.json").read_text())
    for r in per_seed:
        if "reload_max_abs_diff" in r:
            assert r["reload_max_abs_diff"] <= 1e-6


def test_repro_is_quiet(project):
    """Warnings are fixed at their cause, not filtered: a whole `dvc repro` of
    every model prints only a handful of warning lines (< 100 for the
    default configuration; this one is smaller)."""
    import re

    lines = [ln for ln in project["stderr"].splitlines()
             if re.search(r"Warning\b|warnings\.warn|WARNING", ln)]
    assert len(lines) < 20, "\n".join(lines)


def test_headline_metrics_fit_a_terminal(project):
    """``dvc metrics show`` prints the headline only: no timings, < 120 columns."""
    root = project["root"]
    head = json.loads((root / "metrics/test.json").read_text())
    assert set(head) == {"g50c", "cod-rna"}
    for entry in head.values():
        assert set(entry) <= {"diff", "resolved", "flagged"} and "flagged" in entry
    proc = _run([sys.executable, "-m", "dvc", "metrics", "show"], root,
                {**project["env"], "COLUMNS": "200"})
    width = max(len(line) for line in proc.stdout.splitlines())
    assert width <= 120, proc.stdout
    assert "time" not in proc.stdout


def test_degenerate_models_are_flagged(project):
    root = project["root"]
    summary = json.loads((root / "results/evaluate/summary.json").read_text())
    per_seed = json.loads((root / "results/evaluate/per_seed.json").read_text())
    report = (root / "reports/summary.md").read_text()
    for model, by_ds in summary.items():
        for ds, by_nu in by_ds.items():
            for nu, e in by_nu.items():
                recs = [r for r in per_seed if r["model"] == model
                        and r["dataset"] == ds and f"nu{r['n_unlabeled']}" == nu]
                assert e["degenerate"] == any("degenerate_reason" in r for r in recs)
                if e["degenerate"]:
                    assert f"| {model} ⚠[^" in report
                    assert e["degenerate_reason"] in report
                elif "behind_supervised" in e:
                    assert f"| {model} ↓[^" in report
                    gap = 100 * e["behind_supervised"]
                    assert (f"{model} on {ds} (n_unlabeled = {nu[2:]}): "
                            f"{gap:.2f} pp behind svc") in report


def test_plots_and_summary_exist(project):
    root = project["root"]
    for name in ("timings/error_vs_time", "timings/time_vs_unlabeled",
                 "timings/val_curves_time", "error_boxplot", "val_curves"):
        data = (root / "plots" / f"{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert "| fit time [s] |" in (root / "reports/timings.md").read_text()
    summary = (root / "reports/summary.md").read_text()
    for model in project["params"]["models"]["names"]:
        assert any(f"| {model} {mark}" in summary for mark in ("|", "⚠", "↓"))
    # One table per dataset and unlabeled size.
    for heading in ("### g50c, n_unlabeled = 500", "### cod-rna, n_unlabeled = 150",
                    "### cod-rna, n_unlabeled = 300"):
        assert heading in summary
    out = root / "plots_html"
    _run([sys.executable, "-m", "dvc", "plots", "show", "-o", str(out)], root,
         project["env"])
    html = (out / "index.html").read_text()
    assert "<script" not in html and html.count("<img") == 2  # offline page


def test_second_repro_is_a_no_op(project):
    proc = _run([sys.executable, "-m", "dvc", "status"], project["root"],
                project["env"])
    assert "changed" not in proc.stdout, proc.stdout


def test_mlflow_runs_and_pyfunc_models(project):
    import mlflow

    root, params = project["root"], project["params"]
    mlflow.set_tracking_uri(f"sqlite:///{root}/mlflow.db")
    exp = mlflow.get_experiment_by_name(params["mlflow"]["experiment"])
    assert exp.artifact_location == (root / "mlartifacts" / exp.name).as_uri()
    runs = mlflow.search_runs([exp.experiment_id], output_format="list",
                              max_results=5000)
    by_name = {}
    for r in runs:
        by_name.setdefault(r.data.tags.get("mlflow.runName"), []).append(r)
    for stage in ("tune", "train"):
        (parent,) = by_name[stage]
        assert parent.data.tags["pipeline.stage"] == stage
        for tag in ("git.commit", "dvc.lock.sha256", "params.hash",
                    "version.numpy", "version.scikit-learn"):
            assert parent.data.tags[tag]
    trials = [r for r in runs if r.data.tags.get("mlflow.runName", "")
              .startswith("trial-")]
    n_pairs = len(json.loads((root / "results/tune/best_params.json").read_text()))
    assert len(trials) >= 2 * n_pairs
    seeds = {r.info.run_id: r for r in runs if r.data.tags.get("level") == "seed"}
    per_seed = json.loads((root / "results/timings/per_seed.json").read_text())
    assert len(seeds) == len(per_seed)
    for rec in per_seed:
        run = seeds[rec["run_id"]]
        assert run.data.metrics["test_error"] == pytest.approx(rec["test_error"])
        assert run.data.metrics["fit_time_s"] > 0
        assert "compile_time_s" in run.data.metrics
        assert "predict_time_s" in run.data.metrics
        assert run.data.tags["mlflow.parentRunId"] == rec["group_run_id"]
    side = json.loads((root / "results/timings/train.json").read_text())["runs"]
    train_runs = [{**r, **side[r["predictions"]]} for r in
                  json.loads((root / "results/train/runs.json").read_text())["runs"]]
    ours = [r for r in train_runs if r.get("pyfunc_uri")]
    assert ours, "no weakkernels model was logged as pyfunc"
    rec = ours[0]
    model = mlflow.pyfunc.load_model(rec["pyfunc_uri"])
    data = np.load(root / "data/prepared" / f"{rec['dataset']}.npz")
    pred = np.load(root / "results/predictions" / rec["predictions"])
    # The served model takes raw rows: it applies prepare's scaling itself.
    X = data["X"][pred["test_idx"]] * data["scale_span"] + data["scale_lo"]
    import pandas as pd

    out = model.predict(pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]))
    np.testing.assert_allclose(out["score"].to_numpy(), pred["score_test"],
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out["label"].to_numpy(), pred["pred_test"])
    assert model.metadata.signature is not None


def test_mlflow_run_benchmark_entry_point(project):
    import mlflow

    root, env = project["root"], dict(project["env"])
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{root}/mlflow.db"
    _run([sys.executable, "-m", "mlflow", "run", ".", "-e", "pipeline_benchmark",
          "-P", "dataset=g50c", "-P", "model=svc", "-P", "n_trials=2",
          "-P", "seeds=1", "--env-manager", "local",
          "--experiment-name", "wk-bench"], root, env)
    mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
    exp = mlflow.get_experiment_by_name("wk-bench")
    runs = mlflow.search_runs([exp.experiment_id], output_format="list")
    top = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(top) == 1 and top[0].info.status == "FINISHED"
    err = top[0].data.metrics["test_error_mean.nu500"]
    assert 0.0 <= err <= 1.0
    children = [r for r in runs if r.data.tags.get("level") == "seed"]
    assert len(children) == 1
    assert children[0].data.metrics["test_error"] == pytest.approx(err)


def test_mlflow_run_main_logs_a_non_empty_run(project):
    """``mlflow run . -e main``: dvc repro (a no-op here), then the project run
    records provenance, headline metrics and the report; artifacts stay under
    mlartifacts/ when the experiment was created by the pipeline first."""
    import mlflow

    root, env = project["root"], dict(project["env"])
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{root}/mlflow.db"
    _run([sys.executable, "-m", "weakkernels.pipeline.tracking", "wk-main"], root,
         env)
    _run([sys.executable, "-m", "mlflow", "run", ".", "-e", "main",
          "--env-manager", "local", "--experiment-name", "wk-main"], root, env)
    mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
    exp = mlflow.get_experiment_by_name("wk-main")
    assert exp.artifact_location == (root / "mlartifacts" / "wk-main").as_uri()
    (run,) = mlflow.search_runs([exp.experiment_id], output_format="list")
    assert run.data.tags["pipeline.stage"] == "repro"
    assert any(k.startswith("headline.") for k in run.data.metrics)
    default = mlflow.get_experiment_by_name("Default")
    assert default is None or not mlflow.search_runs([default.experiment_id],
                                                     output_format="list")
    assert not (root / "mlruns").exists()


def _declared_outputs(root: Path) -> list[Path]:
    """Every file under an ``outs`` / ``metrics`` / ``plots`` path of dvc.yaml."""
    spec = yaml.safe_load((root / "dvc.yaml").read_text())
    paths = []
    for stage in spec["stages"].values():
        for key in ("outs", "metrics", "plots"):
            for item in stage.get(key, []):
                paths.append(next(iter(item)) if isinstance(item, dict) else item)
    files = []
    for p in paths:
        p = root / p
        files += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    return files


def test_repro_force_is_byte_identical(project):
    """Declared outputs are a function of code + params + data: `dvc repro
    --force` rewrites dvc.lock and every output byte for byte (timings and run
    ids live in undeclared, gitignored files: results/timings/, reports/timings.md,
    plots/timings/)."""
    root, env = project["root"], project["env"]
    files = _declared_outputs(root)
    assert files and all(f.exists() for f in files)
    before = {f: f.read_bytes() for f in files + [root / "dvc.lock"]}
    timing_files = [root / "reports/timings.md",
                    root / "plots/timings/error_vs_time.png",
                    root / "results/timings/train.json",
                    root / "results/timings/summary.json"]
    assert all(f.exists() for f in timing_files)
    assert not set(timing_files) & set(files)
    assert "fit time" not in (root / "reports/summary.md").read_text()
    best = root / "results/tune/best_params.json"
    studies = {k: v["study"] for k, v in json.loads(best.read_text()).items()}
    _run([sys.executable, "-m", "dvc", "repro", "--force"], root, env)
    assert studies == {k: v["study"] for k, v in json.loads(best.read_text()).items()}
    changed = [str(f.relative_to(root)) for f, b in before.items()
               if not f.exists() or f.read_bytes() != b]
    assert not changed, f"not reproducible: {changed}"
    assert sorted(_declared_outputs(root)) == sorted(files)


def test_exp_run_with_fewer_trials_changes_the_result(project):
    """``dvc exp run --temp -S tune.n_trials=1`` on the used workspace: a fresh
    1-trial study per pair (not the resumed 2-trial one), and params.yaml
    untouched.  Runs last: it leaves an experiment behind."""
    root, env = project["root"], project["env"]
    before = (root / "params.yaml").read_bytes()
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "baseline"], root, env)
    _run([sys.executable, "-m", "dvc", "exp", "run", "--temp", "-n", "one-trial",
          "-S", "tune.n_trials=1"], root, env, timeout=900)
    assert (root / "params.yaml").read_bytes() == before
    base = json.loads((root / "results/tune/val_loss.json").read_text())
    _run([sys.executable, "-m", "dvc", "exp", "apply", "one-trial"], root, env)
    one = json.loads((root / "results/tune/val_loss.json").read_text())
    assert one.keys() == base.keys()
    for model, by_ds in one.items():
        for ds, rec in by_ds.items():
            assert rec["n_complete"] + rec["n_pruned"] == 1
            assert base[model][ds]["n_complete"] + base[model][ds]["n_pruned"] == 2

