"""C* by k-fold cross-validation on the labels, then every row (**synthetic** sets).

Paper 004 chooses C* on labeled validation data. With 1 000 labels a held-out
tenth (100 rows) cannot resolve the 1-2 pp that separate multiples of its rule
C* = C n_l / n_u on ``synthetic_hepmass_gap`` (BENCHMARKS.md, "Unlabeled rows
that pay"), so this script pools the held-out errors of k folds instead:

1. On the first ``--cv-rows`` rows of the memory-mapped set (the replicate's
   labels among them, as in ``scale_train.py --seed``), every factor of
   ``--factors`` is fitted k times: ``TSGS3VM(C_star = factor x C n_l / n_u)``
   with one stratified fold of the labels hidden (its rows stay in the fit as
   unlabeled rows, so n is the same in every fit) and scored on that fold.
2. The factor is chosen from the pooled 0/1 errors over all labels, by the
   estimator's own rule for its held-out stages
   (:func:`weakkernels._selection.one_se_stage`): the first factor (0: the
   supervised machine) is kept unless another is one standard error of the
   paired difference better; among those, the fewest errors. The plain
   minimum is recorded beside it.
3. ``scale_train.py --solver lbfgs --C-star-factor <chosen>`` then fits every
   row of each ``--rows`` size (its own JSON, figure and MLflow runs).

The CV fits pin ``--cv-max-features`` (default 2 048: the streamed landmark
count of sizes past ~262 k rows, so the factor is chosen at the capacity it
is used with, at a fifth of the held default's CPU).

Usage::

    python benchmarks/scale_cstar_cv.py --dataset synthetic_hepmass_gap --seed 0 \\
        --cv-rows 100000 --factors 0,1,3,10,30 --rows 100000,1000000 \\
        --out benchmarks/results/scale_cstar_cv_s0.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _bases import revision
from weakkernels.pipeline.synthetic import SYNTHETIC, open_synthetic, write_synthetic


def cv_errors(X, y_true, lab: slice, factors, *, C: float, sigma: float,
              folds: int, seed: int, max_features: int | None, features: str,
              log=print) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Pooled held-out 0/1 errors: ``(wrong (n_factors, n_l), held-out label
    positions in pooled order, CPU s per factor)``. Fold ``j`` hides its
    labels (``y = -1``) and scores them; the folds are the pipeline's
    (:func:`weakkernels.pipeline.splits.stratified_folds`, seeded)."""
    from weakkernels import TSGS3VM
    from weakkernels.pipeline.splits import stratified_folds

    n = X.shape[0]
    y_lab = np.asarray(y_true[lab])
    pos = np.arange(lab.start, lab.stop)
    split = stratified_folds(y_lab, folds, seed)
    order = np.concatenate([te for _, te in split])
    wrong = np.zeros((len(factors), order.size), dtype=bool)
    cpu = []
    for i, f in enumerate(factors):
        c0 = time.process_time()
        at = 0
        for j, (tr, te) in enumerate(split):
            y = np.full(n, -1, dtype=np.int8)
            y[pos[tr]] = y_lab[tr]
            c_star = f * C * tr.size / (n - tr.size)
            est = TSGS3VM(sigma=sigma, C=C, C_star=c_star, random_state=seed,
                          features=features, max_features=max_features).fit(X, y)
            w = est.predict(np.asarray(X[pos[te]])) != y_lab[te]
            wrong[i, at:at + te.size] = w
            at += te.size
            log(f"factor {f:g} fold {j}: {w.mean():.4f} held-out error "
                f"({time.process_time() - c0:.0f} CPU s so far)")
        cpu.append(time.process_time() - c0)
    return wrong, order, cpu


def choose(wrong: np.ndarray) -> tuple[int, int]:
    """``(one-SE choice, plain minimum)``, indices into the factors: the
    estimator's held-out rule with the first factor as the reference."""
    from weakkernels._selection import one_se_stage

    return int(one_se_stage(list(wrong))), int(np.argmin(wrong.sum(axis=1)))


