"""What the MLflow store holds after the stages log into it: the experiment's
kind, the train parent's comparison row, data sets as inputs, the values the
estimators used, the model registry's champion, and a dead tracking server.

Each test uses a throw-away sqlite store under pytest's ``tmp_path``."""

from __future__ import annotations

import numpy as np
import pytest

from weakkernels.pipeline.tracking import (
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    setup_mlflow,
)

# MLflow's SQLAlchemy store, first opened by a fixture here (the stages
# silence the same message in setup_mlflow).
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh sqlite store as ``MLFLOW_TRACKING_URI``; yields the client."""
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    for var in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(var, raising=False)
    yield mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    while mlflow.active_run():
        mlflow.end_run()


def test_experiment_is_declared_model_training(store, tmp_path):
    """The UI opens an experiment on the view of its kind; an untagged one
    opens on the GenAI overview.  Setting up twice keeps one tag."""
    exp_id = setup_mlflow("wk-kind", tmp_path)
    assert store.get_experiment(exp_id).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    assert EXPERIMENT_KIND == "custom_model_development"
    assert setup_mlflow("wk-kind", tmp_path) == exp_id
    # an experiment created elsewhere (e.g. by `mlflow run`) is tagged too
    other = store.create_experiment("made-elsewhere")
    assert EXPERIMENT_KIND_TAG not in store.get_experiment(other).tags
    setup_mlflow("made-elsewhere", tmp_path)
    assert store.get_experiment(other).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND


def _summary():
    """Two datasets; g50c's comparison size is nu500, cod-rna's nu300 (shared by
    three models; tsgsu alone at nu150)."""
    def e(err, auc=None, degenerate=False):
        out = {"n_seeds": 1, "test_error_mean": err, "test_error_std": 0.0,
               "degenerate": degenerate}
        if auc is not None:
            out["test_auc_mean"] = auc
        return out

    return {
        "svc": {"g50c": {"nu500": e(0.2, 0.8)}, "cod-rna": {"nu300": e(0.15, 0.9)}},
        "tsgs3vm": {"g50c": {"nu500": e(0.06, 0.98)},
                    "cod-rna": {"nu300": e(0.1, 0.95), "nu150": e(0.3)}},
        "cccp_tsvm": {"g50c": {"nu500": e(0.5, degenerate=True)},
                      "cod-rna": {"nu300": e(0.12)}},
        "tsgsu": {"cod-rna": {"nu150": e(0.2, 0.85)}},
    }


def test_train_parent_carries_the_comparison(store, tmp_path):
    """The train parent's row compares every model per dataset (test error and
    AUC at the comparison size) plus the headline, so the top level of the runs
    table shows the comparison without expanding anything."""
    import mlflow

    from weakkernels.pipeline.evaluation import log_to_mlflow, parent_metrics

    summary = _summary()
    got = parent_metrics(summary)
    assert got["test_error.g50c.tsgs3vm"] == 0.06
    assert got["test_auc.g50c.tsgs3vm"] == 0.98
    assert got["test_error.g50c.cccp_tsvm"] == 0.5  # degenerate, still shown
    assert got["test_error.cod-rna.cccp_tsvm"] == 0.12
    assert "test_error.cod-rna.tsgsu" not in got  # not at the comparison size
    assert got["test_error.g50c.ours"] == 0.06  # the flagged model is not best
    assert got["test_error.g50c.base"] == 0.2
    assert got["test_error.cod-rna.ours"] == 0.1

    setup_mlflow("wk-parent", tmp_path)
    with mlflow.start_run(run_name="train") as parent:
        pass
    log_to_mlflow([], summary, parent.info.run_id)
    logged = store.get_run(parent.info.run_id).data
    assert logged.metrics == pytest.approx(got)
    assert logged.tags["best_model.g50c.nu500"] == "tsgs3vm"
    np.testing.assert_equal(sorted(logged.metrics), sorted(got))
