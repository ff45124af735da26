"""Which parts of the project see a solver added to the model catalogue.

``weakkernels.pipeline.registry.MODELS`` is the project's catalogue. A toy
estimator registered there (monkeypatch, nothing written to disk) must reach
every place that runs or checks solvers, so that adding one means its module,
its test file and one catalogue entry: the pipeline's tune and train path, the
peer worker of the benchmarks, scikit-learn's common checks
(``tests/test_common_*.py``), the bad-input catalogue and the model-file
round trips of the tests.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from weakkernels.pipeline import registry
from weakkernels.pipeline.registry import FitContext, ModelSpec

ROOT = Path(__file__).resolve().parents[1]


class ToyKernelMeans(ClassifierMixin, BaseEstimator):
    """Sign of the difference of the mean RBF similarities to the two labeled
    classes; ``C`` only scales the score. Unlabeled rows (``y == -1``) are
    accepted and ignored."""

    def __init__(self, C=1.0, sigma=1.0):
        self.C = C
        self.sigma = sigma

    def fit(self, X, y):
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        lab = y != -1
        self.classes_ = np.unique(y[lab])
        self.centres_ = [X[lab][y[lab] == c] for c in self.classes_]
        return self

    def decision_function(self, X):
        X = np.asarray(X, dtype=np.float64)
        k = [np.exp(-self.sigma * ((X[:, None, :] - Z[None]) ** 2).sum(-1)).mean(1)
             for Z in self.centres_]
        return self.C * (k[1] - k[0])

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


TOY = "toy_kernel_means"


@pytest.fixture
def toy_in_catalogue(monkeypatch):
    spec = ModelSpec(TOY, "ssl", registry._ours(ToyKernelMeans, callback=False),
                     {"C": ("float", 0.5, 2.0, True),
                      "sigma_rel": ("float", 0.1, 10.0, True)},
                     cls=ToyKernelMeans, check_params=({"C": 2.0},),
                     expected_failed_checks={"check_fit2d_1sample": "toy"})
    monkeypatch.setitem(registry.MODELS, TOY, spec)
    return spec


def _toy_split():
    from _data import two_gaussians

    X, y_semi, y = two_gaussians(n=300, d=5, n_labeled=20, seed=4)
    lab = np.flatnonzero(y_semi != -1)
    rest = np.random.default_rng(0).permutation(np.flatnonzero(y_semi == -1))
    split = {"labeled": lab, "unlabeled": rest[:160], "val": rest[160:200],
             "test": rest[200:]}
    return X, y, split


def test_pipeline_tunes_and_trains_a_catalogued_toy(toy_in_catalogue):
    """Tune (Optuna trials through ``search.run_trial``) and train
    (``fitting.train_one``) find the toy by its catalogue name alone; the
    trained model is the toy with the tuned parameters, and its test
    predictions are those of the same fit done by hand."""
    import optuna

    from weakkernels.pipeline.common import fit_data
    from weakkernels.pipeline.fitting import train_one
    from weakkernels.pipeline.registry import build, check_models
    from weakkernels.pipeline.search import run_trial

    check_models([TOY])
    X, y, split = _toy_split()
    n_u = len(split["unlabeled"])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: run_trial(t, TOY, X, y, split, n_u, fixed={},
                                       overrides={}, callback_every=10, seed=0,
                                       log_mlflow=False), n_trials=3)
    assert len(study.trials) == 3
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    best = study.best_params
    assert set(best) == {"C", "sigma_rel"}
    assert 0.0 <= study.best_value < 0.5  # two separated Gaussians: better than chance

    out = train_one(TOY, X, y, split, n_u, best, {}, seed=0, callback_every=10)
    est = out["estimator"]
    assert type(est) is ToyKernelMeans
    assert est.C == best["C"]

    _, X_fit, y_fit, n_l, prior, scale = fit_data(TOY, X, y, split, n_u)
    assert est.sigma == pytest.approx(best["sigma_rel"] * scale)
    by_hand = build(TOY, best, {}, FitContext(n_l, n_u, 0, prior, sigma_scale=scale))
    by_hand.fit(X_fit, y_fit)
    np.testing.assert_array_equal(out["pred_test"], by_hand.predict(X[split["test"]]))


def test_peer_worker_builds_a_known_model():
    """The worker of the benchmark harness builds the catalogue's solvers and
    its own baselines, and refuses an unknown name."""
    import worker
    from sklearn.semi_supervised import LabelSpreading

    from weakkernels import TSGS3VM

    est = worker.make_estimator("tsgs3vm", {"C": 1.0, "C_star": 0.1, "sigma": 0.5}, 7)
    assert isinstance(est, TSGS3VM) and est.random_state == 7
    assert isinstance(worker.make_estimator("label_spreading", {}, 0), LabelSpreading)
    with pytest.raises(ValueError, match="must pass C_star"):
        worker.make_estimator("tsgs3vm", {"C": 1.0}, 0)
    with pytest.raises(ValueError, match="unknown method"):
        worker.make_estimator("no_such_method", {}, 0)


def test_peer_worker_builds_a_catalogued_toy(toy_in_catalogue):
    """The worker builds the toy by its catalogue name, with the row's
    parameters as given, and measures it: a warm-up fit when the entry says
    it is JIT-compiled, a validation curve when it takes a callback."""
    import worker

    est = worker.make_estimator(TOY, {"C": 1.5, "sigma": 0.5}, 0)
    assert type(est) is ToyKernelMeans
    assert est.get_params() == {"C": 1.5, "sigma": 0.5}
    assert worker.catalogue_entry(TOY) is toy_in_catalogue
    assert worker.catalogue_entry("label_spreading") is None  # the worker's own
    assert worker._warm_params(
        registry.MODELS["tsgsu"],
        {"lam": 0.1, "prior": None, "n_passes": 5, "max_iter": 50},
    ) == {"lam": 0.1, "prior": None, "max_iter": 3}


def test_peer_worker_sets_come_from_the_catalogue():
    """What the worker used to list by hand -- the JIT-compiled methods, the
    ones with a validation curve and the S3VMs whose rows must state C* -- is
    what the catalogue says of the methods the protocols run."""
    import worker

    ran = ("tsgs3vm", "frs3vm", "tsgsu", "qsgs2auc", "cccp_tsvm", "cuu", "susl",
           "pnu_auc")
    specs = {m: worker.catalogue_entry(m) for m in ran}
    assert {m for m, s in specs.items() if s.numba} == {
        "tsgs3vm", "frs3vm", "tsgsu", "qsgs2auc", "cccp_tsvm", "cuu"}
    assert {m for m, s in specs.items() if s.callback} == {
        "tsgs3vm", "frs3vm", "tsgsu", "qsgs2auc"}
    assert {m for m, s in specs.items() if s.c_star} == {
        "tsgs3vm", "frs3vm", "cccp_tsvm"}


def _check_marks(path: Path) -> list:
    """The ``(estimator, check)`` parameters of the ``parametrize_with_checks``
    marks of one test file, read from a fresh import of it (so a catalogue
    patched by the caller is what the file sees)."""
    spec = importlib.util.spec_from_file_location(f"_fresh_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found = []
    for fn in vars(mod).values():
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize" and "estimator" in str(mark.args[0]):
                # a plain (estimator, check) tuple, or pytest.param(...)
                # for the checks marked as expected failures
                found += [p for p in mark.args[1]]
    return found


def _files_with_estimator_checks() -> list[Path]:
    return [p for p in sorted((ROOT / "tests").glob("test_*.py"))
            if re.search(r"^from sklearn\.utils\.estimator_checks import .*"
                         r"parametrize_with_checks", p.read_text(), re.M)]


def test_estimator_checks_cover_the_papers_solvers():
    """The common checks run over every catalogue entry with an estimator
    class of ours (the exact peers included) and in no other test file."""
    import weakkernels as wk
    from weakkernels.baselines.auc import PNUAUC, ExactS2AUC
    from weakkernels.baselines.su import CUU, SUSL

    files = _files_with_estimator_checks()
    assert [p.name for p in files] == ["test_common_semi.py", "test_common_su.py"]
    covered = {type(getattr(p, "values", p)[0])
               for path in files for p in _check_marks(path)}
    assert covered == {wk.TSGS3VM, wk.FRS3VM, wk.TSGSU, wk.QSGS2AUC, wk.CCCPTSVM,
                       wk.RampSVM, SUSL, CUU, PNUAUC, ExactS2AUC}
    assert covered == {s.cls for s in registry.MODELS.values() if s.cls}


def test_estimator_checks_see_a_catalogued_toy(toy_in_catalogue):
    """The toy runs under scikit-learn's common checks with its entry's
    settings, and its expected failure is marked as one."""
    params = _check_marks(ROOT / "tests" / "test_common_semi.py")
    toy = [p for p in params if type(getattr(p, "values", p)[0]) is ToyKernelMeans]
    assert toy and all(getattr(p, "values", p)[0].C == 2.0 for p in toy)
    xfailed = [p for p in toy
               if any(m.name == "xfail" for m in getattr(p, "marks", ()))]
    assert len(xfailed) == 1
    assert "check_fit2d_1sample" in str(xfailed[0].values[1])


def test_reliability_and_model_file_tests_see_a_catalogued_toy(toy_in_catalogue):
    """The bad-input catalogue and the model-file round trips list the
    catalogue's classes with the entry's ``fast`` settings."""
    from tests._reliability import catalogue_estimators

    found = catalogue_estimators()
    assert type(found["ToyKernelMeans"].make()) is ToyKernelMeans
    assert found["ToyKernelMeans"].kind == "semi"
    assert found["ToyKernelMeans"].weight == "C"
    assert "ToyKernelMeans" in catalogue_estimators(peers=True)


# The files a new solver touches: everything else that runs or checks solvers
# (pipeline, benchmark worker, scikit-learn's common checks, bad-input and
# model-file tests) reads the catalogue, as the tests above show. params.yaml
# (models.names) and benchmarks/protocols/*.yaml only when the pipeline or a
# protocol is to run it.
NEW_SOLVER_FILES = (
    "src/weakkernels/<paper>.py",  # the module
    "tests/test_<paper>.py",  # its behaviour tests
    "src/weakkernels/pipeline/registry.py",  # one ModelSpec in MODELS
    "src/weakkernels/__init__.py",  # the export; importing the module here
    #                                 registers it with weakkernels.load
    "pyproject.toml",  # the module's place in the import-linter layers
    "README.md",  # docs: the estimator table
)


def test_a_new_solver_touches_the_files_listed_above():
    """For every catalogue class, the lines outside its module, test file and
    catalogue entry are there: the export from ``weakkernels`` (the papers'
    solvers also in ``__all__`` and in the README's estimator table), and its
    module in the package layers of the import-linter contract (a module
    outside them would escape the layering check)."""
    import tomllib

    import weakkernels as wk

    for path in NEW_SOLVER_FILES:
        assert "<" in path or (ROOT / path).is_file(), path
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["importlinter"]["contracts"]
    (package,) = [c for c in contracts if c["containers"] == ["weakkernels"]]
    layered = {m.strip() for layer in package["layers"]
               for m in re.split(r"[|:]", layer)}
    table = [line for line in (ROOT / "README.md").read_text().splitlines()
             if line.startswith("| `")]
    classes = [s for s in registry.MODELS.values() if s.cls is not None]
    assert len(classes) >= 10
    for spec in classes:
        cls = spec.cls
        assert getattr(wk, cls.__name__) is cls, spec.name
        assert cls.__module__.split(".")[1] in layered, spec.name
        if not spec.peer:
            assert cls.__name__ in wk.__all__, spec.name
            assert any(f"`{cls.__name__}`" in line for line in table), spec.name
