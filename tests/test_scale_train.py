"""The out-of-core cost benchmark's MLflow record (benchmarks/scale_train.py)."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest

import scale_train as st

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
