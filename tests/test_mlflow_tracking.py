"""What the MLflow store holds after the stages log into it: the experiment's
kind, the train parent's comparison row, data sets as inputs, the values the
estimators used, the model registry's champion, and a dead tracking server.

Each test uses a throw-away sqlite store under pytest's ``tmp_path``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from weakkernels.pipeline.tracking import (
    COMPARE_VIEW,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    setup_mlflow,
    ui_path,
)

# MLflow's SQLAlchemy store, first opened by a fixture here (the stages
# silence the same message in setup_mlflow).
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")


def test_experiment_is_declared_model_training(store, tmp_path):
    """The UI opens an experiment on the view of its kind; an untagged one
    opens on the GenAI overview.  Setting up twice keeps one tag."""
    exp_id = setup_mlflow("wk-kind", tmp_path)
    assert store.get_experiment(exp_id).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    assert EXPERIMENT_KIND == "custom_model_development"
    view = store.get_experiment(exp_id).tags["mlflow.sharedViewState.compare"]
    assert json.loads(view) == COMPARE_VIEW
    assert ui_path(exp_id).endswith("viewStateShareKey=compare")
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


def _per_seed(summary, seeds=(1,)):
    """One record per seed whose test error is the cell's mean."""
    return [{"model": m, "dataset": ds, "n_unlabeled": int(nu[2:]), "seed": seed,
             "test_error": e["test_error_mean"]}
            for m, by_ds in summary.items() for ds, by_nu in by_ds.items()
            for nu, e in by_nu.items() for seed in seeds]


def test_train_parent_carries_the_comparison(store, tmp_path):
    """The train parent's row compares every model per dataset (test error and
    AUC at the comparison size) plus the headline of metrics/test.json, so the
    top level of the runs table shows the comparison without expanding
    anything."""
    import mlflow

    from weakkernels.pipeline.evaluation import (
        headline,
        headline_metrics,
        log_to_mlflow,
        parent_metrics,
    )

    summary = _summary()
    per_seed = _per_seed(summary)
    got = parent_metrics(summary, per_seed)
    assert got["test_error.g50c.tsgs3vm"] == 0.06
    assert got["test_auc.g50c.tsgs3vm"] == 0.98
    assert got["test_error.g50c.cccp_tsvm"] == 0.5  # degenerate, still shown
    assert got["test_error.cod-rna.cccp_tsvm"] == 0.12
    assert "test_error.cod-rna.tsgsu" not in got  # not at the comparison size
    # the headline: tsgs3vm minus svc on the same seed, as in metrics/test.json
    assert got["headline.g50c.diff"] == pytest.approx(-0.14)
    assert got["headline.cod-rna.diff"] == pytest.approx(-0.05)
    assert got["headline.g50c.resolved"] == 0.0  # one seed resolves nothing
    assert got["headline.g50c.flagged"] == 1.0  # cccp_tsvm
    assert {k: v for k, v in got.items() if k.startswith("headline.")} \
        == headline_metrics(headline(summary, per_seed))

    setup_mlflow("wk-parent", tmp_path)
    with mlflow.start_run(run_name="train") as parent:
        pass
    log_to_mlflow(per_seed, summary, parent.info.run_id)
    logged = store.get_run(parent.info.run_id).data
    assert logged.metrics == pytest.approx(got)
    assert logged.tags["best_model.g50c.nu500"] == "tsgs3vm"
    np.testing.assert_equal(sorted(logged.metrics), sorted(got))


