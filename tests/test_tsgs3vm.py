"""TSGS3VM / FRS3VM: losses, unbiased gradient, naive reference, determinism,
scikit-learn contract, bad input."""

import io
import warnings

import numba
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from tests._data import two_gaussians

from weakkernels import FRS3VM, TSGS3VM, ModelFormatError, SolverOptions, _dsg, load
from weakkernels._dsg import FunctionalModel, step_size
from weakkernels._dsg import primal as _primal
from weakkernels._selection import one_se_stage, resolve_selection
from weakkernels._threads import one_blas_thread
from weakkernels.kernels import kernel_matrix
from weakkernels.pipeline.synthetic import SyntheticSpec, synthetic_rows
from weakkernels.random_features import FeatureSpec
from weakkernels.tsgs3vm import (
    UNLABELED_LOSSES,
    hinge_grad,
    unlabeled_loss,
    unlabeled_loss_grad,
)

# The SGD path (paper 000 Algorithm 1) and the default L-BFGS path, small.
FAST = dict(solver="sgd", batch_size=32, block_size=16, max_iter=30, random_state=0)
FAST_LBFGS = dict(max_features=128, max_iter=50, random_state=0)


# ---------------------------------------------------------------- losses ----
@pytest.mark.parametrize("name", UNLABELED_LOSSES)
def test_unlabeled_loss_derivatives_by_finite_differences(name):
    f = np.linspace(-2.2, 2.2, 441)
    # stay away from the kinks (|f| = 1, f = +-s, f = 0) where only a
    # subgradient exists
    kinks = np.array([-1.0, 1.0, 0.0, 0.3, -0.3])
    f = f[np.min(np.abs(f[:, None] - kinks[None, :]), axis=1) > 1e-3]
    h = 1e-6
    fd = (unlabeled_loss(name, f + h) - unlabeled_loss(name, f - h)) / (2 * h)
    np.testing.assert_allclose(unlabeled_loss_grad(name, f), fd, atol=1e-5)


def test_unlabeled_losses_are_symmetric_and_peak_at_zero():
    f = np.linspace(-3, 3, 61)
    for name in UNLABELED_LOSSES:
        u = unlabeled_loss(name, f)
        np.testing.assert_allclose(u, unlabeled_loss(name, -f))
        assert u[30] == u.max() > u[-1]
        # far from the boundary the loss is flat at its minimum (the symmetric
        # ramp sits at the constant 1 - s there, paper 004 Eq. 1.11)
        assert abs(u[-1] - u.min()) < 1e-6
        assert abs(unlabeled_loss_grad(name, np.array([3.0]))[0]) < 1e-6


def test_hinge_derivative_by_finite_differences():
    z = np.array([-2.0, 0.3, 0.99, 1.01, 4.0])
    h = 1e-7
    fd = (np.maximum(0, 1 - (z + h)) - np.maximum(0, 1 - (z - h))) / (2 * h)
    np.testing.assert_allclose(hinge_grad(z), fd, atol=1e-6)


