"""The solver-comparison benchmark's objective: its gradient, its samples,
and what its solvers reach on a small problem."""

from __future__ import annotations

import numpy as np
import pytest

import solver_comparison as sc


def _primal(C_star, n=300, m=12, n_l=60, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.normal(scale=0.5, size=(n, m)).astype(np.float32)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    return sc.Primal(P, y, n_l, 2.0, C_star)


@pytest.mark.parametrize("C_star", [0.0, 0.7])
def test_gradient_matches_central_differences(C_star):
    F = _primal(C_star)
    z = np.random.default_rng(1).normal(scale=0.3, size=F.m + 1)
    g = F(z)[1]
    h = 1e-4
    num = np.array([(F.value(z + h * e) - F.value(z - h * e)) / (2 * h)
                    for e in np.eye(F.m + 1)])
    # float32 features: the products carry ~1e-7 relative rounding
    np.testing.assert_allclose(g, num, rtol=2e-3, atol=2e-3 * np.abs(g).max())


def test_the_value_against_a_naive_sum_and_samples_estimate_it():
    from weakkernels.tsgs3vm import labeled_loss, unlabeled_loss

    F = _primal(0.7)
    z = np.random.default_rng(2).normal(scale=0.3, size=F.m + 1)
    f = F.P.astype(np.float64) @ z[:-1] + z[-1]
    naive = (2.0 * labeled_loss(sc.LOSS, F.y[:60] * f[:60]).sum()
             + 0.7 * unlabeled_loss(sc.ULOSS, f[60:], sc.S).sum()
             + 0.5 * z[:-1] @ z[:-1])
    assert F.value(z) == pytest.approx(naive, rel=1e-5)
    # every row as a "sample" is the full objective; a pass is counted
    before = F.passes
    assert F(z, np.arange(F.n))[0] == pytest.approx(F(z)[0], rel=1e-12)
    assert F.passes == before + 4.0
    # a sample's sums are scaled to the full set sizes
    rows = np.r_[np.arange(0, 60, 2), np.arange(60, 300, 2)]
    half = F(z, rows)[0]
    assert abs(half - F.value(z)) / F.value(z) < 0.3


def test_lbfgs_and_newton_reach_the_convex_optimum_and_summary_reads_it():
    F = _primal(0.0)
    rows = []
    for name, fn in (
            ("lbfgs", lambda F, z, tr: sc.lbfgs(F, z, max_iter=500, trace=tr,
                                                gtol=1e-10)),
            ("newton", lambda F, z, tr: sc.newton_cg(F, z, 0, iters=30, frac=1.0,
                                                     cg_iters=50, trace=tr))):
        pts = sc.trace_solver(sc.Primal(F.P, F.y, F.n_l, F.C, F.C_star), fn)
        rows += [{"dataset": "toy", "n_rows": F.n, "features": F.m,
                  "problem": "C*=0", "solver": name, "step": "",
                  "passes": p, "seconds": s, "objective": v, "gap": 0.0}
                 for p, s, v in pts]
    last = {r["solver"]: r["objective"] for r in rows}  # each run's end
    assert last["newton"] == pytest.approx(last["lbfgs"], rel=1e-6)
    summary = sc.summarize(rows)
    assert [s["solver"] for s in summary] == ["lbfgs", "newton"]
