"""The out-of-core cost benchmark's MLflow record (benchmarks/scale_train.py) and
the benchmarks' parent run (benchmarks/_tracking.py)."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest

import scale_train as st
from _tracking import parent_run

ROOT = Path(__file__).resolve().parents[1]
# rows as the benchmark wrote them (10^4 ... 10^7 rows of synthetic_hepmass_gap)
RESULT = ROOT / "benchmarks/results/scale_train_gap_rule_lastheld.json"


# MLflow's SQLAlchemy store, first opened here (setup_mlflow silences the
# same message)
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")
def test_log_mlflow_records_every_size(store, tmp_path):
    # the experiment made here, so its artifacts stay in tmp_path
    store.create_experiment("benchmark-scale_train",
                            artifact_location=(tmp_path / "art").as_uri())
    res = json.loads(RESULT.read_text())
    argv = res["meta"]["command"].split()[2:]
    args = st.parser().parse_args(argv)
    art = tmp_path / "scale_train.json"
    art.write_text(json.dumps(res))
    run_id = st.log_mlflow(args, argv, res["runs"], [art])
    assert mlflow.active_run() is None

    parent = store.get_run(run_id)
    assert parent.data.tags["command"] == " ".join(
        ["python", "benchmarks/scale_train.py", *argv])
    assert parent.data.tags["pipeline.stage"] == "benchmark_scale_train"
    assert [a.path for a in store.list_artifacts(run_id)] == ["scale_train.json"]
    children = store.search_runs(
        [parent.info.experiment_id],
        f"tags.mlflow.parentRunId = '{run_id}'")
    by_n = {int(c.data.params["n"]): c for c in children}
    assert sorted(by_n) == [r["n"] for r in res["runs"]]
    for r in res["runs"]:
        c = by_n[r["n"]]
        assert c.data.metrics["test_error"] == r["test_error"]
        assert c.data.metrics["cpu_s"] == r["cpu_s"]
        assert c.data.metrics["peak_rss"] == r["peak_rss"]
        assert c.data.params["n_features_model"] == str(r["n_features_model"])
        assert c.data.tags["synthetic"] == "true"


@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")
def test_parent_run_ends_failed_with_its_partial_files_when_the_block_raises(
        store, tmp_path):
    store.create_experiment("benchmark-x", artifact_location=(tmp_path / "a").as_uri())
    rows = tmp_path / "rows.csv"
    rows.write_text("n,error\n1000,0.1\n")  # what a killed run had written
    with pytest.raises(KeyboardInterrupt):
        with parent_run("benchmark-x", "benchmarks/x.py", {"a": 1}, ["--a", "1"],
                        "x", artifacts=[rows, tmp_path / "never_written.png"]) as run:
            assert mlflow.active_run().info.run_id == run.info.run_id
            raise KeyboardInterrupt
    assert mlflow.active_run() is None
    got = store.get_run(run.info.run_id)
    assert got.info.status == "FAILED"
    assert got.data.tags["command"] == "python benchmarks/x.py --a 1"
    assert [a.path for a in store.list_artifacts(run.info.run_id)] == ["rows.csv"]
    with parent_run("benchmark-x", "benchmarks/x.py", {}, [], "y") as ok:
        pass
    assert store.get_run(ok.info.run_id).info.status == "FINISHED"
    with parent_run("benchmark-x", "benchmarks/x.py", {}, [], "z",
                    enabled=False) as off:
        assert off is None and mlflow.active_run() is None
