"""Out-of-core TSGS3VM: one pass over 10k ... 10M memory-mapped **synthetic** rows.

Data: :mod:`weakkernels.pipeline.synthetic` (the *shape* of HEPMASS, 10.5M x 28,
or SUSY, 5M x 18; the content is synthetic, from a nonlinear teacher).  The set is
written once as float32 ``X.npy`` in chunks; every size ``n`` is the prefix
``X[:n]`` of that file, opened with ``np.load(mmap_mode="r")`` (no copy).  The
first ``--n-labeled`` rows keep their labels (``--seed S``: the S-th block of
that many rows), the rest are unlabeled (``y = -1``).
Test error is measured on ``--n-test`` rows taken from the end of the full set
(never used for training).

Each size runs in a fresh child process, so its peak memory is its own:

* ``peak_rss`` -- ``VmHWM`` (= ``ru_maxrss``), resident set high-water mark.  It
  **includes** file-backed pages of the memmap that happen to be resident;
* ``peak_anon`` / ``peak_file`` -- ``RssAnon`` / ``RssFile`` of
  ``/proc/self/status``, sampled every 50 ms: anonymous memory (what the process
  really allocates) vs page-cache pages of the mapped file (reclaimable by the
  kernel under pressure).

Estimator settings: paper 000's protocol (batch 256 + 256, one pass,
``max_features = ceil(sqrt(n))`` rounded up to whole blocks of 32).  Fit time
excludes numba compilation (a small warm-up fit runs first).

Usage::

    python benchmarks/scale_train.py --rows 10000,100000,1000000,10000000
    python benchmarks/scale_train.py --solver lbfgs --C 10 --rows \\
        100000,1000000,10000000 --out benchmarks/results/scale_train_lbfgs.json \\
        --plot benchmarks/results/scale_train_lbfgs.png

``--solver lbfgs`` times the estimator's default solver instead (every row,
growing samples, default feature count).

Every run is also logged to MLflow (``--no-mlflow`` to skip): a parent run in
the experiment ``benchmark-scale_train`` (the store of
:mod:`weakkernels.pipeline.tracking`, with the command that ran), one nested
run per size with its test error, times and peak memory, and the JSON and the
figure as artifacts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _bases import revision
from _peak_memory import PeakSampler, status
from weakkernels.pipeline.synthetic import (
    SYNTHETIC,
    open_synthetic,
    synthetic_rows,
    write_synthetic,
)

# solver constants a run may override: (argument, weakkernels._dsg name) --
# the L-BFGS iterations of a streamed level, the rows per set of the first
# sample level (past the data: one level)
# --flag -> the SolverOptions field it sets
DSG_OVERRIDES = (("large_level_max_iter", "primal_large_level_max_iter"),
                 ("start_rows", "primal_start_rows"))


def run_child(args) -> dict:
    from weakkernels import TSGS3VM

    spec = SYNTHETIC[args.dataset]
    n = int(args.n)
    X, y_true = open_synthetic(args.data_dir, n)
    n_l = min(args.n_labeled, n // 10)
    # replicate S: the labels of rows S n_l ... (S + 1) n_l - 1 (i.i.d. rows,
    # so a fresh labeled sample; 0 = the first n_l rows) and random_state S
    lab = slice(args.seed * n_l, (args.seed + 1) * n_l)
    if lab.stop > n // 2:
        raise SystemExit(f"--seed {args.seed}: its labels would pass half of {n} rows")
    y = np.full(n, -1, dtype=np.int8)
    y[lab] = y_true[lab]
    X_test, y_test = synthetic_rows(spec, spec.n_rows - args.n_test, spec.n_rows)
    if args.solver == "sgd":
        max_features = 32 * math.ceil(math.ceil(math.sqrt(n)) / 32)
        # one pass of the SGD engine (paper 000 Algorithm 1) over mapped rows
        kw = dict(sigma=spec.teacher_sigma, C=args.C, batch_size=256,
                  block_size=32, n_passes=1.0, max_features=max_features,
                  random_state=args.seed, solver="sgd")
    else:
        # the estimator's default: L-BFGS on growing samples up to every row,
        # default feature count (held features when they fit, else streamed)
        max_features = args.max_features
        kw = dict(sigma=spec.teacher_sigma, C=args.C, random_state=args.seed,
                  features=args.features, max_features=max_features)
        if args.C_star is not None:  # e.g. 0: the supervised machine
            kw["C_star"] = args.C_star
        elif args.C_star_factor is not None:  # a multiple of the rule's C*
            kw["C_star"] = args.C_star_factor * args.C * n_l / (n - n_l)
        if args.validation_fraction != "default":
            vf = args.validation_fraction
            kw["validation_fraction"] = (None if vf == "none" else
                                         vf if vf == "auto" else float(vf))
    from weakkernels import SolverOptions

    kw["solver_options"] = SolverOptions(**{
        name: getattr(args, arg) for arg, name in DSG_OVERRIDES if getattr(args, arg)})
    # warm-up: compile the numba kernels outside the timed fit
    y_warm = np.asarray(y_true[:2000]).astype(np.int8)
    y_warm[1000:] = -1
    TSGS3VM(**{**kw, "max_iter": 3}).fit(np.asarray(X[:2000]), y_warm)
    TSGS3VM(**{**kw, "max_iter": 3}).fit(X[:2000], y_warm)  # the memmap path
    base = status()
    with PeakSampler() as sampler:
        t0, c0 = time.perf_counter(), time.process_time()
        est = TSGS3VM(**kw).fit(X, y)
        fit_s = time.perf_counter() - t0
        cpu_s = time.process_time() - c0
    st = status()
    t0 = time.perf_counter()
    err = float(np.mean(est.predict(X_test) != y_test))
    pred_s = time.perf_counter() - t0
    svc = {}
    if args.svc:
        # the supervised baseline on the same labels, same C and kernel width
        from sklearn.svm import SVC

        c0 = time.process_time()
        m = SVC(C=args.C, gamma=spec.teacher_sigma).fit(
            np.asarray(X[lab], dtype=np.float64), np.asarray(y_true[lab]))
        svc = dict(svc_cpu_s=time.process_time() - c0,
                   svc_test_error=float(np.mean(m.predict(X_test) != y_test)))
    return dict(**svc,
        dataset=args.dataset, n=n, d=int(X.shape[1]), n_labeled=n_l,
        seed=int(args.seed),
        n_iter=int(est.n_iter_), max_features=max_features,
        features=getattr(est, "features_", "fourier"),
        n_features_model=int(est.n_features_model_), fit_s=fit_s, cpu_s=cpu_s,
        C_star=float(getattr(est, "C_star_", np.nan)),
        validation_fraction=getattr(est, "validation_fraction_", None),
        # each candidate stage's (C*, held-out error), when C* was chosen
        validation_errors=(est.validation_errors_.tolist()
                           if hasattr(est, "validation_errors_") else None),
        load_avg_1min=os.getloadavg()[0],
        test_error=err, n_test=int(args.n_test), predict_test_s=pred_s,
        peak_rss=st["VmHWM"], rss_before_fit=base["VmRSS"],
        peak_anon=sampler.peak["RssAnon"], peak_file=sampler.peak["RssFile"],
        file_bytes=int(X.nbytes),
    )


def slope(rows: list[dict]) -> float:
    n = np.log10([r["n"] for r in rows])
    t = np.log10([r["fit_s"] for r in rows])
    return float(np.polyfit(n, t, 1)[0]) if len(rows) > 1 else float("nan")


def plot(rows: list[dict], out: Path, title: str, extrapolated: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = np.array([r["n"] for r in rows], dtype=float)
    t = np.array([r["fit_s"] for r in rows])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    grid = np.logspace(np.log10(n.min()), np.log10(max(
        [n.max()] + [e["n"] for e in extrapolated])), 50)
    series = [("wall time", t, "o-")]
    if all("cpu_s" in r for r in rows):
        series.append(("CPU time (all threads)",
                       np.array([r["cpu_s"] for r in rows]), "s-"))
    for label, y, style in series:
        line, = a1.loglog(n, y, style, label=f"{label} (median)")
        if len(rows) > 1:
            k, c = np.polyfit(np.log10(n), np.log10(y), 1)
            a1.loglog(grid, 10 ** (c + k * np.log10(grid)), "--",
                      color=line.get_color(), label=f"fit: slope {k:.2f}")
    for e in extrapolated:
        a1.loglog([e["n"]], [e["fit_s"]], "x", ms=10, color="red",
                  label=f"EXTRAPOLATED n={e['n']:.0e}")
    a1.set_xlabel("training rows n (one pass)")
    a1.set_ylabel("fit time [s]")
    a1.set_title("TSGS3VM time vs rows (log-log)")
    a1.grid(True, which="both", alpha=0.3)
    a1.legend()
    mb = 2.0**20
    a2.semilogx(n, [r["peak_rss"] / mb for r in rows], "o-",
                label="peak RSS (VmHWM, incl. mapped file pages)")
    a2.semilogx(n, [r["peak_anon"] / mb for r in rows], "s-",
                label="peak anonymous RSS (sampled)")
    a2.semilogx(n, [r["peak_file"] / mb for r in rows], "^-",
                label="peak file-backed RSS (sampled)")
    a2.semilogx(n, [r["file_bytes"] / mb for r in rows], ":", color="gray",
                label="size of X[:n] on disk")
    a2.set_xlabel("training rows n")
    a2.set_ylabel("MiB")
    a2.set_title("memory vs rows")
    a2.grid(True, which="both", alpha=0.3)
    a2.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def setting(args) -> str:
    """What a run's TSGS3VM was told beyond the defaults (a row label)."""
    if args.solver == "sgd":
        return "solver='sgd', one pass"
    parts = []
    if args.C_star is not None:
        parts.append(f"C_star={args.C_star:g}"
                     + (" (labels only)" if args.C_star == 0 else ""))
    if args.C_star_factor is not None:
        parts.append(f"C_star = {args.C_star_factor:g} x C n_l / n_u")
    if args.validation_fraction != "default":
        parts.append(f"validation_fraction={args.validation_fraction}")
    if args.max_features:
        parts.append(f"max_features={args.max_features}")
    if args.features != "auto":
        parts.append(f"features={args.features}")
    parts += [f"{name}={getattr(args, arg)}" for arg, name in DSG_OVERRIDES
              if getattr(args, arg)]
    return ", ".join(parts) or "defaults"


