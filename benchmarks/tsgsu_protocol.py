"""Paper 002 Sec. 6 protocol: TSGSU vs CUU(2000) vs CUU(all) vs SUSL.

One class is positive, the rest negative. ``n_pairs`` similar pairs are drawn by
the class prior (two draws from p(x, y) kept when their labels agree), ``n_U``
unlabeled points from the rest and ``ceil(n_U / 3)`` test points after them --
the split builder of the pipeline (:func:`weakkernels.pipeline.splits.su_split`).
Features are standardized with statistics of the training points (pairs + U).
Batch 1000 pair points + 1000 unlabeled points, 100 iterations, 1000 random
features (TSGSU: 10 per iteration) -- paper 002's settings. The class prior is
given (the proportion of the positive class, as in the paper).

Hyper-parameters are chosen once per data set on a separate tuning split (seed
1000, never a test seed): 80 % of its pairs and unlabeled points train, the rest
is an SU validation set scored by the SU zero-one risk
(:func:`weakkernels.tsgsu.su_zero_one_risk`, an unbiased estimate of the error
from SU data alone) -- no test labels are used. TSGSU and CUU get grids of the
same size (TSGSU's also spans its two step schedules, 64 points vs 32); CUU(all)
reuses CUU(2000)'s choice and SUSL(all) the choice made with SUSL on 2000
centers (the all-center fits are too slow to grid-search here). CUU is run with
Adam (Lu et al.'s optimizer) and with plain SGD (paper 002's description).

Usage::

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/tsgsu_protocol.py \\
        --dataset cod-rna --n-unlabeled 10000 --seeds 0 1 2 \\
        --out results/tsgsu/cod-rna_10000.json

``--bases``: the default solver (L-BFGS, ``correction="none"``, ``lam``
default) on the same splits with seeded Fourier and with Nyström features at
equal feature counts -- the Fourier default of the rows
(:func:`weakkernels._dsg.primal_features`) and the Nyström default
(:func:`weakkernels._dsg.nystroem_size`) -- over a small sigma grid, with
test accuracy and fit CPU seconds per fit appended to
``benchmarks/results/su_auc_bases/tsgsu.csv`` (no tuning: every grid point
is reported)::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python \\
        benchmarks/tsgsu_protocol.py --bases --dataset cod-rna \\
        --n-unlabeled 10000 --seeds 0 1 2 --sigmas 0.003 0.01 0.03 0.1

``--direct``: ``solver="direct"`` (the normal equations of the quadratic
Eq. 9, one pass and a Cholesky solve) against the default L-BFGS on the same
splits and seeded Fourier features (``--m``, default the Fourier default):
the objective each reaches, test accuracy and fit CPU seconds, appended to
``benchmarks/results/su_auc_bases/tsgsu_direct.csv``::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python \\
        benchmarks/tsgsu_protocol.py --direct --dataset cod-rna \\
        --n-unlabeled 10000 --seeds 0 1 2 --sigmas 0.01
"""

from __future__ import annotations

import argparse
import bz2
import csv
import itertools
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from _bases import compare_bases, revision
from weakkernels._dsg import nystroem_size, primal_features
from weakkernels.baselines.su import CUU, SUSL
from weakkernels.pipeline.datasets import load_raw
from weakkernels.pipeline.splits import fit_arrays, resolve, su_split
from weakkernels.tsgsu import TSGSU, su_zero_one_risk

# the data mirror beside the clone (../shared/data/raw), or $WEAKKERNELS_DATA
DATA = Path(os.environ.get("WEAKKERNELS_DATA",
                           Path(__file__).resolve().parents[2] / "shared/data/raw"))