# ------------------------------------------------- unbiased gradient ----
def test_triply_stochastic_gradient_is_unbiased():
    """E_omega of one random-feature step equals the exact functional step.

    One step from f = 0 with weights G gives f_1 = -gamma sum_i G_i phi(x_i) phi(.)
    (paper 000 Eq. (5)-(7)); its expectation over the feature seed is
    -gamma sum_i G_i k(x_i, .) (Eq. (4)). Averaged over 600 seeds of 32 features,
    the standard error of each entry is about 0.01 * |G|_1; we allow 0.05.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    Xs = rng.normal(size=(5, 3))
    G = rng.normal(size=(6, 1))
    gamma = 0.5
    exact = -gamma * kernel_matrix(Xs, X, "rbf", 0.4) @ G
    acc = np.zeros_like(exact)
    n_seeds = 600
    with one_blas_thread():
        for seed in range(n_seeds):
            spec = FeatureSpec("rbf", 0.4, 2, 1.0, 3, 32, seed, np.float64)
            model = FunctionalModel(spec, 1, 10)
            model.step(X, G, gamma, 0)
            acc += model.evaluate(Xs)
    assert np.abs(acc / n_seeds - exact).max() < 0.05 * np.abs(G).sum()


# ------------------------------------------------- naive reference ----
def naive_tsgs3vm(X, y, *, C, C_star, sigma, batch_size, block_size, T, eta0,
                  balance, anneal, loss, seed):
    """Slow, obvious NumPy version of Algorithm 1 (float64, explicit features),
    with C and C* on sums."""
    labeled = y != -1
    XL, XU, yl = X[labeled], X[~labeled], y[labeled]
    classes = np.unique(yl)
    Y = np.where(yl == classes[1], 1.0, -1.0)
    r = Y.mean()
    rng = np.random.Generator(np.random.Philox(key=seed))
    spec = FeatureSpec("rbf", sigma, 2, 1.0, X.shape[1], block_size, seed, np.float64)
    Ws, bs, alphas = [], [], []
    m_l, m_u = min(batch_size, len(XL)), min(batch_size, len(XU))

    def f_of(Z):
        out = np.zeros(len(Z))
        for W, b, a in zip(Ws, bs, alphas, strict=True):
            out += (spec.norm * np.cos(Z @ W + b)) @ a
        return out

    for t in range(T):
        il = np.sort(rng.integers(0, len(XL), size=m_l))
        iu = np.sort(rng.integers(0, len(XU), size=m_u))
        gL, gU = f_of(XL[il]), f_of(XU[iu])
        bias = r - gU.mean() if balance else 0.0
        cst = C_star * min(1.0, (t + 1) / (anneal * T)) if anneal > 0 else C_star
        # C and C* weigh sums (SVC's convention): a minibatch mean times n
        Gl = C * len(XL) / m_l * hinge_grad(Y[il] * (gL + bias)) * Y[il]
        Gu = cst * len(XU) / m_u * unlabeled_loss_grad(loss, gU + bias)
        gamma = step_size(1, eta0, t, T)
        alphas = [(1 - gamma) * a for a in alphas]
        W, b = spec.block(t)
        phi = spec.norm * np.cos(np.vstack([XL[il], XU[iu]]) @ W + b)
        Ws.append(W)
        bs.append(b)
        alphas.append(-gamma * phi.T @ np.concatenate([Gl, Gu]))
    return np.concatenate(alphas)


@pytest.mark.parametrize(
    "balance,anneal,loss", [(True, 0.5, "shg"), (False, 0.0, "da")]
)
def test_fit_matches_naive_reference_step_by_step(balance, anneal, loss):
    X, y, _ = two_gaussians(n=120, d=4, n_labeled=10, seed=1)
    kw = dict(C=0.3, C_star=0.02, sigma=0.3, batch_size=16, block_size=8, eta0=2.0,
              balance=balance, anneal=anneal, unlabeled_loss=loss)
    for T in (1, 2, 12):
        est = TSGS3VM(max_iter=T, dtype="float64", random_state=7, solver="sgd",
                      loss="hinge", **kw).fit(X, y)
        ref = naive_tsgs3vm(X, y, T=T, seed=est.seed_, loss=loss,
                            **{k: v for k, v in kw.items() if k != "unlabeled_loss"})
        np.testing.assert_allclose(est.coef_[0], ref, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------- accuracy ----
def test_tsgs3vm_beats_supervised_svm_on_cluster_data():
    """Paper 004's rule (``selection=None``) uses the clusters: below 12 %
    and below SVC on the 10 labels. The default's cross-validated choice
    does not resolve that gain on 10 labels (C* = 0 errs on one of them,
    every other candidate on none: within one SE) and keeps the supervised
    machine -- no better than SVC, and no worse: the price of the one-SE
    rule against C* = 0 on few labels (docs/benchmarks/solvers.md)."""
    X, y, yt = two_gaussians(n=600, d=10, n_labeled=10, sep=3.0, seed=2)
    U = y == -1
    svc = SVC(C=10, gamma=0.05).fit(X[~U], y[~U])
    err_svc = np.mean(svc.predict(X[U]) != yt[U])
    est = TSGS3VM(C=10, sigma=0.05, random_state=0, selection=None).fit(X, y)
    err = np.mean(est.predict(X[U]) != yt[U])
    assert err < 0.12
    assert err <= err_svc
    default = TSGS3VM(C=10, sigma=0.05, random_state=0).fit(X, y)
    assert (default.selection_, default.C_star_) == ("cv", 0.0)
    assert np.mean(default.predict(X[U]) != yt[U]) <= err_svc + 0.01


def test_multiclass_one_vs_rest_shares_features():
    X, y, yt = two_gaussians(n=400, d=6, n_labeled=30, sep=6.0, seed=3, n_classes=3)
    est = TSGS3VM(C=10, sigma=0.1, random_state=0).fit(X, y)
    assert est.coef_.shape[0] == 3
    assert list(est.classes_) == [0, 1, 2]
    U = y == -1
    assert np.mean(est.predict(X[U]) == yt[U]) > 0.8
    P = est.predict_proba(X[:7])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_frs3vm_uses_sqrt_n_features_and_learns():
    X, y, yt = two_gaussians(n=400, d=6, n_labeled=20, sep=3.0, seed=4)
    est = FRS3VM(C=0.5, sigma=0.1, batch_size=64, random_state=0, solver="sgd",
                 n_components="sqrt").fit(X, y)
    assert est.coef_.shape[1] == 20  # ceil(sqrt(400))
    U = y == -1
    assert np.mean(est.predict(X[U]) == yt[U]) > 0.8


def test_feature_budget_bounds_the_model():
    X, y, _ = two_gaussians(n=300, d=5, n_labeled=20, seed=5)
    est = TSGS3VM(max_features=64, block_size=16, batch_size=32, max_iter=40,
                  random_state=0, solver="sgd").fit(X, y)
    assert est.coef_.shape[1] == 64 and est.n_blocks_ == 4 and est.n_iter_ == 40
    with pytest.raises(ValueError, match="smaller than one block"):
        TSGS3VM(max_features=8, block_size=16).fit(X, y)


def test_callback_sees_a_usable_model():
    X, y, _ = two_gaussians(n=200, d=5, n_labeled=20, seed=6)
    seen = []

    def cb(est, n_iter):
        seen.append((n_iter, est.decision_function(X[:3]).shape))

    TSGS3VM(callback=cb, callback_every=5, **FAST).fit(X, y)
    assert seen == [(k, (3,)) for k in range(5, 31, 5)]


def test_predict_proba_is_calibrated_on_labeled_points():
    X, y, yt = two_gaussians(n=400, d=5, n_labeled=40, sep=3.0, seed=8)
    est = TSGS3VM(C=10, sigma=0.1, random_state=0).fit(X, y)
    P = est.predict_proba(X)
    assert P.shape == (400, 2) and np.all((P >= 0) & (P <= 1))
    # probabilities order points as the decision function does
    f = est.decision_function(X)
    assert np.all(np.diff(P[np.argsort(f), 1]) >= -1e-12)
    assert np.mean((P[:, 1] > 0.5) == (f > 0)) > 0.95


# -------------------------------------------------------- determinism ----
@pytest.mark.parametrize("Est", [TSGS3VM, FRS3VM])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_bit_for_bit_determinism_save_load_and_threads(Est, solver, tmp_path):
    X, y, _ = two_gaussians(n=300, d=6, n_labeled=20, seed=9)
    kw = dict(batch_size=32, max_iter=25, random_state=3, solver=solver)
    a = Est(**kw).fit(X, y)
    b = Est(**kw).fit(X, y)
    assert a.to_bytes() == b.to_bytes()
    path = tmp_path / "model.wk"
    a.save(path)
    c = load(path)
    assert type(c) is Est
    np.testing.assert_array_equal(a.decision_function(X), c.decision_function(X))
    assert c.to_bytes() == a.to_bytes()
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = Est(**kw).fit(X, y)
        f1 = one.decision_function(X)
        numba.set_num_threads(2)
        f2 = one.decision_function(X)
    finally:
        numba.set_num_threads(old)
    assert one.to_bytes() == a.to_bytes()
    np.testing.assert_array_equal(f1, f2)


def test_model_file_is_seed_based_and_small():
    X, y, _ = two_gaussians(n=300, d=50, n_labeled=20, seed=10)
    est = TSGS3VM(block_size=16, batch_size=32, max_iter=20, random_state=0,
                  solver="sgd").fit(X, y)
    size = len(est.to_bytes())
    # 320 float32 coefficients + metadata; a stored 50 x 320 feature matrix
    # alone would be 64 kB.
    assert size < 8000


def test_corrupt_and_wrong_version_model_files(tmp_path):
    X, y, _ = two_gaussians(n=200, d=4, n_labeled=20, seed=11)
    payload = TSGS3VM(**FAST).fit(X, y).to_bytes()
    with pytest.raises(ModelFormatError):
        TSGS3VM.from_bytes(payload[: len(payload) // 2])
    with pytest.raises(ModelFormatError):
        TSGS3VM.from_bytes(b"not a zip file at all")
    import zipfile

    def rewrite(payload, edit):
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(payload)) as zin, \
                zipfile.ZipFile(out, "w") as zout:
            for name in zin.namelist():
                zout.writestr(name, edit(name, zin.read(name)))
        return out.getvalue()

    tampered = rewrite(payload, lambda n, d: d.replace(
        b'"format_version": 1', b'"format_version": 9') if n == "meta.json" else d)
    with pytest.raises(ModelFormatError, match="format_version"):
        TSGS3VM.from_bytes(tampered)
    with pytest.raises(ModelFormatError, match="TSGS3VM"):
        FRS3VM.from_bytes(payload)
    # loading never unpickles: a pickled object array is refused
    obj = io.BytesIO()
    np.save(obj, np.array([object()], dtype=object), allow_pickle=True)
    evil = rewrite(payload, lambda n, d: obj.getvalue() if n == "coef.npy" else d)
    with pytest.raises(ModelFormatError):
        TSGS3VM.from_bytes(evil)


# ---------------------------------------------------------- bad input ----
@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y),
         "NaN"),
        (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), y),
         "infinity"),
        (lambda X, y: (X[:0], y[:0]), "0 sample"),
        (lambda X, y: (X, np.where(y == -1, -1, 0)), "one class"),
        (lambda X, y: (X, np.where(y == -1, 0, y)), "No unlabeled"),
        (lambda X, y: (X, np.full_like(y, -1)), "No labeled"),
        (lambda X, y: (X.astype(str).astype(object) + "x", y),
         "could not convert|numeric"),
        (lambda X, y: (X, y[:-1]), "inconsistent numbers of samples"),
        (lambda X, y: (X, np.where(y == -1, -1, y + 0.5)), "Unknown label type"),
    ],
)
def test_bad_fit_input_gives_clear_errors(mutate, match):
    X, y, _ = two_gaussians(n=100, d=4, n_labeled=10, seed=12)
    Xb, yb = mutate(X, y)
    with pytest.raises(ValueError, match=match):
        TSGS3VM(**FAST).fit(Xb, yb)


def test_sparse_input_is_accepted():
    """Sparse X is accepted; agreement with the dense path,
    predict on CSR/CSC and save/load are in tests/test_sparse_rff.py."""
    import scipy.sparse as sp

    X, y, _ = two_gaussians(n=100, d=4, n_labeled=10, seed=12)
    est = TSGS3VM(**FAST).fit(sp.csr_matrix(X), y)
    assert est.predict(sp.csc_matrix(X)).shape == (100,)


@pytest.mark.parametrize(
    "params,match",
    [
        (dict(sigma=0.0), "sigma"),
        (dict(sigma=-1.0), "sigma"),
        (dict(C=0.0), "'C'"),
        (dict(batch_size=0), "batch_size"),
        (dict(eta0=-1.0), "eta0"),
        (dict(unlabeled_loss="nope"), "unlabeled_loss"),
        (dict(learning_rate="constant", eta0=1e3), "eta0"),
    ],
)
def test_bad_hyper_parameters_are_named(params, match):
    X, y, _ = two_gaussians(n=100, d=4, n_labeled=10, seed=12)
    kw = {**FAST, **params}
    with pytest.raises(ValueError, match=match):
        TSGS3VM(**kw).fit(X, y)


def test_wrong_feature_count_at_predict():
    X, y, _ = two_gaussians(n=100, d=4, n_labeled=10, seed=12)
    est = TSGS3VM(**FAST).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])


@pytest.mark.parametrize(
    "params", [dict(sigma=1e6), dict(C=1e9, C_star=1e9), dict(eta0=1e3)]
)
def test_extreme_hyper_parameters_never_give_a_silent_nan_model(params):
    X, y, _ = two_gaussians(n=200, d=4, n_labeled=20, seed=13)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = TSGS3VM(**{**FAST, **params}).fit(X, y)
    except FloatingPointError as exc:
        assert "eta0" in str(exc) or "C" in str(exc)
    else:
        assert np.all(np.isfinite(est.decision_function(X)))
        if "eta0" in params:  # finite, but not a solution: said so
            assert any(issubclass(w.category, ConvergenceWarning)
                       and "diverged" in str(w.message) for w in caught)


def test_out_of_core_memmap_gives_the_same_model(tmp_path):
    """A read-only np.memmap is used in place (no copy) and gives the identical
    model to the same float32 data in memory."""
    X, y, _ = two_gaussians(n=500, d=6, n_labeled=20, seed=14)
    X32 = X.astype(np.float32)
    np.save(tmp_path / "X.npy", X32)
    Xm = np.load(tmp_path / "X.npy", mmap_mode="r")
    kw = dict(max_features=128, max_iter=20, random_state=1)
    a = TSGS3VM(**kw).fit(X32, y)
    b = TSGS3VM(**kw).fit(Xm, y)
    assert a.to_bytes() == b.to_bytes()


def test_load_in_a_fresh_process_and_save_with_a_callback(tmp_path):
    import subprocess
    import sys

    X, y, _ = two_gaussians(n=200, d=4, n_labeled=20, seed=15)
    est = TSGS3VM(callback=lambda e, t: None, **FAST).fit(X, y)
    path = tmp_path / "m.wk"
    est.save(path)  # the callback is not part of the model
    assert load(path).callback is None
    code = (
        "import sys, numpy as np, weakkernels;"
        f"m = weakkernels.load({str(path)!r});"
        "print(type(m).__name__, m.n_features_in_)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["TSGS3VM", "4"]


def test_balancing_bias_mean_and_quantile_constraints():
    from weakkernels.tsgs3vm import balancing_bias

    g = np.random.default_rng(0).normal(loc=2.0, scale=3.0, size=(1000, 2))
    r = np.array([-0.4, 0.2])  # labeled positive fractions 0.3 and 0.6
    b = balancing_bias(1, g, r)
    np.testing.assert_allclose((g + b).mean(axis=0), r)
    b = balancing_bias(2, g, r)
    np.testing.assert_allclose(((g + b) > 0).mean(axis=0), [0.3, 0.6], atol=2e-3)


def test_balancing_bias_clipped_matches_a_root_finder():
    """code 4: mean clip(g + b, -1, 1) = r, against scipy's brentq per column."""
    from scipy.optimize import brentq

    from weakkernels.tsgs3vm import balancing_bias

    rng = np.random.default_rng(1)
    g = np.c_[rng.normal(-2.0, 3.0, 800), rng.uniform(-0.5, 0.5, 800)]
    r = np.array([-0.8, 0.25])
    b = balancing_bias(4, g, r)
    for k in range(2):
        ref = brentq(lambda t, gk=g[:, k], rk=r[k]: np.clip(gk + t, -1, 1).mean() - rk,
                     -20.0, 20.0, xtol=1e-14)
        assert b[k] == pytest.approx(ref, abs=1e-10)
    # small outputs (|g + b| < 1 everywhere): the plain mean constraint
    np.testing.assert_allclose(b[1], balancing_bias(1, g, r)[1], atol=1e-12)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_clipped_balance_holds_on_the_returned_machine(solver):
    """The default balance="clipped" holds mean_U clip(f, -1, 1) = mean_L y on
    the fitted model's own unlabeled outputs; at C = 30 the outputs saturate,
    so it is not the plain mean constraint."""
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=23)
    lab = y != -1
    r = np.mean(np.where(y[lab] == 1, 1.0, -1.0))
    # (SGD at the default eta0 = 1 diverges here: outputs ~ 1e16 after 40
    # steps, where the bisection for the bias resolves only ~1e-3)
    # (L-BFGS: the rule's C* > 0; a machine at C* = 0 has a free bias)
    kw = ({"max_iter": 40, "batch_size": 64, "eta0": 0.03} if solver == "sgd"
          else {"selection": None})
    est = TSGS3VM(C=30.0, solver=solver, random_state=0, dtype="float64",
                  **kw).fit(X, y)
    assert est.C_star_ > 0 and est.balance_ == "clipped"
    f = est.decision_function(X[~lab])
    np.testing.assert_allclose(np.clip(f, -1, 1).mean(), r, atol=1e-8)
    assert abs(f.mean() - r) > 1e-2


