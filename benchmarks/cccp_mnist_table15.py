"""Paper 004's Table 1.5 and Figure 1.10 (MNIST, CCCP-TSVM one-vs-rest) as one command.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_mnist_table15.py [--n-unlabeled 0 2000 5000]
        [--n-labeled 1000 100] [--param cache_dtype=float32] [--param n_jobs=2]
        [--c-star-grid 5 1 0.5] [--mlflow EXPERIMENT] [--time-plot PNG]
        [--time-extra OLD.json] [--seed N] [--out results.json]

The protocol (data, labels, C, sigma, s, C* per U and the paper's errors) is
``benchmarks/protocols/cccp_mnist/table15.yaml``; the data come from the data
mirror beside the clone (``_cccp_common.DATA``). Every (labels, U) row of the
protocol asked for runs in a fresh subprocess so that its peak RSS
(``ru_maxrss``) is its own; one warm-up fit compiles the numba kernels before
the timed fits (CPU seconds, ``time.process_time``, all threads of the
process; wall seconds, ``time.perf_counter``). Reported per row: the test
error on all 10 000 test images, the error on the transduced test images (the
first min(U, 10 000)) beside the hinge SVM's on the same images, fit CPU and
wall seconds, peak RSS, the kernel cache's rows and hit rate, and a SHA-256 of
the test decision values (equal hashes: the same model bit for bit).

``--c-star-grid``: every C* of the grid is fitted -- the paper's printed C* of
the row is added when missing -- and the one of least error on the paper's
validation set (1 000 training images outside the unlabeled pool) is the
row's model; every fit is also recorded on its own (``fits``), so one run
gives both the printed-C* and the validation-chosen rows.

``--mlflow EXPERIMENT``: one parent run (provenance tags, the command) and one
nested run per fit (the estimator's resolved parameters; metrics: test error,
transduced error, validation error, fit CPU and wall seconds, peak RSS), in
the store of :mod:`weakkernels.pipeline.tracking`; the result JSON and the
time plot are the parent's artifacts. ``--time-plot``: fit CPU against U
(1 000 labels, the printed C*) with the log-log slope and the paper's
degree-two fit (``cccp_mnist_time_vs_u.py``); ``--time-extra`` adds rows of
earlier result files (e.g. U = 60 000) that are not rerun. Results are
printed as markdown tables and written to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from _cccp_common import DATA, HINGE_S, parse_param
from _tracking import parent_run
from cccp_mnist_time_vs_u import fit_curve, plot

HERE = Path(__file__).resolve().parent
PROTOCOL = HERE / "protocols" / "cccp_mnist" / "table15.yaml"


def load_split(proto, n_unlabeled, n_labeled):
    """Labeled, unlabeled and test arrays of the Table 1.5 protocol."""
    with np.load(DATA / proto["data"]) as d:
        Xtr = d["x_train"].reshape(60000, -1) / proto["pixel_scale"]
        ytr = d["y_train"]
        Xte = d["x_test"].reshape(10000, -1) / proto["pixel_scale"]
        yte = d["y_test"]
    rng = np.random.default_rng(proto["seed"])
    lab = np.sort(rng.choice(ytr.size, n_labeled, replace=False))
    rest = np.setdiff1d(np.arange(ytr.size), lab)
    # the paper's validation set (1 000 training images, C* chosen on it):
    # the last unlabeled training images, so the unlabeled pool is unchanged
    val = rest[-proto["n_validation"]:]
    rest = rest[: -proto["n_validation"]]
    n_test_u = min(n_unlabeled, Xte.shape[0])
    Xu = np.vstack([Xte[:n_test_u], Xtr[rest[: n_unlabeled - n_test_u]]])
    return Xtr[lab], ytr[lab], Xu, n_test_u, Xte, yte, Xtr[val], ytr[val]


def _peak_rss_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _printed_row(proto, n_unlabeled, n_labeled):
    return next((r for r in proto["rows"] if r["n_unlabeled"] == n_unlabeled
                 and r.get("n_labeled", proto["n_labeled"]) == n_labeled), None)


def child(n_unlabeled, n_labeled, extra, c_star_grid=None, seed=None):
    from weakkernels import CCCPTSVM, RampSVM
    from weakkernels.pipeline.tracking import resolved_params

    proto = yaml.safe_load(PROTOCOL.read_text())
    if seed is not None:
        proto["seed"] = seed  # another labeled draw (and validation set)
    row = _printed_row(proto, n_unlabeled, n_labeled)
    XL, yL, XU, n_test_u, Xte, yte, Xv, yv = load_split(proto, n_unlabeled,
                                                        n_labeled)
    C, sigma, s = proto["C"], proto["sigma"], proto["s"]
    svm = RampSVM(C=C, sigma=sigma, s=HINGE_S)
    # warm-up on 300 points: compiles the numba kernels before any timing
    RampSVM(C=C, sigma=sigma, s=HINGE_S).fit(XL[:300], yL[:300])
    if n_unlabeled:
        warm_y = np.concatenate([yL[:200], np.full(100, -1)])
        CCCPTSVM(**{**dict(C=C, sigma=sigma, s=s, C_star=1.0), **extra,
                    "max_cccp_iter": 2}).fit(
            np.vstack([XL[:200], XU[:100]]), warm_y)
        svm_pred = svm.fit(XL, yL).predict(Xte[:n_test_u])
    t = slice(0, n_test_u)

    def record(est, cpu, wall):
        F = np.ascontiguousarray(est.decision_function(Xte))
        # predict's own rule on F: the kernel expansion over 10 000 test
        # images is computed once (at U = 20 000 it costs minutes)
        pred = est.classes_[np.argmax(F, axis=1) if F.ndim == 2
                            else (F > 0).astype(np.intp)]
        rec = {
            "C_star": getattr(est, "C_star_", None),
            "test_error": float(np.mean(pred != yte)),
            "validation_error": float(np.mean(est.predict(Xv) != yv)),
            "fit_cpu_s": round(cpu, 2),
            "fit_wall_s": round(wall, 2),
            "peak_rss_mb": _peak_rss_mb(),
            "n_cccp_iter": np.asarray(getattr(est, "n_iter_", [])).tolist(),
            "decision_sha256": hashlib.sha256(F.tobytes()).hexdigest(),
            "resolved_params": resolved_params(est),
        }
        if n_unlabeled:
            rec["transduced_error"] = float(np.mean(pred[t] != yte[t]))
            rec["svm_error_on_transduced"] = float(np.mean(svm_pred != yte[t]))
            for attr in ("cache_rows_", "cache_hit_rate_",
                         "kernel_rows_computed_"):
                rec[attr] = getattr(est, attr, None)
        return rec

    fits = []
    if n_unlabeled == 0:
        t0, w0 = time.process_time(), time.perf_counter()
        est = svm.fit(XL, yL)
        fits.append(record(est, time.process_time() - t0,
                           time.perf_counter() - w0))
        fits[-1]["printed"] = fits[-1]["chosen"] = True
    else:
        params = dict(C=C, C_star=row["C_star"], sigma=sigma, s=s)
        params.update(extra)  # --param overrides the protocol (e.g. C_star)
        Xf = np.vstack([XL, XU])
        yf = np.concatenate([yL, np.full(len(XU), -1)])
        grid = list(c_star_grid or [params["C_star"]])
        if c_star_grid and params["C_star"] not in grid:
            grid.append(params["C_star"])  # the printed row too
        for c_star in grid:
            t0, w0 = time.process_time(), time.perf_counter()
            est = CCCPTSVM(**{**params, "C_star": c_star}).fit(Xf, yf)
            fits.append(record(est, time.process_time() - t0,
                               time.perf_counter() - w0))
            fits[-1]["printed"] = c_star == params["C_star"]
            del est
        # the least validation error; ties to the earlier grid value
        best = min(range(len(fits)), key=lambda k: fits[k]["validation_error"])
        for k, f in enumerate(fits):
            f["chosen"] = k == best
    chosen = next(f for f in fits if f["chosen"])
    out = {
        "n_labeled": n_labeled,
        "n_unlabeled": n_unlabeled,
        **{k: v for k, v in chosen.items() if k not in ("printed", "chosen")},
        "paper_error": None if row is None else row["paper_error"],
        "paper_C_star": None if row is None else row.get("C_star"),
        # the row's cost: every fit of the grid
        "fit_cpu_s": round(sum(f["fit_cpu_s"] for f in fits), 2),
        "fit_wall_s": round(sum(f["fit_wall_s"] for f in fits), 2),
        "peak_rss_mb": _peak_rss_mb(),
        "params": extra,
        "seed": proto["seed"],
    }
    if c_star_grid and n_unlabeled:
        out["validation_error_per_C_star"] = {
            str(f["C_star"]): f["validation_error"] for f in fits}
        out["fits"] = fits
    print("RESULT " + json.dumps(out), flush=True)


def _printed_fit(r):
    """The fit of a result row with the paper's C* (the row itself without a grid)."""
    return next((f for f in r.get("fits", []) if f["printed"]), r)


