"""``params.yaml`` schema: every problem at once with its
key path, ranges, fixed-vs-searched clashes, no stage defaults beside the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _pipeline import params
from weakkernels.pipeline.params_schema import SCHEMA, ParamsError, validate_params

ROOT = Path(__file__).resolve().parents[1]


def test_every_problem_is_reported_at_once_with_its_key_path():
    p = params()
    del p["tune"]["sampler_seed"]
    del p["train"]["log_pyfunc"]
    p["split"]["ssl"]["n_unlabeled"] = [500, -5]
    p["tune"]["n_trials"] = 0
    with pytest.raises(ParamsError) as err:
        validate_params(p)
    msg = str(err.value)
    assert "4 problem(s)" in msg
    for needle in ("tune.sampler_seed: required key missing",
                   "train.log_pyfunc: required key missing",
                   "split.ssl.n_unlabeled: expected a list of integers >= 1, got "
                   "list [500, -5]",
                   "tune.n_trials: expected an integer >= 1, got int 0"):
        assert needle in msg


@pytest.mark.parametrize("path", [("split", "ssl", "n_unlabeled"),
                                  ("split", "su", "n_unlabeled"),
                                  ("train", "n_unlabeled")])
def test_negative_n_unlabeled_is_refused(path):
    p = params()
    node = p
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = [-5]
    with pytest.raises(ParamsError, match=re.escape(".".join(path))):
        validate_params(p)


def test_a_section_missing_is_named():
    p = params()
    del p["evaluate"]
    with pytest.raises(ParamsError, match=r"evaluate: required key missing"):
        validate_params(p)


def test_a_setting_fixed_and_searched_is_refused():
    p = params()
    p["models"]["fixed"]["svc"] = {"C": 10.0}
    p["models"]["fixed_by_dataset"] = {"g50c": {"cccp_tsvm": {"sigma": 0.1}}}
    with pytest.raises(ParamsError) as err:
        validate_params(p)
    msg = str(err.value)
    assert "models.fixed.svc: " in msg and "['C']" in msg
    assert "models.fixed_by_dataset.g50c.cccp_tsvm: " in msg and "['sigma']" in msg
    assert "tune.space.svc.<param>" in msg
    # Fixing it through tune.space (a scalar) is the supported way.
    ok = params()
    ok["tune"]["space"] = {"svc": {"C": 10.0}}
    validate_params(ok)


def test_scalar_tune_space_values_reach_train(tmp_path):
    """A value fixed through ``tune.space`` is not a trial parameter; the tune
    record still carries it, so train builds the same model."""

    import numpy as np

    from _pipeline import tune_cfg
    from weakkernels.pipeline.search import tune
    from weakkernels.pipeline.splits import ssl_split
    from weakkernels.pipeline.storage import save_npz

    tmp = tmp_path
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (100, 3)), rng.normal(1.5, 1, (100, 3))]
    y = np.r_[np.zeros(100, np.int64), np.ones(100, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz",
             **ssl_split(y, n_labeled=30, n_unlabeled=[40], n_val=40, n_test=40,
                         seed=0))
    cfg = tune_cfg(n_trials=2, storage=f"sqlite:///{tmp}/o.db",
                   space={"svc": {"C": 3.0}})
    best = tune([("svc", "toy")], tmp / "prep", tmp / "splits", cfg, {"fixed": {}},
                root=tmp, log_mlflow=False)
    assert best["svc/toy"]["params"]["C"] == 3.0


def test_tune_space_shapes_are_checked():
    ok = params()
    ok["tune"]["space"] = {"tsgs3vm": {"unlabeled_loss": {"choices": ["da",
                                                                      "ramp_cccp"]}},
                           "cccp_tsvm": {"s": {"choices": [-0.3, -0.1]}},
                           "svc": {"C": [1, 100, True]}}
    validate_params(ok)
    p = params()
    p["tune"]["space"] = {
        "tsgs3vm": {"unlabeled_loss": ["da", "ramp_cccp"],  # a range of a string
                    "nonsense": 1.0,
                    "C": [10, 1],
                    "s": {"choices": [-0.3]},
                    "anneal": {"low": 0, "high": 1}},
        "svc": {"gamma": {"choices": ["scale", 0.1]}},  # the factory never reads it
        "cccp_tsvm": {"sigma": {"choices": [0.1, 1.0]},  # replaced by sigma_rel
                      "C_star": 0.5},  # set from C and c_star_scale
    }
    with pytest.raises(ParamsError) as err:
        validate_params(p)
    msg = str(err.value)
    assert "8 problem(s)" in msg
    for needle in ("tune.space.tsgs3vm.unlabeled_loss: a range only for a searched",
                   "tune.space.tsgs3vm.nonsense: tsgs3vm has no parameter",
                   "tune.space.tsgs3vm.C: expected [low, high]",
                   "tune.space.tsgs3vm.s.choices: expected a list of at least two",
                   "tune.space.tsgs3vm.anneal: a map must be {choices: [...]}",
                   "tune.space.svc.gamma: svc has no parameter 'gamma'",
                   "tune.space.cccp_tsvm.sigma: every fit sets it from sigma_rel",
                   "tune.space.cccp_tsvm.C_star: every fit sets it from C and"):
        assert needle in msg


def test_categorical_tune_space_is_searched_and_reaches_train(tmp_path):
    """``{choices: [...]}`` is an Optuna categorical: every trial draws it, the
    first trial starts from the constructor default when it is a choice, and
    the tune record carries the chosen value to train."""
    import numpy as np
    import optuna

    from _pipeline import tune_cfg
    from weakkernels.pipeline.registry import start_params
    from weakkernels.pipeline.search import study_name, tune
    from weakkernels.pipeline.splits import ssl_split
    from weakkernels.pipeline.storage import save_npz

    choices = {"choices": ["auto", "shg", "ramp_cccp"]}
    assert start_params("tsgs3vm", {"unlabeled_loss": choices})["unlabeled_loss"] \
        == "auto"
    assert "unlabeled_loss" not in start_params(
        "tsgs3vm", {"unlabeled_loss": {"choices": ["shg", "ramp_cccp"]}})
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (100, 3)), rng.normal(1.5, 1, (100, 3))]
    y = np.r_[np.zeros(100, np.int64), np.ones(100, np.int64)]
    save_npz(tmp_path / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    split = tmp_path / "splits" / "toy" / "ssl_seed0.npz"
    save_npz(split, **ssl_split(y, n_labeled=30, n_unlabeled=[40], n_val=40,
                                n_test=40, seed=0))
    space = {"tsgs3vm": {"unlabeled_loss": choices}}
    cfg = tune_cfg(n_trials=4, storage=f"sqlite:///{tmp_path}/o.db", space=space,
                   start_with_defaults=True)
    best = tune([("tsgs3vm", "toy")], tmp_path / "prep", tmp_path / "splits", cfg,
                {"fixed": {}}, root=tmp_path, log_mlflow=False)
    rec = best["tsgs3vm/toy"]
    assert rec["params"]["unlabeled_loss"] in choices["choices"]
    name = study_name("tsgs3vm", "toy", split, {}, space["tsgs3vm"], cfg, 40)
    study = optuna.load_study(study_name=name, storage=cfg["storage"])
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == 4
    assert trials[0].params["unlabeled_loss"] == "auto"
    assert all(t.params["unlabeled_loss"] in choices["choices"] for t in trials)
    assert rec["params"] == study.best_trial.params


def _leaf_paths(schema: dict, prefix=()) -> list[tuple[str, ...]]:
    """Every key the schema declares (a nested dict is a section)."""
    out = []
    for k, v in schema.items():
        if isinstance(v, dict):
            out += _leaf_paths(v, (*prefix, k))
        else:
            out.append((*prefix, k))
    return out


@pytest.mark.parametrize("key", _leaf_paths(SCHEMA), ids=".".join)
def test_every_key_missing_from_params_yaml_is_an_error_naming_it(key, tmp_path):
    import yaml

    from weakkernels.pipeline.params_schema import load_params

    p = params()
    parent = p
    for k in key[:-1]:
        parent = parent[k]
    del parent[key[-1]]
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(p))
    with pytest.raises(ParamsError, match=re.escape(".".join(key)) +
                       ": required key missing"):
        load_params(path)


def test_stages_take_no_defaults_from_code():
    """``params.yaml`` is the one source of defaults: no stage reads a params
    section with ``.get(key, default)``."""
    pattern = re.compile(r"(cfg|params\[[^\]]+\](\[[^\]]+\])*|dl|su_cfg|ssl_cfg)"
                         r"\.get\(")
    bad = []
    # The stage scripts and the package modules that hold the stages' logic.
    pkg = ROOT / "src" / "weakkernels" / "pipeline"
    stage_modules = ("benchmarking", "datasets", "evaluation", "fitting",
                     "preparation", "reporting", "search", "splitting")
    for path in sorted([*(ROOT / "pipelines").glob("*.py"),
                        *(pkg / f"{m}.py" for m in stage_modules)]):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                bad.append(f"{path.name}:{no}: {line.strip()}")
    assert not bad, bad
