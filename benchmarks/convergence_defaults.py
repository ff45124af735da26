"""Objective gap against iterations and seconds for the final defaults.

Supervised part only (``C_star=0``, ``balance="none"``): the objective is then
the kernel SVM's, ``1/2 ||f||^2 + C sum_L l(y f(x))`` with the default labeled
loss (the smooth hinge) and a free bias. Its exact optimum ``P*`` is computed
on the exact kernel (representer theorem, scipy BFGS in float64, 200 labeled
points). Each point of a curve is one deterministic fit with ``max_iter=k``:

* ``TSGS3VM()`` (L-BFGS on the default seeded expansion, no annealing since
  C* = 0), k L-BFGS iterations;
* ``TSGS3VM(solver="sgd")`` (paper 000 Algorithm 1, decay step, fresh block per
  step), k steps, same loss.

The norm of a random-feature model is taken in its own feature space
(``||f||^2 = n_blocks ||coef||^2``, BENCHMARKS.md "Convergence"), an upper bound
for SGD iterates; that norm belongs to the approximate kernel, so an L-BFGS
point may sit a hair *below* the exact-kernel ``P*`` (plotted at 1e-6). Same
splits as benchmarks/convergence.py (seed 0, official g50c split 1); sigma =
1/(d Var X).

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/convergence_defaults.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from s3vm_defaults import _minmax, load_raw, mirror  # noqa: E402
from weakkernels import TSGS3VM  # noqa: E402
from weakkernels.kernels import kernel_matrix  # noqa: E402
from weakkernels.tsgs3vm import labeled_loss, labeled_loss_grad  # noqa: E402

LOSS = "smooth_hinge"


def split(name):
    r = load_raw(name, mirror())
    y = np.where(r.y > 0, 1, 0)
    if name == "g50c":
        L, U = r.split_labeled[0], r.split_unlabeled[0]
        return r.X[L], y[L], r.X[U], r.X[U], y[U]
    X = _minmax(r.X)
    p = np.random.default_rng(0).permutation(len(y))
    L, U, T = p[:200], p[200:2200], p[2200:4200]
    return X[L], y[L], X[U], X[T], y[T]


def exact_optimum(K, Y, C):
    def obj(z):
        beta, b = z[:-1], z[-1]
        Kb = K @ beta
        m = Y * (Kb + b)
        g = C * labeled_loss_grad(LOSS, m) * Y
        return (0.5 * beta @ Kb + C * labeled_loss(LOSS, m).sum(),
                np.r_[Kb + K @ g, g.sum()])

    return minimize(obj, np.zeros(K.shape[0] + 1), jac=True, method="BFGS",
                    options={"gtol": 1e-9, "maxiter": 50_000}).fun


def objective(est, XL, Y, C):
    v2 = est.n_blocks_ * float(np.sum(est.coef_.astype(np.float64) ** 2))
    f = est.decision_function(XL)
    return 0.5 * v2 + C * labeled_loss(LOSS, Y * f).sum()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/convergence_after"))
    ap.add_argument("--datasets", nargs="+", default=["cod-rna", "ijcnn1", "g50c"])
    args = ap.parse_args(argv)
    print("command:", " ".join([Path(sys.argv[0]).name] + sys.argv[1:]))
    rows = []
    budgets = {"lbfgs": [1, 2, 4, 8, 16, 32, 64, 128, 256, None],
               "sgd": [1, 4, 16, 64, 256, 1024]}
    # compile the numba kernels of both solvers outside the timed fits
    Xw = np.random.default_rng(0).normal(size=(64, 3))
    yw = np.r_[np.arange(8) % 2, np.full(56, -1)]
    for solver in budgets:
        TSGS3VM(solver=solver, max_iter=2, random_state=0).fit(Xw, yw)
    for name in args.datasets:
        XL, yl, XU, XT, yt = split(name)
        X = np.vstack([XL, XU])
        y = np.r_[yl, np.full(len(XU), -1)]
        sigma = 1.0 / (X.shape[1] * X.var())
        Y = np.where(yl == 1, 1.0, -1.0)
        for C in (1.0, 10.0):
            p_star = exact_optimum(kernel_matrix(XL, XL, "rbf", sigma), Y, C)
            for solver, ks in budgets.items():
                for k in ks:
                    t = time.perf_counter()
                    est = TSGS3VM(C=C, C_star=0.0, balance="none", sigma=sigma,
                                  solver=solver, max_iter=k, random_state=0).fit(X, y)
                    dt = time.perf_counter() - t
                    gap = objective(est, XL, Y, C) / p_star - 1.0
                    err = float(np.mean(est.predict(XT) != yt))
                    rows.append((name, C, solver, est.n_iter_, dt, gap, err))
                    print(name, C, solver, est.n_iter_, f"{dt:.3f}s gap={gap:.4g} "
                          f"err={err:.4f}", flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.DataFrame(rows, columns=["dataset", "C", "solver", "n_iter", "fit_s",
                                     "gap", "test_error"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "defaults_gap.csv", index=False)
    fig, axes = plt.subplots(2, len(args.datasets), figsize=(4 * len(args.datasets), 6))
    axes = np.atleast_2d(axes)
    for j, name in enumerate(args.datasets):
        for (C, solver), g in df[df.dataset == name].groupby(["C", "solver"]):
            lab = f"{solver} C={C:g}"
            axes[0, j].loglog(g.n_iter, np.maximum(g.gap, 1e-6), "o-", label=lab)
            axes[1, j].loglog(g.fit_s, np.maximum(g.gap, 1e-6), "o-", label=lab)
        axes[0, j].set_title(name)
        axes[0, j].set_xlabel("iterations")
        axes[1, j].set_xlabel("fit seconds")
        axes[0, j].set_ylabel("(P - P*) / P*")
        axes[1, j].set_ylabel("(P - P*) / P*")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "defaults_gap.png", dpi=80)
    print(df.to_markdown(index=False, floatfmt=".4g"))


if __name__ == "__main__":
    main()