TUNE_SEED = 1000
BASES_CSV = Path(__file__).resolve().parent / "results/su_auc_bases/tsgsu.csv"
DIRECT_CSV = BASES_CSV.with_name("tsgsu_direct.csv")


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y01)`` with ``y01 == 1`` on the class taken as positive (LIBSVM's
    +1; skin_nonskin: the skin class), read by the pipeline's parser."""
    if name == "ijcnn1":  # the training file only (the registry adds val + test)
        from sklearn.datasets import load_svmlight_file

        with bz2.open(DATA / "ijcnn1/ijcnn1.trn.bz2") as fh:
            X, y = load_svmlight_file(fh, n_features=22)
        return X.toarray(), (y > 0).astype(int)
    if name not in ("cod-rna", "skin_nonskin"):
        raise ValueError(f"unknown data set {name!r}")
    raw = load_raw(name, DATA)
    return np.asarray(raw.X), (np.asarray(raw.y) == 1.0).astype(int)


def make_problem(X, y, n_pairs, n_u, seed):
    """SU training arrays (pairs first, ``y == 1``; then ``y == -1``), test set
    and the true prior of the positive class."""
    split = resolve(
        su_split(y, positive=1, n_pairs=n_pairs, n_unlabeled=[n_u], n_val=0,
                 seed=seed),
        n_u,
    )
    X_fit, y_fit = fit_arrays(X, y, split)
    mu, sd = X_fit.mean(axis=0), X_fit.std(axis=0)
    sd[sd == 0] = 1.0
    Xt = X[split["test"]]
    # The unlabeled and test points are drawn from the pool left after the pairs,
    # whose positive rate differs from the full data's (split["prior"]) because
    # the pairs take positives at rate pi^2 / pi_S: cod-rna 0.36 vs 0.333. The
    # prior that defines p(x) for U is the pool's.
    rest = np.ones(len(y), bool)
    rest[split["pairs"].ravel()] = False
    prior = float(y[rest].mean())
    return (X_fit - mu) / sd, y_fit, (Xt - mu) / sd, y[split["test"]], prior


def factories(prior: float):
    common = dict(prior=prior, batch_size=1000, max_iter=100)
    return {
        "TSGSU": (
            lambda hp, s: TSGSU(**common, block_size=10, random_state=s, **hp),
            {"sigma": [0.03, 0.1, 0.3, 1.0], "eta0": [1.0, 3.0, 10.0, 20.0],
             "learning_rate": ["constant", "invscaling"], "lam": [1e-4, 1e-3]},
        ),
        "CUU(2000)": (
            lambda hp, s: CUU(**common, n_centers=2000, random_state=s, **hp),
            {"sigma": [0.03, 0.1, 0.3, 1.0], "eta0": [0.001, 0.003, 0.01, 0.03],
             "lam": [1e-4, 1e-3]},
        ),
        # Paper 002 describes CUU as "a stochastic gradient method": plain SGD.
        "CUU-SGD(2000)": (
            lambda hp, s: CUU(**common, n_centers=2000, optimizer="sgd",
                              random_state=s, **hp),
            {"sigma": [0.03, 0.1, 0.3, 1.0], "eta0": [3e-4, 1e-3, 3e-3, 1e-2],
             "lam": [1e-4, 1e-3]},
        ),
        "CUU(all)": (
            lambda hp, s: CUU(**common, n_centers=None, random_state=s, **hp),
            "CUU(2000)",
        ),
        "SUSL(2000)": (
            lambda hp, s: SUSL(prior=prior, n_centers=2000, random_state=s, **hp),
            {"sigma": [0.03, 0.1, 0.3, 1.0], "lam": [1e-4, 1e-2, 1.0]},
        ),
        "SUSL(all)": (
            lambda hp, s: SUSL(prior=prior, n_centers=None, random_state=s, **hp),
            "SUSL(2000)",
        ),
    }


