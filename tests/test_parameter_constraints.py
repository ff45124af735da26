"""The shared parameter constraints (``weakkernels._constraints``,
``weakkernels._dsg.DSG_CONSTRAINTS``) merged into every estimator: a bad value
is refused by scikit-learn's validation with a message naming the parameter."""

from __future__ import annotations

import pytest
from sklearn.utils._param_validation import InvalidParameterError
from tests._reliability import semi_data, su_data, sup_data

import weakkernels as wk
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC, SupervisedKernelAUC
from weakkernels.baselines.su import CUU, SUSL

# estimator class, data, the shared parameters it takes
CASES = [
    (wk.TSGS3VM, semi_data, ("kernel", "sigma", "degree", "solver", "batch_size",
                             "block_size", "max_features", "dtype")),
    (wk.FRS3VM, semi_data, ("kernel", "sigma", "degree", "solver", "eta0")),
    (wk.TSGSU, su_data, ("kernel", "sigma", "coef0", "solver", "tol",
                         "max_features", "callback_every")),
    (wk.QSGS2AUC, semi_data, ("kernel", "sigma", "solver", "block_size", "dtype")),
    (wk.CCCPTSVM, semi_data, ("kernel", "sigma", "degree")),
    (wk.RampSVM, sup_data, ("kernel", "sigma", "degree")),
    (wk.RandomFeatures, sup_data, ("kernel", "sigma", "coef0", "dtype")),
    (SUSL, su_data, ("sigma",)),
    (CUU, su_data, ("sigma",)),
    (PNUAUC, semi_data, ("kernel", "sigma", "coef0")),
    (SupervisedKernelAUC, semi_data, ("kernel", "sigma")),
    (ExactS2AUC, semi_data, ("kernel", "sigma", "degree")),
]
BAD = {"kernel": "cosine", "sigma": -1.0, "degree": 0, "coef0": -1.0,
       "solver": "adam", "tol": 0.0, "batch_size": 0, "block_size": 0,
       "max_features": 0, "eta0": 0.0, "dtype": "float16", "callback_every": 0}


@pytest.mark.parametrize(
    "cls, data, param",
    [(cls, data, p) for cls, data, params in CASES for p in params],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_shared_constraint_names_the_parameter(cls, data, param):
    X, y = data()
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
        cls(**{param: BAD[param]}).fit(X, y)


@pytest.mark.parametrize("cls", [wk.TSGS3VM, wk.TSGSU, wk.QSGS2AUC, SUSL, CUU,
                                 PNUAUC, SupervisedKernelAUC, ExactS2AUC,
                                 wk.CCCPTSVM, wk.RampSVM])
def test_estimators_resolving_the_width_accept_scale(cls):
    cls(sigma="scale")._validate_params()
    assert cls().sigma == "scale"  # and default to it


@pytest.mark.parametrize("cls", [wk.RandomFeatures])
def test_fixed_width_estimators_refuse_scale(cls):
    with pytest.raises(InvalidParameterError, match="'sigma' parameter"):
        cls(sigma="scale")._validate_params()


def test_exact_kernel_poly_takes_negative_coef0():
    wk.CCCPTSVM(kernel="poly", coef0=-1.0)._validate_params()
    with pytest.raises(InvalidParameterError, match="'coef0' parameter"):
        PNUAUC(kernel="poly", coef0=-1.0)._validate_params()


# The random-feature family on weakkernels._base.RandomFeatureClassifier, and
# the constraints a member overrides (with why).
FAMILY = [wk.TSGS3VM, wk.FRS3VM, wk.TSGSU, wk.QSGS2AUC]
OVERRIDES = {(wk.TSGSU, "solver"): "adds the closed form, solver='direct'"}


@pytest.mark.parametrize("cls", FAMILY, ids=lambda c: c.__name__)
def test_the_family_takes_the_shared_constraints_from_the_base(cls):
    from weakkernels._base import SHARED_CONSTRAINTS, RandomFeatureClassifier

    assert issubclass(cls, RandomFeatureClassifier)
    own = cls._parameter_constraints
    base = RandomFeatureClassifier._parameter_constraints
    assert set(base) <= set(own)  # every member takes the family's parameters
    for name, constraint in {**base, **SHARED_CONSTRAINTS}.items():
        if name in own and (cls, name) not in OVERRIDES:
            assert own[name] is constraint, name


# every public estimator: the family, the exact-kernel machines, the feature
# map and the baselines
ESTIMATORS = [*FAMILY, wk.CCCPTSVM, wk.RampSVM, wk.RandomFeatures, SUSL, CUU,
              PNUAUC, SupervisedKernelAUC, ExactS2AUC]


def test_each_shared_parameter_is_declared_once():
    """A parameter two estimators constrain alike is one declaration (the
    same object), not two copies that could drift."""
    declared = {}
    for cls in ESTIMATORS:
        for name, constraint in cls._parameter_constraints.items():
            key = (name, tuple(str(c) for c in constraint))
            declared.setdefault(key, {}).setdefault(id(constraint), []).append(
                cls.__name__)
    copies = {key[0]: list(ids.values()) for key, ids in declared.items()
              if len(ids) > 1}
    assert copies == {}
    # and the table covers parameters the family and the exact machines share
    for name in ("random_state", "C", "tol", "sigma", "kernel"):
        users = [cls for cls in ESTIMATORS if name in cls._parameter_constraints]
        assert len(users) > 2, name


def test_the_registry_lists_every_public_estimator():
    """ESTIMATORS above is complete: a new estimator is checked too."""
    import inspect

    from sklearn.base import BaseEstimator

    import weakkernels.baselines.auc as auc
    import weakkernels.baselines.su as su

    public = {obj for mod in (wk, auc, su) for name, obj in vars(mod).items()
              if inspect.isclass(obj) and issubclass(obj, BaseEstimator)
              and not name.startswith("_")
              and obj.__module__.startswith("weakkernels")}
    assert public == set(ESTIMATORS)


@pytest.mark.parametrize("cls", [wk.TSGS3VM, wk.FRS3VM], ids=lambda c: c.__name__)
@pytest.mark.parametrize("alias, name", [(True, "mean"), (False, "none")])
def test_boolean_balance_is_deprecated_for_its_name(cls, alias, name):
    X, y = semi_data()
    kw = dict(C_star=0.1, max_iter=5, random_state=0, selection=None)
    with pytest.warns(FutureWarning, match=f'balance="{name}"'):
        old = cls(balance=alias, **kw).fit(X, y)
    new = cls(balance=name, **kw).fit(X, y)
    assert old.balance_ == new.balance_ == name
    assert old.decision_function(X).tobytes() == new.decision_function(X).tobytes()
