"""The published peers' parameters mean what the rows beside them mean.

QN-S3VM (``benchmarks/peers/qns3vm_adapter.py``): its objective, written out
below as a naive NumPy function from ``semisupervised/qns3vm.py``
(``QN_S3VM_Dense.__getFitness``), at the adapter's mapped ``lam``/``lamU`` must
be a constant multiple of our objective with ``C`` and ``C*`` on *sums*
(SVC's and CCCP-TSVM's convention) for every coefficient vector -- the two
then have the same minimizers. The old mapping ``lam = 1 / (2 C)`` must fail
that check. When the peer's venv exists (``sh benchmarks/peers/setup_peer_venv.sh
qns3vm``) the naive function is also checked against the package itself, and
the adapter against what it hands the package.

pywsl's PNU (``benchmarks/peers/pywsl_adapter.py``): the objective its
docstring states is checked against the package's closed-form solution
(naive copy here; the package itself when its venv exists).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers"
VENVS = ROOT / "benchmarks" / ".peer-venvs"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, PEERS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


qns = _load("qns3vm_adapter")
pnu = _load("pywsl_adapter")

GAMMA, S = 20.0, 3.0  # QN-S3VM's surrogate_gamma and surrogate_s defaults


# ------------------------------------------------------------------ QN-S3VM
def _smooth_hinge(t):
    """QN-S3VM's labeled loss: log(1 + exp(gamma (1 - t))) / gamma."""
    return np.logaddexp(0.0, GAMMA * (1.0 - t)) / GAMMA


def peer_objective(c, b, KLR, KUR, KRR, yl, lam, lamU):
    """QN-S3VM's objective as printed in ``QN_S3VM_Dense.__getFitness``:
    term1 = sum log(1 + exp(gamma (1 - y f))) / (gamma L), term2 = lamU / U
    sum exp(-s f^2), term3 = lam c' K_RR c, with f = K c + b."""
    fL, fU = KLR @ c + b, KUR @ c + b
    return (_smooth_hinge(yl * fL).sum() / len(yl)
            + lamU / len(fU) * np.exp(-S * fU ** 2).sum() + lam * c @ KRR @ c)


def our_objective(c, b, KLR, KUR, KRR, yl, C, C_star):
    """Ours (SVC / CCCP-TSVM / TSGS3VM convention): 1/2 ||f||^2 + C sum_L l
    + C* sum_U u, with the peer's loss shapes."""
    fL, fU = KLR @ c + b, KUR @ c + b
    return (0.5 * c @ KRR @ c + C * _smooth_hinge(yl * fL).sum()
            + C_star * np.exp(-S * fU ** 2).sum())


def _rbf(A, B, sigma):
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-sigma * d)


def _tiny(L=7, U=23, d=3, seed=0):
    rng = np.random.default_rng(seed)
    XL, XU = rng.normal(size=(L, d)), rng.normal(size=(U, d))
    yl = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    yl[:2] = [-1.0, 1.0]
    return XL, XU, yl


def _matrices(XL, XU, sigma):
    X = np.vstack([XL, XU])
    K = _rbf(X, X, sigma)
    return K[: len(XL)], K[len(XL):], K


def _proportional(a, b, rtol=1e-10):
    """a == k b for one k > 0 (relative residual of the least-squares k)."""
    k = float(a @ b / (b @ b))
    return k, np.max(np.abs(a - k * b)) <= rtol * np.max(np.abs(a))


def _objectives(lam, lamU, C, C_star, seed=0):
    XL, XU, yl = _tiny(seed=seed)
    KLR, KUR, KRR = _matrices(XL, XU, 0.4)
    rng = np.random.default_rng(seed + 1)
    peer, ours = [], []
    for scale in (0.01, 0.1, 0.3, 1.0, 3.0):  # loss terms vary independently
        for _ in range(6):
            c = scale * rng.normal(size=KRR.shape[0])
            b = float(rng.normal(scale=0.3))
            peer.append(peer_objective(c, b, KLR, KUR, KRR, yl, lam, lamU))
            ours.append(our_objective(c, b, KLR, KUR, KRR, yl, C, C_star))
    return np.array(peer), np.array(ours), len(yl), len(XU)


