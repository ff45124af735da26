"""Which solver for the fixed-expansion S3VM primal: objective against passes
over the data and seconds, for L-BFGS on every row, L-BFGS on growing seeded
samples (the schedule of TSGS3VM's default), SVRG epochs and Newton-CG with
sub-sampled curvature.

The objective is TSGS3VM's binary primal (paper 000 Eq. (1) on a fixed
expansion) over held features ``psi`` (n x m, float32)::

    F(v, b) = C sum_L l(y (psi v + b)) + C* sum_U u(psi v + b) + 1/2 ||v||^2

with the estimator's default losses (``l`` the squared hinge, ``u`` the
default unlabeled loss ``"da"``), a free bias and **no balancing constraint**
(``balance="none"``: the constraint's centred features are a detail of the
estimator that every solver would share), no annealing. The features are the
estimator's own Nystroem features (:class:`weakkernels.random_features.
NystromSpec` on its seeded landmarks, :func:`weakkernels._dsg.
nystroem_landmarks`). Two problems per data set: ``C* = 0`` (convex: the
supervised machine, on the labeled rows only -- the estimator skips an unused
set) and paper 004's ``C* = C n_l / n_u`` (non-convex, every row). All
solvers start from ``v = 0, b = 0``; ``F*`` is the lowest value any solver
reached (a long L-BFGS run on every row, ``lbfgs-reference``, is among
them), so a gap is "how far from the best known point", not from a
certified optimum on the non-convex problem.

A *pass* is one product of every row with the weights (a gradient over all
rows costs two: forward and backward): the unit in which the cost grows with
n. SVRG's step size is a grid of multiples of ``1 / L`` (an upper bound of
the curvature by power iteration), and the best is chosen on the objective after the
last epoch (the grid is printed with its results: an SVRG user must tune it,
the L-BFGS solvers need no step). Newton-CG: full gradient, conjugate
gradients on Hessian-vector products (finite differences of the gradient) over
a seeded 10 % row sample, Armijo backtracking on F.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/solver_comparison.py --dataset ijcnn1
    ... --dataset synthetic --n-rows 1000000 --features 256   # HIGGS-shaped

Writes ``benchmarks/results/solver_comparison/<dataset>.csv`` (one row per
solver x problem x checkpoint: passes, seconds, F, gap) and a PNG.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from weakkernels._dsg import (  # noqa: E402
    level_gtol,
    nystroem_landmarks,
    nystroem_size,
    primal_levels,
)
from weakkernels._options import SolverOptions  # noqa: E402
from weakkernels.kernels import resolve_sigma  # noqa: E402
from weakkernels.random_features import NystromSpec  # noqa: E402
from weakkernels.tsgs3vm import (  # noqa: E402
    labeled_loss,
    labeled_loss_grad,
    unlabeled_loss,
    unlabeled_loss_grad,
)

OUT = ROOT / "benchmarks" / "results" / "solver_comparison"
LOSS, ULOSS, S = "squared_hinge", "da", -0.3
TOL = 1e-5  # TSGS3VM's default tol
COLUMNS = ["dataset", "n_rows", "features", "problem", "solver", "step", "passes",
           "seconds", "objective", "gap"]


class Primal:
    """F(v, b) and its gradient over held float32 features; ``rows`` selects
    a sample whose losses are scaled to the full sums (as the estimator's
    levels do), so every sample estimates the same objective."""

    def __init__(self, P, y, n_l, C, C_star):
        self.P, self.y, self.n_l, self.C, self.C_star = P, y, n_l, C, C_star
        self.n, self.m = P.shape
        self.passes = 0.0
        self._held = None

    def _parts(self, z, rows=None):
        v, b = z[:-1], z[-1]
        P = self.P if rows is None else self._rows(rows)
        idx = np.arange(self.n) if rows is None else rows
        f = (P @ v.astype(np.float32)).astype(np.float64) + b
        lab = idx < self.n_l
        nl_s, nu_s = max(lab.sum(), 1), max((~lab).sum(), 1)
        kl = self.C * self.n_l / nl_s
        ku = self.C_star * (self.n - self.n_l) / nu_s
        margin = self.y[idx[lab]] * f[lab]
        val = kl * labeled_loss(LOSS, margin).sum()
        g = np.zeros_like(f)
        g[lab] = kl * labeled_loss_grad(LOSS, margin) * self.y[idx[lab]]
        if self.C_star > 0:
            val += ku * unlabeled_loss(ULOSS, f[~lab], S).sum()
            g[~lab] = ku * unlabeled_loss_grad(ULOSS, f[~lab], S)
        self.passes += 2.0 * len(idx) / self.n
        gv = (P.T @ g.astype(np.float32)).astype(np.float64) + v
        return val + 0.5 * float(v @ v), np.r_[gv, g.sum()]

    def _rows(self, rows):
        """The sample's features, copied once per sample (the estimator holds
        each level's features; a minibatch is copied at every step)."""
        if self._held is None or self._held[0] is not rows:
            self._held = (rows, self.P[rows])
        return self._held[1]

    def __call__(self, z, rows=None):
        return self._parts(z, rows)

    def value(self, z):
        """F at z, without counting a pass (the checkpoints' bookkeeping)."""
        p = self.passes
        out = self._parts(z)[0]
        self.passes = p
        return out


