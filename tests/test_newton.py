"""The truncated-Newton primal solver (``SolverOptions(primal_method="newton")``).

Its Hessian-vector products against finite differences of the objective's
gradient, the losses' curvatures against finite differences of their
derivatives, its minimiser against L-BFGS's on a smooth convex problem, and
the same model bits for any thread count.
"""

from dataclasses import replace

import numba
import numpy as np
import pytest

from weakkernels import TSGS3VM, SolverOptions, tsgs3vm
from weakkernels._dsg import Problem, fit_expansion
from weakkernels._dsg.newton import _Hessian, newton_minimize
from weakkernels._dsg.primal import PrimalSolver
from weakkernels.random_features import FeatureSpec
from weakkernels.tsgs3vm import (
    FLAT_LABELED,
    FLAT_UNLABELED,
    LABELED_LOSSES,
    UNLABELED_LOSSES,
    labeled_loss_curvature,
    labeled_loss_grad,
    unlabeled_loss_curvature,
    unlabeled_loss_grad,
)

NEWTON = SolverOptions(primal_method="newton", primal_chunk_rows=50)


def _problem(intercept, opts, n=300, seed=0):
    """A smooth convex problem: the logistic loss on 40 labeled rows and a
    softplus of the outputs on the rest, with its exact curvature."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    lab = np.zeros(n, bool)
    lab[rng.choice(n, 40, replace=False)] = True
    Y = np.where(X[lab, 0] + 0.3 * rng.normal(size=lab.sum()) > 0, 1.0, -1.0)[:, None]

    def pointwise(s, f, rows, m, w):
        if s == 0:
            z = -Y[rows] * f
            return (3.0 * float(np.logaddexp(0, z).sum()),
                    -3.0 * Y[rows] / (1 + np.exp(-z)))
        return (0.5 * w * float(np.logaddexp(0, f).sum()),
                0.5 * w / (1 + np.exp(-f)))

    def curvature(s, f, rows, m, w):
        p = 1 / (1 + np.exp(-f))
        return (3.0 if s == 0 else 0.5 * w) * p * (1 - p)

    def loss(fs, idx, sizes, w):
        parts = [pointwise(s, f, np.arange(len(f)), len(f), w)
                 for s, f in enumerate(fs)]
        return sum(p[0] for p in parts), [p[1] for p in parts]

    sets = [(X[lab], None), (X, np.flatnonzero(~lab))]
    problem = Problem(sets, 1, loss, pointwise=pointwise, curvature=curvature,
                      intercept=intercept, balance_target=np.array([0.1]), options=opts)
    spec = FeatureSpec("rbf", 0.5, 2, 1.0, X.shape[1], 8, 3, np.float64)
    return problem, spec


@pytest.mark.parametrize("intercept", ["free", "balance"])
def test_hessian_product_is_the_derivative_of_the_gradient(intercept):
    """With every row in the Hessian's sample, ``H d`` equals the central
    difference of the gradient along ``d`` (float64 features), with a free
    bias and with features centred on the balance set."""
    problem, spec = _problem(intercept, NEWTON)
    solver = PrimalSolver(problem, spec, 4, 0.0, 0)
    try:
        solver.enter(0)
        rng = np.random.default_rng(3)
        n_z = solver.D * solver.K + (solver.K if solver.state["free"] else 0)
        z, d = rng.normal(scale=0.3, size=n_z), rng.normal(size=n_z)
        hessian = _Hessian(solver, 1.0)
        hessian.at(z)
        eps = 1e-5
        fd = (solver.objective(z + eps * d, 1.0)[1]
              - solver.objective(z - eps * d, 1.0)[1]) / (2 * eps)
        np.testing.assert_allclose(hessian.product(d), fd, rtol=1e-6, atol=1e-7)
    finally:
        solver.close()


@pytest.mark.parametrize("intercept", ["free", "balance"])
def test_newton_reaches_the_minimiser_lbfgs_reaches(intercept):
    """On a smooth strictly convex objective both methods stop at the same
    minimiser; Newton in at most half the iterations."""
    runs = {}
    for method in ("lbfgs", "newton"):
        problem, spec = _problem(intercept, replace(NEWTON, primal_method=method))
        runs[method] = fit_expansion(problem, spec, solver="lbfgs", max_blocks=4,
                                     n_iter=500, batch_size=None, tol=1e-9, seed=0)
    a, b = runs["lbfgs"], runs["newton"]
    assert b.objective_curve[-1] == pytest.approx(a.objective_curve[-1], rel=1e-8)
    np.testing.assert_allclose(b.model.coefficients(), a.model.coefficients(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.intercept, a.intercept, rtol=1e-4, atol=1e-5)
    assert b.n_iter <= a.n_iter / 2


def test_a_sampled_hessian_still_converges():
    """With a Hessian estimated on 16 seeded rows of each set, the gradient
    is still the objective's own: the same minimiser."""
    values = []
    for rows, sizes in ((16, [16, 16]), (10**6, [40, 260])):
        problem, spec = _problem("free", replace(NEWTON, newton_hessian_rows=rows))
        solver = PrimalSolver(problem, spec, 4, 0.0, 0)
        try:
            solver.enter(0)
            assert [hs.m for _, hs, _ in solver.hessian_sets(1.0)] == sizes
            res = newton_minimize(solver, np.zeros(solver.D + 1), 1.0, 200, 1e-10)
            assert np.abs(solver.objective(res.x, 1.0)[1]).max() <= 1e-3
            values.append(res.fun)
        finally:
            solver.close()
    assert values[0] == pytest.approx(values[1], rel=1e-9)