def test_predict_on_a_memmap_is_row_chunked_and_matches(tmp_path):
    X, y, _ = two_gaussians(n=300, d=5, n_labeled=20, seed=16)
    est = TSGS3VM(**FAST).fit(X, y)
    big = np.random.default_rng(0).normal(size=(70_000, 5)).astype(np.float32)
    np.save(tmp_path / "big.npy", big)
    Xm = np.load(tmp_path / "big.npy", mmap_mode="r")
    f_map = est.decision_function(Xm)  # crosses the 65 536-row chunk boundary
    f_ref = np.concatenate(
        [est.decision_function(big[:35_000]), est.decision_function(big[35_000:])]
    )
    np.testing.assert_allclose(f_map, f_ref, rtol=1e-5, atol=1e-6)


# ------------------------------------------- the L-BFGS solver (default) ----
def _naive_loss(name, m):
    """Labeled loss and its derivative at margins ``m``, written out again."""
    h = np.maximum(0.0, 1.0 - m)
    if name == "squared_hinge":
        return h * h, -2.0 * h
    # smooth hinge, quadratic over 0 < h < 1/2
    quad = h < 0.5
    return np.where(quad, h * h, h - 0.25), np.where(quad, -2.0 * h, -1.0)


def _primal_objective(est, X, y, C):
    """``1/2 ||v||^2 + C sum_L l(y f)`` of a fitted supervised-only model, the
    norm taken in the random-feature space of its own expansion."""
    # f = features @ coef = (features / sqrt(n_blocks)) @ v
    v = est.coef_[0].astype(np.float64) * np.sqrt(est.n_blocks_)
    lab = y != -1
    m = np.where(y[lab] == est.classes_[1], 1.0, -1.0) * est.decision_function(X[lab])
    return 0.5 * v @ v + C * np.sum(_naive_loss(est.loss, m)[0])


