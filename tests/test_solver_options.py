"""The random-feature solvers' tunables live in one options object.

``SolverOptions`` holds every knob the solver reads; the estimators take it as
``solver_options`` (a scikit-learn parameter: cloned, validated, stored in
the model file); no numeric module constant of the solver is left to patch.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import numbers
import pkgutil

import numpy as np
import pytest
from sklearn.base import clone
from tests._data import two_gaussians

from weakkernels import QSGS2AUC, TSGS3VM, TSGSU, ModelFormatError, SolverOptions, _dsg
from weakkernels._artifact import dumps, loads
from weakkernels._options import DEFAULT_OPTIONS

# Private constants of the solver that are no tunables: the float32 scale
# guard of the SGD model and its allocation strategy (neither changes a
# model), and the default block size of the chunk products, read from
# DEFAULT_OPTIONS; and the C* candidates, imported from the model-selection
# rules (weakkernels._selection), where they are declared.
NOT_TUNABLES = {"_MIN_SCALE", "_PREALLOC_BYTES", "_BLOCK_BYTES", "SELECT_STAGES"}


def test_the_solver_package_holds_no_numeric_tunable():
    numeric = set()
    for info in pkgutil.iter_modules(_dsg.__path__, "weakkernels._dsg."):
        module = importlib.import_module(info.name)
        numeric |= {name for name, value in vars(module).items()
                    if name.lstrip("_").isupper()
                    and isinstance(value, (numbers.Number, tuple))
                    and not all(isinstance(v, str) for v in np.atleast_1d(value))}
    assert numeric == NOT_TUNABLES
    assert _dsg._BLOCK_BYTES == DEFAULT_OPTIONS.fused_block_bytes


def test_options_are_checked_when_built():
    with pytest.raises(TypeError, match="primal_start_rows"):
        SolverOptions(primal_start_rows=1.5)
    with pytest.raises(TypeError, match="primal_anneal_every_row"):
        SolverOptions(primal_anneal_every_row=1)
    with pytest.raises(ValueError, match="cccp_tol"):
        SolverOptions(cccp_tol=-1.0)
    with pytest.raises(ValueError, match="primal_growth=1 must be >= 2"):
        SolverOptions(primal_growth=1)  # the levels would never reach every row
    with pytest.raises(ValueError, match="cccp_max_steps"):
        SolverOptions(cccp_max_steps=0)
    with pytest.raises(TypeError):
        SolverOptions(no_such_knob=1)
    assert SolverOptions(anneal_stages=[0, 1]).anneal_stages == (0.0, 1.0)


@pytest.mark.parametrize("bad", [{"primal_start_rows": 1}, "fast", 3])
def test_estimators_refuse_what_is_not_options(bad):
    X, y, _ = two_gaussians(n=60, d=3, n_labeled=10)
    with pytest.raises((ValueError, TypeError), match="solver_options"):
        TSGS3VM(solver_options=bad).fit(X, y)


def test_options_change_the_fit_and_survive_clone_and_model_files(tmp_path):
    """Options reach the solver (a smaller first level changes the levels the
    fit runs, so its model), and a model file written with them loads with
    them and predicts the same."""
    X, y, _ = two_gaussians(n=700, d=4, n_labeled=40, seed=3)
    opts = SolverOptions(primal_start_rows=64, primal_merge_fraction=1.0,
                         primal_anneal_every_row=False)
    kw = dict(C=1.0, random_state=0, selection=None)
    default = TSGS3VM(**kw).fit(X, y)
    small = TSGS3VM(**kw, solver_options=opts).fit(X, y)
    assert not np.array_equal(default.coef_, small.coef_)
    again = clone(small).fit(X, y)
    np.testing.assert_array_equal(again.coef_, small.coef_)
    small.save(tmp_path / "m.wk")
    from weakkernels import load

    back = load(tmp_path / "m.wk")
    assert back.solver_options == opts
    np.testing.assert_array_equal(back.decision_function(X),
                                  small.decision_function(X))


def test_a_model_file_with_unknown_options_is_refused():
    X, y, _ = two_gaussians(n=80, d=3, n_labeled=10)
    est = TSGS3VM(random_state=0, selection=None,
                  solver_options=SolverOptions(cccp_max_steps=3)).fit(X, y)
    meta, arrays = loads(est.to_bytes())
    meta["params"]["solver_options"]["no_such_knob"] = 1
    with pytest.raises(ModelFormatError, match="solver_options|no_such_knob"):
        TSGS3VM.from_bytes(dumps(meta, arrays))
    json.dumps(SolverOptions().to_dict())  # plain JSON


@pytest.mark.parametrize("cls", [TSGS3VM, TSGSU, QSGS2AUC])
def test_every_field_is_documented_and_every_estimator_takes_them(cls):
    doc = SolverOptions.__doc__
    for field in dataclasses.fields(SolverOptions):
        assert field.name in doc, field.name
    assert cls().get_params()["solver_options"] is None
