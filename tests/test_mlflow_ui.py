"""What a user sees: `mlflow ui` on a tiny pipeline run, opened in headless
Chromium (the first of :data:`CHROMIUM_NAMES` on ``PATH``, e.g. Debian's
``chromium``, driven by Playwright with that system browser; ``.ci/run``
installs it), plus the store checks that need no browser.  Without a Chromium
on ``PATH`` the browser tests skip, saying how to get one (README, "The two
commands").

The tiny run is the project copy of ``test_pipeline_e2e.build_project`` (two
models, g50c and cod-rna, one trial) with the stages of ``dvc.yaml`` run in this
process, in order, with their ``dvc.yaml`` arguments: the same scripts ``dvc
repro`` runs, without a Python start-up per stage.  Screenshots go to pytest's
``tmp_path`` (kept by pytest for the last runs), never into git."""

from __future__ import annotations

import json
import os
import runpy
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import yaml

from test_pipeline_e2e import MIRROR, _run, build_project

# Chromium builds Playwright can drive, by the names distributions give them
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable",
                  "google-chrome")
CHROMIUM = next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy"),
]


def _pin(params: dict) -> None:
    """One unlabeled size and settings that learn on 40 labels (pinned through
    tune.space, so the one trial is not a random draw)."""
    params["split"]["ssl"]["n_unlabeled"] = [300]
    params["tune"]["space"] = {
        "svc": {"C": 10.0, "sigma_rel": 1.0},
        "tsgs3vm": {"C": 10.0, "c_star_scale": 1.0, "sigma_rel": 1.0}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny project after all stages; ``exp_id`` of its experiment."""
    import mlflow

    proj = build_project(tmp_path_factory.mktemp("wkui"), models=["svc", "tsgs3vm"],
                         n_trials=1, su=False, edit=_pin,
                         repro=False)
    root = proj["root"]
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for var in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):
            mp.delenv(var, raising=False)
        t0 = time.perf_counter()
        for name, stage in stages.items():
            if "foreach" in stage:  # local@<name>: no data.local table here
                continue
            argv = shlex.split(stage["cmd"])  # sh pipelines/python <script> args
            main = runpy.run_path(str(root / argv[2]), run_name=f"stage_{name}")
            assert main["main"](argv[3:]) == 0, name
        proj["stages_s"] = time.perf_counter() - t0
    uri = f"sqlite:///{root}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.get_experiment_by_name(proj["params"]["mlflow"]["experiment"])
    proj.update(uri=uri, exp_id=exp.experiment_id)
    return proj


# ------------------------------------------------------------ the store itself


def test_every_train_child_has_its_dataset_and_resolved_params(tiny):
    """mlflow.search_runs: each train child run names its data set (name +
    the source's sha256 as digest) and the values its estimator used."""
    import mlflow

    from weakkernels.pipeline.datasets import DATASETS

    runs = mlflow.search_runs([tiny["exp_id"]], output_format="list",
                              filter_string="tags.level = 'seed'")
    assert len(runs) == 4  # 2 models x 2 datasets x 1 size x 1 seed
    for run in runs:
        ds = run.data.tags["dataset"]
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == ds
        assert inp.dataset.digest == DATASETS[ds].files[0].sha256[:36]
        params = run.data.params
        if run.data.tags["model"] == "tsgs3vm":
            assert float(params["est.sigma_"]) > 0 and float(params["est.C_star_"]) > 0
            assert params["est.solver"] == "lbfgs"
            assert int(params["est.n_features_model_"]) > 0
        else:  # SVC: its gamma is the width it used
            assert float(params["est.gamma"]) > 0 and params["est.C"] == "10.0"


def test_champion_serves_raw_rows(tiny):
    """models:/weakkernels-cod-rna@champion scores raw rows as the train
    stage's model did; the alias is set by evaluate and stays on a rerun."""
    import mlflow
    import pandas as pd

    root = tiny["root"]
    side = json.loads((root / "results/timings/train.json").read_text())
    client = mlflow.MlflowClient()
    mv = client.get_model_version_by_alias("weakkernels-cod-rna", "champion")
    (pred_file,) = [k for k, v in side["runs"].items()
                    if v.get("run_id") == mv.tags["train_run_id"]]
    data = np.load(root / "data/prepared/cod-rna.npz")
    pred = np.load(root / "results/predictions" / pred_file)
    X = data["X"][pred["test_idx"]] * data["scale_span"] + data["scale_lo"]
    served = mlflow.pyfunc.load_model("models:/weakkernels-cod-rna@champion")
    out = served.predict(pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]))
    np.testing.assert_allclose(out["score"].to_numpy(), pred["score_test"],
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out["label"].to_numpy(), pred["pred_test"])
    # evaluate again (as an unchanged `dvc repro` would): the alias stays
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        cmd = shlex.split(yaml.safe_load((root / "dvc.yaml").read_text())
                          ["stages"]["evaluate"]["cmd"])
        assert runpy.run_path(str(root / cmd[2]))["main"](cmd[3:]) == 0
    again = client.get_model_version_by_alias("weakkernels-cod-rna", "champion")
    assert again.version == mv.version
    assert len(client.search_model_versions("name='weakkernels-cod-rna'")) == 1


