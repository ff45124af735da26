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
import json
import os
import re
import subprocess
import sys
import tomllib
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


# ------------------------------------------------------------ import layers ----
def _catalogue_modules() -> set[str]:
    """The paper modules of the catalogue's classes (``weakkernels.<module>``;
    the baselines' classes sit in their own layer, ``baselines``)."""
    return {s.cls.__module__.split(".")[1] for s in registry.MODELS.values()
            if s.cls is not None and s.cls.__module__.count(".") == 1}


def package_layers() -> list:
    """The package layers of ``[tool.importlinter]`` in pyproject.toml (``a | b``
    independent siblings, ``a : b`` siblings that may import each other), with
    every catalogue module added to the estimators' layer: the one that holds
    the catalogue's modules already. A new paper module thus falls under the
    contract without a line in pyproject.toml."""
    import grimp

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["importlinter"]["contracts"]
    (package,) = [c for c in contracts if c.get("containers") == ["weakkernels"]]
    layers = [(set(re.split(r"\s*[|:]\s*", line.strip())), "|" in line or
               ":" not in line) for line in package["layers"]]
    named = set().union(*(mods for mods, _ in layers))
    mods = _catalogue_modules()
    (estimators,) = [i for i, (m, _) in enumerate(layers) if m & mods]
    layers[estimators][0].update(mods - named)
    return [grimp.Layer(*sorted(m), independent=ind) for m, ind in layers]


def _illegal(graph) -> set[tuple[str, str]]:
    """(lower, higher) layer pairs with an import chain going up or sideways."""
    found = graph.find_illegal_dependencies_for_layers(
        layers=package_layers(), containers={"weakkernels"})
    return {(d.importer, d.imported) for d in found}


def test_the_package_layers_hold_for_every_catalogue_module():
    """What ``lint-imports`` checks for the modules pyproject.toml names holds
    for every catalogue module: it imports nothing above it (pipeline,
    baselines) nor a sibling paper module, and nothing below imports it."""
    import grimp

    layers = package_layers()
    (estimators,) = [la for la in layers if "tsgs3vm" in la.module_tails]
    assert _catalogue_modules() <= set(estimators.module_tails)
    assert estimators.independent
    graph = grimp.build_graph("weakkernels", cache_dir=None)
    assert _illegal(graph) == set()


@pytest.mark.parametrize("imported, broken", [
    ("weakkernels.pipeline.registry", True),  # up: the pipeline
    ("weakkernels.baselines.su", True),  # up: the baselines
    ("weakkernels.tsgsu", True),  # sideways: another paper's module
    ("weakkernels._dsg", False),  # down: the shared solvers
    ("weakkernels.kernels", False),
])
def test_the_layers_catch_a_catalogued_module_importing_up_or_sideways(
        monkeypatch, imported, broken):
    """A toy paper module, known to no pyproject.toml line, only by its
    class's catalogue entry: an import up or sideways breaks the layers, an
    import down does not; a lower module importing it breaks them too."""
    import grimp

    class ToyPaperSolver(ToyKernelMeans):
        pass

    ToyPaperSolver.__module__ = "weakkernels.toy_paper"
    monkeypatch.setitem(registry.MODELS, "toy_paper", ModelSpec(
        "toy_paper", "ssl", registry._ours(ToyPaperSolver), {},
        cls=ToyPaperSolver))
    graph = grimp.build_graph("weakkernels", cache_dir=None)
    graph.add_import(importer="weakkernels.toy_paper", imported=imported)
    assert bool(_illegal(graph)) is broken
    graph.remove_import(importer="weakkernels.toy_paper", imported=imported)
    graph.add_import(importer="weakkernels._dsg", imported="weakkernels.toy_paper")
    assert _illegal(graph)


# ------------------------------------------------- export and model files ----
_TOY_MODULE = """\
\"\"\"A paper module dropped into the package: no other file names it.\"\"\"

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval

from weakkernels._artifact import ArtifactMixin, register


@register
class ToyPaperSolver(ArtifactMixin, ClassifierMixin, BaseEstimator):
    \"\"\"C times the difference of the two labeled class means, as a linear
    score; unlabeled rows (y == -1) are ignored.\"\"\"

    _parameter_constraints = {"C": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        lab = y != -1
        self.classes_ = np.unique(y[lab])
        self.n_features_in_ = X.shape[1]
        self.w_ = self.C * (X[lab][y[lab] == self.classes_[1]].mean(0)
                            - X[lab][y[lab] == self.classes_[0]].mean(0))
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64) @ self.w_

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def _artifact_state(self):
        return {}, {"w": self.w_, "classes": self.classes_}

    def _set_artifact_state(self, meta, arrays):
        self.w_, self.classes_ = arrays["w"], arrays["classes"]
        self.n_features_in_ = int(self.w_.shape[0])
"""


def _run(code: str, pythonpath: Path) -> list:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, cwd=pythonpath)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


# A fresh process's view of the package at ``pythonpath``: the public modules
# of its folders that ``import weakkernels`` left unimported, and for every
# registered class its module, whether ``weakkernels`` exports it and whether
# it is in ``__all__``.
_EXPORTS = (
    "import json, pkgutil, sys, weakkernels as wk\n"
    "from weakkernels._artifact import _REGISTRY\n"
    "mods = [i.name for p in (wk, wk.baselines)\n"
    "        for i in pkgutil.iter_modules(p.__path__, p.__name__ + '.')\n"
    "        if not i.ispkg and not i.name.rpartition('.')[2].startswith('_')]\n"
    "print(json.dumps([[m for m in mods if m not in sys.modules],\n"
    "                  {n: [c.__module__, getattr(wk, n, None) is c,\n"
    "                       n in wk.__all__] for n, c in _REGISTRY.items()}]))\n")


