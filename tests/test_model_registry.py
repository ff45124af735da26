"""Every registered model class round-trips through ``save`` and
``weakkernels.load`` -- the papers' estimators and their baselines alike, and
in a fresh process, where only ``import weakkernels`` has run (the case CUU
once failed: its module was never imported, so its class was not registered).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import numpy as np
import pytest
from tests._reliability import catalogue_estimators, semi_data

import weakkernels as wk
from weakkernels._artifact import _REGISTRY
from weakkernels.baselines.auc import SupervisedKernelAUC

# One small fitted instance of every model class: the catalogue's classes (its
# ``fast`` settings) and the one class the benchmark worker builds on its own,
# paper 003's supervised AUC baseline; name -> (make, data).
MODELS = {name: (spec.make, spec.data)
          for name, spec in catalogue_estimators(peers=True).items()}
MODELS["SupervisedKernelAUC"] = (lambda: SupervisedKernelAUC(prior=0.5), semi_data)


def _import_all_modules():
    for mod in pkgutil.walk_packages(wk.__path__, "weakkernels."):
        if ".pipeline" not in mod.name:
            importlib.import_module(mod.name)


def test_every_registered_class_is_covered_and_reachable():
    """A new model class must have a catalogue entry (or be added here) and be
    findable by ``load`` from a fresh process (through ``weakkernels``'s
    exports)."""
    _import_all_modules()
    assert set(_REGISTRY) == set(MODELS)
    for name, cls in _REGISTRY.items():
        assert getattr(wk, name) is cls


@pytest.mark.parametrize("name", sorted(MODELS))
def test_save_load_round_trip_in_a_fresh_process(name, tmp_path):
    make, data = MODELS[name]
    X, y = data()
    est = make().fit(X, y)
    path = tmp_path / f"{name}.wkm"
    est.save(path)
    np.save(tmp_path / "X.npy", X)
    same = wk.load(path)
    assert type(same) is type(est)
    np.testing.assert_array_equal(same.decision_function(X),
                                  est.decision_function(X))
    code = (
        "import json, sys, numpy as np, weakkernels\n"
        f"m = weakkernels.load({str(path)!r})\n"
        f"X = np.load({str(tmp_path / 'X.npy')!r})\n"
        "print(json.dumps([type(m).__name__, "
        "m.decision_function(X).ravel().tolist()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    got_name, got = json.loads(out.stdout.splitlines()[-1])
    assert got_name == name
    np.testing.assert_array_equal(np.asarray(got),
                                  est.decision_function(X).ravel())
