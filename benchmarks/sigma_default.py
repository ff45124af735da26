# ruff: noqa: B023
# (every lambda below is called by run() within its own loop iteration)
"""sigma=1.0 vs sigma="scale" for TSGSU, QSGS2AUC and the SU / AUC baselines.

The measurement behind the default ``sigma="scale"`` of these estimators
(until 88420dd they defaulted to 1.0). Each estimator at its defaults but
``sigma``, ``random_state`` = seed; one process, one thread
(``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1``):

* ``--part su``: paper 002's protocol as ``benchmarks/tsgsu_protocol.py``
  builds it (standardised features, 5000 pairs, 10000 unlabeled, the true
  prior), test error;
* ``--part auc``: paper 003's as ``benchmarks/qsg_protocol.py`` builds it
  (min-max scaled, 200 labels, n_u = 4800), test AUC;
* ``--part synth``: ``benchmarks/su_auc_scale.py``'s standardised 28-d
  synthetic pool (5000 pairs / 2000 labels, 20000 unlabeled, 20000 test
  rows), with ``SVC()`` on the labels for reference.

The published run (``benchmarks/results/sigma_default.csv``) was made at
cbe66c3, where the baselines (SUSL, CUU, PNUAUC, ExactS2AUC,
SupervisedKernelAUC) refused the string, so their "scale" rows passed
``weakkernels._dsg.resolve_sigma("scale", X_fit)`` -- the number the string
resolves to (``tests/test_sigma_scale.py``: the same bits)::

    python benchmarks/sigma_default.py --part su --datasets cod-rna ijcnn1 skin_nonskin
    python benchmarks/sigma_default.py --part auc --datasets cod-rna ijcnn1 skin
    python benchmarks/sigma_default.py --part synth --baselines

Rows are appended to ``--out``; (estimator, dataset, seed, sigma setting) rows
already there are skipped (resume). TSGSU and QSGS2AUC ran on seeded Fourier
features, their default until 65a7e4b (now ``features="auto"``, Nyström): a
re-run today measures the Nyström default, which
``benchmarks/su_auc_features.py`` compares with Fourier at ``"scale"``.
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from _bases import append_row, revision
from weakkernels import QSGS2AUC, TSGSU
from weakkernels._dsg import resolve_sigma
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC, SupervisedKernelAUC
from weakkernels.baselines.su import CUU, SUSL

OUT = Path(__file__).resolve().parent / "results" / "sigma_default.csv"
COLS = ["estimator", "dataset", "seed", "sigma_setting", "sigma_", "metric",
        "value", "fit_cpu_s", "fit_wall_s", "note", "rev"]
SETTINGS = (1.0, "scale")

warnings.filterwarnings("ignore", message="prior=None")


def done_keys():
    if not OUT.exists():
        return set()
    with OUT.open() as fh:
        return {(r["estimator"], r["dataset"], r["seed"], r["sigma_setting"])
                for r in csv.DictReader(fh)}


def write(row):
    append_row(OUT, COLS, row)


def timed_fit(est, X, y):
    c0, w0 = time.process_time(), time.perf_counter()
    est.fit(X, y)
    return time.process_time() - c0, time.perf_counter() - w0


def run(name, dataset, seed, setting, make, X, y, score, metric, done,
        numeric_scale=False, note=""):
    """make(sigma) -> estimator; numeric_scale: pass the resolved value for "scale"."""
    key = (name, dataset, str(seed), str(setting))
    if key in done:
        return
    scale = numeric_scale and setting == "scale"
    sig = resolve_sigma(setting, X) if scale else setting
    est = make(sig)
    try:
        cpu, wall = timed_fit(est, X, y)
        val = score(est)
        sigma_ = getattr(est, "sigma_", sig)
    except (FloatingPointError, ValueError) as exc:
        cpu = wall = float("nan")
        val, sigma_ = float("nan"), sig
        note = (note + "; " if note else "") + f"failed: {exc}"[:200]
    write({"estimator": name, "dataset": dataset, "seed": seed,
           "sigma_setting": setting, "sigma_": f"{float(sigma_):.6g}",
           "metric": metric, "value": f"{val:.5f}", "fit_cpu_s": f"{cpu:.2f}",
           "fit_wall_s": f"{wall:.2f}",
           "note": note + ("; scale emulated numerically" if numeric_scale
                           and setting == "scale" else ""), "rev": revision()})


def warm_up():
    """Compile (or load) the numba kernels outside the timed fits."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 5))
    y = -np.ones(1200, int)
    y[:400] = 1
    TSGSU(prior=0.6, random_state=0).fit(X, y)
    ys = (X[:, 0] > 0).astype(int)
    ys[300:] = -1
    QSGS2AUC(random_state=0).fit(X, ys)


def su_runs(ds, seed, prior, X_fit, y_fit, err, done, baselines):
    """TSGSU (and CUU, SUSL(2000) with ``baselines``) at both settings."""
    for s in SETTINGS:
        run("TSGSU", ds, seed, s,
            lambda sig: TSGSU(prior=prior, sigma=sig, random_state=seed),
            X_fit, y_fit, err, "test_error", done)
        if not baselines:
            continue
        run("CUU", ds, seed, s,
            lambda sig: CUU(prior=prior, sigma=sig, random_state=seed),
            X_fit, y_fit, err, "test_error", done, numeric_scale=True)
        # SUSL's default n_centers=None (all 20000 training points) is
        # skipped (O(n_U n_c^2 + n_c^3)); the protocol's SUSL(2000) instead.
        run("SUSL(n_centers=2000)", ds, seed, s,
            lambda sig: SUSL(prior=prior, sigma=sig, n_centers=2000,
                             random_state=seed),
            X_fit, y_fit, err, "test_error", done, numeric_scale=True)