def _naive_svm(Psi, Y, C, loss):
    """The same objective on explicit features ``Psi`` with a free bias,
    minimised by scipy's BFGS in float64 (no code shared with the solver)."""
    from scipy.optimize import minimize

    def obj(z):
        v, b = z[:-1], z[-1]
        val, d = _naive_loss(loss, Y * (Psi @ v + b))
        g = C * d * Y
        return 0.5 * v @ v + C * val.sum(), np.r_[v + Psi.T @ g, g.sum()]

    res = minimize(obj, np.zeros(Psi.shape[1] + 1), jac=True, method="BFGS",
                   options={"gtol": 1e-10, "maxiter": 10_000})
    return res.fun


def _explicit_features(est, X):
    if est.features_ == "nystroem":
        # k(x, Z) (K_ZZ + jitter I)^-1/2 by NumPy (Cholesky), not the spec
        Z = est.spec_.landmarks.astype(float)
        K = kernel_matrix(Z, Z, "rbf", est.sigma_) + est.spec_.JITTER * np.eye(len(Z))
        L = np.linalg.cholesky(K)
        return np.linalg.solve(L, kernel_matrix(X, Z, "rbf", est.sigma_).T).T
    W, second = est.spec_.blocks(0, est.n_blocks_)
    Phi = np.sqrt(2.0 / est.spec_.block_size) * np.cos(X @ W.astype(float) + second)
    return Phi / np.sqrt(est.n_blocks_)


@pytest.mark.parametrize("loss", ["smooth_hinge", "squared_hinge"])
@pytest.mark.parametrize("Est,features", [(TSGS3VM, "fourier"), (TSGS3VM, "nystroem"),
                                          (FRS3VM, "fourier")])
def test_lbfgs_reaches_the_optimum_of_its_supervised_objective(Est, features, loss):
    """C_star=0: the default solver's objective equals a naive float64 BFGS
    minimum of the same SVM on the same seeded features (relative 1e-4)."""
    X, y, _ = two_gaussians(n=160, d=3, n_labeled=40, sep=1.5, seed=21)
    size = {"max_features": 96} if Est is TSGS3VM else {"n_components": 96}
    size["features"] = features
    est = Est(C=2.0, C_star=0.0, sigma=0.5, balance="none", dtype="float64",
              loss=loss, random_state=0, **size).fit(X, y)
    lab = y != -1
    Y = np.where(y[lab] == est.classes_[1], 1.0, -1.0)
    ref = _naive_svm(_explicit_features(est, X[lab]), Y, 2.0, loss)
    ours = _primal_objective(est, X, y, 2.0)
    assert ref <= ours <= ref * (1 + 1e-4)


def _exact_kernel_svm(K, Y, C, loss):
    """Exact-kernel objective ``min 1/2 ||f||_H^2 + C sum l(y f)`` with ``f = K
    beta + b`` (representer theorem), naive scipy BFGS in float64."""
    from scipy.optimize import minimize

    def obj(z):
        beta, b = z[:-1], z[-1]
        Kb = K @ beta
        val, d = _naive_loss(loss, Y * (Kb + b))
        g = C * d * Y
        return 0.5 * beta @ Kb + C * val.sum(), np.r_[Kb + K @ g, g.sum()]

    res = minimize(obj, np.zeros(K.shape[0] + 1), jac=True, method="BFGS",
                   options={"gtol": 1e-9, "maxiter": 20_000})
    return res.fun


@pytest.mark.parametrize("Est", [TSGS3VM, FRS3VM])
def test_default_budget_supervised_objective_is_near_the_exact_kernel_svm(Est):
    """Regression: with the default budget (default feature count and
    tolerance) the supervised-only objective is within 5 % of the exact kernel
    machine's optimum of the same objective (measured: 0.5 %). The gap is the
    random-feature approximation, not the optimizer (see the test above). The
    SGD solver's gap at its default budget is in BENCHMARKS.md, "Convergence"."""
    X, y, _ = two_gaussians(n=400, d=4, n_labeled=60, sep=1.5, seed=22)
    lab = y != -1
    Y = np.where(y[lab] == 1, 1.0, -1.0)
    est = Est(C=1.0, C_star=0.0, sigma=0.25, balance="none", random_state=0)
    est.fit(X, y)
    K = kernel_matrix(X[lab], X[lab], "rbf", 0.25)
    exact = _exact_kernel_svm(K, Y, 1.0, est.loss)
    ours = _primal_objective(est, X, y, 1.0)
    assert ours <= 1.05 * exact