# ------------------------------------------------------------ in a real browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser_page(tiny):
    """``(page, base_url)``: Chromium on ``mlflow ui`` over the tiny store."""
    if CHROMIUM is None:
        pytest.skip(f"no Chromium on PATH ({', '.join(CHROMIUM_NAMES)}): "
                    "apt-get install chromium (Debian; .ci/run does this as "
                    "root), or put any Chromium or Chrome on PATH")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    port = _free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)
    log = open(tiny["root"] / "mlflow-ui.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", tiny["uri"],
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=tiny["root"], env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("mlflow ui did not start:\n" + (
                        tiny["root"] / "mlflow-ui.log").read_text()[-3000:])
                time.sleep(0.5)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.set_default_timeout(45_000)
            yield page, base
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def test_ui_opens_on_the_model_comparison(tiny, browser_page, tmp_path):
    """The page the README names: the runs (not the GenAI overview), one row per
    model x dataset, best mean test error first, with the dataset names."""
    from weakkernels.pipeline.tracking import ui_path

    page, base = browser_page
    page.goto(base + ui_path(tiny["exp_id"]))
    page.get_by_text("tsgs3vm / cod-rna / nu=300").wait_for()
    page.get_by_text("test_error_mean").first.wait_for()
    page.screenshot(path=tmp_path / "runs.png", full_page=True)
    body = page.inner_text("body")
    for genai in ("Token Usage", "Detect Issues"):
        assert genai not in body, f"the experiment opened on the GenAI view: {genai}"
    for name in ("svc / g50c / nu=500", "tsgs3vm / g50c / nu=500",
                 "svc / cod-rna / nu=300"):
        assert name in body
    assert "g50c (27f9ace0" in body and "cod-rna (d28b9ba3" in body
    assert "4 matching runs" in body
    # sorted by mean test error: the rows' order is the metric's order
    import mlflow

    groups = mlflow.search_runs([tiny["exp_id"]], output_format="list",
                                filter_string="tags.level = 'group'")
    by_err = sorted(groups, key=lambda r: r.data.metrics["test_error_mean"])
    pos = [body.index(r.info.run_name) for r in by_err]
    assert pos == sorted(pos), [r.info.run_name for r in by_err]


def test_ui_compares_two_runs_side_by_side(tiny, browser_page, tmp_path):
    import mlflow

    page, base = browser_page
    groups = {r.info.run_name: r for r in mlflow.search_runs(
        [tiny["exp_id"]], output_format="list", filter_string="tags.level = 'group'")}
    a, b = groups["tsgs3vm / g50c / nu=500"], groups["svc / g50c / nu=500"]
    ids = json.dumps([a.info.run_id, b.info.run_id])
    page.goto(f"{base}/#/compare-runs?runs={ids}"
              f"&experiments={json.dumps([tiny['exp_id']])}")
    page.get_by_text("test_error_mean").first.wait_for()
    page.screenshot(path=tmp_path / "compare.png", full_page=True)
    body = page.inner_text("body")
    for run in (a, b):
        assert run.info.run_name in body
        assert f"{run.data.metrics['test_error_mean']:.3g}"[:4] in body


def test_ui_registered_model_lists_the_champion(tiny, browser_page, tmp_path):
    page, base = browser_page
    page.goto(f"{base}/#/models/weakkernels-cod-rna")
    page.get_by_text("champion").first.wait_for()
    page.screenshot(path=tmp_path / "registered_model.png", full_page=True)
    body = page.inner_text("body")
    assert "weakkernels-cod-rna" in body and "Version 1" in body


def test_dvc_plots_page_loads_every_image(tiny, browser_page, tmp_path):
    page, _ = browser_page
    out = tmp_path / "plots_html"
    _run([sys.executable, "-m", "dvc", "plots", "show", "-o", str(out)],
         tiny["root"], tiny["env"])
    page.goto((out / "index.html").as_uri())
    page.wait_for_load_state("load")
    sizes = page.eval_on_selector_all(
        "img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
    page.screenshot(path=tmp_path / "dvc_plots.png", full_page=True)
    assert len(sizes) == 2 and all(done and w > 0 for done, w in sizes), sizes
    shutil.rmtree(out)
