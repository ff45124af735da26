"""Benchmark row labels say what the rows run.

Every method row of every protocol in ``benchmarks/protocols/`` whose method is
one of our S3VM / AUC estimators is checked: each claim its label makes
("as printed", "default", "C* = C n_l/n_u", "ceil(sqrt n) features in total",
"1024 features", "L-BFGS", "gamma = 0.001", "lam = 2^-3", ...) must hold for the
parameters the row passes, and every parameter the row sets away from the
estimator's default must be named by the label.  The same checks run against
an older protocol file (must fail) and against a row with its ``C_star``
removed (must fail).

Also here: the step-size schedules against a hand computation, and the
documented ``C_star`` defaults after ``fit``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import worker
import yaml

from weakkernels import SolverOptions

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = sorted((ROOT / "benchmarks" / "protocols").glob("*.yaml"))

S3VM = {"tsgs3vm", "frs3vm", "cccp_tsvm"}
SU = {"tsgsu", "cuu", "susl"}
CHECKED = S3VM | SU | {"qsgs2auc", "qns3vm", "pywsl_pnu"}
# paper 000 Algorithm 1 as printed (Sec. 6): the settings an "as printed" row has
AS_PRINTED = {"solver": "sgd", "loss": "hinge", "unlabeled_loss": "shg",
              "balance": "none", "anneal": 0.0, "learning_rate": "fixed",
              "batch_size": 256, "C_star": "$cstar_eq1"}
AS_PRINTED_FRS = {"n_passes": 10.0, "n_components": "sqrt"}
# the C* rules a label may name -> the harness context value it must pass
CSTAR_RULES = {"C n_l/n_u": "$cstar_LU", "C L/U": "$cstar_LU",
               "C n_l^2/n_u^2": "$cstar_eq1", "C": "$C"}
FEATURE_KEY = {"tsgs3vm": "max_features", "frs3vm": "n_components"}
# paper 002 Algorithm 1 as printed (TSGSU's docstring, Sec. 6)
TSGSU_AS_PRINTED = {"solver": "sgd", "correction": "abs",
                    "learning_rate": "constant", "batch_size": 1000,
                    "block_size": 10, "max_iter": 100}


def _num(text: str) -> float:
    text = text.strip()
    m = re.fullmatch(r"2\^(-?\d+)", text)
    return 2.0 ** int(m.group(1)) if m else float(text)


OPTION_FIELDS = {f.name for f in dataclasses.fields(SolverOptions)}


def _defaults(method: str) -> dict:
    p = {"C_star": None} if method in S3VM else {}
    return worker.make_estimator(method, p, 0).get_params()


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not (
            isinstance(a, bool) or isinstance(b, bool)):
        return math.isclose(float(a), float(b), rel_tol=1e-12)
    return a == b


def _peer_problems(label: str, p: dict) -> list[str]:
    """QN-S3VM rows (``benchmarks/peers/qns3vm_adapter.py``): C* named and
    passed, the basis-point count named."""
    out = []
    m = re.search(r"C\* = ([^,)]+)", label)
    if "C_star" not in p:
        out.append("C_star not passed explicitly")
    elif not m:
        out.append("label does not name C*")
    else:
        rule = m.group(1).strip()
        want = CSTAR_RULES.get(rule, None)
        if not _same(p["C_star"], want if want is not None else _num(rule)):
            out.append(f"C*: C_star={p['C_star']!r}, label implies {rule!r}")
    if p.get("C", "$C") != "$C":
        out.append("C is not the protocol's")
    n = re.search(r"\b(\d+) basis points", label)
    if p.get("numR") is None and "full" not in label:
        out.append("full kernel expansion: say 'full'")
    if p.get("numR") is not None and (not n or int(n.group(1)) != p["numR"]):
        out.append(f"numR={p['numR']!r} not named as basis points")
    unknown = set(p) - {"C", "C_star", "sigma", "numR"}
    if unknown:
        out.append(f"parameters not named by the label: {sorted(unknown)}")
    return out


def _pnu_problems(label: str, p: dict) -> list[str]:
    """pywsl PNU rows: its own ``lam`` and ``eta`` (not mapped from C, see
    ``benchmarks/peers/pywsl_adapter.py``) and the basis size, passed and named."""
    out = []
    for k, rx in (("lam", r"lam = ([-0-9.e+^]+)"), ("eta", r"\beta = ([0-9.e+-]+)"),
                  ("n_basis", r"\b(\d+) basis")):
        m = re.search(rx, label)
        if k not in p:
            out.append(f"{k} not passed explicitly")
        elif not m:
            out.append(f"label does not name {k}")
        elif not _same(p[k], _num(m.group(1))):
            out.append(f"{k}={p[k]!r}, label says {m.group(1)}")
    unknown = set(p) - {"prior", "sigma", "lam", "eta", "n_basis"}
    if unknown:
        out.append(f"parameters not named by the label: {sorted(unknown)}")
    return out


def _su_problems(method: str, label: str, p: dict) -> list[str]:
    """SU rows (TSGSU and the baselines CUU, SUSL): every claim holds and
    every parameter set away from the estimator's default is named."""
    out: list[str] = []
    named: set[str] = set()
    defaults = _defaults(method)

    def get(k):
        return p.get(k, defaults.get(k))

    def need(k, want, why):
        named.add(k)
        if not _same(get(k), want):
            out.append(f"{why}: {k}={get(k)!r}, label implies {want!r}")

    if "as printed" in label:
        if method != "tsgsu":
            out.append("'as printed' is defined for TSGSU only")
        for k, v in TSGSU_AS_PRINTED.items():
            need(k, v, "as printed")
    if re.search(r"\bdefault\b(?! features)", label):
        need("solver", "lbfgs", "default")
        need("correction", "none", "default")
    if "L-BFGS" in label:
        need("solver", "lbfgs", "L-BFGS")
    if re.search(r"\bSGD\b", label):
        need("solver", "sgd", "SGD")
    m = re.search(r"correction (abs|none|relu)", label)
    if m:
        need("correction", m.group(1), "correction")
    if "default features" in label:
        need("max_features", None, "default features")
    m = re.search(r"\b(\d+) centers", label)
    if m:
        need("n_centers", int(m.group(1)), "centers")
    elif "all centers" in label:
        need("n_centers", None, "all centers")
    for k, rx in (("block_size", r"\b(\d+) features per iteration"),
                  ("max_iter", r"\b(\d+) iterations"),
                  ("batch_size", r"\bbatch (\d+)"),
                  ("eta0", r"eta0 = ([0-9.e+-]+)"),
                  ("lam", r"lam = ([-0-9.e+^]+)")):
        m = re.search(rx, label)
        if m:
            need(k, _num(m.group(1)), k)
    if method == "tsgsu" and get("solver") == "sgd" and "as printed" not in label \
            and not re.search(r"iterations", label):
        out.append("SGD row: name the iterations")
    for k, v in p.items():
        if k in named or k in {"prior", "sigma"}:
            continue
        if k not in defaults:
            out.append(f"unknown parameter {k}")
        elif not _same(v, defaults[k]):
            out.append(f"{k}={v!r} differs from the default and the label does "
                       "not name it")
    return out