def lbfgs(F, z0, *, max_iter, rows=None, gtol=1e-5, trace=None):
    """scipy's L-BFGS-B; ``trace`` after every iteration on every row, at
    the end on a sample (a sample's value estimates F, it is not F)."""
    res = minimize(lambda z: F(z, rows), z0, jac=True, method="L-BFGS-B",
                   callback=trace if rows is None else None,
                   options={"maxiter": max_iter, "gtol": gtol, "ftol": 1e-12})
    if rows is not None and trace is not None:
        trace(res.x)
    return res.x


def growing(F, z0, seed, *, max_iter, trace, fraction=0.0):
    """L-BFGS on the estimator's levels (:func:`weakkernels._dsg.
    primal_levels`: nested seeded samples of each point set, 4096 rows, x4
    per level, then every row), each level warm-started from the last, the
    estimator's tolerance relative to the first gradient. ``fraction > 0``:
    the intermediate levels stop at that fraction of their sampling noise
    (:func:`weakkernels._dsg.level_gtol`, the estimator's rule); 0 solves
    every level to the final tolerance."""
    z, gtol, prev = z0, None, None
    sizes = (F.n_l, F.n - F.n_l)
    for level in primal_levels(sizes, seed):
        full = all(i is None for i in level)
        rows = None if full else np.concatenate([
            np.arange(n0, n0 + n) if i is None else n0 + i
            for i, n0, n in zip(level, (0, F.n_l), sizes, strict=True)])
        tol = gtol
        if gtol is None:
            gtol = tol = TOL * np.abs(F(z, rows)[1]).max()
        elif fraction > 0:
            # the gradient at the warm start: the estimator reuses it as
            # L-BFGS's first evaluation, so it is not counted as passes here
            passes = F.passes
            g_start = np.abs(F(z, rows)[1]).max()
            F.passes = passes
            tol = level_gtol(gtol, g_start, sizes, prev, level, fraction)
        z = lbfgs(F, z, max_iter=max_iter, rows=rows, trace=trace, gtol=tol)
        prev = level
    return z


def smoothness(F, iters=20):
    """An upper bound of F's curvature, 1 + lambda_max(2 C psi_L' psi_L +
    4.47 C* psi_U' psi_U) (the squared hinge's second derivative is at most
    2, the "da" loss exp(-5 f^2)'s at most 20 e^-1.5 = 4.47), by power
    iteration; set-up, not counted as passes (a user of SVRG needs it)."""
    w = np.where(np.arange(F.n) < F.n_l, 2.0 * F.C, 4.47 * F.C_star)
    x = np.random.default_rng(0).normal(size=F.m)
    lam = 0.0
    for _ in range(iters):
        y = F.P.T @ (w * (F.P @ x.astype(np.float32))).astype(np.float32)
        lam = float(np.linalg.norm(y) / np.linalg.norm(x))
        x = y.astype(np.float64) / max(np.linalg.norm(y), 1e-300)
    # the bias is one more coordinate whose feature is 1 on every row
    return 1.0 + lam + float(w.sum())