@pytest.mark.parametrize("name", ["hinge", "squared_hinge", "smooth_hinge"])
def test_labeled_loss_derivatives_by_finite_differences(name):
    from weakkernels.tsgs3vm import labeled_loss, labeled_loss_grad

    z = np.linspace(-2.0, 3.0, 501)
    z = z[np.min(np.abs(z[:, None] - np.array([1.0, 0.5])[None, :]), axis=1) > 1e-3]
    h = 1e-6
    fd = (labeled_loss(name, z + h) - labeled_loss(name, z - h)) / (2 * h)
    np.testing.assert_allclose(labeled_loss_grad(name, z), fd, atol=1e-5)
    if name == "smooth_hinge":  # within delta / 2 = 0.25 of the hinge
        assert np.all(np.abs(labeled_loss(name, z) - np.maximum(0, 1 - z)) <= 0.25)


def test_lbfgs_anneal_stages_and_callback():
    X, y, _ = two_gaussians(n=200, d=5, n_labeled=20, seed=6)
    seen = []
    est = TSGS3VM(callback=lambda e, t: seen.append((t, e.decision_function(X[:3]))),
                  selection=None, **FAST_LBFGS).fit(X, y)
    assert len(seen) == len(est.objective_curve_) == 3  # C* stages 0, .1, 1
    assert [t for t, _ in seen] == sorted(t for t, _ in seen)
    np.testing.assert_array_equal(seen[-1][1], est.decision_function(X[:3]))
    no_anneal = TSGS3VM(anneal=0, balance="mean", selection=None,
                        **FAST_LBFGS).fit(X, y)
    assert len(no_anneal.objective_curve_) == 1
    # an anchored balance needs the supervised stage to anchor on
    anchored = TSGS3VM(anneal=0, selection=None, **FAST_LBFGS).fit(X, y)
    assert len(anchored.objective_curve_) == 2


def test_mean_balance_holds_exactly_on_the_unlabeled_points():
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=23)
    est = TSGS3VM(C=3.0, balance="mean", random_state=0, dtype="float64",
                  selection=None).fit(X, y)
    lab = y != -1
    r = np.mean(np.where(y[lab] == 1, 1.0, -1.0))
    np.testing.assert_allclose(est.decision_function(X[~lab]).mean(), r, atol=1e-8)


def test_supervised_balance_holds_the_supervised_machines_unlabeled_mean():
    """balance="supervised": the unlabeled mean output of the final machine is
    that of the supervised machine (C* = 0, free bias) on the same features --
    fitted here independently as TSGS3VM(C_star=0, balance="none")."""
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=23)
    lab = y != -1
    kw = {"C": 3.0, "random_state": 0, "dtype": "float64", "tol": 1e-10,
          "selection": None}
    sup = TSGS3VM(C_star=0.0, balance="none", **kw).fit(X, y)
    est = TSGS3VM(balance="supervised", **kw).fit(X, y)
    target = sup.decision_function(X[~lab]).mean()
    np.testing.assert_allclose(est.decision_function(X[~lab]).mean(), target,
                               atol=1e-6)
    # the constraint binds: a free bias puts the mean elsewhere
    free = TSGS3VM(balance="none", **kw).fit(X, y)
    assert abs(free.decision_function(X[~lab]).mean() - target) > 1e-3
    with pytest.raises(ValueError, match="lbfgs"):
        TSGS3VM(balance="supervised", solver="sgd").fit(X, y)


def test_resolved_defaults_are_visible_after_fit():
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=24)
    est = TSGS3VM(C=2.0, selection=None, **FAST_LBFGS).fit(X, y)
    assert est.sigma_ == pytest.approx(1.0 / (4 * X.var()))
    assert est.C_star_ == pytest.approx(2.0 * 30 / 270)
    assert est.get_params()["sigma"] == "scale"
    assert (est.unlabeled_loss_, est.balance_) == ("da", "clipped")


@pytest.mark.parametrize("Est", [TSGS3VM, FRS3VM])
def test_auto_losses_are_the_named_pair_bit_for_bit(Est, tmp_path):
    """``"auto"`` is exactly ``("da", "clipped")`` on a binary problem and
    ``("shg", "mean")`` one-vs-rest: the same coefficients bit for bit, the
    resolved pair in the fitted attributes and in the model file."""
    for n_classes, pair in ((2, ("da", "clipped")), (3, ("shg", "mean"))):
        X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, sep=4.0, seed=5,
                                n_classes=n_classes)
        fast = dict(max_iter=50, random_state=0, selection=None)
        auto = Est(C=10, **fast).fit(X, y)
        named = Est(C=10, unlabeled_loss=pair[0], balance=pair[1], **fast).fit(X, y)
        assert auto.get_params()["unlabeled_loss"] == "auto"
        assert (auto.unlabeled_loss_, auto.balance_) == pair
        np.testing.assert_array_equal(auto.coef_, named.coef_)
        np.testing.assert_array_equal(auto.intercept_, named.intercept_)
        auto.save(tmp_path / "m.wkm")
        back = load(tmp_path / "m.wkm")
        assert (back.unlabeled_loss_, back.balance_) == pair