def test_dataset_input_names_source_digest_and_split(store, tmp_path):
    """A run's data set input: name, the source file's sha256 as digest (the 36
    characters the store keeps), its path in the mirror, rows and features; the
    split's counts ride on the input's tags."""
    import mlflow

    from weakkernels.pipeline.datasets import DATASETS
    from weakkernels.pipeline.tracking import dataset_digest, log_dataset_input

    spec = DATASETS["cod-rna"]
    assert dataset_digest(spec) == ("cod-rna/cod-rna.dense.txt.xz",
                                    spec.files[0].sha256)
    source, sha = dataset_digest(DATASETS["ijcnn1"])  # two files, one hash
    assert source == "ijcnn1/ijcnn1.trn.bz2,ijcnn1/ijcnn1.tst.bz2"
    assert len(sha) == 64 and sha not in {f.sha256 for f in DATASETS["ijcnn1"].files}
    X = np.zeros((59535, 8))
    split = {"labeled": np.arange(40), "unlabeled": np.arange(40, 340),
             "val": np.arange(340, 440), "test": np.arange(440, 740)}
    setup_mlflow("wk-inputs", tmp_path)
    with mlflow.start_run() as run:
        log_dataset_input(spec, X, split, context="training",
                          split_name="ssl seed 1")
    (inp,) = store.get_run(run.info.run_id).inputs.dataset_inputs
    assert inp.dataset.name == "cod-rna"
    assert inp.dataset.digest == spec.files[0].sha256[:36]
    assert json.loads(inp.dataset.source) == {"uri": "cod-rna/cod-rna.dense.txt.xz"}
    assert json.loads(inp.dataset.profile) == {
        "num_rows": 59535, "num_features": 8, "source_sha256": spec.files[0].sha256}
    tags = {t.key: t.value for t in inp.tags}
    assert tags == {"mlflow.data.context": "training", "split": "ssl seed 1",
                    "n_labeled": "40", "n_unlabeled": "300", "n_val": "100",
                    "n_test": "300", "source_sha256": spec.files[0].sha256}
    # the experiment's dataset list (the UI's dataset filter) has it once
    with mlflow.start_run() as run2:
        log_dataset_input(spec, X, {"pairs": np.zeros((5, 2)), "unlabeled":
                                    np.arange(9), "test": np.arange(3)},
                          context="training", split_name="su seed 2")
    (inp2,) = store.get_run(run2.info.run_id).inputs.dataset_inputs
    assert {t.key: t.value for t in inp2.tags}["n_pairs"] == "5"
    summaries = mlflow.tracking._tracking_service.utils._get_store() \
        ._search_datasets([run.info.experiment_id])
    assert [(d.name, d.digest) for d in summaries] == [
        ("cod-rna", spec.files[0].sha256[:36])]


def test_resolved_params_are_the_values_used(store, tmp_path):
    """get_params() plus what the estimator resolved: the width behind
    sigma="scale", the C* rule's value, the random-feature count."""
    import mlflow
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline

    from _data import two_gaussians
    from weakkernels import TSGS3VM
    from weakkernels.pipeline.tracking import log_resolved_params, resolved_params

    X, y, _ = two_gaussians(n=120, d=4, n_labeled=20)
    est = TSGS3VM(C=3.0, max_features=64, random_state=0, selection=None).fit(X, y)
    got = resolved_params(est)
    assert got["C"] == 3.0 and got["sigma"] == "scale" and got["solver"] == "lbfgs"
    assert got["sigma_"] == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert got["C_star_"] == pytest.approx(3.0 * 20 / 100)  # C n_l / n_u
    assert got["n_features_model_"] == est.n_features_model_ > 0
    assert all(not callable(v) for v in got.values())

    pipe = make_pipeline(RBFSampler(gamma=0.5, n_components=16, random_state=0),
                         SGDClassifier(random_state=0))
    pipe.fit(X[y != -1], y[y != -1])
    got_pipe = resolved_params(pipe)
    assert got_pipe["rbfsampler__gamma"] == 0.5
    assert got_pipe["rbfsampler__n_components"] == 16
    assert "steps" not in got_pipe and "rbfsampler" not in got_pipe

    setup_mlflow("wk-resolved", tmp_path)
    with mlflow.start_run() as run:
        log_resolved_params(est)
    params = store.get_run(run.info.run_id).data.params
    assert float(params["est.sigma_"]) == pytest.approx(got["sigma_"])
    assert float(params["est.C_star_"]) == pytest.approx(got["C_star_"])
    assert params["est.solver"] == "lbfgs"
    assert int(params["est.n_features_model_"]) == est.n_features_model_


def _rec(model, nu, seed, val_loss, **kw):
    return {"model": model, "dataset": "toy", "n_unlabeled": nu, "seed": seed,
            "task": "ssl", "val_loss": val_loss, "pyfunc_uri": f"models:/m-{model}",
            "model_file": f"{model}.wkm", **kw}


def test_champion_is_chosen_on_validation_loss_never_degenerate():
    from weakkernels.pipeline.evaluation import champions

    runs = [_rec("tsgs3vm", 100, 1, 0.20), _rec("tsgs3vm", 100, 2, 0.10),
            _rec("cccp_tsvm", 100, 1, 0.05), _rec("cccp_tsvm", 100, 2, 0.05),
            _rec("frs3vm", 300, 1, 0.12), _rec("frs3vm", 300, 2, 0.12),
            _rec("qsgs2auc", 100, 1, 0.01, task="auc"),  # 1 - AUC: not an error
            _rec("svc", 100, 1, 0.0, pyfunc_uri=None)]   # not servable
    per_seed = [{"model": "cccp_tsvm", "dataset": "toy", "n_unlabeled": 100,
                 "seed": 2, "degenerate_reason": "predicts only class 0"}]
    chosen = champions(runs, per_seed)
    assert (chosen["toy"]["model"], chosen["toy"]["seed"]) == ("frs3vm", 1)
    best = champions(runs, [])["toy"]
    assert (best["model"], best["seed"]) == ("cccp_tsvm", 1)  # tie: lower seed
    assert champions(runs[:2], [])["toy"]["seed"] == 2  # lower validation loss