def _mlflow_fits(r):
    """One nested run per fit of a result row (the grid's fits, or the row)."""
    import mlflow

    for f in r.get("fits") or [{**r, "printed": True, "chosen": True}]:
        name = (f"L={r['n_labeled']} U={r['n_unlabeled']} "
                f"C*={f['C_star'] if f['C_star'] is not None else '-'}")
        with mlflow.start_run(run_name=name, nested=True):
            mlflow.set_tags({"printed_C_star": str(f["printed"]),
                             "chosen_on_validation": str(f["chosen"]),
                             "decision_sha256": f["decision_sha256"]})
            mlflow.log_params({"n_labeled": r["n_labeled"],
                               "n_unlabeled": r["n_unlabeled"],
                               "paper_error": r["paper_error"],
                               **{f"est.{k}": str(v)[:6000] for k, v in
                                  f["resolved_params"].items()}})
            mlflow.log_metrics({k: float(f[k]) for k in (
                "test_error", "transduced_error", "validation_error",
                "fit_cpu_s", "fit_wall_s", "peak_rss_mb", "cache_hit_rate_")
                if f.get(k) is not None})


def _pct(v):
    return "-" if v is None else f"{100 * v:.2f} %"


def _table(results):
    print("\n| labels | U | C* | paper | ours | transduced: ours / SVM "
          "| fit CPU s | fit wall s | peak RSS MB | cache hit rate |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for f in r.get("fits") or [r]:
            how = "" if not r["n_unlabeled"] else (
                ("printed" if f.get("printed", True) else "")
                + (", chosen" if f.get("chosen") and "fits" in r else ""))
            trans = (f"{_pct(f['transduced_error'])[:-2]} / "
                     f"{_pct(f['svm_error_on_transduced'])}"
                     if "transduced_error" in f else "-")
            hit = f.get("cache_hit_rate_")
            print(f"| {r['n_labeled']} | {r['n_unlabeled']} | "
                  f"{f['C_star'] or '-'} {how.strip(', ')} | "
                  f"{_pct(r['paper_error'])} | {_pct(f['test_error'])} | "
                  f"{trans} | {f['fit_cpu_s']} | {f['fit_wall_s']} | "
                  f"{f['peak_rss_mb']} | {'-' if hit is None else f'{hit:.4f}'} |")


def _time_curve(results, extra_files, out, n_labeled=1000):
    """Figure 1.10: fit CPU of the printed-C* fits against U, plus old rows."""
    rows = {}
    for f in extra_files:
        for r in json.loads(Path(f).read_text()):
            if r["n_labeled"] == n_labeled and r["n_unlabeled"] > 0 \
                    and "validation_error_per_C_star" not in r:
                rows[r["n_unlabeled"]] = (r["fit_cpu_s"], f)
    for r in results:
        if r["n_labeled"] == n_labeled and r["n_unlabeled"] > 0:
            rows[r["n_unlabeled"]] = (_printed_fit(r)["fit_cpu_s"], "this run")
    if len(rows) < 3:
        print("time curve: fewer than three U, no fit", file=sys.stderr)
        return None
    U = sorted(rows)
    t = [rows[u][0] for u in U]
    slope, quad = fit_curve(U, t)
    print("\n| U | fit CPU s | from |\n|---|---|---|")
    for u in U:
        print(f"| {u} | {rows[u][0]} | {rows[u][1]} |")
    print(f"\nlog-log slope: time ~ U^{slope:.2f}; degree-2 fit: "
          f"{quad[0]:.3g} U^2 + {quad[1]:.3g} U + {quad[2]:.3g}")
    plot(U, t, slope, quad, n_labeled, out)
    return {"U": U, "fit_cpu_s": t, "slope": slope, "quadratic": quad.tolist()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, nargs="+",
                    default=[0, 2000, 5000, 10000])
    ap.add_argument("--n-labeled", type=int, nargs="+", default=None,
                    help="1000 (the protocol's default) and/or 100; a (labels, "
                         "U) pair without a protocol row is skipped")
    ap.add_argument("--param", action="append", default=[],
                    help="extra CCCPTSVM parameter key=value (JSON value)")
    ap.add_argument("--c-star-grid", type=float, nargs="+",
                    help="fit every C* (and the printed one) and keep the one "
                         "of least validation error (the paper's selection)")
    ap.add_argument("--mlflow", metavar="EXPERIMENT",
                    help="log a parent run and one nested run per fit")
    ap.add_argument("--time-plot", metavar="PNG",
                    help="Figure 1.10: fit CPU against U (1 000 labels)")
    ap.add_argument("--time-extra", nargs="+", default=[],
                    help="earlier result JSONs whose U join the time curve")
    ap.add_argument("--seed", type=int,
                    help="seed of the labeled draw (default: the protocol's)")
    ap.add_argument("--out")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    proto = yaml.safe_load(PROTOCOL.read_text())
    labels = args.n_labeled or [proto["n_labeled"]]
    extra = dict(parse_param(p) for p in args.param)
    if args.child is not None:
        child(args.child, labels[0], extra, args.c_star_grid, args.seed)
        return
    results = []
    # the --out rows are the parent's artifact even when the run is interrupted
    with parent_run(args.mlflow or "", __file__, vars(args), argv,
                    "MNIST Table 1.5, labels " + ",".join(map(str, labels)),
                    enabled=bool(args.mlflow),
                    artifacts=[args.out] if args.out else []) as parent:
        for n_labeled in labels:
            for u in args.n_unlabeled:
                if _printed_row(proto, u, n_labeled) is None:
                    print(f"no protocol row for {n_labeled} labels, U = {u}: "
                          "skipped", file=sys.stderr)
                    continue
                cmd = [sys.executable, __file__, "--child", str(u),
                       "--n-labeled", str(n_labeled)] + [
                    f"--param={p}" for p in args.param]
                if args.c_star_grid:
                    cmd += ["--c-star-grid"] + [str(c) for c in args.c_star_grid]
                if args.seed is not None:
                    cmd += ["--seed", str(args.seed)]
                res = subprocess.run(cmd, capture_output=True, text=True,
                                     check=False)
                line = [ln for ln in res.stdout.splitlines()
                        if ln.startswith("RESULT ")]
                if not line:
                    print(res.stderr[-3000:], file=sys.stderr)
                    continue
                results.append(json.loads(line[-1][7:]))
                print(json.dumps({k: v for k, v in results[-1].items()
                                  if k != "fits"}), flush=True)
                if parent is not None:
                    _mlflow_fits(results[-1])
                if args.out:  # after every row: a killed run keeps its rows
                    Path(args.out).write_text(json.dumps(results, indent=1)
                                              + "\n")
        _table(results)
        if args.time_plot:
            curve = _time_curve(results, args.time_extra, args.time_plot)
            if parent is not None and curve is not None:
                import mlflow

                mlflow.log_metrics({"time_vs_u_slope": curve["slope"]})
                mlflow.log_artifact(args.time_plot)


if __name__ == "__main__":
    main()
