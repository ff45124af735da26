"""Bounded by design (RELIABILITY.md, "Bounds checked before the fit"):
every size a user can pass is checked against what the fit will allocate
before it starts (weakkernels._plan), and the input and model-file edges
give an error or warning that names what to change.

The memory cases run in a subprocess under an address-space limit
(tests/_bounded_fits.py): the issue's 3 GiB for its cases, and a hypothesis
property over sizes and shapes with 1 GiB above what the process maps."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from weakkernels import CCCPTSVM, FRS3VM, QSGS2AUC, TSGS3VM, TSGSU, RampSVM
from weakkernels._validation import DegenerateModelWarning

_SCRIPT = Path(__file__).with_name("_bounded_fits.py")


def _run(*args, timeout=300):
    done = subprocess.run([sys.executable, _SCRIPT.name, *map(str, args)],
                          cwd=_SCRIPT.parent, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module")
def issue_cases():
    lines = [json.loads(x) for x in _run("cases").splitlines() if x.startswith("{")]
    return {c["case"]: c for c in lines}


@pytest.mark.parametrize("case, outcome, match", [
    ("TSGS3VM max_features=2**27", "ValueError",
     r"max_features=134217728 \(block_size=32\) gives 134217728 fourier "
     r"features of 5 inputs: the fit needs \d+ GiB \(.*frequencies 6 GiB"),
    ("FRS3VM n_components=2**27", "ValueError", r"n_components=134217728 gives"),
    ("TSGSU max_features=2**27", "ValueError", r"max_features=134217728"),
    ("QSGS2AUC max_features=2**27", "ValueError", r"max_features=134217728"),
    ("TSGS3VM sgd n_passes=1e9", "ValueError",
     r"solver='sgd' plans 585937500 steps \(n_passes=1000000000.0, .*"
     r"sgd_max_steps = 4194304 run\).*bound max_features or lower n_passes"),
    ("TSGS3VM 5000 classes", "ValueError",
     r"one-vs-rest over 5000 classes \(5000 labels, 1 a class\) holds 5000 x "
     r"4096 = 2.05e\+07 coefficients: the fit needs [\d.]+ GiB \(coefficients "
     r"\(L-BFGS\) 4.88 GiB"),
    ("TSGS3VM 2000 classes", "PlanWarning",
     r"one-vs-rest over 2000 classes .* holds 2000 x 2500 = 5e\+06 "
     r"coefficients.*Lower max_features"),
    ("CCCPTSVM 200 classes", "PlanWarning",
     r"one-vs-rest over 200 classes .* holds 200 x 1201 = 2.4e\+05 "
     r"coefficients.*up to 50 CCCP steps a problem"),
    ("TSGS3VM sgd n_passes=1e9 max_features=1024", "PlanWarning",
     r"solver='sgd' plans 585937500 steps \(n_passes=1000000000.0, max_iter="
     r"None; at most sgd_max_steps = 4194304 run\) over 200 rows and up to "
     r"1024 features: expect hours. Lower n_passes"),
])
def test_issue_cases_are_refused_or_warned_within_two_seconds(issue_cases, case,
                                                              outcome, match):
    """Under the issue's 3 GiB address-space limit: each case stops with an
    error (or a PlanWarning, raised in the subprocess) naming the parameter
    and the numbers, in under 2 s, having traced under 48 MiB of NumPy
    memory -- the refusals before allocating anything they plan."""
    got = issue_cases[case]
    assert got["outcome"] == outcome, got
    assert got["seconds"] < 2.0, got
    assert re.search(match, got["message"]), got["message"]
    assert got["traced"] < 48 * 2**20, got
    if outcome == "ValueError":  # the limit the process may use, not the RAM's
        at_most = re.search(r"at most ([\d.]+) GiB", got["message"])
        assert at_most and float(at_most.group(1)) < 3.0, got["message"]


def test_fits_complete_within_their_plan_or_are_refused_before_allocating():
    """The hypothesis property of tests/_bounded_fits.py (25 examples, 1 GiB
    above the process's mapped address space): never a MemoryError; a
    completed fit traced at most its plan's bytes plus a fixed slack; a
    refused one named its parameter. Both outcomes occur."""
    out = _run(1024, 25)
    assert out.startswith("ok"), out
    counts = json.loads(out.split(" ", 1)[1].replace("'", '"'))
    assert counts["completed"] > 0 and counts["refused"] > 0, counts


def _semi(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.full(n, -1)
    y[:20] = np.arange(20) % 2
    return X, y


def _su(X):
    return np.r_[np.ones(40, int), -np.ones(len(X) - 40, int)]


@pytest.mark.parametrize("make", [
    lambda: TSGS3VM(random_state=0), lambda: FRS3VM(random_state=0),
    lambda: QSGS2AUC(prior=0.5, random_state=0),
    lambda: TSGSU(prior=0.7, random_state=0), lambda: CCCPTSVM(),
    lambda: RampSVM()], ids=lambda m: type(m()).__name__)
def test_every_estimator_warns_on_a_constant_input(make):
    """One helper (_validation.check_degenerate_input) for every estimator:
    an all-zero X is named as the cause, before the fit (raised here, so
    the fit does not run)."""
    X, y = _semi()
    X[:] = 0.0
    est = make()
    if isinstance(est, TSGSU):
        y = _su(X)
    elif isinstance(est, RampSVM):
        X, y = X[:20], y[:20]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        with pytest.raises(DegenerateModelWarning, match="X is zero -- all"):
            est.fit(X, y)
    X[:, 1] = 3.0  # constant, not zero: the same
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        with pytest.raises(DegenerateModelWarning, match="X is constant"):
            est.fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: TSGS3VM(features="nystroem", selection=None),
    lambda: QSGS2AUC(prior=0.5), lambda: TSGSU(prior=0.7)],
    ids=["TSGS3VM", "QSGS2AUC", "TSGSU"])
def test_scale_sigma_that_overflows_is_refused_naming_it(make):
    """Rows around 1e-160: Var X is subnormal, 1 / (d Var X) is inf (before:
    scipy's 'array must not contain infs or NaNs' from the Cholesky)."""
    X, y = _semi()
    est = make()
    y = _su(X) if isinstance(est, TSGSU) else y
    with pytest.raises(ValueError, match=r'sigma="scale": 1 / \(d Var X\) '
                       r"overflows float64 .*pass a number"):
        est.fit(X * 1e-160, y)


def test_validation_fraction_is_named_in_its_errors():
    """0.01 of 20 labels holds out one: before, scikit-learn's message about
    test_size, a parameter the user never set."""
    X, y = _semi()
    with pytest.raises(ValueError, match=r"validation_fraction=0.01 holds out 1 "
                       r"of the 20 labels.*\[0.1, 0.9\]"):
        TSGS3VM(selection="holdout", validation_fraction=0.01).fit(X, y)
    y[:20] = np.r_[np.zeros(19, int), 1]  # a class of one label
    with pytest.raises(ValueError, match=r'selection="holdout" needs at '
                       r"least 2 labels of every class.*the fewest are 1"):
        TSGS3VM(selection="holdout", validation_fraction=0.5).fit(X, y)


def test_dask_dataframe_is_fitted_as_its_array():
    """A dask DataFrame (before: AttributeError 'chunks') is read as
    ``to_dask_array(lengths=True)``: the in-memory model, bit for bit; a
    1-D dask Series is refused as not 2-D."""
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    pd = pytest.importorskip("pandas")
    X, y = _semi()
    with distributed.LocalCluster(n_workers=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        df = dd.from_pandas(pd.DataFrame(X), npartitions=3)
        est = TSGS3VM(random_state=0, selection=None).fit(df, y)
        ref = TSGS3VM(random_state=0, selection=None).fit(X, y)
        np.testing.assert_array_equal(est.decision_function(X),
                                      ref.decision_function(X))
        np.testing.assert_array_equal(np.asarray(est.predict(df).compute()),
                                      ref.predict(X))
        with pytest.raises(ValueError, match="2-D"):
            TSGS3VM().fit(dd.from_pandas(pd.Series(X[:, 0]), npartitions=2), y)


@pytest.mark.parametrize("fill", [0.0, 1.0], ids=["zero", "constant"])
def test_sparse_degenerate_input_warns_without_a_dense_copy(fill, monkeypatch):
    """The shared degenerate-input check reads a CSR X by its column ranges:
    it warns for a zero or constant sparse X and never calls ``toarray``."""
    import warnings

    import numpy as np
    import scipy.sparse as sp

    from weakkernels import TSGS3VM
    from weakkernels._validation import DegenerateModelWarning, check_degenerate_input

    X = sp.csr_matrix(np.full((40, 3), fill))
    Y = np.full((40, 3), fill)
    Y[0, 0] = fill + 2.0
    Y = sp.csr_matrix(Y)  # one row differs: no warning

    def refuse(self, *a, **k):
        raise AssertionError("densified")

    for cls in (sp.csr_matrix, sp.coo_matrix, sp.csc_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
    word = "zero" if fill == 0 else "constant"
    with pytest.warns(DegenerateModelWarning, match=f"X is {word}"):
        check_degenerate_input(TSGS3VM(), X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        check_degenerate_input(TSGS3VM(), Y)