def label_problems(row: dict) -> list[str]:
    """What is wrong with ``row``'s label given its parameters (empty: ok)."""
    method, label = row["method"], row["name"]
    label = " ".join(label.split())
    p = dict(row.get("params", {}))
    if method == "qns3vm":
        return _peer_problems(label, p)
    if method == "pywsl_pnu":
        return _pnu_problems(label, p)
    if method in SU:
        return _su_problems(method, label, p)
    out: list[str] = []
    named: set[str] = set()
    defaults = _defaults(method)

    def get(k):
        return p.get(k, defaults.get(k))

    def need(k, want, why):
        named.add(k)
        if not _same(get(k), want):
            out.append(f"{why}: {k}={get(k)!r}, label implies {want!r}")

    # -- C and C*
    if method in S3VM:
        m = re.search(r"C\* = ([^,)]+)", label)
        if "C_star" not in p:
            out.append("C_star not passed explicitly")
        if not m:
            out.append("label does not name C*")
        else:
            rule = m.group(1).strip()
            want = CSTAR_RULES.get(rule)
            need("C_star", want if want is not None else _num(rule), "C*")
    m = re.search(r"(?<![\w*])C = ([0-9.e+-]+)", label)
    if m:
        need("C", _num(m.group(1)), "C")
    elif "C" in p:
        need("C", "$C", "C (the protocol's; a label names any other)")
    # -- kernel width
    if re.search(r"sigma = scale", label):
        need("sigma", "scale", "sigma")
    elif "sigma" in p:
        need("sigma", "$sigma", "sigma (the protocol's rule)")
    # -- configurations
    printed = "as printed" in label or "paper protocol" in label
    if printed:
        if method not in FEATURE_KEY:
            out.append("'as printed' is defined for TSGS3VM/FRS3VM only")
        for k, v in AS_PRINTED.items():
            need(k, v, "as printed")
        if method == "frs3vm":
            for k, v in AS_PRINTED_FRS.items():
                need(k, v, "as printed (FRS3VM)")
        if not re.search(r"gamma = ", label):
            out.append("as printed: the label must name the fixed step gamma")
    if re.search(r"\bdefault\b(?! features)", label):
        need("solver", "lbfgs", "default")
        if method in FEATURE_KEY and get(FEATURE_KEY[method]) is not None:
            out.append("default: the feature count is not the default")
        named.add(FEATURE_KEY.get(method, ""))
        if method in FEATURE_KEY:
            need("C_star", "$cstar_LU", "default (the documented C* rule)")
    if "L-BFGS" in label:
        need("solver", "lbfgs", "L-BFGS")
    if re.search(r"\bSGD\b", label):
        need("solver", "sgd", "SGD")
    # -- feature counts
    fk = FEATURE_KEY.get(method)
    if fk:
        sqrt = re.search(r"ceil\(sqrt n\) features( in total| per iteration)?",
                         label)
        count = re.search(r"\b(\d+) features", label)
        if "default features" in label:
            named.add(fk)
            need(fk, None, "default features (weakkernels._dsg.primal_features)")
        elif sqrt and method == "tsgs3vm":
            if not sqrt.group(1):
                out.append("TSGS3VM: say 'in total' or 'per iteration'")
            elif sqrt.group(1) == " in total":
                need("max_features", "$sqrt_n", "features in total")
                need("block_size", "$sqrt_n", "features in total (one block)")
            else:
                need("block_size", "$sqrt_n", "features per iteration")
                need("max_features", None, "features per iteration (no cap)")
        elif sqrt:
            named.add(fk)
            if get(fk) not in ("sqrt", "$sqrt_n"):
                out.append(f"ceil(sqrt n) features: {fk}={get(fk)!r}")
        elif count:
            n = int(count.group(1))
            named.add(fk)
            value = get(fk)
            if not _same(value, n):
                out.append(f"{n} features: {fk}={value!r}")
        elif get("solver") == "lbfgs" or get(fk) is not None:
            out.append("label does not name the feature count")
    for k, rx in (("eta0", r"gamma = ([0-9.e+-]+)"), ("lam", r"lam = ([-0-9.e+^]+)"),
                  ("max_iter", r"\b(\d+) iterations"),
                  ("n_passes", r"\b(\d+) passes"),
                  ("batch_size", r"\bbatch (\d+)"),
                  ("block_size", r"\bblock (\d+)")):
        m = re.search(rx, label)
        if m:
            need(k, _num(m.group(1)), k)
            if k == "eta0":
                need("learning_rate", "fixed", "gamma (paper 000's fixed step)")
    if "no C* choice" in label:  # C* as given, not chosen on held-out labels
        need("selection", None, "no C* choice")
    # SolverOptions fields named as field=value (primal_method=lbfgs,
    # newton_finish=True; values read as the protocol's YAML reads them):
    # exactly the row's solver_options
    # values as the protocol's own YAML reads them; None as Python spells it
    said = {k: None if v == "None" else yaml.safe_load(v)
            for k, v in re.findall(r"\b(\w+)=([\w.]+)", label)
            if k in OPTION_FIELDS}
    if said:
        named.add("solver_options")
        options = p.get("solver_options") or {}
        if options != said:
            out.append(f"{said} named: solver_options={options!r}")
    # -- every parameter set away from the default is named
    free = {"sigma", "C", "C_star"}
    if method == "qsgs2auc":
        free |= {"batch_size", "n_passes"}  # the protocol's, same for every row
    for k, v in p.items():
        if k in named or k in free:
            continue
        if k not in defaults:
            out.append(f"unknown parameter {k}")
        elif not _same(v, defaults[k]):
            out.append(f"{k}={v!r} differs from the default and the label does "
                       "not name it")
    return out


