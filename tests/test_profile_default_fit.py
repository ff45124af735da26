"""The counting spies of ``tools/profile_default_fit.py`` on a tiny
problem: they count what the solver did, leave the model bit for bit the
same, account for the fit's time and are removed afterwards. The spies count
scipy's L-BFGS, so the fits name it (``primal_method="lbfgs"``, the tool's
``PRIMAL_METHOD``): the default truncated Newton calls no scipy minimiser."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from weakkernels import TSGS3VM, SolverOptions
from weakkernels._dsg.primal import PrimalSolver

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "profile_default_fit.py"


@pytest.fixture(scope="module")
def profile():
    spec = importlib.util.spec_from_file_location("_profile_default_fit", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _data():
    X, y = make_blobs(n_samples=260, centers=3, n_features=4, random_state=0)
    y = y.copy()
    y[60:] = -1
    return X, y


@pytest.mark.parametrize("selection", [None, "cv"])
def test_counts_match_the_solver(profile, selection):
    X, y = _data()
    original = PrimalSolver.objective
    assert profile.PRIMAL_METHOD == "lbfgs"
    kw = dict(sigma=0.1, C=1.0, random_state=0, selection=selection, cv=3,
              solver_options=SolverOptions(primal_method=profile.PRIMAL_METHOD))
    plain = TSGS3VM(**kw).fit(X, y)
    est = TSGS3VM(**kw)
    rec = profile.profile_fit(est, X, y)
    # the spies are gone and changed nothing
    assert PrimalSolver.objective is original
    np.testing.assert_array_equal(est.coef_, plain.coef_)
    np.testing.assert_array_equal(est.intercept_, plain.intercept_)
    # every objective evaluation is one of scipy's (the start is L-BFGS's
    # first, computed once), and the fits are the k folds and the final one
    stages = rec["stages"].values()
    assert sum(s["evaluations"] for s in stages) == sum(s["nfev"] for s in stages)
    assert sum(s["nit"] for s in stages) > 0
    assert [f["fit"] for f in rec["fits"]] == (
        [f"cv_fold{i}" for i in range(3 if selection else 0)] + ["final"])
    # rows read: each evaluation reads the labeled rows and, at C* w > 0, the
    # unlabeled ones (one level here: every row; the folds' C* is the rule,
    # the final fit's the C* kept)
    for key, s in rec["stages"].items():
        w = float(key.split("w=")[1])
        fit = next(f for f in rec["fits"] if f["fit"] == key.split("|")[0])
        c_star = est.C_star_ if fit["fit"] == "final" else 1.0
        per_eval = fit["sizes"][0] + (fit["sizes"][1] if w * c_star > 0 else 0)
        assert s["rows_read"] == s["evaluations"] * per_eval
    # the exclusive seconds add up to the fit (the rest: the caller's timer)
    total = sum(p["cpu_s"] for p in rec["phases"].values())
    assert total <= rec["fit_cpu_s"] + 0.05
    assert total >= 0.8 * rec["fit_cpu_s"] - 0.05
    assert rec["phases"]["products: forward P v"]["flops"] > 0


def test_summary_floor(profile):
    rates = {k: 1e10 for k in ("kernel_f32", "kernel_f64", "square_f32",
                               "forward_f32", "backward_f32")}
    fl = profile.floor(100, 10, 5, 2, 3.0, rates)
    assert fl["kernel_block_flops"] == 2 * 100 * 10 * 5
    assert fl["pass_flops"] == 4 * 100 * 10 * 2
    assert fl["at_measured_passes_flops"] == 10_000 + 3 * 8_000
    assert fl["floor_cpu_s"] == pytest.approx(18_000 / 1e10)
    assert fl["floor_cpu_s_at_peak"] == pytest.approx(18_000 / 1e10)