def _finite_difference(fn, x, eps=1e-6):
    return (fn(x + eps) - fn(x - eps)) / (2 * eps)


@pytest.mark.parametrize("name", LABELED_LOSSES)
def test_labeled_curvature_is_the_derivative_of_the_gradient(name):
    z = np.linspace(-2, 2, 401)
    z = z[np.min(np.abs(z[:, None] - np.array([1.0, 0.5])), axis=1) > 1e-3]  # no kinks
    second = _finite_difference(lambda m: labeled_loss_grad(name, m), z)
    np.testing.assert_allclose(labeled_loss_curvature(name, z), second, atol=1e-5)


@pytest.mark.parametrize("name", UNLABELED_LOSSES)
def test_unlabeled_curvature_is_the_clipped_derivative_of_the_gradient(name):
    """The convex part: ``max(u'', 0)`` of the loss (of the convex majorant
    for ``ramp_cccp``), away from the kinks."""
    f = np.linspace(-2, 2, 401)
    kinks = np.array([0.0, 1.0, -1.0, 0.3, -0.3, 0.5, -0.5, 1.3, -1.3])
    f = f[np.min(np.abs(f[:, None] - kinks), axis=1) > 1e-3]
    if name == "ramp_cccp":
        from weakkernels.tsgs3vm import ramp_cccp_convex
        second = _finite_difference(lambda x: ramp_cccp_convex(x)[1], f)
    else:
        second = _finite_difference(lambda x: unlabeled_loss_grad(name, x), f)
    np.testing.assert_allclose(unlabeled_loss_curvature(name, f),
                               np.maximum(second, 0.0), atol=1e-5)