def su_val_split(X_fit, y_fit, seed, frac=0.2):
    """Hold out ``frac`` of the pairs and of the unlabeled points (SU validation)."""
    rng = np.random.default_rng(seed)
    n_pair_rows = int((y_fit == 1).sum())
    n_pairs = n_pair_rows // 2
    val_pairs = rng.random(n_pairs) < frac
    val_rows_S = np.repeat(val_pairs, 2)
    U = np.flatnonzero(y_fit == -1)
    val_U = rng.random(U.size) < frac
    tr = np.concatenate([np.flatnonzero(~val_rows_S), U[~val_U]])
    return (X_fit[tr], y_fit[tr], X_fit[:n_pair_rows][val_rows_S], X_fit[U[val_U]])


def tune(make, grid, X_fit, y_fit, prior, log):
    Xtr, ytr, XSv, XUv = su_val_split(X_fit, y_fit, TUNE_SEED)
    keys = sorted(grid)
    best, best_risk = None, math.inf
    for vals in itertools.product(*(grid[k] for k in keys)):
        hp = dict(zip(keys, vals, strict=True))
        try:
            est = make(hp, TUNE_SEED).fit(Xtr, ytr)
            risk = su_zero_one_risk(
                est.decision_function(XSv), est.decision_function(XUv), prior
            )
        except (FloatingPointError, ValueError) as exc:  # diverged / bad step
            log(f"    {hp}: failed ({exc})")
            continue
        log(f"    {hp}: SU 0-1 risk {risk:.4f}")
        if risk < best_risk:
            best, best_risk = hp, risk
    return best, best_risk


