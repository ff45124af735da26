"""Every bad params.yaml value the pipeline used to meet in a stage (a
traceback in tune, every trial failed, a silent default) is refused at load,
before any stage, by one ParamsError naming the key path."""

from __future__ import annotations

import math
import time

import pytest

from _pipeline import params as project_params
from weakkernels.pipeline.params_schema import ParamsError, validate_params


def _set(p: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        p = p[key]
    p[last] = value


# (key path set, value, the key path the error names, a word of the message)
PROBES = [
    ("models.fixed", {"tsgs3vm": {"nosuchparam": 1}}, "models.fixed.tsgs3vm",
     "nosuchparam"),
    ("models.fixed", {"tsgs3vn": {}}, "models.fixed", "tsgs3vm"),
    ("models.fixed", {"svc": {"C": 1.0}}, "models.fixed.svc", "tune parameters"),
    ("models.fixed_by_dataset", {"w8a": {"tsgs3vm": {}}},
     "models.fixed_by_dataset.w8a", "data.datasets"),
    ("models.fixed_by_dataset", {"g50c": {"tsgs3vm": {"max_iter": -3}}},
     "models.fixed_by_dataset.g50c.tsgs3vm", "max_iter"),
    ("tune.space", {"svc": {"C": [-1, 10]}}, "tune.space.svc.C", "low > 0"),
    ("tune.space", {"svc": {"C": [-1, 10, False]}}, "tune.space.svc", "C"),
    ("tune.space", {"svc": {"C": "abc"}}, "tune.space.svc", "C"),
    ("tune.space", {"svc": {"C": [0.1, math.nan]}}, "tune.space.svc.C", "finite"),
    ("tune.space", {"svc": {"C": [0.1, math.inf]}}, "tune.space.svc.C", "finite"),
    ("tune.space", {"tsgs3vm": {"unlabeled_loss": {"choices": ["shg", "nosuch"]}}},
     "tune.space.tsgs3vm.unlabeled_loss", "unlabeled_loss"),
    ("tune.space", {"tsgs3vm": {"unlabeled_loss": {"choices": ["nosuch", "shg"]}}},
     "tune.space.tsgs3vm", "unlabeled_loss"),
    ("models.names", ["svc"], "tune.space.tsgs3vm", "models.names"),
    ("mlflow.experiment", "", "mlflow.experiment", "empty"),
    ("mlflow.experiment", "  ", "mlflow.experiment", "empty"),
    ("tune.split_seed", 7, "tune.split_seed", "split.seeds"),
    ("split.seeds", [-1], "split.seeds", ">= 0"),
    ("split.seeds", [], "split.seeds", "empty"),
    ("split.seeds", [0, 1, 1, 2], "split.seeds", "more than once"),
    ("train.seeds", [0, 1], "train.seeds", "tuning split"),
    ("train.seeds", [1, 5], "train.seeds", "not in split.seeds"),
    ("train.seeds", [], "train.seeds", "empty"),
    ("train.seeds", [1, 1], "train.seeds", "more than once"),
    ("tune.storage", "garbage://x", "tune.storage", "storage URL"),
    ("tune.storage", "", "tune.storage", "storage URL"),
    ("tune.cv_folds", 1, "tune.cv_folds", "at least 2"),
    ("tune.n_unlabeled", 777, "tune.n_unlabeled", "unlabeled size"),
    ("train.n_unlabeled", [500, 777], "train.n_unlabeled", "unlabeled size"),
    ("split.ssl.n_unlabeled", [500, 500], "split.ssl.n_unlabeled", "more than once"),
    ("split.su.n_unlabeled", [], "split.su.n_unlabeled", "empty"),
    ("download.timeout", math.nan, "download.timeout", "finite number"),
    ("download.timeout", math.inf, "download.timeout", "finite number"),
    ("tune.timeout_per_study", math.nan, "tune.timeout_per_study", "finite number"),
    ("prepare.sparse_density", math.nan, "prepare.sparse_density", "finite number"),
    ("data.datasets", [], "data.datasets", "empty"),
    ("data.datasets", ["g50c", "g50c"], "data.datasets", "more than once"),
    ("models.names", ["svc", "svc", "tsgs3vm"], "models.names", "more than once"),
]


@pytest.mark.parametrize(("path", "value", "named", "word"), PROBES,
                         ids=[f"{p}={v!r}"[:60] for p, v, _, _ in PROBES])
def test_bad_value_is_refused_at_load_naming_its_key(path, value, named, word):
    p = project_params()
    if path == "models.names":  # a tune.space entry for a model not compared
        p["tune"]["space"] = {"tsgs3vm": {"C": [1, 10]}}
    _set(p, path, value)
    t0 = time.perf_counter()
    with pytest.raises(ParamsError) as info:
        validate_params(p)
    assert time.perf_counter() - t0 < 10
    msg = str(info.value)
    assert f"{named}:" in msg or f"{named} " in msg, msg
    assert word in msg, msg


def test_the_shipped_params_pass():
    assert validate_params(project_params()) is not None