def svrg(F, z0, seed, *, step, epochs, batch, trace):
    """Johnson & Zhang (2013): per epoch one full gradient at the snapshot,
    then n / batch variance-reduced minibatch steps of ``step`` (absolute:
    the caller scales it by 1 / :func:`smoothness`, outside the timed run)."""
    rng = np.random.default_rng(seed)
    z = z0.copy()
    for _ in range(epochs):
        snap = z.copy()
        mu = F(snap)[1]
        for _ in range(max(1, F.n // batch)):
            rows = np.sort(rng.choice(F.n, batch, replace=False))
            g = F(z, rows)[1] - F(snap, rows)[1] + mu
            z = z - step * g
            if not np.all(np.isfinite(z)):
                return z
        trace(z)
    return z


def newton_cg(F, z0, seed, *, iters, frac, cg_iters, trace):
    """Full gradient; Hessian-vector products by gradient differences on a
    seeded ``frac`` of the rows; CG to ``cg_iters``; Armijo backtracking."""
    rng = np.random.default_rng(seed)
    z = z0.copy()
    for _ in range(iters):
        f0, g = F(z)
        rows = np.sort(rng.choice(F.n, max(1, int(frac * F.n)), replace=False))
        gs = F(z, rows)[1]

        def hv(d, rows=rows, gs=gs, z=z):
            h = 1e-4 / max(np.linalg.norm(d), 1e-12)
            return (F(z + h * d, rows)[1] - gs) / h

        d, r = np.zeros_like(z), -g.copy()
        p, rr = r.copy(), float(r @ r)
        for _ in range(cg_iters):
            Hp = hv(p)
            pHp = float(p @ Hp)
            if pHp <= 0:  # negative curvature (non-convex part): stop CG
                break
            a = rr / pHp
            d, r = d + a * p, r - a * Hp
            rr_new = float(r @ r)
            if rr_new < 1e-10 * float(g @ g):
                break
            p, rr = r + (rr_new / rr) * p, rr_new
        if not np.any(d):
            d = -g
        t = 1.0
        while t > 1e-8:
            if F(z + t * d)[0] <= f0 + 1e-4 * t * float(g @ d):
                break
            t *= 0.5
        z = z + t * d
        trace(z)
    return z


def trace_solver(F, fn):
    """Run ``fn(F, z0, trace)`` from zero; ``[(passes, CPU s, F)]`` at its
    checkpoints and at the end (a checkpoint's own F evaluation is neither a
    pass nor the solver's time)."""
    pts, clock = [], {"start": time.process_time(), "paused": 0.0}

    def trace(z):
        t = time.process_time()
        pts.append((F.passes, t - clock["start"] - clock["paused"], F.value(z)))
        clock["paused"] += time.process_time() - t

    trace(fn(F, np.zeros(F.m + 1), trace))
    return pts


def load(dataset, n_rows, seed):
    """``(X, y, n_l, sigma)``: labeled rows first, then the unlabeled ones."""
    if dataset == "synthetic":
        from weakkernels.pipeline.synthetic import SyntheticSpec, synthetic_rows

        spec = SyntheticSpec("higgs-shaped", n_rows, 28, seed=seed)
        X, y = synthetic_rows(spec, 0, n_rows)
        X, y = np.asarray(X, np.float32), np.where(np.asarray(y) > 0, 1.0, -1.0)
        n_l = 10000
    else:
        from scale_accuracy import load as load_set

        Xp, yp, *_ = load_set(dataset)
        rng = np.random.default_rng(seed)
        perm = rng.permutation(yp.size)
        X, y, n_l = Xp[perm], np.where(yp[perm] > 0, 1.0, -1.0), 2000
    return X, y, n_l, resolve_sigma("scale", X)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ijcnn1",
                    choices=("ijcnn1", "cod-rna", "synthetic"))
    ap.add_argument("--n-rows", type=int, default=1_000_000,
                    help="synthetic only (HIGGS-shaped, d = 28)")
    ap.add_argument("--features", type=int, default=None,
                    help="Nystroem landmarks (default: the estimator's rule)")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", default="0.3,1,3,10",
                    help="SVRG step grid, in units of 1 / L (the curvature bound)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--level-fractions",
                    default=str(SolverOptions().primal_level_noise_fraction),
                    help="lbfgs-growing-loose: fractions of the sampling noise at "
                    "which the intermediate levels stop (default: the estimator's)")
    ap.add_argument("--reference-iter", type=int, default=1000)
    ap.add_argument("--solvers", default=None,
                    help="comma-separated subset to (re-)run; their rows replace "
                    "the same solvers' rows of the existing CSV, gaps recomputed")
    ap.add_argument("--summarize", metavar="CSV", default=None,
                    help="only rewrite the summary of a written result CSV")
    a = ap.parse_args(argv)
    if a.summarize:
        path = Path(a.summarize)
        rows = list(csv.DictReader(path.open()))
        _write(path.with_name(path.stem + "_summary.csv"), SUMMARY,
               summarize(rows))
        return
    X, y, n_l, sigma = load(a.dataset, a.n_rows, a.seed)
    n = len(y)
    m = a.features or nystroem_size(n, X.shape[1])
    Z = nystroem_landmarks((X, np.arange(n_l)), (X, np.arange(n_l, n)), m, a.seed)
    spec = NystromSpec("rbf", sigma, Z, np.float32, a.seed)
    W, second = spec.blocks(0, 1)
    t0 = time.process_time()
    P = np.concatenate([spec.features(X[i:i + 8192], W, second, parallel=False)
                        for i in range(0, n, 8192)])
    print(f"{a.dataset}: n = {n} ({n_l} labeled), m = {P.shape[1]} features, "
          f"features {time.process_time() - t0:.1f} s CPU", flush=True)
    only = set(a.solvers.split(",")) if a.solvers else None
    rows = []
    problems = (("C*=0", 0.0, n_l), ("C*=C n_l/n_u", a.C * n_l / (n - n_l), n))
    for problem, C_star, n_p in problems:
        runs = [
            ("lbfgs-all-rows", "", lambda F, z, tr: lbfgs(
                F, z, max_iter=300, trace=tr, gtol=TOL * np.abs(F(z)[1]).max())),
            # a long run on every row, to find the best known F of the problem
            ("lbfgs-reference", "", lambda F, z, tr: lbfgs(
                F, z, max_iter=a.reference_iter, trace=tr, gtol=1e-12)),
            ("lbfgs-growing", "", lambda F, z, tr: growing(
                F, z, a.seed, max_iter=300, trace=tr))]
        # the intermediate levels stopped at a fraction of their sampling
        # noise (the "step" column holds the fraction)
        runs += [("lbfgs-growing-loose", frac, lambda F, z, tr, frac=frac: growing(
            F, z, a.seed, max_iter=300, trace=tr, fraction=frac))
            for frac in map(float, a.level_fractions.split(","))]
        # the curvature bound once per problem, outside the solvers' clocks
        L = (smoothness(Primal(P[:n_p], y[:n_p], n_l, a.C, C_star))
             if only is None or "svrg" in only else 1.0)
        runs += [("svrg", step, lambda F, z, tr, step=step, L=L: svrg(
            F, z, a.seed, step=step / L, epochs=a.epochs, batch=256, trace=tr))
            for step in map(float, a.steps.split(","))]
        runs.append(("newton-cg-subsampled", "", lambda F, z, tr: newton_cg(
            F, z, a.seed, iters=30, frac=0.1, cg_iters=20, trace=tr)))
        for name, step, fn in runs:
            if only is not None and name not in only:
                continue
            # C* = 0 reads the labeled rows only (as the estimator skips an
            # unused set): its passes are over those rows
            pts = trace_solver(Primal(P[:n_p], y[:n_p], n_l, a.C, C_star), fn)
            print(f"  {problem:14s} {name:22s} {str(step):8s} passes "
                  f"{pts[-1][0]:8.1f}  {pts[-1][1]:7.1f} s  F = {pts[-1][2]:.6g}",
                  flush=True)
            rows += [{"dataset": a.dataset, "n_rows": n_p, "features": P.shape[1],
                      "problem": problem, "solver": name, "step": step,
                      "passes": round(passes, 3), "seconds": round(sec, 3),
                      "objective": val}
                     for passes, sec, val in pts]
    OUT.mkdir(parents=True, exist_ok=True)
    tag = a.dataset if a.dataset != "synthetic" else f"synthetic{n}"
    path = OUT / f"{tag}.csv"
    if only is not None:  # keep the other solvers' rows of the last full run
        kept = [r for r in csv.DictReader(path.open()) if r["solver"] not in only]
        # gaps are to the best F of the same problem: same features only
        if {int(r["features"]) for r in kept} - {P.shape[1]}:
            raise SystemExit(f"{path} holds rows with other feature counts than "
                             f"{P.shape[1]}: pass --features to match them")
        rows = kept + rows
    rows = with_gaps(rows)
    _write(path, COLUMNS, rows)
    _write(OUT / f"{tag}_summary.csv", SUMMARY, summarize(rows))
    _plot(rows, OUT / f"{tag}.png", tag)
    print(f"wrote {path}")


