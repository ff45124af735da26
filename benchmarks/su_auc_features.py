# ruff: noqa: B023
# (every lambda below is called by fit_and_write() within its own loop iteration)
"""``features="fourier"`` against ``features="auto"`` for TSGSU and QSGS2AUC
at their other defaults (``sigma="scale"``, L-BFGS, the default feature
count), on the protocols' own splits and a synthetic set.

``"auto"`` is TSGS3VM's default basis (:func:`weakkernels._dsg.resolve_basis`):
Nyström landmarks -- every row up to 4 096 rows, ~24 sqrt(n) held up to the
2 GiB bound, 2 048 streamed beyond -- where ``"fourier"`` gets
:func:`weakkernels._dsg.primal_features` seeded frequencies (2 048 past
~262 k rows since 7c5edcb; 1 024 past ~524 k rows when the committed
rows ran). One process, one thread (``NUMBA_NUM_THREADS=1
OMP_NUM_THREADS=1``), ``random_state`` = seed:

* ``--part su``: paper 002's protocol as ``benchmarks/tsgsu_protocol.py``
  builds it (standardised, 5 000 pairs, 10 000 unlabeled, the true prior),
  test error;
* ``--part auc``: paper 003's as ``benchmarks/qsg_protocol.py`` builds it
  (min-max scaled, 200 labels, n_u = 4 800), test AUC;
* ``--part synth``: ``benchmarks/su_auc_scale.py``'s standardised 28-d
  **synthetic** prior-0.7 pool (5 000 pairs / 2 000 labels, 20 000
  unlabeled, 20 000 test rows), with ``SVC()`` on the 2 000 labels.

The 10^5-10^6-row fits are ``benchmarks/su_auc_scale.py --features``
(one process per fit, peak RSS). Rows are appended to ``--out``; rows whose
(estimator, dataset, seed, features) are already there are skipped::

    python benchmarks/su_auc_features.py --part su \
        --datasets cod-rna ijcnn1 skin_nonskin
    python benchmarks/su_auc_features.py --part auc --datasets cod-rna ijcnn1 skin
    python benchmarks/su_auc_features.py --part synth
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

OUT = Path(__file__).resolve().parent / "results" / "su_auc_features.csv"
COLS = ["estimator", "dataset", "n_unlabeled", "seed", "features", "basis",
        "n_features_model", "metric", "value", "fit_cpu_s", "fit_wall_s", "rev"]
SETTINGS = ["fourier", "auto"]  # --features: "fourier:M" = max_features M

warnings.filterwarnings("ignore", message="prior=None")


def done_keys(out: Path) -> set:
    if not out.exists():
        return set()
    with out.open() as fh:
        return {(r["estimator"], r["dataset"], r["seed"], r["features"])
                for r in csv.DictReader(fh)}


def basis_params(setting: str) -> dict:
    """``"fourier"`` / ``"auto"`` / ``"fourier:8192"`` -> estimator params."""
    features, _, m = setting.partition(":")
    return {"features": features, **({"max_features": int(m)} if m else {})}


def fit_and_write(out, done, name, dataset, seed, make, X, y, score, metric):
    """Every setting of ``features`` (``make(params)`` -> estimator)."""
    n_u = int(np.sum(np.asarray(y) == -1))  # both mark unlabeled rows by -1
    for features in SETTINGS:
        if (name, dataset, str(seed), features) in done:
            continue
        est = make(basis_params(features))
        c0, w0 = time.process_time(), time.perf_counter()
        est.fit(X, y)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        append_row(out, COLS, {
                    "estimator": name, "dataset": dataset, "n_unlabeled": n_u,
                    "seed": seed, "features": features, "basis": est.features_,
                    "n_features_model": int(est.n_features_model_),
                    "metric": metric, "value": f"{score(est):.5f}",
                    "fit_cpu_s": f"{cpu:.2f}", "fit_wall_s": f"{wall:.2f}",
                    "rev": revision()})


def warm_up():
    """Compile (or load) the numba kernels outside the timed fits."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 5))
    y = -np.ones(1200, int)
    y[:400] = 1
    ys = (X[:, 0] > 0).astype(int)
    ys[300:] = -1
    for features in ("fourier", "auto"):
        TSGSU(prior=0.6, features=features, random_state=0).fit(X, y)
        QSGS2AUC(features=features, random_state=0).fit(X, ys)