@pytest.mark.parametrize("C", [0.5, 10.0])
@pytest.mark.parametrize("cstar_rule", ["LU", "C", "fixed"])
def test_qns3vm_mapping_gives_our_objective(C, cstar_rule):
    L, U = 7, 23
    C_star = {"LU": None, "C": C, "fixed": 0.037}[cstar_rule]
    p = qns.qns3vm_parameters(C, C_star, L, U, sigma=0.4)
    eff = C * L / U if C_star is None else C_star
    peer, ours, _, _ = _objectives(p["lam"], p["lamU"], C, eff)
    k, ok = _proportional(peer, ours)
    assert ok
    assert k == pytest.approx(2 * p["lam"], rel=1e-10)
    if C_star is None:
        assert p["lamU"] == 1.0  # C* = C L/U is the package's default lamU


def test_old_qns3vm_mapping_fails():
    """lam = 1 / (2 C) (C on the mean labeled loss) is not our objective."""
    C, L, U = 10.0, 7, 23
    peer, ours, _, _ = _objectives(1.0 / (2.0 * C), 1.0, C, C * L / U)
    assert not _proportional(peer, ours)[1]


def test_qns3vm_width():
    """Its RBF exp(-d^2 / (2 width^2)) equals ours exp(-sigma d^2)."""
    for sigma in (0.01, 0.4, 7.0):
        w = qns.qns3vm_parameters(1.0, None, 1, 1, sigma)["sigma"]
        d2 = np.array([0.0, 0.3, 2.0, 11.0])
        np.testing.assert_allclose(np.exp(-d2 / (2 * w * w)), np.exp(-sigma * d2),
                                   rtol=1e-13)


def _peer_python(name):
    py = VENVS / name / "bin" / "python"
    if not (VENVS / name / ".ok").exists() or not py.exists():
        pytest.skip(f"peer venv {name} not set up "
                    f"(sh benchmarks/peers/setup_peer_venv.sh {name})")
    return str(py)