def log_mlflow(args, argv, factors, wrong, cpu, pick, argmin, out: Path) -> str:
    """The CV as an MLflow run in ``benchmark-scale_cstar_cv``: per factor its
    pooled held-out error and CPU, the choices as parameters."""
    import mlflow

    from _tracking import parent_run

    with parent_run("benchmark-scale_cstar_cv", __file__, vars(args), argv,
                    f"{args.dataset} seed {args.seed} cv {args.cv_rows}",
                    artifacts=[out]) as run:
        mlflow.log_params({"chosen_factor": factors[pick],
                           "argmin_factor": factors[argmin]})
        for f, w, c in zip(factors, wrong, cpu, strict=True):
            mlflow.log_metrics({f"cv_error_x{f:g}": float(w.mean()),
                                f"cv_cpu_s_x{f:g}": c})
    return run.info.run_id


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="synthetic_hepmass_gap",
                    choices=sorted(SYNTHETIC))
    ap.add_argument("--data-dir", default=None,
                    help="where the .npy files are (default data/synthetic/<dataset>)")
    ap.add_argument("--seed", type=int, default=0,
                    help="replicate: labels on rows seed*n_labeled onwards "
                         "(scale_train.py --seed), folds and random_state")
    ap.add_argument("--n-labeled", type=int, default=1000)
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--cv-rows", type=int, default=100_000)
    ap.add_argument("--cv-folds", type=int, default=5)
    ap.add_argument("--cv-max-features", type=int, default=2048)
    ap.add_argument("--features", default="auto",
                    choices=["auto", "fourier", "nystroem"])
    ap.add_argument("--factors", default="0,1,3,10,30",
                    help="multiples of paper 004's rule C n_l / n_u; the first "
                    "is the reference of the one-SE rule")
    ap.add_argument("--rows", default="",
                    help="sizes scale_train.py then fits with the chosen factor "
                    "(empty: the CV only)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-mlflow", action="store_true")
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    spec = SYNTHETIC[args.dataset]
    args.data_dir = args.data_dir or f"data/synthetic/{args.dataset}"
    factors = [float(f) for f in args.factors.split(",")]
    lab = slice(args.seed * args.n_labeled, (args.seed + 1) * args.n_labeled)
    if lab.stop > args.cv_rows // 2:
        raise SystemExit(f"--seed {args.seed}: its labels pass half of --cv-rows")
    write_synthetic(spec, args.data_dir)
    X, y_true = open_synthetic(args.data_dir, args.cv_rows)
    wrong, order, cpu = cv_errors(
        X, y_true, lab, factors, C=args.C, sigma=spec.teacher_sigma,
        folds=args.cv_folds, seed=args.seed, max_features=args.cv_max_features,
        features=args.features, log=lambda s: print(s, flush=True))
    pick, argmin = choose(wrong)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    res = dict(
        command=" ".join(["python", "benchmarks/scale_cstar_cv.py", *argv]),
        revision=revision(), dataset=args.dataset, synthetic=True,
        seed=args.seed, n_labeled=args.n_labeled, C=args.C,
        cv_rows=args.cv_rows, cv_folds=args.cv_folds,
        cv_max_features=args.cv_max_features, factors=factors,
        cv_error=[float(w.mean()) for w in wrong], cv_cpu_s=cpu,
        # the pooled 0/1 errors, label by label ("1" = wrong; the order of
        # stratified_folds), so other rules can be applied afterwards
        cv_wrong=["".join("1" if v else "0" for v in w) for w in wrong],
        chosen_factor=factors[pick], argmin_factor=factors[argmin],
        fits=None)
    for f, e in zip(factors, res["cv_error"], strict=True):
        print(f"x{f:g}: pooled held-out error {e:.4f} over {wrong.shape[1]} labels")
    print(f"one-SE choice x{factors[pick]:g}, plain minimum x{factors[argmin]:g}")
    if args.rows:
        fit_out = out.with_name(out.stem + "_fit.json")
        cmd = [sys.executable, str(Path(__file__).with_name("scale_train.py")),
               "--dataset", args.dataset, "--data-dir", args.data_dir,
               "--solver", "lbfgs", "--C", str(args.C), "--n-labeled",
               str(args.n_labeled), "--rows", args.rows, "--repeats", "1",
               "--seed", str(args.seed), "--svc",
               "--C-star-factor", f"{factors[pick]:g}", "--out", str(fit_out),
               "--plot", str(fit_out.with_suffix(".png"))]
        if args.no_mlflow:
            cmd.append("--no-mlflow")
        subprocess.run(cmd, check=True)
        res["fits"] = str(fit_out)
    out.write_text(json.dumps(res, indent=2) + "\n")
    if not args.no_mlflow:
        log_mlflow(args, argv, factors, wrong, cpu, pick, argmin, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
