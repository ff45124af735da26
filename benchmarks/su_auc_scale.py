"""TSGSU and QSG-S2AUC at 10^5-10^6 unlabeled **synthetic** rows: fit cost of
the L-BFGS default, one revision against another.

Data: :mod:`weakkernels.pipeline.synthetic`'s ``synthetic_hepmass`` (the shape
of HEPMASS, 28 features; the content is synthetic, from a nonlinear teacher),
generated in memory. Its classes are balanced, where the SU risk is undefined
(``prior = 0.5``), so the pool keeps every positive of the first rows and 3/7
as many negatives: positive class prior 0.7.

* **TSGSU**: ``--pairs`` similar pairs and ``n`` unlabeled rows drawn by
  :func:`weakkernels.pipeline.splits.su_split` (paper 002 Sec. 6), the true
  pool prior given; test error on ``--n-test`` other rows of the pool.
* **QSGS2AUC**: ``--labels`` labeled rows and ``n`` unlabeled ones; test AUC on
  ``--n-test`` other rows.

Estimator defaults otherwise (``solver="lbfgs"``; ``--features``, default
``"auto"``: the estimators' default since 65a7e4b, Fourier before it, so
the rows of ``su_auc_scale.json`` and ``su_auc_scale_2bb1783.json`` ran on
Fourier features; ``--max-features`` sets ``max_features``), with
``sigma`` passed (``--sigma``, default ``"scale"``: the estimators' default
now; revisions up to 2bb1783 defaulted to 1.0, which puts these standardised
28-d rows at chance), inputs standardised on the training rows. ``--stream`` makes every
level of the solver stream its features (``SolverOptions(primal_cache_max_bytes=0)``, as
a level too large to hold does), so that each evaluation's passes over the
rows dominate the fit. Each (method, n) fits in a fresh child process:
``fit_cpu_s`` is its ``time.process_time`` around ``fit`` (one thread: run
with ``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1``), ``peak_rss_mb`` its
``VmHWM``; a small warm-up fit compiles the numba kernels first.
``--no-moments`` turns off the one-pass moment form of the losses
(``Problem.moments``, used on streamed levels since d3add83): the two-pass
loss on every level, for a paired measurement of its gain. Results are
appended to the JSON list ``--out`` with the revision of the code that ran, so
two revisions run one after the other can be paired::

    python benchmarks/su_auc_scale.py --rows 100000,1000000 --methods tsgsu,qsgs2auc \\
        --out benchmarks/results/su_auc_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _bases import revision
from _peak_memory import status


def pool(n_rows: int, seed: int = 0):
    """``(X, y)`` of the prior-0.7 pool with at least ``n_rows`` rows."""
    from weakkernels.pipeline.synthetic import SYNTHETIC, synthetic_rows

    # the pool keeps ~10/14 of the rows (all positives, 3/7 as many negatives)
    n_gen = int(n_rows * 1.45) + 50_000
    X, y = synthetic_rows(SYNTHETIC["synthetic_hepmass"], 0, n_gen)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    keep = np.sort(np.concatenate([pos, neg[: int(pos.size * 3 / 7)]]))
    rng = np.random.default_rng(seed)
    keep = rng.permutation(keep)
    return X[keep], y[keep].astype(np.int64)


def standardise(X_fit, *others):
    mu, sd = X_fit.mean(axis=0), X_fit.std(axis=0)
    sd[sd == 0] = 1.0
    return [(A - mu) / sd for A in (X_fit, *others)]


def su_problem(X, y, n_pairs: int, n_unlabeled: int, n_test: int, seed: int):
    """Paper 002's SU problem on the pool: ``n_pairs`` similar pairs and
    ``n_unlabeled`` rows by :func:`weakkernels.pipeline.splits.su_split`
    (which also draws ``ceil(n_unlabeled / 3)`` test rows of its own, unused
    here), the test set the next ``n_test`` rows outside both, inputs
    standardised on the training rows. Returns ``(X_fit, y_fit, X_test,
    y_test, prior)``, ``prior`` the positive rate outside the pairs."""
    from weakkernels.pipeline.splits import fit_arrays, resolve, su_split

    split = resolve(su_split(y, positive=1, n_pairs=n_pairs,
                             n_unlabeled=[n_unlabeled], n_val=0, seed=seed),
                    n_unlabeled)
    X_fit, y_fit = fit_arrays(X, y, split)
    rest = np.ones(len(y), bool)
    rest[split["pairs"].ravel()] = False
    rest[split["unlabeled"]] = False
    test = np.flatnonzero(rest)[:n_test]
    prior = float(y[~np.isin(np.arange(len(y)), split["pairs"].ravel())].mean())
    X_fit, Xt = standardise(X_fit, X[test])
    return X_fit, y_fit, Xt, y[test], prior


def auc_problem(X, y, n_labels: int, n_unlabeled: int, n_test: int):
    """The first ``n_labels`` rows of the pool labeled, the next
    ``n_unlabeled`` unlabeled (``y = -1``), the next ``n_test`` the test set,
    standardised on the training rows: ``(X_fit, y_fit, X_test, y_test)``."""
    n_fit = n_unlabeled + n_labels
    y_fit = y[:n_fit].copy()
    y_fit[n_labels:] = -1
    X_fit, Xt = standardise(X[:n_fit], X[n_fit:n_fit + n_test])
    return X_fit, y_fit, Xt, y[n_fit:n_fit + n_test]


def run_one(method: str, n: int, args) -> dict:
    from sklearn.metrics import roc_auc_score

    from weakkernels import QSGS2AUC, TSGSU, SolverOptions, _dsg

    # su_split also draws ceil(n / 3) test rows of its own (unused here)
    X, y = pool(n + -(-n // 3) + args.n_test + 2 * args.pairs + args.labels)
    basis = {"features": args.features}
    if args.stream:  # no level holds its features: every one streams
        basis["solver_options"] = SolverOptions(primal_cache_max_bytes=0)
    if args.max_features:
        basis["max_features"] = args.max_features
    if method == "tsgsu":
        X_fit, y_fit, Xt, yt, prior = su_problem(X, y, args.pairs, n, args.n_test, 0)
        make = lambda: TSGSU(prior=prior, sigma=args.sigma, random_state=0,  # noqa: E731
                             **basis)
        score = lambda est: float(np.mean(est.predict(Xt) != yt))  # noqa: E731
        metric = "test_error"
    else:
        X_fit, y_fit, Xt, yt = auc_problem(X, y, args.labels, n, args.n_test)
        make = lambda: QSGS2AUC(sigma=args.sigma, random_state=0, **basis)  # noqa: E731
        score = lambda est: float(roc_auc_score(yt, est.decision_function(Xt)))  # noqa: E731
        metric = "test_auc"
    if args.no_moments:
        # the two-pass loss on every level (as before 2bb1783): the moment
        # form's whole-fit gain is this run against one without the flag
        init = _dsg.Problem.__init__

        def two_pass(self, *a, **kw):
            init(self, *a, **kw)
            self.moments = None

        _dsg.Problem.__init__ = two_pass
    # warm-up: compile the kernels outside the timed fit
    warm = np.r_[np.arange(400), np.arange(X_fit.shape[0] - 2000, X_fit.shape[0])]
    make().fit(X_fit[warm], y_fit[warm])
    c0, w0 = time.process_time(), time.perf_counter()
    est = make().fit(X_fit, y_fit)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {
        "method": method, "n_unlabeled": n, "sigma": args.sigma,
        "streamed": bool(args.stream), "features": args.features,
        "moments": not args.no_moments,
        "max_features": args.max_features,
        "n_features_model": int(est.n_features_model_),
        "sigma_": float(est.sigma_), "rev": revision(), "fit_cpu_s": cpu,
        "fit_wall_s": wall, metric: score(est), "n_iter": int(est.n_iter_),
        "objective": float(est.objective_curve_[-1]),
        "peak_rss_mb": status().get("VmHWM", 0) / 2**20,
        "threads": os.environ.get("NUMBA_NUM_THREADS"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--methods", default="tsgsu,qsgs2auc")
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--labels", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=100_000)
    ap.add_argument("--sigma", default="scale",
                    type=lambda v: v if v == "scale" else float(v))
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--features", default="auto",
                    choices=["fourier", "nystroem", "auto"])
    ap.add_argument("--max-features", type=int, default=None)
    ap.add_argument("--no-moments", action="store_true",
                    help="two-pass loss on every level (Problem.moments off)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), args)))
        return
    for n in (int(r) for r in args.rows.split(",")):
        for method in args.methods.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--one", method, str(n),
                 "--pairs", str(args.pairs), "--labels", str(args.labels),
                 "--n-test", str(args.n_test), "--sigma", str(args.sigma),
                 "--out", str(args.out), "--features", args.features]
                + ["--stream"] * args.stream
                + ["--max-features", str(args.max_features)] * bool(args.max_features)
                + ["--no-moments"] * args.no_moments,
                check=True, capture_output=True, text=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(row, flush=True)
            rows = json.loads(args.out.read_text()) if args.out.exists() else []
            args.out.write_text(json.dumps(rows + [row], indent=1) + "\n")


if __name__ == "__main__":
    main()
