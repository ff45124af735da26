"""Run as a script by tests/test_reliability_bounds.py.

``_bounded_fits.py MIB N``: a hypothesis property (N examples) over size
parameters and shapes, in a process whose address space is limited
(``RLIMIT_AS``: what it maps now plus MIB MiB).

Every fit either completes within its plan -- the numpy memory traced during
the fit (``tracemalloc``: every NumPy buffer) stays within the plan's bytes
plus a fixed slack and a few copies of the input -- or is refused with a
``ValueError`` naming its size parameter and the memory it may use, having
traced less than the slack. A ``MemoryError`` (an allocation the plan did not
foresee) fails the property. Exit status 0 when it holds; else the
falsifying example is printed.

``_bounded_fits.py cases``: the memory-bound cases under a 3 GiB
address-space limit, one JSON line each."""

from __future__ import annotations

import resource
import sys
import tracemalloc
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weakkernels import CCCPTSVM, FRS3VM, QSGS2AUC, TSGS3VM, TSGSU
from weakkernels._validation import DegenerateModelWarning, PlanWarning

SLACK = 48 * 2**20  # interpreter-side temporaries that no size parameter sets
OUTCOMES = {"completed": 0, "refused": 0}

ESTIMATORS = {
    "TSGS3VM": (TSGS3VM, "max_features"),
    "FRS3VM": (FRS3VM, "n_components"),
    "TSGSU": (TSGSU, "max_features"),
    "QSGS2AUC": (QSGS2AUC, "max_features"),
}


def _limit_address_space(extra_mib: int) -> None:
    with open("/proc/self/status", encoding="ascii") as fh:
        size = next(int(line.split()[1]) * 1024 for line in fh
                    if line.startswith("VmSize:"))
    cap = size + extra_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(
        resource.RLIMIT_AS)[1]))


def _data(name, n, d, k, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if name == "TSGSU":  # 2 k similar pairs, then unlabeled rows
        y = np.full(n, -1)
        y[: 4 * k] = 1
        return X, y
    n_l = max(2 * k, n // 4)
    y = np.full(n, -1)
    y[:n_l] = np.arange(n_l) % (2 if name == "QSGS2AUC" else k)
    return X, y


@st.composite
def fits(draw):
    name = draw(st.sampled_from(sorted(ESTIMATORS)))
    cls, size_param = ESTIMATORS[name]
    n = draw(st.integers(40, 240))
    d = draw(st.sampled_from([1, 3, 17, 400, 3000]))
    k = draw(st.integers(2, 6)) if name in ("TSGS3VM", "FRS3VM") else 2
    solver = "lbfgs" if name == "FRS3VM" else draw(st.sampled_from(["lbfgs",
                                                                   "sgd"]))
    budget = draw(st.one_of(st.none(), st.integers(5, 30).map(lambda e: 2**e)))
    kw = {size_param: budget, "solver": solver, "random_state": 0}
    if name == "FRS3VM":
        kw.pop("solver")
    else:
        kw["block_size"] = draw(st.sampled_from([4, 32, 256]))
        if budget is not None and budget < kw["block_size"]:
            kw["block_size"] = budget
    if solver == "sgd":
        # few steps (a fit that runs), or so many that the unbounded SGD
        # budget, a block per step, cannot fit
        huge = budget is None and draw(st.booleans())
        if huge:  # TSGSU has no n_passes: its max_iter sets the steps
            kw["n_passes" if name != "TSGSU" else "max_iter"] = 10**9
            kw["block_size"] = 256
        else:
            kw["max_iter"] = draw(st.integers(1, 30))
        kw["batch_size"] = draw(st.sampled_from([8, 64]))
    else:
        kw["max_iter"] = draw(st.integers(1, 8))
    if name in ("TSGS3VM", "FRS3VM"):
        kw["selection"] = None
    if name in ("TSGSU", "QSGS2AUC"):
        kw["prior"] = 0.7
    return name, cls(**kw), size_param, n, d, k


@given(fits())
def property_fit_within_plan_or_refused(case):
    name, est, size_param, n, d, k = case
    X, y = _data(name, n, d, k, seed=n)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
    except ValueError as exc:
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        msg = str(exc)
        assert "this process may use" in msg, msg
        assert f"{size_param}=" in msg or "n_passes" in msg, msg
        assert peak < SLACK, (peak, msg)
        OUTCOMES["refused"] += 1
        return
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    bound = est.fit_plan_.n_bytes + SLACK + 4 * X.nbytes
    assert peak <= bound, (peak, bound, est.fit_plan_)
    assert np.all(np.isfinite(est.decision_function(X[:5])))
    OUTCOMES["completed"] += 1


def _classes(k):
    """One label for each of ``k`` classes, 500 unlabeled rows."""
    X = np.random.default_rng(0).normal(size=(k + 500, 5))
    y = np.full(k + 500, -1)
    y[:k] = np.arange(k)
    return X, y


def _semi():
    return _data("TSGS3VM", 200, 5, 2, 0)


# the memory-bound cases, each fitted under the limit: (name, fit)
CASES = {
    "TSGS3VM max_features=2**27": lambda: TSGS3VM(max_features=2**27).fit(*_semi()),
    "FRS3VM n_components=2**27": lambda: FRS3VM(n_components=2**27).fit(*_semi()),
    "TSGSU max_features=2**27": lambda: TSGSU(max_features=2**27, prior=0.7).fit(
        *_data("TSGSU", 200, 5, 2, 0)),
    "QSGS2AUC max_features=2**27": lambda: QSGS2AUC(max_features=2**27).fit(
        *_semi()),
    "TSGS3VM sgd n_passes=1e9": lambda: TSGS3VM(solver="sgd", n_passes=1e9).fit(
        *_semi()),
    "TSGS3VM 5000 classes": lambda: TSGS3VM().fit(*_classes(5000)),
    "TSGS3VM 2000 classes": lambda: TSGS3VM().fit(*_classes(2000)),
    "CCCPTSVM 200 classes": lambda: CCCPTSVM().fit(*_classes(200)),
    "TSGS3VM sgd n_passes=1e9 max_features=1024": lambda: TSGS3VM(
        solver="sgd", n_passes=1e9, max_features=1024).fit(*_semi()),
}


def run_cases() -> None:
    """Each case's outcome as one JSON line: the exception or warning (a
    PlanWarning is raised, so a fit it warns about stops there), its
    message, the seconds and the numpy bytes traced."""
    import json
    import time

    warnings.simplefilter("error", PlanWarning)
    for name, fit in CASES.items():
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            fit()
            outcome, msg = "fitted", ""
        except (ValueError, PlanWarning, MemoryError) as exc:
            outcome, msg = type(exc).__name__, str(exc)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(json.dumps({"case": name, "outcome": outcome, "message": msg,
                          "seconds": seconds, "traced": peak}), flush=True)


if __name__ == "__main__":
    warnings.simplefilter("ignore", DegenerateModelWarning)
    # compile the kernels before the limit (numba's compiler maps a lot)
    TSGS3VM(max_iter=2, random_state=0, selection=None).fit(
        *_data("TSGS3VM", 60, 3, 2, 0))
    if sys.argv[1] == "cases":  # the limit: 3 GiB of address space
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.getrlimit(
            resource.RLIMIT_AS)[1]))
        run_cases()
    else:
        warnings.simplefilter("ignore", PlanWarning)
        _limit_address_space(int(sys.argv[1]))
        settings(max_examples=int(sys.argv[2]), deadline=None,
                 derandomize=True, database=None)(
            property_fit_within_plan_or_refused)()
        print("ok", OUTCOMES)