@pytest.mark.parametrize("Est", [TSGS3VM, FRS3VM])
def test_a_users_first_try_with_defaults_matches_svc(Est):
    """A 5-d problem whose classes are split by one coordinate, 40 labels,
    400 unlabeled points: every parameter at its default, within 2 pp of
    scikit-learn's SVC() trained on the labeled points."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2440, 5))
    yt = (X[:, 0] > 0).astype(int)
    y = np.full(440, -1)
    lab = np.r_[rng.choice(np.flatnonzero(yt[:440] == 0), 20, replace=False),
                rng.choice(np.flatnonzero(yt[:440] == 1), 20, replace=False)]
    y[lab] = yt[lab]
    Xtr, Xte, yte = X[:440], X[440:], yt[440:]
    acc_svc = SVC().fit(Xtr[lab], y[lab]).score(Xte, yte)
    acc = Est(random_state=0).fit(Xtr, y).score(Xte, yte)
    assert acc >= acc_svc - 0.02


# ------------------------------------------------ concave-convex ramp ----
def test_ramp_cccp_majorant_touches_the_loss_and_lies_above_it():
    """Paper 004 Eq. 1.12: convex part + slope * f, shifted to touch the
    symmetric ramp at the linearisation point f0, majorises it everywhere and
    has its derivative at f0 (naive grid check)."""
    from weakkernels.tsgs3vm import ramp_cccp_convex, ramp_cccp_slope

    f = np.linspace(-3.0, 3.0, 601)
    for s in (-0.3, -0.1, 0.0):
        u = unlabeled_loss("ramp_cccp", f, s)
        du = unlabeled_loss_grad("ramp_cccp", f, s)
        conv, dconv = ramp_cccp_convex(f)
        for i in range(0, 601, 37):
            beta = ramp_cccp_slope(f[i:i + 1], s)[0]
            maj = conv + beta * f
            maj = maj - (maj[i] - u[i])
            assert np.all(maj >= u - 1e-12)
            assert dconv[i] + beta == pytest.approx(du[i], abs=1e-12)
    # bounded: flat at 1 - s far from the boundary, as the unsmoothed ramp
    np.testing.assert_allclose(unlabeled_loss("ramp_cccp", np.array([-5.0, 5.0])),
                               1.3)


def _ramp_objective(est, X, y):
    """Eq. (1) with the symmetric ramp at the fitted machine, naive NumPy:
    the supervised objective above plus C* sum_U ramp(f)."""
    f = est.decision_function(X[y == -1])
    return (_primal_objective(est, X, y, est.C)
            + est.C_star_ * np.sum(unlabeled_loss("ramp_cccp", f, est.s)))


def test_ramp_cccp_steps_descend_the_nonconvex_objective(monkeypatch):
    """Each concave-convex step lowers the symmetric-ramp objective (paper 004
    Sec. 1.2: CCCP decreases the objective monotonically); more steps allowed
    never give a worse machine, and the fit stops on its own before the cap."""
    from weakkernels import _dsg

    X, y, _ = two_gaussians(n=240, d=4, n_labeled=16, sep=2.0, seed=31)
    kw = dict(C=5.0, unlabeled_loss="ramp_cccp", balance="mean",
              features="fourier", max_features=64, dtype="float64", tol=1e-9,
              random_state=0, selection=None)
    values = []
    for steps in (1, 2, 3, 5, 20):
        opts = SolverOptions(cccp_max_steps=steps)
        values.append(_ramp_objective(TSGS3VM(**kw, solver_options=opts).fit(X, y),
                                      X, y))
    pairs = zip(values[:-1], values[1:], strict=True)
    assert all(b <= a + 1e-7 * abs(a) for a, b in pairs)
    assert values[-1] < values[0] - 1e-6
    calls = []
    real = _dsg.Problem.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        inner = self.majorize
        self.majorize = lambda f, rows: calls.append(inner(f, rows)) or calls[-1]

    monkeypatch.setattr(_dsg.Problem, "__init__", spy)
    TSGS3VM(**kw, solver_options=SolverOptions(cccp_max_steps=200)).fit(X, y)
    assert 2 < len(calls) < 200 and calls[-1] <= SolverOptions().cccp_tol


def test_ramp_cccp_is_deterministic_and_needs_lbfgs():
    X, y, _ = two_gaussians(n=200, d=5, n_labeled=20, seed=6)
    kw = dict(unlabeled_loss="ramp_cccp", selection=None, **FAST_LBFGS)
    a, b = TSGS3VM(**kw).fit(X, y), TSGS3VM(**kw).fit(X, y)
    assert a.to_bytes() == b.to_bytes()
    # no annealing stages: the supervised anchor stage, then the CCCP stage
    assert len(a.objective_curve_) == 2
    with pytest.raises(ValueError, match="lbfgs"):
        TSGS3VM(unlabeled_loss="ramp_cccp", solver="sgd").fit(X, y)


# ------------------------------------------- C* chosen on held-out labels ----
def _naive_one_se(errors, ref=0):
    """The one-standard-error rule written out with Python lists."""
    base = list(errors[ref])
    m = len(base)
    keep, keep_err = ref, None
    if m < 2:
        return ref
    for j, e in enumerate(errors):
        if j == ref:
            continue
        d = [a - b for a, b in zip(e, base, strict=True)]
        mean = sum(d) / m
        se = (sum((x - mean) ** 2 for x in d) / (m - 1)) ** 0.5 / m ** 0.5
        err = sum(e) / m
        # (one_se_better's relative margin: one differing row is a tie)
        if -mean > se * (1 + 1e-9) and (keep_err is None or err < keep_err):
            keep, keep_err = j, err
    return keep


def test_one_se_stage_matches_the_rule_written_out():
    rng = np.random.default_rng(0)
    for trial in range(200):
        m = int(rng.integers(2, 60))
        p = rng.uniform(0.05, 0.5, size=3)
        errors = [(rng.uniform(size=m) < q).astype(float) for q in p]
        assert one_se_stage(errors) == _naive_one_se(errors), trial
        # the cross-validated choice's reference: the rule's stage, not 0
        ref = int(rng.integers(0, 3))
        assert one_se_stage(errors, ref) == _naive_one_se(errors, ref), trial
    same = np.array([0, 1, 0, 1.0])
    assert one_se_stage([same, same, same]) == 0
    # 3 rows better and 2 worse out of 100 is within one standard error
    base = np.r_[np.ones(20), np.zeros(80)]
    mixed = base.copy()
    mixed[:3] = 0.0
    mixed[-2:] = 1.0
    assert one_se_stage([base, mixed]) == 0
    # ten rows better than the reference, whatever its index
    better = np.r_[np.ones(10), np.zeros(90)]
    assert one_se_stage([better, base], ref=1) == 0
    assert one_se_stage([base, better], ref=0) == 1
    assert one_se_stage([base, base], ref=1) == 1
    # ten rows better, none worse: resolved; between equals the first
    better = np.r_[np.ones(10), np.zeros(90)]
    assert one_se_stage([base, better, better]) == 1
    assert one_se_stage([np.ones(1), np.zeros(1)]) == 0  # one row: no SE


def test_held_out_labels_keep_the_supervised_machine_where_unlabeled_rows_cost():
    """Uniform inputs with a nonlinear teacher (no cluster structure): the
    unlabeled term can only move the boundary away from the labels' one."""
    spec = SyntheticSpec("t", 100_000, 8, seed=5)
    X, y = synthetic_rows(spec, 0, 4000)
    Xt, yt = synthetic_rows(spec, 50_000, 60_000)
    ys = y.astype(int)
    ys[1500:] = -1
    kw = dict(C=10, sigma=spec.teacher_sigma, max_features=256, random_state=0)
    rule = TSGS3VM(selection=None, **kw).fit(X, ys)
    held = TSGS3VM(selection="holdout", validation_fraction=0.3, **kw).fit(X, ys)
    assert held.C_star_ == 0.0
    np.testing.assert_allclose(held.validation_errors_[:, 0],
                               np.array([0.0, 0.1, 1.0, 3.0, 10.0]) * rule.C_star_)
    assert held.validation_errors_[0, 1] < held.validation_errors_[2, 1]
    assert np.mean(held.predict(Xt) != yt) < np.mean(rule.predict(Xt) != yt) - 0.002


def test_held_out_labels_keep_the_unlabeled_term_where_it_pays():
    X, y, yt = two_gaussians(n=2000, d=30, n_labeled=200, sep=2.5, seed=1)
    U = y == -1
    kw = dict(C=10, max_features=256, random_state=0)
    held = TSGS3VM(selection="holdout", validation_fraction=0.5, **kw).fit(X, y)
    sup = TSGS3VM(C_star=0, **kw).fit(X, y)
    rule = 10 * 200 / 1800
    errs = held.validation_errors_[:, 1]
    kept = np.flatnonzero(np.isclose(held.validation_errors_[:, 0], held.C_star_))
    assert held.C_star_ >= rule and errs[kept[0]] == errs.min() < errs[0]
    assert np.mean(held.predict(X[U]) != yt[U]) < np.mean(sup.predict(X[U]) != yt[U])