def _rows(text: str):
    proto = yaml.safe_load(text)
    return [m for m in proto.get("methods", []) if m["method"] in CHECKED]


@pytest.mark.parametrize("path", PROTOCOLS, ids=lambda p: p.stem)
def test_protocol_labels_match_params(path):
    problems = {m["name"]: label_problems(m) for m in _rows(path.read_text())}
    assert not {k: v for k, v in problems.items() if v}


@pytest.mark.parametrize("path", PROTOCOLS, ids=lambda p: p.stem)
def test_protocol_params_resolve(path):
    """Every ``$name`` a row uses is one the harness substitutes."""
    import harness

    proto = harness.load_protocol(path.stem)
    info = {"prior": 0.5, "n_labeled": 200, "n_unlabeled": 20000}
    ctx = harness.context(proto, info, 20200, 0.1)
    for m in proto.get("methods", []):
        resolved = harness.resolve_params(m.get("params", {}), ctx)
        assert not any(isinstance(v, str) and v.startswith("$")
                       for v in resolved.values())
    assert ctx.get("cstar_LU") is None or math.isclose(
        ctx["cstar_LU"], float(proto.get("C", 1.0)) * 200 / 20000)


def test_old_paper000_protocol_fails():
    """The protocol before the labels were fixed: 'paper protocol' ran the project's
    defaults, CCCP-TSVM named no C* -- the check must catch both."""
    old = subprocess.run(
        ["git", "show", "6ad07db:benchmarks/protocols/paper000.yaml"],
        cwd=ROOT, capture_output=True, text=True)
    if old.returncode:
        pytest.skip("history not available")
    problems = {m["name"]: label_problems(m) for m in _rows(old.stdout)}
    assert problems["TSGS3VM (paper protocol)"]
    assert any("solver" in s for s in problems["TSGS3VM (paper protocol)"])
    assert any("C*" in s for s in problems["CCCP-TSVM (ours, exact kernel)"])


