"""Bad input gives a clear error, nothing else: every case of the catalogue in
``tests/_reliability.py`` (estimators, model files, pipeline) raises the
documented exception with a message naming the problem; property-based tests
show arbitrary finite input either fits with finite outputs or raises
ValueError/TypeError -- never another exception, never a NaN model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from _reliability import ESTIMATORS, all_cases, available_estimators

CASES = all_cases()


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=f"{case.target}-{case.id}".replace(" ", "_"),
                        marks=marks)


def test_catalogue_is_large_and_distinct():
    kinds = {c.id for c in CASES}
    assert len(kinds) >= 30, sorted(kinds)
    ids = [f"{c.target}-{c.id}" for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_raises_a_clear_error(case, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(case.exc, match=case.match):
            case.run(tmp_path)


# ------------------------------------------------------------ extreme values

EXTREME = [("sigma", 1e6), ("weight", 1e9), ("eta0", 1e3), ("sigma", 1e-9)]


@pytest.mark.parametrize("name", available_estimators())
@pytest.mark.parametrize("param,value", EXTREME)
def test_extreme_hyper_parameters_converge_or_name_the_parameter(name, param,
                                                                 value):
    """Either a finite model or a divergence error naming what to change."""
    spec = ESTIMATORS[name]
    if param == "weight":
        # C large is the extreme; for lam (a regularizer) the extreme is tiny.
        param, value = spec.weight, (value if spec.weight == "C" else 1e-9)
    est = spec.make()
    if param not in est.get_params():
        pytest.skip(f"{name} has no {param}")
    est.set_params(**{param: value})
    X, y = spec.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y)
        except (FloatingPointError, ValueError) as exc:
            hint = {"C": "C", "lam": "lam", "eta0": "eta0", "sigma": "sigma"}[param]
            assert hint in str(exc), f"error does not name {hint}: {exc}"
            return
    f = est.decision_function(X)
    assert np.all(np.isfinite(f)), f"{name}({param}={value}) gave non-finite output"
    assert np.all(np.isfinite(est.predict_proba(X)))


# ------------------------------------------------------------ property-based


def _labels(kind, n):
    if kind == "su":
        # pair rows come in runs of even length; the rest unlabeled
        return st.integers(0, n // 2).map(
            lambda k: np.r_[np.ones(2 * k, np.int64), -np.ones(n - 2 * k, np.int64)])
    if kind == "supervised":
        return arrays(np.int64, n, elements=st.integers(0, 2))
    return arrays(np.int64, n, elements=st.integers(-1, 2))


@st.composite
def problems(draw, kind):
    n = draw(st.integers(1, 24))
    d = draw(st.integers(1, 4))
    X = draw(arrays(np.float64, (n, d),
                    elements=st.floats(-1e6, 1e6, allow_nan=False,
                                       allow_infinity=False, width=64)))
    return X, draw(_labels(kind, n))


def _check_fit_contract(name, X, y):
    spec = ESTIMATORS[name]
    est = spec.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y)
        except (ValueError, TypeError, FloatingPointError) as exc:
            assert str(exc).strip(), "an error without a message"
            return
    f = est.decision_function(X)
    assert np.all(np.isfinite(f)), f"non-finite decision values from {name}"
    assert np.all(np.isin(est.predict(X), est.classes_))


def _property_test(name):
    kind = ESTIMATORS[name].kind

    @given(problems(kind))
    def prop(problem):
        _check_fit_contract(name, *problem)

    return prop


@pytest.mark.parametrize("name", available_estimators())
def test_arbitrary_finite_input_fits_or_raises_value_or_type_error(name):
    _property_test(name)()


_LABELS = st.lists(st.one_of(st.floats(), st.integers(-3, 3), st.text(max_size=2),
                             st.none()), min_size=2, max_size=12)


@pytest.mark.parametrize("name", available_estimators())
def test_arbitrary_label_vectors_give_value_or_type_error_only(name):
    """Mixed / non-numeric / NaN labels: only ValueError or TypeError; when a
    vector is accepted, a finite model over real classes (never -1)."""

    @given(_LABELS)
    def prop(labels):
        X = np.random.default_rng(0).normal(size=(len(labels), 2))
        y = np.array(labels)  # numpy infers int, float, str or object
        est = ESTIMATORS[name].make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(X, y)
            except (ValueError, TypeError) as exc:
                assert str(exc).strip()
                return
        assert np.all(np.isfinite(est.decision_function(X)))
        if ESTIMATORS[name].kind != "supervised":
            assert -1 not in est.classes_

    prop()


def test_reliability_md_lists_every_case():
    """RELIABILITY.md's generated table stays in step with the catalogue
    (regenerate with `python tests/reliability_report.py`)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "RELIABILITY.md").read_text()
    missing = sorted({c.id for c in CASES if f"(`{c.id}`)" not in text})
    assert not missing, f"not in RELIABILITY.md: {missing}"


def test_repository_params_yaml_passes_the_schema():
    from pathlib import Path

    from weakkernels.pipeline.params_schema import load_params

    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
    assert "tune" in params and "models" in params


def test_a_new_setting_only_warns_and_a_typo_is_an_error():
    import copy
    from pathlib import Path

    import yaml

    from weakkernels.pipeline.params_schema import ParamsError, validate_params

    base = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml")
                          .read_text())
    new = copy.deepcopy(base)
    new["tune"]["timeout_per_trial"] = 60  # a new setting, not a typo
    with pytest.warns(UserWarning, match=r"tune\.timeout_per_trial"):
        validate_params(new)
    typo = copy.deepcopy(base)
    typo["mlflow"]["expriment"] = typo["mlflow"].pop("experiment")
    with pytest.raises(ParamsError, match=r"did you mean 'mlflow\.experiment'"):
        validate_params(typo)