def test_champion_registered_moves_only_on_purpose(store, tmp_path):
    """evaluate registers weakkernels-<dataset>@champion; a rerun with the same
    model file keeps the version; a changed model without a resolved win is a
    challenger (the champion stays) until promoted by hand; the champion serves
    raw rows (the prepare stage's scaling inside)."""
    import mlflow
    import pandas as pd

    from _data import two_gaussians
    from weakkernels import TSGS3VM
    from weakkernels.pipeline.evaluation import champions, register_champions
    from weakkernels.pipeline.promotion import promote
    from weakkernels.pipeline.tracking import log_pyfunc

    X, y, _ = two_gaussians(n=120, d=3, n_labeled=20)
    lo, span = X.min(0), X.max(0) - X.min(0)
    Xs = (X - lo) / span  # what the prepare stage hands the estimators
    setup_mlflow("wk-registry", tmp_path)
    recs = []
    for i, C in enumerate((1.0, 10.0)):
        est = TSGS3VM(C=C, max_features=64, random_state=0).fit(Xs, y)
        path = tmp_path / f"m{i}.wkm"
        est.save(path)
        with mlflow.start_run() as run:
            info = log_pyfunc(path, Xs[:3], scaler=(lo, span))
        recs.append(_rec("tsgs3vm", 100, 1, 0.1, pyfunc_uri=info.model_uri,
                         model_file=str(path), run_id=run.info.run_id, est=est))

    first = register_champions(champions(recs[:1], []))
    assert first == {"toy": {"name": "weakkernels-toy", "version": "1",
                             "alias": "champion", "moved": True}}
    again = register_champions(champions(recs[:1], []))  # an unchanged rerun
    assert again["toy"] == {"name": "weakkernels-toy", "version": "1",
                            "alias": None, "moved": False}
    assert len(store.search_model_versions("name='weakkernels-toy'")) == 1
    other = register_champions(champions(recs[1:], []))  # no seeds: no evidence
    assert other["toy"] == {"name": "weakkernels-toy", "version": "2",
                            "alias": "challenger", "moved": False}
    assert str(store.get_model_version_by_alias("weakkernels-toy",
                                                "champion").version) == "1"
    assert promote("weakkernels-toy", 2) == "1"
    mv = store.get_model_version_by_alias("weakkernels-toy", "champion")
    assert str(mv.version) == "2" and mv.tags["train_run_id"] == recs[1]["run_id"]
    assert mv.tags["promoted.by"] == "hand" and mv.aliases == ["champion"]

    served = mlflow.pyfunc.load_model("models:/weakkernels-toy@champion")
    out = served.predict(pd.DataFrame(X, columns=["x0", "x1", "x2"]))  # raw rows
    np.testing.assert_allclose(out["score"].to_numpy(),
                               recs[1]["est"].decision_function(Xs), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_array_equal(out["label"].to_numpy(),
                                  recs[1]["est"].predict(Xs))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dead_tracking_server_is_an_error_naming_it(tmp_path, monkeypatch):
    """MLFLOW_TRACKING_URI at a closed port: an error naming the URI at once,
    not MLflow's minutes of silent retries."""
    import time

    from weakkernels.pipeline.tracking import TrackingUnreachable

    uri = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    t0 = time.perf_counter()
    with pytest.raises(TrackingUnreachable, match=f"{uri} .*did not answer within"):
        setup_mlflow("wk-dead", tmp_path)
    assert time.perf_counter() - t0 < 3.0
    monkeypatch.setenv("MLFLOW_TRACKING_URI",
                       f"postgresql+psycopg2://u:s3cret@127.0.0.1:{_free_port()}/db")
    with pytest.raises(TrackingUnreachable) as info:
        setup_mlflow("wk-dead", tmp_path)
    assert "u:***@127.0.0.1" in str(info.value) and "s3cret" not in str(info.value)


def test_silent_tracking_server_times_out(tmp_path, monkeypatch):
    """A server that accepts the connection but never answers: an error after
    the stated timeout."""
    import socket
    import time

    from weakkernels.pipeline.tracking import (
        REACHABLE_TIMEOUT_S,
        TrackingUnreachable,
        check_reachable,
    )

    with socket.socket() as srv:  # listens, never accepts or answers
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        uri = f"http://127.0.0.1:{srv.getsockname()[1]}"
        t0 = time.perf_counter()
        with pytest.raises(TrackingUnreachable, match="within 1 s"):
            check_reachable(uri, timeout=1.0)
        assert 0.9 < time.perf_counter() - t0 < 4.0
    assert REACHABLE_TIMEOUT_S <= 10
