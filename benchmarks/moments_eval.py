"""One evaluation of TSGSU's and QSG-S2AUC's L-BFGS objective: the moment
form (``Problem.moments``, one fused pass) against the two-pass form (the
outputs of every row, the loss, then ``psi^T g``), side by side in one
process on the same level: features held (10^5 rows) or streamed (10^6).
Since d3add83 the solver uses the moment form only on a level that streams
its features, so on a held level both forms run the two-pass loss here (the
published held rows were measured at 31bd9d9, with the moment form on every
level).

The estimators' problems are rebuilt here with and without ``moments`` (the
two-pass loss is the one the estimators hand to ``solver="sgd"``); the
solver runs 3 iterations, and each level's objective function is captured
(as ``tests/test_primal_every_row.py`` does) and timed at one random point,
the two forms alternating, ``--repeats`` times each; the median CPU seconds
(``time.process_time``, one thread) are reported with their ratio. Data:
``benchmarks/su_auc_scale.py``'s standardised **synthetic** pool, sigma
"scale", Nyström features at the estimators' default count (a level holds
them when they fit ``_dsg.primal_cache_bytes``, else streams them)::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/moments_eval.py \\
        --rows 100000,1000000 --out benchmarks/results/moments_eval.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.optimize

from _bases import revision
from su_auc_scale import pool, standardise
from weakkernels import SolverOptions, _dsg, qsg_s2auc, tsgsu
from weakkernels._dsg import Problem, nystroem_size
from weakkernels.random_features import NystromSpec


def captured_objectives(problem, spec, n_blocks):
    """The objective function of every level the solver enters."""
    funs = []
    real = scipy.optimize.minimize

    def spy(fun, x0, args=(), **kw):
        funs.append((fun, x0.size, args))
        return real(fun, x0, args=args, **kw)

    scipy.optimize.minimize = spy
    try:
        _dsg.fit_expansion(problem, spec, solver="lbfgs", max_blocks=n_blocks,
                           n_iter=3, batch_size=None, seed=0)
    finally:
        scipy.optimize.minimize = real
    return funs


def time_pair(make_problem, spec, n_blocks, repeats):
    """Median CPU seconds of one evaluation at the last level, two-pass and
    moment form alternating; also the largest relative difference."""
    two = captured_objectives(make_problem(False), spec, n_blocks)[-1]
    one = captured_objectives(make_problem(True), spec, n_blocks)[-1]
    z = np.random.default_rng(0).normal(scale=0.01, size=two[1])
    times = {"two_pass": [], "moments": []}
    values = {}
    for _ in range(repeats):
        for name, (fun, _, args) in (("two_pass", two), ("moments", one)):
            c0 = time.process_time()
            values[name] = fun(z, *args)
            times[name].append(time.process_time() - c0)
    (v2, g2), (v1, g1) = values["two_pass"], values["moments"]
    return {
        "two_pass_s": statistics.median(times["two_pass"]),
        "moments_s": statistics.median(times["moments"]),
        "ratio": (statistics.median(times["moments"])
                  / statistics.median(times["two_pass"])),
        "value_rel_diff": float(abs(v1 - v2) / max(abs(v2), 1e-300)),
        "grad_rel_diff": float(np.max(np.abs(g1 - g2))
                               / max(np.max(np.abs(g2)), 1e-300)),
    }


def problems(n):
    """The TSGSU and QSG-S2AUC problems on ``n`` unlabeled synthetic rows,
    each as ``make(moments: bool) -> Problem``; their spec and landmarks."""
    X, y = pool(n + 12_000)
    X, = standardise(X[: n + 10_000])
    y = y[: n + 10_000]
    m = nystroem_size(X.shape[0], X.shape[1])  # the estimators' default count
    rng = np.random.default_rng(0)
    spec = NystromSpec("rbf", _dsg.resolve_sigma("scale", X),
                       X[np.sort(rng.choice(len(X), m, replace=False))], np.float32)
    S, U = X[:10_000], X[10_000:]  # "pair" rows (5 000 pairs), unlabeled rows
    prior = 0.7

    def su(moments):
        def loss(fs, idx, sizes, w):
            fS, fU = fs[0][:, 0], fs[1][:, 0]
            gS, gU = tsgsu.su_risk_gradient(fS, fU, prior, "squared", "none")
            return (tsgsu.su_risk(fS, fU, prior, "squared", "none"),
                    [gS[:, None], gU[:, None]])

        def of_moments(t, ms, w):
            return tsgsu.su_risk_of_moments(t, ms, prior, "none")

        return Problem([(S, None), (U, None)], 1, loss, lam=3e-4,
                       intercept="free", moments=of_moments if moments else None)

    lab = np.arange(2000)  # 2 000 labels, the rest unlabeled
    P, N = lab[y[lab] == 1], lab[y[lab] == 0]
    Uidx = np.arange(2000, len(X))

    def auc(moments):
        def loss(fs, idx, sizes, w):
            f = [x[:, 0] for x in fs]
            grads = qsg_s2auc.pnu_auc_risk_grad(*f, 0.5)
            return qsg_s2auc.pnu_auc_risk(*f, 0.5), [g[:, None] for g in grads]

        def of_moments(t, ms, w):
            return qsg_s2auc.pnu_auc_risk_of_moments(t, ms, 0.5)

        return Problem([(X, P), (X, N), (X, Uidx)], 1, loss, lam=1e-4,
                       moments=of_moments if moments else None)

    return {"tsgsu": su, "qsgs2auc": auc}, spec, m, len(X)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    rows = []
    for n in (int(r) for r in args.rows.split(",")):
        makes, spec, m, n_rows = problems(n)
        # the last level holds its features when they fit the budget
        held = n_rows * m * 4 <= _dsg.primal_cache_bytes(SolverOptions())
        for name, make in makes.items():
            row = {"method": name, "n_rows": n_rows, "landmarks": m,
                   "features": "held" if held else "streamed", "rev": revision(),
                   **time_pair(make, spec, 1, args.repeats)}
            print(row, flush=True)
            rows.append(row)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
