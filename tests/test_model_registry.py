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
from tests._reliability import semi_data, su_data, sup_data

import weakkernels as wk
from weakkernels._artifact import _REGISTRY
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC, SupervisedKernelAUC
from weakkernels.baselines.su import CUU, SUSL

FAST = {"max_iter": 20, "batch_size": 16, "block_size": 8, "random_state": 3}

# One small fitted instance of every model class; name -> (make, data).
MODELS = {
    "TSGS3VM": (lambda: wk.TSGS3VM(**FAST), semi_data),
    "FRS3VM": (lambda: wk.FRS3VM(max_iter=20, batch_size=16, n_components=32,
                                 random_state=3), semi_data),
    "TSGSU": (lambda: wk.TSGSU(**FAST), su_data),
    "QSGS2AUC": (lambda: wk.QSGS2AUC(prior=0.5, **FAST), semi_data),
    "CCCPTSVM": (lambda: wk.CCCPTSVM(max_cccp_iter=5), semi_data),
    "RampSVM": (lambda: wk.RampSVM(max_cccp_iter=5, init_fraction=0.5,
                                   random_state=3), sup_data),
    "SUSL": (lambda: SUSL(n_centers=20, random_state=0), su_data),
    "CUU": (lambda: CUU(max_iter=5, batch_size=20, n_centers=20,
                        random_state=0), su_data),
    "PNUAUC": (lambda: PNUAUC(prior=0.5), semi_data),
    "SupervisedKernelAUC": (lambda: SupervisedKernelAUC(prior=0.5), semi_data),
    "ExactS2AUC": (lambda: ExactS2AUC(prior=0.5), semi_data),
}


def _import_all_modules():
    for mod in pkgutil.walk_packages(wk.__path__, "weakkernels."):
        if ".pipeline" not in mod.name:
            importlib.import_module(mod.name)


def test_every_registered_class_is_covered_and_reachable():
    """A new model class must be added here and be findable by ``load`` from a
    fresh process (through ``weakkernels``'s lazy exports)."""
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