def su_fits(out, done, ds, seed, prior, X_fit, y_fit, Xt, yt):
    err = lambda est: float(np.mean(est.predict(Xt) != yt))  # noqa: E731
    fit_and_write(out, done, "TSGSU", ds, seed,
                  lambda p: TSGSU(prior=prior, random_state=seed, **p),
                  X_fit, y_fit, err, "test_error")


def auc_fits(out, done, ds, seed, X_fit, y_fit, Xt, yt):
    auc = lambda est: float(roc_auc_score(yt, est.decision_function(Xt)))  # noqa: E731
    fit_and_write(out, done, "QSGS2AUC", ds, seed,
                  lambda p: QSGS2AUC(random_state=seed, **p),
                  X_fit, y_fit, auc, "test_auc")


def part_su(out, done, datasets, seeds):
    import tsgsu_protocol as tp

    for ds in datasets:
        X, y = tp.load(ds)
        for seed in seeds:
            X_fit, y_fit, Xt, yt, prior = tp.make_problem(X, y, 5000, 10000, seed)
            print(f"== SU {ds} seed {seed}: fit {X_fit.shape}", flush=True)
            su_fits(out, done, ds, seed, prior, X_fit, y_fit, Xt, yt)


def part_auc(out, done, datasets, seeds):
    import qsg_protocol as qp

    for ds in datasets:
        X, y = qp.load(ds)
        for seed in seeds:
            Xtr, ys, Xte, yte, *_ = qp.split(X, y, seed, 4800)
            print(f"== AUC {ds} seed {seed}: fit {Xtr.shape}", flush=True)
            auc_fits(out, done, ds, seed, Xtr, ys, Xte, yte)


def part_synth(out, done, seeds, n_u=20000):
    from sklearn.svm import SVC

    import su_auc_scale as sc

    n_pairs, n_lab, n_test = 5000, 2000, 20000
    ds = "synthetic_hepmass(std)"
    for seed in seeds:
        X, y = sc.pool(n_u + n_test + 2 * n_pairs + n_lab, seed=seed)
        X_fit, y_fit, Xt, yt, prior = sc.su_problem(X, y, n_pairs, n_u, n_test, seed)
        print(f"== synth SU seed {seed}: fit {X_fit.shape}", flush=True)
        su_fits(out, done, ds, seed, prior, X_fit, y_fit, Xt, yt)
        X_fit, y_fit, Xt, yt = sc.auc_problem(X, y, n_lab, n_u, n_test)
        print(f"== synth AUC seed {seed}: fit {X_fit.shape}", flush=True)
        auc_fits(out, done, ds, seed, X_fit, y_fit, Xt, yt)
        if ("SVC()", ds, str(seed), "-") in done:
            continue
        svc = SVC()
        c0, w0 = time.process_time(), time.perf_counter()
        svc.fit(X_fit[:n_lab], y_fit[:n_lab])
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        for metric, val in (
                ("test_auc", roc_auc_score(yt, svc.decision_function(Xt))),
                ("test_error", float(np.mean(svc.predict(Xt) != yt)))):
            append_row(out, COLS, {
                        "estimator": "SVC()", "dataset": ds, "n_unlabeled": 0,
                        "seed": seed, "features": "-", "basis": "exact",
                        "n_features_model": int(svc.support_.size),
                        "metric": metric, "value": f"{val:.5f}",
                        "fit_cpu_s": f"{cpu:.2f}", "fit_wall_s": f"{wall:.2f}",
                        "rev": revision()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=["su", "auc", "synth"])
    ap.add_argument("--datasets", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--features", nargs="+", default=SETTINGS,
                    help='"fourier", "auto", "fourier:M" (max_features=M)')
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    SETTINGS[:] = args.features
    done = done_keys(args.out)
    warm_up()
    if args.part == "su":
        part_su(args.out, done, args.datasets or ["cod-rna", "ijcnn1"], args.seeds)
    elif args.part == "auc":
        part_auc(args.out, done, args.datasets or ["cod-rna", "ijcnn1", "skin"],
                 args.seeds)
    else:
        part_synth(args.out, done, args.seeds)


if __name__ == "__main__":
    main()