def plot_compare(outs: list[str], png: Path, parser) -> None:
    """Test error against rows, one line per ``--out`` JSON of this script
    (labelled by its command's settings), with the SVC on the same labels."""
    import shlex

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.2))
    svc = {}
    for f in outs:
        res = json.loads(Path(f).read_text())
        a = parser.parse_args(shlex.split(res["meta"]["command"])[2:])
        runs = res["runs"]
        ax.semilogx([r["n"] for r in runs], [100 * r["test_error"] for r in runs],
                    "o-", label=f"TSGS3VM {setting(a)} ({res['meta']['revision']})")
        svc.update({r["n"]: r["svc_test_error"] for r in runs if "svc_test_error" in r})
    if svc:
        n = sorted(svc)
        ax.semilogx(n, [100 * svc[k] for k in n], "k--", label="SVC on the same labels")
    ax.set_xlabel("training rows n (labeled + unlabeled)")
    ax.set_ylabel("test error %")
    ax.set_title(f"{a.dataset} (SYNTHETIC, d = {SYNTHETIC[a.dataset].n_features}), "
                 f"{a.n_labeled} labels, "
                 f"C = {a.C:g}, one thread", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    # beside the axes: the lines fill the plot's corners
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


# What a nested run of a size logs: the child's row, as it printed it.
MLFLOW_PARAMS = ("n", "d", "n_labeled", "seed", "repeats", "features",
                 "max_features", "n_features_model", "C_star",
                 "validation_fraction", "revision")
MLFLOW_METRICS = ("test_error", "svc_test_error", "fit_s", "cpu_s", "n_iter",
                  "peak_rss", "peak_anon", "peak_file", "predict_test_s")


def log_mlflow(args, argv: list[str], runs: list[dict], files: list[Path]) -> str:
    """Log a finished run: the parent run (provenance tags and the command,
    :func:`_tracking.parent_run`), one nested run per size, ``files`` as
    the parent's artifacts. Returns the parent's run id."""
    import mlflow

    from _tracking import parent_run

    with parent_run("benchmark-scale_train", __file__, vars(args), argv,
                    f"{args.dataset} {args.solver} {setting(args)}",
                    artifacts=files) as parent:
        for r in runs:
            with mlflow.start_run(run_name=f"n={r['n']:,}", nested=True):
                mlflow.set_tags({"dataset": r["dataset"], "synthetic": "true",
                                 "setting": r["setting"]})
                mlflow.log_params({k: r[k] for k in MLFLOW_PARAMS if k in r})
                mlflow.log_metrics({k: float(r[k]) for k in MLFLOW_METRICS
                                    if r.get(k) is not None})
    return parent.info.run_id


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="synthetic_hepmass", choices=sorted(SYNTHETIC))
    ap.add_argument("--data-dir", default=None,
                    help="where the .npy files go (default data/synthetic/<dataset>)")
    ap.add_argument("--rows", default="10000,100000,1000000")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs per size (sizes >= 1M run once)")
    ap.add_argument("--n-labeled", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0,
                    help="replicate: the labels of rows seed*n_labeled onwards, "
                         "random_state=seed (0: the first rows)")
    ap.add_argument("--n-test", type=int, default=50000)
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--solver", choices=["sgd", "lbfgs"], default="sgd",
                    help="sgd: paper 000's one pass (default); lbfgs: the "
                    "estimator's default solver, every row")
    ap.add_argument("--features", default="auto",
                    choices=["auto", "fourier", "nystroem"], help="lbfgs basis")
    ap.add_argument("--max-features", type=int, default=None,
                    help="lbfgs: pin the feature count (default: the rule)")
    ap.add_argument("--validation-fraction", default="default",
                    help="lbfgs: TSGS3VM's validation_fraction ('none', 'auto' or "
                    "a float; default: the estimator's default)")
    ap.add_argument("--C-star", type=float, default=None,
                    help="lbfgs: pin TSGS3VM's C_star (0: labels only; default: "
                    "the estimator's choice)")
    ap.add_argument("--C-star-factor", type=float, default=None,
                    help="lbfgs: C_star = this x paper 004's rule C n_l / n_u")
    ap.add_argument("--large-level-max-iter", type=int, default=None,
                    help="lbfgs: SolverOptions.primal_large_level_max_iter")
    ap.add_argument("--start-rows", type=int, default=None,
                    help="lbfgs: SolverOptions.primal_start_rows (past the "
                    "rows: one level, the annealing on every row)")
    ap.add_argument("--svc", action="store_true",
                    help="also fit SVC(C, gamma=sigma) on the labeled rows")
    ap.add_argument("--extrapolate", default="",
                    help="sizes not run, predicted from the fitted slope")
    ap.add_argument("--out", default="benchmarks/results/scale_train.json")
    ap.add_argument("--plot", default="benchmarks/results/scale_train.png")
    ap.add_argument("--compare", nargs="+", default=None, metavar="JSON",
                    help="only draw --plot: test error vs rows of these --out "
                    "files side by side")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw --plot from an existing --out JSON")
    ap.add_argument("--no-mlflow", action="store_true",
                    help="do not log the run to MLflow")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.C_star is not None and args.C_star_factor is not None:
        ap.error("--C-star and --C-star-factor exclude each other")
    if args.compare:
        plot_compare(args.compare, Path(args.plot), ap)
        return 0
    spec = SYNTHETIC[args.dataset]
    args.data_dir = args.data_dir or f"data/synthetic/{args.dataset}"
    if args.child:
        print(json.dumps(run_child(args)))
        return 0
    title = (f"{args.dataset} (SYNTHETIC, d={spec.n_features}), one pass, batch "
             "256+256, max_features=ceil(sqrt(n)); shared 2-core machine"
             if args.solver == "sgd" else
             f"{args.dataset} (SYNTHETIC, d={spec.n_features}), TSGS3VM L-BFGS "
             f"(every row), {setting(args)}, C={args.C:g}, {args.n_labeled} "
             "labels; shared 2-core machine")
    if args.replot:
        res = json.loads(Path(args.out).read_text())
        plot(res["runs"], Path(args.plot), title, res["extrapolated"])
        return 0
    sizes = [int(float(s)) for s in args.rows.split(",") if s]
    if max(sizes) > spec.n_rows - args.n_test:
        raise SystemExit(f"largest size must leave {args.n_test} test rows")
    t0 = time.perf_counter()
    write_synthetic(spec, args.data_dir)
    gen_s = time.perf_counter() - t0
    print(f"data: {args.data_dir} ({spec.n_rows} x {spec.n_features}, synthetic) "
          f"ready in {gen_s:.1f} s", flush=True)
    runs, rev = [], revision()
    for n in sizes:
        reps = args.repeats if n < 1_000_000 else 1
        per = []
        for _ in range(reps):
            cmd = [sys.executable, __file__, "--child", "--n", str(n),
                   "--dataset", args.dataset, "--data-dir", args.data_dir,
                   "--n-labeled", str(args.n_labeled), "--n-test", str(args.n_test),
                   "--seed", str(args.seed),
                   "--C", str(args.C), "--solver", args.solver,
                   "--features", args.features]
            if args.max_features:
                cmd += ["--max-features", str(args.max_features)]
            cmd += ["--validation-fraction", args.validation_fraction]
            if args.C_star is not None:
                cmd += ["--C-star", str(args.C_star)]
            if args.C_star_factor is not None:
                cmd += ["--C-star-factor", str(args.C_star_factor)]
            for arg, _ in DSG_OVERRIDES:
                if getattr(args, arg):
                    cmd += ["--" + arg.replace("_", "-"), str(getattr(args, arg))]
            if args.svc:
                cmd.append("--svc")
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                raise SystemExit(f"child n={n} failed:\n{res.stderr[-3000:]}")
            per.append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(json.dumps(per[-1]), flush=True)
        med = dict(per[0])
        for k in ("fit_s", "cpu_s", "peak_rss", "peak_anon", "peak_file",
                  "test_error"):
            med[k] = float(np.median([p[k] for p in per]))
        med["repeats"] = reps
        med["setting"] = setting(args)
        med["revision"] = rev
        med["fit_s_all"] = [p["fit_s"] for p in per]
        runs.append(med)
    k = slope(runs)
    extrap = []
    if args.extrapolate and len(runs) > 1:
        n_ = np.log10([r["n"] for r in runs])
        kk, c = np.polyfit(n_, np.log10([r["fit_s"] for r in runs]), 1)
        for s in args.extrapolate.split(","):
            e = int(float(s))
            extrap.append({"n": e, "fit_s": float(10 ** (c + kk * np.log10(e))),
                           "extrapolated": True})
    meta = dict(dataset=args.dataset, synthetic=True, n_cpus=os.cpu_count(),
                numba_threads=int(os.environ.get("NUMBA_NUM_THREADS", 0)) or None,
                machine=platform.platform(), python=platform.python_version(),
                command=" ".join(["python", "benchmarks/scale_train.py",
                                  *(argv if argv is not None else sys.argv[1:])]),
                shared_machine=True, generate_s=gen_s, slope=k,
                revision=rev)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(meta=meta, runs=runs, extrapolated=extrap),
                              indent=2) + "\n")
    plot(runs, Path(args.plot), title, extrap)
    if not args.no_mlflow:
        run_id = log_mlflow(args, argv if argv is not None else sys.argv[1:], runs,
                            [out, Path(args.plot)])
        print(f"MLflow: experiment benchmark-scale_train, run {run_id}")
    mb = 2.0**20
    print(f"\nslope of log time vs log rows: {k:.2f}")
    print("| rows | fit wall time (median) | fit CPU time | test error | "
          "peak RSS (VmHWM) | peak anon | peak file-backed | X[:n] on disk |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['n']:,} | {r['fit_s']:.2f} s (x{r['repeats']}) | "
              f"{r['cpu_s']:.2f} s | "
              f"{r['test_error']:.3f} | {r['peak_rss'] / mb:.0f} MiB | "
              f"{r['peak_anon'] / mb:.0f} MiB | {r['peak_file'] / mb:.0f} MiB | "
              f"{r['file_bytes'] / mb:.0f} MiB |")
    for e in extrap:
        print(f"| {e['n']:,} | **{e['fit_s']:.0f} s EXTRAPOLATED** | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