def _run_in(py, script, payload):
    out = subprocess.run([py, "-c", textwrap.dedent(script), json.dumps(payload)],
                         capture_output=True, text=True, cwd=PEERS, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


QNS_SCRIPT = """
import contextlib, io, json, random, sys
import numpy as np
with contextlib.redirect_stdout(io.StringIO()):
    from semisupervised import QN_S3VM
    from semisupervised.qns3vm import QN_S3VM_Dense
from qns3vm_adapter import QNS3VMAdapter
a = json.loads(sys.argv[1])
XL, XU, yl = np.array(a["XL"]), np.array(a["XU"]), np.array(a["yl"], int)
# 1. the package's objective at given coefficients, and its (centred) matrices
m = QN_S3VM_Dense(XL.tolist(), yl.tolist(), XU.tolist(), random.Random(0),
                  kernel_type="RBF", numR=None, **a["params"])
m._QN_S3VM_Dense__initializeMatrices()
f = m._QN_S3VM_Dense__getFitness
out = {"fitness": [float(f(np.array(c))) for c in a["cs"]],
       "b": float(m._QN_S3VM_Dense__b),
       "KLR": np.asarray(m._QN_S3VM_Dense__KLR).tolist(),
       "KUR": np.asarray(m._QN_S3VM_Dense__KUR).tolist(),
       "KRR": np.asarray(m._QN_S3VM_Dense__KRR).tolist()}
# 2. what the adapter hands the package
X = np.vstack([XL, XU]); y = np.r_[np.where(yl > 0, 1, 0), -np.ones(len(XU), int)]
ad = QNS3VMAdapter(C=a["C"], sigma=a["sigma"], C_star=a["C_star"]).fit(X, y)
inner = ad.model_._QN_S3VM__model
out["adapter"] = {k: float(getattr(inner, "_QN_S3VM_Dense__" + k))
                  for k in ("lam", "sigma")}
out["adapter"]["lamU_final"] = float(inner._QN_S3VM_Dense__lamU)
print(json.dumps(out))
"""


@pytest.mark.parametrize("C_star", [None, 2.5])
def test_qns3vm_naive_objective_is_the_package(C_star):
    py = _peer_python("qns3vm")
    XL, XU, yl = _tiny()
    C, sigma = 10.0, 0.4
    p = qns.qns3vm_parameters(C, C_star, len(yl), len(XU), sigma)
    rng = np.random.default_rng(5)
    cs = [s * rng.normal(size=len(yl) + len(XU)) for s in (0.01, 0.3, 1.0, 3.0)]
    got = _run_in(py, QNS_SCRIPT, {
        "XL": XL.tolist(), "XU": XU.tolist(), "yl": yl.astype(int).tolist(),
        "params": p, "cs": [c.tolist() for c in cs], "C": C, "sigma": sigma,
        "C_star": C_star})
    KLR, KUR, KRR = (np.array(got[k]) for k in ("KLR", "KUR", "KRR"))
    naive = [peer_objective(c, got["b"], KLR, KUR, KRR, yl, p["lam"], p["lamU"])
             for c in cs]
    np.testing.assert_allclose(got["fitness"], naive, rtol=1e-9)
    # the adapter passes the mapped parameters (lamU: the last annealing stage)
    assert got["adapter"]["lam"] == pytest.approx(p["lam"], rel=1e-12)
    assert got["adapter"]["sigma"] == pytest.approx(p["sigma"], rel=1e-12)
    assert got["adapter"]["lamU_final"] == pytest.approx(p["lamU"], rel=1e-12)


# ------------------------------------------------------------------- pywsl PNU
def pnu_objective(theta, Kp, Kn, Ku, prior, eta, lam):
    """The objective ``pywsl_adapter``'s docstring states for ``PNU_SL``:
    (1 - eta) R_PN + eta R_PU + lam ||theta||^2 with the squared loss
    (1 - z)^2, R_PN = pi mean_P l(g) + (1 - pi) mean_N l(-g), R_PU = pi mean_P
    (l(g) - l(-g)) + mean_U l(-g), g = K theta (eta >= 0: PN + PU)."""
    def loss(z):
        return (1.0 - z) ** 2

    gp, gn, gu = Kp @ theta, Kn @ theta, Ku @ theta
    r_pn = prior * loss(gp).mean() + (1 - prior) * loss(-gn).mean()
    r_pu = prior * (loss(gp) - loss(-gp)).mean() + loss(-gu).mean()
    return (1 - eta) * r_pn + eta * r_pu + lam * theta @ theta


def pnu_closed_form(Kp, Kn, Ku, prior, eta, lam):
    """``pywsl.ssl.pnu_mr.PNU_SL.fit``'s linear system, copied term by term."""
    n_p, n_n, n_u = len(Kp), len(Kn), len(Ku)
    H_pn = prior * Kp.T @ Kp / n_p + (1 - prior) * Kn.T @ Kn / n_n
    H_u = Ku.T @ Ku / n_u
    h_p = prior * Kp.sum(0) / n_p
    h_n = (1 - prior) * Kn.sum(0) / n_n
    h_u = Ku.sum(0) / n_u
    A = (1 - eta) * H_pn + eta * H_u + lam * np.eye(Kp.shape[1])
    return np.linalg.solve(A, (1 - eta) * (h_p - h_n) + eta * (2 * h_p - h_u))


def _pnu_problem(seed=0):
    rng = np.random.default_rng(seed)
    Xp, Xn = rng.normal(0.7, 1, (9, 2)), rng.normal(-0.7, 1, (11, 2))
    Xu = rng.normal(size=(30, 2))
    Xc = Xu[:8]
    return [_rbf(A, Xc, 0.5) for A in (Xp, Xn, Xu)]


@pytest.mark.parametrize("eta", [0.0, 0.5, 0.9])
def test_pnu_closed_form_minimizes_the_documented_objective(eta):
    Kp, Kn, Ku = _pnu_problem()
    prior, lam = 0.4, 1e-2
    theta = pnu_closed_form(Kp, Kn, Ku, prior, eta, lam)
    f0 = pnu_objective(theta, Kp, Kn, Ku, prior, eta, lam)
    rng = np.random.default_rng(1)
    for _ in range(20):  # strictly convex quadratic: every step goes uphill
        d = rng.normal(size=theta.size) * 1e-3
        assert pnu_objective(theta + d, Kp, Kn, Ku, prior, eta, lam) > f0
    # a penalty of lam / 4 (the (1 - z)^2 / 4 loss reading) is a different
    # objective: the package's solution is not its minimizer
    g = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = 1e-6
        g[i] = (pnu_objective(theta + e, Kp, Kn, Ku, prior, eta, 4 * lam)
                - pnu_objective(theta - e, Kp, Kn, Ku, prior, eta, 4 * lam)) / 2e-6
    assert np.abs(g).max() > 1e-4


PNU_SCRIPT = """
import json, sys
import numpy as np
from pywsl.ssl.pnu_mr import PNU_SL
a = json.loads(sys.argv[1])
X, t = np.array(a["X"]), np.array(a["t"], int)
np.random.seed(0)
m = PNU_SL(prior=a["prior"], eta=a["eta"], sigma=a["width"], lam=a["lam"],
           n_basis=a["n_basis"]).fit(X, t)
print(json.dumps({"coef": m.coef_.tolist(), "centers": m.x_c.tolist()}))
"""


def test_pnu_naive_is_the_package():
    py = _peer_python("pywsl")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    t = np.zeros(60, int)
    t[:10], t[10:22] = 1, -1
    X[:10] += 0.8
    sigma, prior, eta, lam = 0.5, 0.45, 0.5, 1e-2
    width = pnu.pywsl_width(sigma)
    got = _run_in(py, PNU_SCRIPT, {"X": X.tolist(), "t": t.tolist(), "prior": prior,
                                   "eta": eta, "width": width, "lam": lam,
                                   "n_basis": 15})
    Xc = np.array(got["centers"])
    Kp, Kn, Ku = (_rbf(X[t == v], Xc, sigma) for v in (1, -1, 0))
    np.testing.assert_allclose(got["coef"],
                               pnu_closed_form(Kp, Kn, Ku, prior, eta, lam),
                               rtol=1e-6, atol=1e-9)


def test_pnu_width():
    for sigma in (0.02, 0.5, 3.0):
        w = pnu.pywsl_width(sigma)
        assert math.isclose(w, 1 / math.sqrt(2 * sigma))


# --------------------------------------------------------- RBFSampler + SGD
def test_rbf_sgd_alpha_is_the_rows_C():
    """SGDClassifier minimizes mean hinge + alpha ||w||^2 / 2, so the SVC row's
    ``1/2 ||w||^2 + C sum hinge`` is ``alpha = 1 / (C L)``: every rbf_sgd row
    of a protocol with a C must pass that alpha."""
    import yaml

    seen = 0
    for path in sorted((ROOT / "benchmarks" / "protocols").glob("*.yaml")):
        proto = yaml.safe_load(path.read_text())
        for m in proto.get("methods", []):
            if m["method"] != "rbf_sgd" or "C" not in proto:
                continue
            seen += 1
            want = 1.0 / (float(proto["C"]) * int(proto["n_labeled"]))
            assert m["params"]["alpha"] == pytest.approx(want, rel=1e-12), path.stem
    assert seen >= 2