def part_su(datasets, seeds, done):
    import tsgsu_protocol as tp

    for ds in datasets:
        X, y = tp.load(ds)
        for seed in seeds:
            # protocol defaults: --n-pairs 5000, --n-unlabeled 10000
            X_fit, y_fit, Xt, yt, prior = tp.make_problem(X, y, 5000, 10000, seed)
            err = lambda est: 1.0 - float(est.score(Xt, yt))  # noqa: E731
            print(f"== SU {ds} seed {seed}: fit {X_fit.shape}, test {Xt.shape}, "
                  f"prior {prior:.4f}", flush=True)
            su_runs(ds, seed, prior, X_fit, y_fit, err, done, baselines=True)


def part_auc(datasets, seeds, done):
    import qsg_protocol as qp

    for ds in datasets:
        X, y = qp.load(ds)
        for seed in seeds:
            Xtr, ys, Xte, yte, *_ = qp.split(X, y, seed, 4800)
            auc = lambda est: float(roc_auc_score(yte, est.decision_function(Xte)))  # noqa: E731
            print(f"== AUC {ds} seed {seed}: fit {Xtr.shape}, test {Xte.shape}",
                  flush=True)
            for s in SETTINGS:
                run("QSGS2AUC", ds, seed, s,
                    lambda sig: QSGS2AUC(sigma=sig, random_state=seed),
                    Xtr, ys, auc, "test_auc", done)
                for name, cls in (("PNUAUC", PNUAUC), ("ExactS2AUC", ExactS2AUC),
                                  ("SupervisedKernelAUC", SupervisedKernelAUC)):
                    run(name, ds, seed, s, lambda sig, cls=cls: cls(sigma=sig),
                        Xtr, ys, auc, "test_auc", done, numeric_scale=True)


def part_synth(seeds, done, baselines=False):
    from sklearn.svm import SVC

    import su_auc_scale as sc

    n_u, n_pairs, n_lab, n_test = 20000, 5000, 2000, 20000
    ds = "synthetic_hepmass(std)"
    for seed in seeds:
        X, y = sc.pool(n_u + n_test + 2 * n_pairs + n_lab, seed=seed)
        # TSGSU, as su_auc_scale.run_one (seeded here)
        X_fit, y_fit, Xt, yt, prior = sc.su_problem(X, y, n_pairs, n_u, n_test, seed)
        err = lambda est: float(np.mean(est.predict(Xt) != yt))  # noqa: E731
        print(f"== synth SU seed {seed}: fit {X_fit.shape}, test {Xt.shape}, "
              f"prior {prior:.4f}", flush=True)
        su_runs(ds, seed, prior, X_fit, y_fit, err, done, baselines)
        # QSGS2AUC, as su_auc_scale.run_one
        X_fit, y_fit, Xt, yt = sc.auc_problem(X, y, n_lab, n_u, n_test)
        auc = lambda est: float(roc_auc_score(yt, est.decision_function(Xt)))  # noqa: E731
        print(f"== synth AUC seed {seed}: fit {X_fit.shape}, test {Xt.shape}",
              flush=True)
        for s in SETTINGS:
            run("QSGS2AUC", ds, seed, s,
                lambda sig: QSGS2AUC(sigma=sig, random_state=seed),
                X_fit, y_fit, auc, "test_auc", done)
        # SVC() reference on the 2000 labels (same standardisation)
        key = ("SVC()", ds, str(seed), "scale")
        if key not in done:
            svc = SVC()
            cpu, wall = timed_fit(svc, X_fit[:n_lab], y_fit[:n_lab])
            for metric, val in (
                    ("test_auc", roc_auc_score(yt, svc.decision_function(Xt))),
                    ("test_error", float(np.mean(svc.predict(Xt) != yt)))):
                write({"estimator": "SVC()", "dataset": ds, "seed": seed,
                       "sigma_setting": "scale",
                       "sigma_": f"{svc._gamma:.6g}", "metric": metric,
                       "value": f"{val:.5f}", "fit_cpu_s": f"{cpu:.2f}",
                       "fit_wall_s": f"{wall:.2f}",
                       "note": "reference: gamma='scale', 2000 labels only",
                       "rev": revision()})


def main():
    global OUT  # write() and done_keys() append to it
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", required=True, choices=["su", "auc", "synth"])
    ap.add_argument("--datasets", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--baselines", action="store_true",
                    help="synth: also CUU and SUSL(2000)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    OUT = args.out
    done = done_keys()
    warm_up()
    if args.part == "su":
        part_su(args.datasets or ["cod-rna", "ijcnn1"], args.seeds, done)
    elif args.part == "auc":
        part_auc(args.datasets or ["cod-rna", "ijcnn1", "skin"], args.seeds, done)
    else:
        part_synth(args.seeds, done, args.baselines)


if __name__ == "__main__":
    main()