def test_removing_cstar_fails():
    path = ROOT / "benchmarks" / "protocols" / "paper004.yaml"
    (row,) = [m for m in _rows(path.read_text())
              if m["name"] == "CCCP-TSVM (exact kernel, C* = C n_l/n_u)"]
    assert label_problems(row) == []
    row = {**row, "params": {k: v for k, v in row["params"].items()
                             if k != "C_star"}}
    assert label_problems(row)
    with pytest.raises(ValueError, match="C_star"):
        worker.make_estimator("cccp_tsvm", row["params"], 0)


def test_qns3vm_rows_name_their_cstar():
    """QN-S3VM's C* is mapped to its lamU by the adapter: the row passes it,
    the label names it; removing it fails the check and the worker."""
    path = ROOT / "benchmarks" / "protocols" / "g50c_like.yaml"
    rows = [m for m in _rows(path.read_text()) if m["method"] == "qns3vm"]
    assert len(rows) == 3 and all(label_problems(m) == [] for m in rows)
    row = {**rows[0], "params": {k: v for k, v in rows[0]["params"].items()
                                 if k != "C_star"}}
    assert label_problems(row)
    with pytest.raises(ValueError, match="C_star"):
        worker.make_estimator("qns3vm", row["params"], 0)
    row = {**rows[0], "params": {**rows[0]["params"], "C_star": "$C"}}
    assert label_problems(row)  # label says C n_l/n_u
    row = {**rows[1], "params": {**rows[1]["params"], "numR": 300}}
    assert label_problems(row)  # label says 200 basis points


