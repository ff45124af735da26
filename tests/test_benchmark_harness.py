"""The benchmark harness (benchmarks/harness.py) on its tiny protocol.

Runs the real harness end to end -- split building, one subprocess per method
under its budget, result JSON, markdown table and MLflow runs -- on a 10-d
two-Gaussian set small enough for ``make test``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import harness

ROOT = Path(__file__).resolve().parents[1]

TSGS = "TSGS3VM (SGD, 40 iterations, batch 32, block 16, C* = C n_l/n_u)"
CCCP = "CCCP-TSVM (C* = C n_l/n_u, 0.05 s budget)"
METHODS = {"SVC (labeled)", "LabelSpreading (knn)", TSGS, CCCP}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp / 'mlflow.db'}")
    try:
        res = harness.run("tiny", out_dir=tmp, log=lambda s: None,
                          command="pytest")
    finally:
        mp.undo()
    return tmp, res


def test_rows_per_method_and_seed(tiny):
    _, res = tiny
    rows = res["rows"]
    assert {r["method"] for r in rows} == METHODS
    for m in METHODS:
        assert sorted(r["seed"] for r in rows if r["method"] == m) == [0, 1]
    assert all(r["n_unlabeled"] == 300 and r["n_labeled"] == 20 for r in rows)


def test_measurements_finite(tiny):
    _, res = tiny
    ok = [r for r in res["rows"] if r["status"] == "ok"]
    assert {r["method"] for r in ok} == METHODS - {CCCP}
    for r in ok:
        for k in ("test_error", "fit_s", "fit_cpu_s", "predict_s", "compile_s",
                  "peak_rss_mb", "model_bytes"):
            assert math.isfinite(r[k]) and r[k] >= 0, (r["method"], k)
        assert 0.0 <= r["test_error"] < 0.5
        assert r["peak_rss_mb"] >= r["rss_before_fit_mb"] > 10
        assert r["model_bytes"] > 0


def test_budget_recorded_not_dropped(tiny):
    _, res = tiny
    cccp = [r for r in res["rows"] if r["method"] == CCCP]
    # seed 0 hits the 0.05 s budget; seed 1 is then skipped with the reason
    assert cccp[0]["status"] == "time budget"
    assert cccp[0]["budget_time_s"] == 0.05
    assert cccp[1]["status"].startswith("skipped (time budget")
    s = next(s for s in res["summary"] if s["method"] == cccp[0]["method"])
    assert s["n_ok"] == 0 and "time budget" in s["statuses"]


def test_validation_curve(tiny):
    _, res = tiny
    for r in res["rows"]:
        if r["method"] == TSGS:
            its = [c[0] for c in r["curve"]]
            assert its == [10, 20, 30, 40]
            times = [c[1] for c in r["curve"]]
            assert times == sorted(times) and times[-1] <= r["fit_s"]
            assert all(0.0 <= c[2] <= 1.0 for c in r["curve"])


def test_outputs_and_mlflow(tiny):
    tmp, res = tiny
    md = (tmp / "tiny.md").read_text()
    for m in METHODS:
        assert f"| {m} |" in md
    assert "time budget" in md and "Hardware:" in md and "Command: `pytest`" in md
    data = json.loads((tmp / "tiny.json").read_text())
    assert len(data["rows"]) == 8
    assert res["targets"][0]["met"] in (True, False)
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    exp = client.get_experiment_by_name("benchmark-tiny")
    runs = client.search_runs([exp.experiment_id])
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId")]
    assert len(children) == 8
    budget = [r for r in children if r.data.tags["status"] == "time budget"]
    assert len(budget) == 1
    tsgs = [r for r in children if r.data.tags["method"] == TSGS]
    hist = client.get_metric_history(tsgs[0].info.run_id, "val_error")
    assert [h.step for h in hist] == [10, 20, 30, 40]
    assert "test_test_error" not in tsgs[0].data.metrics
    assert math.isfinite(tsgs[0].data.metrics["test_error"])


def test_split_disjoint_and_scaled_on_train():
    proto = harness.load_protocol("tiny")
    ds = proto["datasets"][0]
    arrays, info = harness.make_split(proto, ds, 300, seed=3)
    assert (arrays["y_train"] == -1).sum() == 300
    assert (arrays["y_train"] != -1).sum() == 20
    assert set(arrays["y_train"][arrays["y_train"] != -1]) == {0, 1}
    assert arrays["X_test"].shape == (300, 10)


def test_peer_not_installable_is_recorded(monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "PEER_VENVS", tmp_path)
    monkeypatch.setattr(harness, "SETUP", tmp_path / "missing.sh")
    py, why = harness.peer_python("qns3vm")
    assert py is None and why.startswith("not installable")


def test_each_run_of_a_protocol_gets_its_own_heading():
    """A protocol may have several runs (filters): the heading names the run's
    filters (data sets, sizes, seeds, methods) and nothing else."""
    cmd = ("python benchmarks/harness.py --protocol paper000 --datasets "
           "'w8a (w6a pool)' --seeds 0 --no-mlflow --out-dir OUT")
    assert harness.heading("paper000", cmd) == (
        "### Protocol `paper000`, `--datasets 'w8a (w6a pool)' --seeds 0`")
    assert harness.heading("throughput", "python benchmarks/harness.py "
                           "--protocol throughput") == "### Protocol `throughput`"


def _rows(errors: dict) -> list[dict]:
    """Harness rows from ``{(method, seed): error}`` on one cell."""
    return [{"dataset": "d", "n_unlabeled": 10, "method": m, "seed": s,
             "status": "ok", "test_error": e, "fit_s": 1.0}
            for (m, s), e in errors.items()]


def test_paired_differences_are_per_seed_means_with_their_standard_error():
    ref = {0: 0.10, 1: 0.20, 2: 0.15}
    ours = {0: 0.12, 1: 0.19, 2: 0.18}
    errors = {**{("svc", s): e for s, e in ref.items()},
              **{("ours", s): e for s, e in ours.items()}, ("ours", 3): 0.5}
    rows = _rows(errors)
    rows.append({"dataset": "d", "n_unlabeled": 10, "method": "svc", "seed": 4,
                 "status": "time budget"})  # no pair: not counted
    got = harness.paired(rows, "test_error", "svc")[("d", 10, "ours")]
    d = [ours[s] - ref[s] for s in ref]  # seed 3 has no reference row
    mean = sum(d) / 3
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / 2) / math.sqrt(3)
    assert got["paired_n"] == 3
    assert got["paired_diff"] == pytest.approx(mean)
    assert got["paired_se"] == pytest.approx(se)
    summary = harness.summarize(rows, "ssl", ["svc"])
    by = {s["method"]: s for s in summary}
    assert by["ours"]["paired"]["svc"] == got
    assert by["svc"]["paired"] == {}  # not against itself
    proto = {"task": "ssl", "paired_with": ["svc"]}
    table = "\n".join(harness.pages.paired_table(proto, summary))
    assert f"| d | 10 | ours | 24.75 | {100 * mean:+.2f} +- {100 * se:.2f} | 3 |" \
        in table


def test_a_data_set_may_run_its_own_seeds(monkeypatch):
    seen = []
    monkeypatch.setattr(harness, "run_cell",
                        lambda proto, ds, n_u, seed, *a: seen.append(
                            (ds["name"], seed)) or [])
    proto = {"seeds": [0, 1], "methods": [],
             "datasets": [{"name": "a", "n_unlabeled": [5]},
                          {"name": "b", "n_unlabeled": [5], "seeds": [3, 4, 5]}]}
    harness.run_protocol(proto, log=lambda s: None)
    assert seen == [("a", 0), ("a", 1), ("b", 3), ("b", 4), ("b", 5)]


@pytest.mark.parametrize("name", ["safety", "sslbook_safety"])
def test_the_safety_protocol_pairs_with_its_own_methods(name):
    proto = harness.load_protocol(name)
    names = {m["name"] for m in proto["methods"]}
    assert set(proto["paired_with"]) <= names
    assert proto["sigma"] == "scale"


def test_the_sslbook_protocol_runs_the_official_splits_with_100_labels():
    """Split number = seed, the 12 official splits of 100 labels, scored on
    the split's unlabeled points (transduction)."""
    proto = harness.load_protocol("sslbook_safety")
    assert proto["seeds"] == list(range(12))
    ds = next(d for d in proto["datasets"] if d["registry"] == "sslbook_bci")
    arrays, info = harness.make_split(proto, dict(ds), None, 11)
    assert info["n_labeled"] == 100
    assert (arrays["y_train"] != -1).sum() == 100
    assert info["n_test"] == info["n_unlabeled"] == arrays["X_train"].shape[0] - 100


def test_official_splits_survive_a_fresh_copy_of_the_spec_per_seed():
    """A caller that passes a new ``dict(ds)`` for every seed reads the set
    from the cache and still gets each seed's own official split."""
    proto = harness.load_protocol("sslbook_safety")
    ds = next(d for d in proto["datasets"] if d["registry"] == "sslbook_bci")
    _, y, (L, U) = harness.load_data(dict(ds), 0)
    for seed in (0, 1, 0):
        arrays, info = harness.make_split(proto, dict(ds), None, seed)
        assert info["n_labeled"] == L[seed].size
        np.testing.assert_array_equal(arrays["y_train"][: L[seed].size], y[L[seed]])
        np.testing.assert_array_equal(arrays["y_test"], y[U[seed]])
    assert not np.array_equal(U[0], U[1])