def with_gaps(rows):
    """Each row's relative gap to the lowest finite F of its problem."""
    best = {}
    for r in rows:
        v = float(r["objective"])
        if np.isfinite(v):
            best[r["problem"]] = min(best.get(r["problem"], np.inf), v)
    return [r | {"gap": (float(r["objective"]) - best[r["problem"]])
                 / max(abs(best[r["problem"]]), 1e-12)} for r in rows]


def _write(path, columns, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, columns)
        w.writeheader()
        w.writerows(rows)


SUMMARY = ["dataset", "n_rows", "features", "problem", "solver", "step",
           "final_gap", "passes", "seconds", "passes_to_1e-3", "seconds_to_1e-3"]


def summarize(rows):
    """One line per solver and problem: the last checkpoint's relative gap,
    passes and CPU seconds, and the first checkpoint within 1e-3 of the best
    F (empty: never)."""
    out = []
    keys = dict.fromkeys((r["problem"], r["solver"], str(r["step"])) for r in rows)
    for prob, solver, step in keys:
        pts = [r for r in rows if (r["problem"], r["solver"], str(r["step"]))
               == (prob, solver, step)]
        hit = next((r for r in pts if float(r["gap"]) <= 1e-3), None)
        last = pts[-1]
        out.append({k: last[k] for k in ("dataset", "n_rows", "features")}
                   | {"problem": prob, "solver": solver, "step": step,
                      "final_gap": f"{float(last['gap']):.2e}",
                      "passes": last["passes"], "seconds": last["seconds"],
                      "passes_to_1e-3": hit["passes"] if hit else "",
                      "seconds_to_1e-3": hit["seconds"] if hit else ""})
    return out


def _plot(rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = sorted({r["problem"] for r in rows})
    fig, axes = plt.subplots(len(problems), 2, figsize=(10, 4 * len(problems)),
                             squeeze=False)
    for i, prob in enumerate(problems):
        for key in sorted({(r["solver"], r["step"]) for r in rows
                           if r["problem"] == prob}):
            pts = [r for r in rows if r["problem"] == prob
                   and (r["solver"], r["step"]) == key]
            label = key[0] + (f" step {key[1]}" if key[1] != "" else "")
            gap = [max(float(r["gap"]), 1e-9) for r in pts]
            axes[i, 0].loglog([max(float(r["passes"]), 1e-2) for r in pts], gap,
                              ".-", label=label)
            axes[i, 1].loglog([max(float(r["seconds"]), 1e-2) for r in pts], gap,
                              ".-", label=label)
        axes[i, 0].set(xlabel="passes over the rows", ylabel="relative gap to best F",
                       title=f"{title}, {prob}")
        axes[i, 1].set(xlabel="CPU seconds", title=f"{title}, {prob}")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    main()