def test_old_paper002_rows_fail():
    """Before the labels were fixed the row "TSGSU" ran the L-BFGS default with 100
    iterations and an SGD step it never used, and "SUSL (2000 centers)" ran
    lam = 0.01 without saying so: the check must catch both."""
    old = {"name": "TSGSU", "method": "tsgsu",
           "params": {"prior": "$prior", "sigma": "$sigma", "batch_size": 1000,
                      "max_iter": 100, "block_size": 10, "eta0": 1.0,
                      "lam": 0.0001}}
    problems = label_problems(old)
    assert any("max_iter" in s for s in problems)
    assert any("lam" in s for s in problems)
    susl = {"name": "SUSL (2000 centers)", "method": "susl",
            "params": {"prior": "$prior", "sigma": "$sigma", "n_centers": 2000,
                       "lam": 0.01}}
    assert any("lam" in s for s in label_problems(susl))


def test_pnu_rows_name_their_lam():
    row = {"name": "PNU (pywsl, 200 basis, lam = 0.01, eta = 0.5)",
           "method": "pywsl_pnu",
           "params": {"prior": "$prior", "sigma": "$sigma", "n_basis": 200,
                      "lam": 0.01, "eta": 0.5}}
    assert label_problems(row) == []
    for k, v in (("lam", 0.1), ("eta", 0.0), ("n_basis", 100)):
        assert label_problems({**row, "params": {**row["params"], k: v}}), k
    old = {**row, "name": "PNU (pywsl, 200 basis)",
           "params": {"prior": "$prior", "sigma": "$sigma", "n_basis": 200}}
    assert label_problems(old)  # the rows before the labels were fixed


def test_su_as_printed_needs_settings():
    path = ROOT / "benchmarks" / "protocols" / "paper002_su.yaml"
    (row,) = [m for m in _rows(path.read_text())
              if m["method"] == "tsgsu" and "as printed" in m["name"]]
    assert label_problems(row) == []
    for k, v in (("solver", "lbfgs"), ("correction", "none"), ("max_iter", 300),
                 ("block_size", 20), ("eta0", 10.0)):
        bad = {**row, "params": {**row["params"], k: v}}
        assert label_problems(bad), k


def test_as_printed_claim_needs_settings():
    row = {"name": "TSGS3VM (as printed, ceil(sqrt n) features per iteration, "
                   "gamma = 0.001, C* = C n_l^2/n_u^2)", "method": "tsgs3vm",
           "params": {"C": "$C", "C_star": "$cstar_eq1", "sigma": "$sigma",
                      "block_size": "$sqrt_n", "max_features": None}}
    assert any("solver" in s for s in label_problems(row))
    row["params"].update(solver="sgd", loss="hinge", unlabeled_loss="shg",
                         balance="none", anneal=0.0, learning_rate="fixed",
                         eta0=0.001, batch_size=256)
    assert label_problems(row) == []
    row["params"]["eta0"] = 0.01  # label says 0.001
    assert label_problems(row)


# ------------------------------------------------------------- step sizes
def _hand_steps(schedule: str, eta0: float, T: int) -> list[float]:
    """The schedules written out from their definitions, term by term."""
    out = []
    for t in range(T):
        if schedule == "constant":  # paper 000 Theorem 1: theta / T^(3/4)
            out.append(eta0 / math.sqrt(math.sqrt(T)) ** 3)
        elif schedule == "decay":  # eta0 / (eta0 + t)
            out.append(1.0 / (1.0 + t / eta0))
        else:  # "fixed": paper 000 Sec. 6's gamma = 1 / eta
            out.append(eta0)
    return out