def _package_copy(tmp_path: Path, init_lines: str = "") -> Path:
    """A copy of the package (links to its files) plus the toy module
    ``toy_paper.py``; ``init_lines`` appended to its ``__init__.py``."""
    import weakkernels as wk

    pkg = tmp_path / "weakkernels"
    pkg.mkdir()
    for entry in Path(wk.__file__).parent.iterdir():
        if entry.name not in ("__pycache__", "__init__.py"):
            (pkg / entry.name).symlink_to(entry)
    (pkg / "__init__.py").write_text(Path(wk.__file__).read_text() + init_lines)
    (pkg / "toy_paper.py").write_text(_TOY_MODULE)
    return pkg


def test_the_package_imports_every_public_module_by_name():
    """``weakkernels/__init__.py`` is a plain import list with a static
    ``__all__`` (no module discovery at import time): in a fresh process
    every public module of the package's folders is imported, so ``load``
    knows every registered class, and each is exported, the papers' (a
    top-level module) in ``__all__``."""
    init = (ROOT / "src" / "weakkernels" / "__init__.py").read_text()
    assert "pkgutil" not in init and "importlib" not in init
    missing, exported = _run(_EXPORTS, ROOT)
    assert missing == []
    assert len(exported) >= 10
    for name, (module, found, listed) in exported.items():
        assert found, name
        assert listed == (module.count(".") == 1), name


def test_a_module_left_out_of_the_package_imports_is_named(tmp_path):
    """The check above names a new module that ``__init__.py`` does not
    import (its class would be neither exported nor loadable)."""
    _package_copy(tmp_path)
    missing, exported = _run(_EXPORTS, tmp_path)
    assert missing == ["weakkernels.toy_paper"]
    assert "ToyPaperSolver" not in exported


def test_a_new_module_is_exported_and_loads_in_a_fresh_process(tmp_path):
    """A copy of the package plus one new module, ``toy_paper.py``, and its
    lines in ``__init__.py`` (the import and the ``__all__`` entry): in a
    fresh process ``weakkernels`` exports its class as
    ``weakkernels.ToyPaperSolver`` (in ``__all__``: a paper module), and a
    second fresh process reads its model file with ``weakkernels.load``
    alone (a model file only names a class among those registered)."""
    pkg = _package_copy(tmp_path, (
        "from weakkernels import toy_paper as toy_paper  # noqa: E402\n"
        "from weakkernels.toy_paper import ToyPaperSolver  # noqa: E402\n"
        "__all__.append('ToyPaperSolver')\n"))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, 0)
    y[::3] = -1
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)

    saved = _run(
        "import json, sys, numpy as np, weakkernels as wk\n"
        "est = wk.ToyPaperSolver(C=2.0).fit(np.load('X.npy'), np.load('y.npy'))\n"
        "est.save('toy.wkm')\n"
        "print(json.dumps([wk.__file__, wk.ToyPaperSolver.__module__,\n"
        "                  'ToyPaperSolver' in wk.__all__]))\n", tmp_path)
    assert saved == [str(pkg / "__init__.py"), "weakkernels.toy_paper", True]
    assert _run(_EXPORTS, tmp_path)[0] == []
    name, C, scores = _run(
        "import json, numpy as np, weakkernels\n"
        "m = weakkernels.load('toy.wkm')\n"
        "print(json.dumps([type(m).__name__, m.C,\n"
        "                  m.decision_function(np.load('X.npy')).tolist()]))\n",
        tmp_path)
    lab = y != -1
    w = 2.0 * (X[lab][y[lab] == 1].mean(0) - X[lab][y[lab] == 0].mean(0))
    assert (name, C) == ("ToyPaperSolver", 2.0)
    np.testing.assert_allclose(scores, X @ w, rtol=1e-12)


def test_a_module_cannot_register_the_name_of_another_estimator():
    """``load`` finds a class by name alone, so a second class of a registered
    name (from another module) is refused rather than shadowing it."""
    from weakkernels._artifact import _REGISTRY, register

    class TSGS3VM:  # noqa: N801 -- the clash is the point
        pass

    with pytest.raises(TypeError, match="registered estimator"):
        register(TSGS3VM)
    import weakkernels as wk

    assert _REGISTRY["TSGS3VM"] is wk.TSGS3VM


# The files a new solver touches: everything else that runs or checks solvers
# (pipeline, benchmark worker, scikit-learn's common checks, bad-input and
# model-file tests, the import layers) reads the catalogue, as the tests above
# show; the package's export and model-file loader read its __init__.py, which
# a test checks against the package's folder.
# params.yaml (models.names) and benchmarks/protocols/*.yaml only when the
# pipeline or a protocol is to run it.
NEW_SOLVER_FILES = (
    "src/weakkernels/<paper>.py",  # the module (its class ``register``-ed)
    "src/weakkernels/__init__.py",  # its import and its ``__all__`` entry
    "tests/test_<paper>.py",  # its behaviour tests
    "src/weakkernels/pipeline/registry.py",  # one ModelSpec in MODELS
    "README.md",  # docs: the estimator table
)


def test_a_new_solver_touches_the_files_listed_above():
    """At most five files, and for every catalogue class what is not in them
    is derived: its module in the package layers; the lines outside module,
    test file and entry are its import and ``__all__`` entry in
    ``weakkernels/__init__.py`` (checked above) and its row in the README's
    estimator table."""
    import weakkernels as wk

    assert len(NEW_SOLVER_FILES) <= 5
    for path in NEW_SOLVER_FILES:
        assert "<" in path or (ROOT / path).is_file(), path
    layered = {m for la in package_layers() for m in la.module_tails}
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