def bases(args, X, y, log):
    """``--bases``: see the module docstring."""
    problems, priors = {}, {}
    for seed in args.seeds:
        X_fit, y_fit, Xt, yt, priors[seed] = make_problem(
            X, y, args.n_pairs, args.n_unlabeled, seed)
        problems[seed] = (X_fit, y_fit, Xt, yt, args.n_unlabeled)
    n, d = X_fit.shape
    ms = args.m or sorted({primal_features(n, 32, d), nystroem_size(n, d) // 32 * 32})
    log(f"{args.dataset}: {n} training rows, feature counts {ms}")

    def make(basis, m, sigma, seed):
        return TSGSU(prior=priors[seed], sigma=sigma, features=basis, max_features=m,
                     block_size=32, random_state=seed)

    compare_bases(BASES_CSV, args.dataset, problems, make,
                  lambda est, Xt, yt: est.score(Xt, yt), metric="accuracy",
                  ms=ms, sigmas=args.sigmas, log=log)


def direct(args, X, y, log):
    """``--direct``: see the module docstring."""
    cols = ["dataset", "n_u", "m", "sigma", "seed", "solver", "objective",
            "accuracy", "fit_cpu_s", "n_iter", "rev"]
    new = not DIRECT_CSV.exists()
    DIRECT_CSV.parent.mkdir(parents=True, exist_ok=True)
    rev = revision()
    with DIRECT_CSV.open("a", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        if new:
            w.writeheader()
        for seed in args.seeds:
            X_fit, y_fit, Xt, yt, prior = make_problem(
                X, y, args.n_pairs, args.n_unlabeled, seed)
            m = (args.m or [primal_features(*X_fit.shape[:1], 32, X.shape[1])])[0]
            if seed == args.seeds[0]:  # compile (or load) numba's kernels first
                few = np.r_[0:300, len(y_fit) - 300:len(y_fit)]
                for solver in ("lbfgs", "direct"):
                    TSGSU(prior=prior, solver=solver, features="fourier",
                          max_features=64, block_size=32).fit(X_fit[few], y_fit[few])
            for sigma in args.sigmas:
                for solver in ("lbfgs", "direct"):
                    # seeded Fourier features, as measured (the default
                    # basis is Nystrom since 65a7e4b)
                    est = TSGSU(prior=prior, sigma=sigma, solver=solver,
                                features="fourier", max_features=m,
                                block_size=32, random_state=seed)
                    c0 = time.process_time()
                    est.fit(X_fit, y_fit)
                    cpu = time.process_time() - c0
                    row = {"dataset": args.dataset, "n_u": args.n_unlabeled,
                           "m": m, "sigma": sigma, "seed": seed, "solver": solver,
                           "objective": f"{est.objective_curve_[-1]:.9g}",
                           "accuracy": f"{est.score(Xt, yt):.5f}",
                           "fit_cpu_s": f"{cpu:.2f}", "n_iter": est.n_iter_,
                           "rev": rev}
                    w.writerow(row)
                    fh.flush()
                    log(f"  seed={seed} sigma={sigma} m={m} {solver:6s} "
                        f"J={row['objective']} acc={row['accuracy']} "
                        f"cpu={row['fit_cpu_s']}s iter={est.n_iter_}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="cod-rna")
    ap.add_argument("--n-unlabeled", type=int, default=10000)
    ap.add_argument("--n-pairs", type=int, default=5000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument(
        "--methods", nargs="+",
        default=["TSGSU", "CUU(2000)", "CUU-SGD(2000)", "CUU(all)", "SUSL(2000)"],
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--bases", action="store_true",
                    help="Fourier vs Nystroem features with the L-BFGS solver")
    ap.add_argument("--direct", action="store_true",
                    help='solver="direct" against L-BFGS')
    ap.add_argument("--sigmas", type=float, nargs="+", default=[0.01])
    ap.add_argument("--m", type=int, nargs="+", default=None,
                    help="--bases: feature counts (default: both defaults)")
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, flush=True)

    X, y = load(args.dataset)
    if args.bases:
        bases(args, X, y, log)
        return
    if args.direct:
        direct(args, X, y, log)
        return
    X_tune, y_tune, _, _, prior = make_problem(
        X, y, args.n_pairs, args.n_unlabeled, TUNE_SEED
    )
    log(f"{args.dataset}: n={len(y)}, d={X.shape[1]}, prior={prior:.4f}")
    facts = factories(prior)
    chosen = {}
    for m in args.methods:
        make, grid = facts[m]
        if isinstance(grid, str):
            if grid not in chosen:  # the proxy was not run: tune it now
                chosen[grid] = tune(facts[grid][0], facts[grid][1], X_tune, y_tune,
                                    prior, log)
            chosen[m] = chosen[grid]
            continue
        log(f"tuning {m}")
        chosen[m] = tune(make, grid, X_tune, y_tune, prior, log)
        log(f"  -> {chosen[m]}")
    results = {m: {"acc": [], "time": [], "hp": chosen[m][0]} for m in args.methods}
    for seed in args.seeds:
        X_fit, y_fit, Xt, yt, _ = make_problem(
            X, y, args.n_pairs, args.n_unlabeled, seed
        )
        for m in args.methods:
            make = facts[m][0]
            est = make(chosen[m][0], seed)
            t0 = time.perf_counter()
            est.fit(X_fit, y_fit)
            dt = time.perf_counter() - t0
            acc = float(est.score(Xt, yt))
            results[m]["acc"].append(acc)
            results[m]["time"].append(dt)
            log(f"seed {seed} {m}: acc {acc:.4f}  fit {dt:.2f}s")
    log(f"\n{args.dataset}, n_pairs={args.n_pairs}, n_U={args.n_unlabeled}, "
        f"prior={prior:.3f}, seeds={args.seeds}")
    log("| method | accuracy (mean ± std) | fit time s (median) | hyper-parameters |")
    log("|---|---|---|---|")
    for m, r in results.items():
        a = np.array(r["acc"])
        log(f"| {m} | {a.mean():.4f} ± {a.std(ddof=1) if a.size > 1 else 0:.4f} | "
            f"{np.median(r['time']):.2f} | {r['hp']} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(
            {"dataset": args.dataset, "n_unlabeled": args.n_unlabeled,
             "n_pairs": args.n_pairs, "prior": prior, "seeds": args.seeds,
             "results": results}, indent=1))


if __name__ == "__main__":
    main()