@pytest.mark.parametrize("stage", [0, 1, 2, 3, 4])
def test_the_fit_after_the_choice_is_the_fit_at_that_c_star(monkeypatch, stage):
    """Whatever stage is kept, the returned machine is TSGS3VM's at that C*
    on every label, bit for bit (the held-out rows only choose C*)."""
    monkeypatch.setattr(_primal, "one_se_stage", lambda errors: stage)
    X, y, _ = two_gaussians(n=6000, d=5, n_labeled=200, seed=8)
    kw = dict(C=10, max_features=128, random_state=0)
    held = TSGS3VM(selection="holdout", validation_fraction=0.3, **kw).fit(X, y)
    rule = 10 * 200 / 5800
    assert held.C_star_ == pytest.approx((0.0, 0.1, 1.0, 3.0, 10.0)[stage] * rule)
    # two sample levels (5 800 unlabeled rows), so the first one is a sample
    at = TSGS3VM(C_star=held.C_star_, selection=None, **kw).fit(X, y)
    np.testing.assert_array_equal(held.coef_, at.coef_)
    np.testing.assert_array_equal(held.intercept_, at.intercept_)


@pytest.mark.parametrize("kept", [0, 2, 4, 5])
def test_the_fit_after_a_cross_validated_choice_is_the_fit_at_that_choice(
        monkeypatch, kept):
    """5-fold CV (the default on a small set): the candidates are da's C*
    multiples 0, .1, 1, 3, 10 and ramp_cccp at the rule; whichever is kept,
    the returned machine is the plain fit at that C* and loss, bit for bit."""
    import weakkernels.tsgs3vm as mod

    seen = {}

    def choose(errors, ref):
        seen["n"], seen["ref"] = [e.size for e in errors], ref
        return kept

    monkeypatch.setattr(mod, "one_se_stage", choose)
    X, y, _ = two_gaussians(n=600, d=5, n_labeled=100, seed=8)
    kw = dict(C=10, max_features=128, random_state=0)
    cv = TSGS3VM(**kw).fit(X, y)
    rule = 10 * 100 / 500
    assert (cv.selection_, cv.n_folds_, cv.validation_fraction_) == ("cv", 5, None)
    # every label scored once per candidate; the reference is the
    # supervised machine (C* = 0), the first candidate
    assert seen == {"n": [100] * 6, "ref": 0}
    assert cv.validation_losses_ == ("da",) * 5 + ("ramp_cccp",)
    np.testing.assert_allclose(cv.validation_errors_[:, 0],
                               np.array([0.0, 0.1, 1.0, 3.0, 10.0, 1.0]) * rule)
    assert cv.unlabeled_loss_ == cv.validation_losses_[kept]
    assert cv.C_star_ == pytest.approx(cv.validation_errors_[kept, 0])
    at = TSGS3VM(C_star=cv.C_star_, unlabeled_loss=cv.unlabeled_loss_,
                 selection=None, **kw).fit(X, y)
    np.testing.assert_array_equal(cv.coef_, at.coef_)
    np.testing.assert_array_equal(cv.intercept_, at.intercept_)


def test_held_out_labels_are_deterministic_and_need_lbfgs():
    X, y, _ = two_gaussians(n=600, d=5, n_labeled=100, seed=7)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        a = TSGS3VM(selection="holdout", validation_fraction=0.4,
                    **FAST_LBFGS).fit(X, y)
        numba.set_num_threads(1)
        b = TSGS3VM(selection="holdout", validation_fraction=0.4,
                    **FAST_LBFGS).fit(X, y)
    finally:
        numba.set_num_threads(old)
    assert a.to_bytes() == b.to_bytes()
    np.testing.assert_array_equal(a.validation_errors_, b.validation_errors_)
    assert TSGS3VM.from_bytes(a.to_bytes()).C_star_ == a.C_star_
    with pytest.raises(ValueError, match="lbfgs"):
        TSGS3VM(selection="holdout", validation_fraction=0.4, solver="sgd").fit(X, y)


def _choice(y, n_rows, selection="auto", fraction="auto", cv=5, solver="lbfgs"):
    return resolve_selection(selection, fraction, cv, y, solver, n_rows)


NONE = (None, None)


def test_auto_holds_out_a_tenth_of_the_labels_from_ten_thousand_on():
    y = np.repeat([0, 1], [6000, 4000])
    n = 100_000
    assert _choice(y, n) == ("holdout", 0.1)
    assert _choice(y[1:], n) == ("holdout", 0.2)  # 9 999
    assert _choice(y, n, solver="sgd") == NONE
    # a class with fewer than ten labels cannot give the held-out part one
    rare = np.r_[np.zeros(20000), np.ones(9)]
    assert _choice(rare, n) == NONE
    # the fraction "auto" holds out, and an explicit hold-out
    assert _choice(y, n, fraction=0.3) == ("holdout", 0.3)
    assert _choice(y[:50], n, "holdout", 0.3) == ("holdout", 0.3)
    assert _choice(y[:50], n, "holdout") == ("holdout", 0.2)
    assert _choice(y, n, None) == NONE


def test_auto_holds_out_a_fifth_of_the_labels_between_the_two():
    """Above the cross-validated sizes and below ten thousand labels the C*
    candidates still face the supervised machine on held-out labels."""
    y = np.repeat([0, 1], [600, 400])
    assert _choice(y, 61_000) == ("holdout", 0.2)
    assert _choice(y, 61_000, solver="sgd") == NONE
    # a class of one label cannot be on both sides
    assert _choice(np.r_[y, 2], 61_000) == NONE
    # nor can two labels of two classes
    assert _choice(np.array([0, 1]), 5000) == NONE


def test_auto_cross_validates_where_every_row_is_a_landmark():
    y = np.repeat([0, 1], [60, 40])
    assert _choice(y, 1500) == ("cv", 5)
    assert _choice(y, 4096) == ("cv", 5)
    assert _choice(y, 4096, cv=3) == ("cv", 3)
    assert _choice(y, 4097) == ("holdout", 0.2)
    assert _choice(y, 1500, solver="sgd") == NONE
    # five folds need five labels of every class
    assert _choice(y[:64], 1500) == NONE
    # one-vs-rest too (without the ramp_cccp candidate)
    three = np.repeat([0, 1, 2], 40)
    assert _choice(three, 1500) == ("cv", 5)
    assert _choice(three[36:], 1500) == NONE
    assert _choice(y[:64], 1500, "cv", cv=3) == ("cv", 3)
    with pytest.raises(ValueError, match="at least 5 labels"):
        _choice(y[:64], 1500, "cv")
    for selection in ("cv", "holdout"):
        with pytest.raises(ValueError, match=f'selection="{selection}" needs solver'):
            _choice(y, 1500, selection, solver="sgd")