@pytest.mark.parametrize("name", LABELED_LOSSES + UNLABELED_LOSSES)
def test_the_flat_losses_are_those_without_curvature(name):
    """``FLAT_LABELED`` / ``FLAT_UNLABELED`` (Newton skips their sets) are
    exactly the losses whose curvature is zero everywhere."""
    z = np.linspace(-3, 3, 601)
    labeled = name in LABELED_LOSSES
    c = (labeled_loss_curvature(name, z) if labeled
         else unlabeled_loss_curvature(name, z))
    assert (name in (FLAT_LABELED if labeled else FLAT_UNLABELED)) == (not np.any(c))


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_skipping_the_flat_sets_is_the_same_fit(monkeypatch, loss):
    """A one-vs-rest fit on the symmetric hinge (no curvature on the
    unlabeled rows): Newton's Hessian never samples the unlabeled set, and
    the model is the one that sampled it and found zeros, bit for bit."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(450, 4))
    y = np.argmax(X[:, :3], axis=1)
    y[rng.random(450) < 0.85] = -1
    kw = dict(random_state=0, selection=None, loss=loss, solver_options=replace(
        SolverOptions(), newton_hessian_rows=64))
    seen = []
    sets = PrimalSolver.hessian_sets

    def spy(self, w):
        out = sets(self, w)
        seen.append([s for s, _, _ in out])
        return out

    monkeypatch.setattr(PrimalSolver, "hessian_sets", spy)
    skipped = TSGS3VM(**kw).fit(X, y)
    assert skipped.unlabeled_loss_ == "shg"
    assert seen and all(1 not in s for s in seen)
    if loss == "hinge":  # no set has curvature: the Hessian is lam I
        assert all(s == [] for s in seen)
    monkeypatch.setattr(tsgs3vm, "FLAT_LABELED", ())
    monkeypatch.setattr(tsgs3vm, "FLAT_UNLABELED", ())
    seen.clear()
    sampled = TSGS3VM(**kw).fit(X, y)
    assert any(1 in s for s in seen)
    assert sampled.to_bytes() == skipped.to_bytes()


def test_newton_fits_are_the_same_bits_for_any_thread_count():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, 1, 0)
    y[rng.random(400) < 0.9] = -1
    decisions = []
    old = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            est = TSGS3VM(random_state=0, selection=None,
                          solver_options=NEWTON).fit(X, y)
            decisions.append(est.decision_function(X))
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(decisions[0], decisions[1])
    assert est.n_iter_ > 0


@pytest.mark.parametrize("case", [
    ("tsgs3vm", "dense", {}),
    ("tsgs3vm", "csr", {}),
    ("tsgs3vm", "dense", {"dtype": "float32"}),
    ("frs3vm", "dense", {}),
    ("tsgs3vm", "multiclass", {}),
    ("tsgs3vm", "dense", {"balance": "quantile"}),
    ("tsgs3vm", "dense", {"balance": "supervised"}),
    ("tsgs3vm", "dense", {"balance": "none", "unlabeled_loss": "sshg"}),
    ("tsgs3vm", "dense", {"unlabeled_loss": "ramp_cccp"}),
    ("tsgs3vm", "dense", {"loss": "smooth_hinge", "selection": "cv", "cv": 3}),
])
def test_newton_fits_as_well_as_lbfgs(case):
    """Every estimator, input kind and loss the Newton path reads: the test
    error within 3 points of the same fit by L-BFGS (the objectives are not
    convex: the two may stop at different local minima)."""
    import scipy.sparse as sp
    from tests._data import two_gaussians

    from weakkernels import FRS3VM

    name, kind, params = case
    X, y, y_true = two_gaussians(n=500, d=6, n_labeled=30, sep=3.0, seed=1,
                                 n_classes=3 if kind == "multiclass" else 2)
    if kind == "csr":
        X = np.where(np.abs(X) < 0.5, 0.0, X)
        X = sp.csr_matrix(X)
    cls = FRS3VM if name == "frs3vm" else TSGS3VM
    errors = {}
    for method in ("lbfgs", "newton"):
        est = cls(random_state=0, C=10.0, **params,
                  solver_options=SolverOptions(primal_method=method))
        est.fit(X, y)
        errors[method] = float(np.mean(est.predict(X) != y_true))
    assert errors["newton"] <= errors["lbfgs"] + 0.03, errors
    assert errors["newton"] < 0.25, errors  # far from chance


def test_newton_is_the_default_minimiser_where_the_loss_has_curvature(monkeypatch):
    """``SolverOptions()`` picks Newton: TSGS3VM's solves run it; TSGSU's
    and QSG-S2AUC's losses give no curvature (moment losses, no pointwise
    form), so their default fits run L-BFGS and never Newton."""
    from tests._data import two_gaussians
    from tests.test_tsgsu import su_problem

    from weakkernels import QSGS2AUC, TSGSU
    from weakkernels._dsg import primal

    assert SolverOptions().primal_method == "newton"
    calls = []
    original = primal.newton_minimize
    monkeypatch.setattr(primal, "newton_minimize",
                        lambda *a: calls.append(1) or original(*a))
    X, y, _ = two_gaussians(n=300, d=4, n_labeled=30, seed=0)
    TSGS3VM(random_state=0, selection=None).fit(X, y)
    assert calls
    calls.clear()
    Xs, ys, _, _ = su_problem(n_pairs=60, n_u=200, n_test=10, seed=0)
    for est, data in ((TSGSU(prior=0.7, random_state=0), (Xs, ys)),
                      (QSGS2AUC(random_state=0), (X, y))):
        est.fit(*data)
        assert est.n_iter_ > 0
        assert calls == [], type(est).__name__


@pytest.mark.xfail(strict=True, reason=(
    "known: on the da loss's annealed stages Newton with the clipped curvature "
    "converges linearly and stops at newton_max_iter above its tolerance; "
    "SolverOptions.newton_finish=True finishes such a solve with "
    "L-BFGS: test_the_lbfgs_finish_ends_every_stage_where_lbfgs_does"))
def test_newton_alone_reaches_the_tolerance_of_every_solve(monkeypatch):
    """The Nyström fit of tests/test_nystroem.py with paper 004's rule:
    every Newton solve should end with the gradient's max-norm within its
    tolerance (or stop on no decrease), not at the iteration cap."""
    from weakkernels._dsg import primal

    solves = []
    original = primal.newton_minimize

    def spy(solver, z, w, max_iter, gtol):
        res = original(solver, z, w, max_iter, gtol)
        g = float(np.abs(solver.objective(res.x, w)[1]).max())
        solves.append((w, res.nit, max_iter, g, gtol))
        return res

    monkeypatch.setattr(primal, "newton_minimize", spy)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 4))
    y = np.full(400, -1)
    y[:60] = (X[:60, 0] * X[:60, 1] > 0).astype(int)
    TSGS3VM(features="nystroem", C=10.0, random_state=0, max_features=128,
            selection=None).fit(X, y)
    assert len(solves) == 3  # the annealing stages: w = 0, 0.1, 1
    capped = [s for s in solves if s[1] >= s[2] and s[3] > s[4]]
    assert capped == [], capped


def test_the_lbfgs_finish_ends_every_stage_where_lbfgs_does():
    """The same fit: Newton alone ends its annealed stages more than 1e-3
    above L-BFGS's objective; with the L-BFGS finish (newton_finish=True) every stage
    ends within 1e-4 of it or below (the stages are not convex and the two
    L-BFGS runs start from different points: they stop on no further
    decrease at objectives up to 1e-5 apart, by how the kernels round)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 4))
    y = np.full(400, -1)
    y[:60] = (X[:60, 0] * X[:60, 1] > 0).astype(int)

    def stages(**opts):
        est = TSGS3VM(features="nystroem", C=10.0, random_state=0,
                      max_features=128, selection=None,
                      solver_options=SolverOptions(**opts)).fit(X, y)
        return np.asarray(est.objective_curve_)

    lbfgs = stages(primal_method="lbfgs")
    finished, alone = stages(newton_finish=True), stages()
    assert len(lbfgs) == len(finished) == 3
    assert np.all(finished <= lbfgs * (1 + 1e-4)), (finished, lbfgs)
    assert alone[-1] > lbfgs[-1] * (1 + 1e-3), (alone, lbfgs)