@pytest.mark.parametrize("schedule", ["constant", "decay", "fixed"])
@pytest.mark.parametrize("eta0,T", [(1.0, 16), (0.001, 81), (4.0, 10)])
def test_step_size_against_hand_computation(schedule, eta0, T):
    from weakkernels._dsg import SCHEDULES, step_size

    got = [step_size(SCHEDULES[schedule], eta0, t, T) for t in range(T)]
    np.testing.assert_allclose(got, _hand_steps(schedule, eta0, T), rtol=1e-12)


def test_step_size_known_values():
    """A few values worked out by hand: 1 / 16^(3/4) = 1/8; 2 / (2 + 3) = 0.4;
    paper 000's eta = 1000 gives gamma = 0.001 at every step."""
    from weakkernels._dsg import SCHEDULES, step_size

    assert step_size(SCHEDULES["constant"], 1.0, 5, 16) == pytest.approx(0.125)
    assert step_size(SCHEDULES["decay"], 2.0, 3, 100) == pytest.approx(0.4)
    assert step_size(SCHEDULES["decay"], 2.0, 0, 100) == pytest.approx(1.0)
    assert step_size(SCHEDULES["fixed"], 1 / 1000, 77, 100) == 0.001


def test_fixed_step_reaches_sgd_loop():
    """learning_rate="fixed" with eta0 = 1/eta: every SGD step uses gamma."""
    from weakkernels import TSGS3VM, _dsg

    seen = []
    orig = _dsg.step_size

    def spy(schedule, eta0, t, T):
        seen.append(orig(schedule, eta0, t, T))
        return seen[-1]

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0, 1, 0)
    y[20:] = -1
    mp = pytest.MonkeyPatch()
    import weakkernels.tsgs3vm as mod

    mp.setattr(mod, "step_size", spy)
    try:
        TSGS3VM(solver="sgd", learning_rate="fixed", eta0=0.01, max_iter=7,
                batch_size=16, random_state=0).fit(X, y)
    finally:
        mp.undo()
    assert seen[-7:] == [0.01] * 7


# ----------------------------------------------------- documented C* defaults
def _semi(n_l=30, n_u=170, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_l + n_u, 4))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    y[n_l:] = -1
    return X, y


@pytest.mark.parametrize("cls_name,solver", [("TSGS3VM", "lbfgs"),
                                             ("TSGS3VM", "sgd"),
                                             ("FRS3VM", "lbfgs")])
@pytest.mark.parametrize("C", [1.0, 10.0])
def test_default_cstar_is_C_nl_over_nu(cls_name, solver, C):
    import weakkernels

    X, y = _semi()
    est = getattr(weakkernels, cls_name)(C=C, solver=solver, max_iter=5,
                                          random_state=0, selection=None, **(
        {"max_features": 64} if cls_name == "TSGS3VM" else {"n_components": 64}))
    est.fit(X, y)
    assert est.C_star_ == pytest.approx(C * 30 / 170, rel=1e-12)
    est.set_params(C_star=0.25).fit(X, y)
    assert est.C_star_ == 0.25


def test_feature_count_readings():
    """The two readings of paper 000's ceil(sqrt n): a total budget
    (max_features) and a per-iteration block (block_size, no cap)."""
    from weakkernels import FRS3VM, TSGS3VM

    X, y = _semi()
    q = math.ceil(math.sqrt(len(X)))  # 15
    common = dict(solver="sgd", max_iter=6, batch_size=16, random_state=0)
    total = TSGS3VM(block_size=q, max_features=q, **common).fit(X, y)
    assert total.n_features_model_ == q
    per_iter = TSGS3VM(block_size=q, max_features=None, **common).fit(X, y)
    assert per_iter.n_features_model_ == 6 * q
    frs = FRS3VM(n_components="sqrt", **common).fit(X, y)
    assert frs.n_features_model_ == q
    from weakkernels._dsg import primal_features

    fourier = TSGS3VM(max_iter=5, random_state=0, features="fourier").fit(X, y)
    assert fourier.n_features_model_ == primal_features(len(X), 32)
    # the default basis on a small dense set: Nyström on every row
    default = TSGS3VM(max_iter=5, random_state=0).fit(X, y)
    assert default.features_ == "nystroem" and default.n_features_model_ == len(X)