@pytest.mark.parametrize("old, new", [
    (None, dict(selection=None)),
    (3, dict(selection="cv", cv=3)),
])
def test_the_former_validation_fractions_are_deprecated_for_their_names(old, new):
    """validation_fraction=k (folds) and None (no choice) still run, with a
    FutureWarning naming the new spelling, and fit the same model."""
    X, y, _ = two_gaussians(n=300, d=5, n_labeled=40, seed=8)
    kw = dict(C=1.0, max_features=32, random_state=0)
    with pytest.warns(FutureWarning, match="validation_fraction=.* is deprecated"):
        a = TSGS3VM(validation_fraction=old, **kw).fit(X, y)
    b = TSGS3VM(**new, **kw).fit(X, y)
    assert (a.selection_, a.n_folds_) == (b.selection_, b.n_folds_)
    assert a.decision_function(X).tobytes() == b.decision_function(X).tobytes()


@pytest.mark.parametrize("kernel, eta0", [("rbf", 1.0), ("laplacian", 3.0)])
def test_a_diverged_sgd_iterate_warns(kernel, eta0):
    """Finite but far beyond any minimiser: check_sgd_outputs says so (both
    Fourier kernels), and a step size that converges does not warn (the
    loss-curve check of every SGD estimator: tests/test_estimator_limits.py)."""
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=23)
    kw = dict(C=10.0, kernel=kernel, solver="sgd", max_iter=40, batch_size=64,
              random_state=0)
    with pytest.warns(ConvergenceWarning, match="returned decision values"):
        big = TSGS3VM(eta0=eta0, **kw).fit(X, y)
    assert np.all(np.isfinite(big.decision_function(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        TSGS3VM(eta0=0.3, learning_rate="constant", **kw).fit(X, y)


def test_a_loss_blow_up_below_the_output_bound_warns():
    """"decay"'s first step is 1 whatever eta0: with the squared hinge at
    C = 10 the outputs land near 200, under check_sgd_outputs' bound (~990
    here), with a minibatch loss ~10^4 times the start's; the loss curve
    says so. The hinge (the papers' loss) at the same step does not warn."""
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=23)
    kw = dict(C=10.0, solver="sgd", max_iter=40, batch_size=64, eta0=0.01,
              random_state=0)
    with pytest.warns(ConvergenceWarning, match="times the loss of its start"):
        est = TSGS3VM(**kw).fit(X, y)
    assert np.abs(est.decision_function(X)).max() < 990
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        TSGS3VM(loss="hinge", **kw).fit(X, y)


@pytest.mark.parametrize("held_bytes", [None, 0])
def test_the_candidates_are_scored_on_the_largest_held_level(monkeypatch,
                                                             held_bytes):
    """5 800 unlabeled rows: level 0 samples 4 096 of them, level 1 holds
    all (every sampled level kept: by ``primal_merge_fraction`` the 4 296-row
    level 0 would be dropped as near every row, and by
    ``primal_anneal_every_row`` the held set would be one level). The five
    candidates are scored once each, after the solver entered both levels;
    with no level held (held_bytes=0), on the first one."""
    import weakkernels.tsgs3vm as mod

    opts = SolverOptions(primal_merge_fraction=1.0, primal_anneal_every_row=False,
                         **({} if held_bytes is None
                            else {"held_feature_bytes": held_bytes}))
    events = []

    class Level(_dsg.Whitening):  # built once per level entered
        def __init__(self, spec):
            events.append("level")
            super().__init__(spec)

    score = mod._held_out_errors

    def spy_score(*args):
        events.append("score")
        return score(*args)

    monkeypatch.setattr(_primal, "Whitening", Level)
    monkeypatch.setattr(mod, "_held_out_errors", spy_score)
    X, y, _ = two_gaussians(n=6000, d=5, n_labeled=200, seed=8)
    assert len(_dsg.primal_levels([140, 5800, 60], 0, opts=opts)) == 2
    TSGS3VM(selection="holdout", validation_fraction=0.3, C=10, max_features=128,
            random_state=0, solver_options=opts).fit(X, y)
    # the choice's fit, then the refit (levels, no scores)
    last = len(events) - events[::-1].index("score")
    choice = events[:last]
    assert choice.count("score") == 5
    assert choice[-5:] == ["score"] * 5
    assert choice.count("level") == (2 if held_bytes is None else 1)


def test_the_default_leaves_the_rule_where_it_falls_to_chance_on_g241n():
    """SSL-book g241n (each class two Gaussian clusters), official split 1,
    100 labels, C = 10: paper 004's rule passes the boundary between the
    wrong clusters (test error ~48 %); the default's 5-fold cross-validation
    over the labels sees it (CV error ~46 % against ~24 % for C* = 0) and
    does not keep it (BENCHMARKS.md, "SSL-book sets").

    The rule's fit names L-BFGS: it converges the annealed stages. The
    default truncated Newton stops the rule's first annealed stage (0.1 C*) at
    ``newton_max_iter`` (20) with the gradient some 3 000 times its
    tolerance and a larger objective (~259 against ~188), landing at ~23 %
    test error; that is an unconverged solve, not a better minimiser: with
    ``newton_max_iter=200`` it reaches L-BFGS's stage objective and falls to
    chance as well (~47 %). The cross-validated fit runs the default."""
    from pathlib import Path

    from weakkernels.pipeline import datasets as ds

    mirror = Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"
    if not (mirror / "sslbook").exists():
        pytest.skip("offline mirror ../shared/data/raw not present")
    r = ds.load_raw("sslbook_g241n", mirror)
    L, U = r.split_labeled[0], r.split_unlabeled[0]
    y = np.where(r.y > 0, 1, 0)
    X = np.vstack([r.X[L], r.X[U]])
    ys = np.r_[y[L], np.full(len(U), -1)]
    rule = TSGS3VM(C=10, selection=None, random_state=0,
                   solver_options=SolverOptions(primal_method="lbfgs")).fit(X, ys)
    cv = TSGS3VM(C=10, random_state=0).fit(X, ys)
    assert cv.solver_options is None  # the default minimiser
    err = lambda m: np.mean(m.predict(r.X[U]) != y[U])  # noqa: E731
    assert (cv.selection_, cv.n_folds_, cv.validation_fraction_) == ("cv", 5, None)
    assert err(rule) > 0.4
    assert err(cv) < 0.3
    assert (cv.unlabeled_loss_, cv.C_star_) != ("da", rule.C_star_)


def test_a_machine_at_c_star_zero_is_the_supervised_one_with_a_free_bias():
    """C* = 0 leaves no unlabeled term: whatever ``balance`` says, the
    machine's bias is free (balance_ "none"), given or kept by the choice."""
    X, y, _ = two_gaussians(n=300, d=5, n_labeled=40, seed=8)
    kw = dict(C=1.0, C_star=0.0, selection=None, max_features=64, random_state=0)
    free = TSGS3VM(balance="none", **kw).fit(X, y)
    for balance in ("auto", "clipped", "mean", "quantile"):
        est = TSGS3VM(balance=balance, **kw).fit(X, y)
        assert est.balance_ == "none"
        assert est.decision_function(X).tobytes() == free.decision_function(X).tobytes()
    # SGD is paper 000's algorithm as printed: its balance stays
    assert TSGS3VM(solver="sgd", balance="mean", max_iter=5,
                   **{k: v for k, v in kw.items() if k != "max_features"}
                   ).fit(X, y).balance_ == "mean"
