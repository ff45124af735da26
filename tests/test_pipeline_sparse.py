"""Sparse LIBSVM sets through the pipeline: prepare -> split -> train
-> evaluate -> pyfunc without densifying, and the dense path unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from _pipeline import params as repo_params
from weakkernels.pipeline import datasets as ds
from weakkernels.pipeline.common import load_prepared
from weakkernels.pipeline.evaluation import evaluate
from weakkernels.pipeline.fitting import train
from weakkernels.pipeline.preparation import (
    fit_scaler,
    keep_sparse,
    prepare,
    scale_features,
    sparse_path,
)
from weakkernels.pipeline.pyfunc_model import WeakKernelsModel, scale_rows
from weakkernels.pipeline.registry import load_model, scores
from weakkernels.pipeline.splitting import make_splits
from weakkernels.pipeline.storage import load_npz

N, D = 320, 400  # density ~2 %: "auto" keeps it CSR


def _sparse_problem(density: float, seed: int = 0):
    """Raw CSR features (some negative) with labels from a linear teacher on
    five fully stored columns (~1 % of the entries), the rest noise."""
    rng = np.random.default_rng(seed)
    X = sp.random(N, D, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.uniform(-2.0, 5.0, k))
    teacher = rng.uniform(-1.0, 1.0, (N, 5))
    y = np.where(teacher @ np.array([3.0, -3.0, 3.0, -3.0, 3.0]) > 0, 1.0, -1.0)
    return sp.hstack([sp.csr_matrix(teacher), X[:, 5:]], format="csr"), y


def _register(monkeypatch, tmp_path, name: str, X, y) -> Path:
    """Write ``X, y`` as a LIBSVM file under ``raw/<name>`` and register it."""
    raw = tmp_path / "raw"
    (raw / name).mkdir(parents=True)
    dump_svmlight_file(X, y, str(raw / name / f"{name}.svm"))
    spec = ds.DatasetSpec(name, name, (ds.FileSpec(f"{name}.svm", "0" * 64),),
                          "libsvm", "test", extra={"n_features": D})
    monkeypatch.setitem(ds.DATASETS, name, spec)
    return raw


def _split_cfg() -> dict:
    cfg = repo_params()["split"]
    cfg.update(seeds=[0, 1], official=[],
               ssl={"n_labeled": 40, "n_unlabeled": [120], "n_val": 20,
                    "n_test": 100, "transductive": False},
               su={**cfg["su"], "datasets": []})
    return cfg


@pytest.fixture
def sparse_set(tmp_path, monkeypatch):
    X, y = _sparse_problem(0.02)
    raw = _register(monkeypatch, tmp_path, "tiny_sparse", X, y)
    summary = prepare(["tiny_sparse"], raw, tmp_path / "prep",
                      **repo_params()["prepare"])
    return X, y, summary, tmp_path


# ------------------------------------------------------------------ prepare


@pytest.mark.parametrize(("mode", "density", "sparse_in", "expected"), [
    ("auto", 0.02, True, True),
    ("auto", 0.9, True, False),   # LIBSVM but dense (cod-rna): stays dense
    ("auto", 0.02, False, False),  # a dense format is never turned into CSR
    ("always", 0.9, False, True),
    ("never", 0.02, True, False),
])
def test_keep_sparse_rule(mode, density, sparse_in, expected):
    X = sp.random(50, 40, density=density, format="csr", random_state=0)
    assert keep_sparse(X if sparse_in else X.toarray(), mode, 0.25) is expected


def test_sparse_set_is_written_as_csr_scaled_by_maxabs(sparse_set):
    X_raw, y, summary, tmp = sparse_set
    assert summary["tiny_sparse"]["format"] == "csr"
    assert summary["tiny_sparse"]["scale"] == "maxabs"
    main = load_npz(tmp / "prep" / "tiny_sparse.npz")
    assert "X" not in main and str(main["scale_kind"]) == "maxabs"
    X = sp.load_npz(sparse_path(tmp / "prep", "tiny_sparse"))  # scipy reads it
    assert X.format == "csr" and X.shape == (N, D)
    # zeros stay zero: the same sparsity pattern as the raw file
    assert X.nnz == X_raw.nnz
    np.testing.assert_array_equal(X.indices, X_raw.indices)
    top = np.abs(X_raw.toarray()).max(axis=0)
    np.testing.assert_allclose(X.toarray(), X_raw.toarray() / np.where(top > 0, top, 1))
    assert np.abs(X.data).max() == 1.0 and X.data.min() < 0  # [-1, 1], signs kept
    np.testing.assert_array_equal(main["scale_lo"], 0.0)
    np.testing.assert_allclose(main["scale_span"], np.where(top > 0, top, 1))
    assert sp.issparse(load_prepared(tmp / "prep", "tiny_sparse")["X"])


def test_maxabs_keeps_zeros_where_minmax_does_not():
    X = sp.csr_matrix(np.array([[0.0, -4.0, 0.0], [2.0, 0.0, 0.0], [1.0, 2.0, 0.0]]))
    Xs = scale_features(X, "maxabs")
    assert sp.issparse(Xs) and Xs.nnz == X.nnz
    np.testing.assert_array_equal(Xs.toarray(), [[0, -1, 0], [1, 0, 0], [0.5, 0.5, 0]])
    lo, span = fit_scaler(X, "maxabs")
    np.testing.assert_array_equal(lo, 0.0)
    np.testing.assert_array_equal(span, [2.0, 4.0, 1.0])  # all-zero column: 1
    # min-max on the same column moves its zero (row 1) to 4/6
    assert scale_features(X.toarray(), "minmax")[1, 1] == pytest.approx(2 / 3)


def test_dense_path_is_the_min_max_result(tmp_path, monkeypatch):
    X, y = _sparse_problem(0.5)  # LIBSVM format, but dense: stays dense
    raw = _register(monkeypatch, tmp_path, "tiny_dense", X, y)
    cfg = repo_params()["prepare"]
    summary = prepare(["tiny_dense"], raw, tmp_path / "auto", **cfg)
    prepare(["tiny_dense"], raw, tmp_path / "never", **{**cfg, "sparse": "never"})
    assert "format" not in summary["tiny_dense"]
    assert summary["tiny_dense"]["scale"] == "minmax"
    assert not sparse_path(tmp_path / "auto", "tiny_dense").exists()
    main = load_npz(tmp_path / "auto" / "tiny_dense.npz")
    assert "scale_kind" not in main
    Xd = ds.load_raw("tiny_dense", raw).X  # the file's values, densified
    assert isinstance(Xd, np.ndarray)
    lo, hi = Xd.min(axis=0), Xd.max(axis=0)
    expected = np.clip((Xd - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0, 1.0)
    np.testing.assert_array_equal(main["X"], expected)
    # byte-identical to densifying every set (the behaviour before sparse support)
    assert (tmp_path / "auto" / "tiny_dense.npz").read_bytes() == \
        (tmp_path / "never" / "tiny_dense.npz").read_bytes()


# --------------------------------------------------- split, train, evaluate


def _best(sigma_rel: float = 1.0) -> dict:
    return {"tsgs3vm/tiny_sparse": {"params": {"C": 10.0, "c_star_scale": 1.0,
                                               "sigma_rel": sigma_rel}}}


def _models_cfg() -> dict:
    cfg = repo_params()["models"]
    return {**cfg, "fixed": {"tsgs3vm": {"max_iter": 30}}, "fixed_by_dataset": {}}


def _train_cfg() -> dict:
    return {**repo_params()["train"], "seeds": [1], "n_unlabeled": None,
            "log_curves": False, "log_pyfunc": False}


@pytest.fixture
def trained(sparse_set):
    _, _, _, tmp = sparse_set
    index = make_splits(["tiny_sparse"], tmp / "prep", tmp / "splits", _split_cfg())
    assert index["tiny_sparse"]["ssl_seed1"]["test"] == 100
    runs = train([("tsgs3vm", "tiny_sparse")], _best(), tmp / "prep", tmp / "splits",
                 tmp / "models", tmp / "pred", _train_cfg(), _models_cfg(),
                 log_mlflow=False)
    return sparse_set, runs


def test_train_and_evaluate_on_csr(trained):
    (X_raw, y, _, tmp), runs = trained
    (run,) = runs
    per_seed, summary = evaluate(runs, tmp / "pred", tmp / "prep")
    (rec,) = per_seed
    assert rec["reload_max_abs_diff"] == 0.0  # reloaded on the CSR test rows
    assert rec["test_error"] < 0.35, rec  # a learnable teacher, not chance
    # the model scores CSR and dense rows alike
    est = load_model(run["model_file"])
    X = load_prepared(tmp / "prep", "tiny_sparse")["X"]
    np.testing.assert_allclose(scores(est, X[:50]), scores(est, X[:50].toarray()),
                               rtol=1e-5, atol=1e-6)


def _served(tmp: Path, model_file: str) -> WeakKernelsModel:
    main = load_npz(tmp / "prep" / "tiny_sparse.npz")
    path = tmp / "scaler.json"
    path.write_text(json.dumps({"lo": main["scale_lo"].tolist(),
                                "span": main["scale_span"].tolist(),
                                "kind": str(main["scale_kind"])}))
    model = WeakKernelsModel()
    model.load_context(SimpleNamespace(artifacts={"model_file": model_file,
                                                  "scaler": str(path)}))
    return model


def test_pyfunc_scores_sparse_and_dense_raw_rows_equally(trained):
    (X_raw, _, _, tmp), (run,) = trained
    model = _served(tmp, run["model_file"])
    rows = X_raw[:40]
    out_csr = model.predict(None, rows)
    out_csc = model.predict(None, rows.tocsc())
    out_df = model.predict(None, pd.DataFrame(rows.toarray()))
    out_np = model.predict(None, rows.toarray())
    for other in (out_csc, out_df, out_np):
        np.testing.assert_array_equal(out_csr["label"], other["label"])
        np.testing.assert_allclose(out_csr["score"], other["score"],
                                   rtol=1e-5, atol=1e-6)
    # raw rows, scaled inside, score as the prepared rows do
    est = load_model(run["model_file"])
    X = load_prepared(tmp / "prep", "tiny_sparse")["X"]
    np.testing.assert_allclose(out_csr["score"], scores(est, X[:40]),
                               rtol=1e-5, atol=1e-6)


def test_scale_rows_maxabs_clips_and_keeps_csr():
    lo, span = np.zeros(3), np.array([2.0, 4.0, 1.0])
    X = sp.csr_matrix(np.array([[0.0, -8.0, 0.0], [1.0, 0.0, 0.5]]))
    out = scale_rows(X, lo, span, "maxabs")
    assert out.format == "csr"
    np.testing.assert_array_equal(out.toarray(), [[0, -1, 0], [0.5, 0, 0.5]])
    np.testing.assert_array_equal(scale_rows(X.toarray(), lo, span, "maxabs"),
                                  out.toarray())
    # a min-max model (dense set) takes sparse rows too, densified
    np.testing.assert_array_equal(scale_rows(X, lo, span, "minmax"),
                                  np.clip(X.toarray() / span, 0, 1))


def test_logged_pyfunc_accepts_csr_input(trained, monkeypatch):
    import mlflow

    from weakkernels.pipeline.tracking import log_pyfunc

    (X_raw, _, _, tmp), (run,) = trained
    mlflow.set_tracking_uri(f"sqlite:///{tmp}/mlflow.db")
    # an explicit artifact location: the default is ./mlruns in the cwd
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(
        "sparse", artifact_location=(tmp / "art").as_uri()))
    main = load_npz(tmp / "prep" / "tiny_sparse.npz")
    X = load_prepared(tmp / "prep", "tiny_sparse")["X"]
    with mlflow.start_run():
        info = log_pyfunc(run["model_file"], X[:5],
                          scaler=(main["scale_lo"], main["scale_span"]),
                          scale_kind="maxabs")
    served = mlflow.pyfunc.load_model(info.model_uri)
    inputs = served.metadata.get_input_schema().inputs
    assert len(inputs) == 1 and inputs[0].shape == (-1, D)  # one tensor, not 400 cols
    out_csr = served.predict(X_raw[:20])
    out_np = served.predict(X_raw[:20].toarray())
    np.testing.assert_allclose(out_csr["score"], out_np["score"], rtol=1e-5,
                               atol=1e-6)
    est = load_model(run["model_file"])
    np.testing.assert_allclose(out_csr["score"], scores(est, X[:20]),
                               rtol=1e-5, atol=1e-6)


def test_every_ssl_model_fits_and_scores_csr_rows():
    """Each registry model takes CSR rows where the stages pass them (fit_data's
    X_fit, the test rows): the baselines through scikit-learn, ours natively."""
    from weakkernels.pipeline.registry import MODELS, FitContext, build

    X, y = _sparse_problem(0.02)
    X = scale_features(X, "maxabs")
    y01 = (y > 0).astype(np.int64)
    y_fit = np.r_[y01[:40], -np.ones(160, np.int64)]
    sensible = {"C": 10.0, "sigma_rel": 1.0, "eta0": 0.1, "c_star_scale": 1.0,
                "lam": 1e-4, "gamma": 0.5, "eta": 0.0, "s": -0.3, "threshold": 0.8,
                "n_neighbors": 7, "alpha": 0.2}
    for name, spec in MODELS.items():
        if spec.task == "su":
            continue  # the pair layout; fit_arrays stacks CSR rows for it alike
        est = build(name, {k: sensible[k] for k in spec.space}, {},
                    FitContext(n_labeled=40, n_unlabeled=160, seed=0,
                               sigma_scale=1.0))
        n_fit = 40 if spec.labeled_only else 200
        est.fit(X[:n_fit], y_fit[:n_fit])
        s = scores(est, X[200:])
        assert s.shape == (120,) and np.all(np.isfinite(s)), name
