"""Accuracy that grows with the data: learning curves in L and U, side by side.

Every method of a row sees the same labeled rows, the same unlabeled rows and
the same test rows, in one run, one thread each (CPU seconds reported).

Data sets (through :mod:`weakkernels.pipeline.datasets` from the data mirror,
``$WEAKKERNELS_DATA`` or ``../shared/data/raw`` beside the clone):

* ``ijcnn1``: the 49 990-row training file is the pool (L stratified labeled
  rows, then U of the rest), the test rows are the first 20 000 of
  ``ijcnn1.tst``, the validation rows 1 000 seeded rows of the rest of it
  (the file is in time order: a contiguous block is not representative);
  features min-max scaled
  on the pool, sigma = 1 / (d Var X) on the pool, C = 10.
* ``ijcnn1_tstu``: ijcnn1 with the unlabeled rows drawn from ``ijcnn1.tst``
  (a seeded sample of its 70 701 rows outside the test and validation rows),
  not from the training file: the same labels, test and
  validation rows and scaling. The two files are different distributions
  (``benchmarks/ijcnn1_shift.py``), and the S3VM term adapts the boundary
  to wherever its unlabeled rows lie.
* ``cod-rna``: the 59 535 rows in a seeded permutation (seed 0): the last
  9 000 are the test rows, the 1 000 before them the validation rows, the
  rest the pool; scaled and sigma as ijcnn1, C = 10.
* ``mnist``: paper 004 Table 1.5's protocol: 1 000 (or 100) seeded training
  labels, U = the first U test images, then the remaining training images;
  error on all 10 000 test images (the paper's transductive protocol);
  pixels / 255, sigma = 0.0128, C = 10. Validation: 1 000 seeded training
  images outside the labels (used only by ``_tuned`` methods; with U past
  10 000 they can also be unlabeled rows, as in the paper).

Methods (``--methods``, comma-separated):

* ``svc``: ``SVC(C, gamma=sigma)`` on the L labels;
* ``nystroem``: ``Nystroem(2000 landmarks of the labeled rows) + LinearSVC(C)``
  on the labels -- what a supervised user picks at scale;
* ``tsgs3vm``, ``frs3vm``: ``TSGS3VM(C, sigma)`` / ``FRS3VM(C, sigma)``
  defaults; suffixes change one setting each: ``_c0`` ``C_star=0`` (its own
  supervised machine), ``_c01`` a tenth of paper 004's ``C n_l / n_u``,
  ``_sq`` ``loss="squared_hinge"``, ``_sm`` ``loss="smooth_hinge"``, ``_rff``
  / ``_ny`` ``features="fourier"`` / ``"nystroem"``, ``_f<N>``
  ``max_features=N`` (Fourier features or Nyström landmarks; TSGS3VM only),
  ``_ushg`` / ``_uramp``
  / ``_uda`` / ``_ucccp`` ``unlabeled_loss="shg"`` / ``"ramp"`` / ``"da"`` /
  ``"ramp_cccp"``, ``_mean`` /
  ``_clip`` ``balance="mean"`` (Eq. 1.13 as printed) / ``"clipped"`` (e.g.
  ``tsgs3vm_rff_sq_c0``; the default ``"auto"`` pair is ``"da"`` +
  ``"clipped"`` on binary sets, ``"shg"`` + ``"mean"`` on MNIST's one-vs-rest
  problems: rows before the change name it ``tsgs3vm_ushg_mean``, the old
  one-vs-rest default is ``tsgs3vm_uda_clip``);
* ``cccp``: ``CCCPTSVM(C, sigma)`` (paper 004's exact-kernel CCCP-TSVM,
  estimator defaults: s = -0.3, C* = C n_l / n_u) on the same rows; the
  suffixes ``_c0``, ``_c01``, ``_s01`` (s = -0.1, Table 1.5's setting) and
  ``_tuned`` apply (e.g. ``cccp_s01_tuned``);
* ``_tuned`` (e.g. ``tsgs3vm_tuned``): C* chosen on the validation rows
  among ``{0, 0.1, 1} x C n_l / n_u`` (paper 004 chooses C* on a labeled
  validation set; the grid holds 0, the model's own supervised machine).
  The three fits also give the ``_c0`` row and the plain row (1 x the rule),
  written beside the tuned one, and a ``_tuned1se`` row: the same fits, the
  winner kept only if it beats C* = 0 by one standard error of the paired
  validation difference (:func:`one_se_rule`), else the C* = 0 machine.
* ``_tuned5`` (e.g. ``tsgs3vm_tuned5``): the same on the estimator's own
  grid, ``{0, 0.1, 1, 3, 10} x C n_l / n_u``
  (:data:`weakkernels._selection.SELECT_STAGES`, the candidates of
  ``validation_fraction``), so that the per-point weight at large U can
  reach the rule's weight at small U. Every candidate is written (``_x0.1``,
  ``_x3``, ``_x10`` beside ``_c0`` and the plain row), then the
  ``_tuned5`` / ``_tuned5_1se`` choices and, from the first three fits, the
  ``_tuned`` / ``_tuned1se`` rows of the narrow grid: both choices side by
  side from the same fits.

Usage::

    python benchmarks/scale_accuracy.py --dataset ijcnn1 --L 200,2000,20000 \\
        --seeds 0,1 --methods svc,nystroem,tsgs3vm,tsgs3vm_c0,tsgs3vm_sq
    python benchmarks/scale_accuracy.py --dataset mnist --U 2000,5000,10000,60000
    python benchmarks/scale_accuracy.py --dataset ijcnn1 --L 1000 \\
        --U 2000,8000,20000,48990 --seeds 0,1,2 --methods svc,tsgs3vm_tuned
    python benchmarks/scale_accuracy.py --plot ijcnn1     # figures from the CSV
    python benchmarks/scale_accuracy.py --plot ijcnn1 --rev 0119dbd \\
        --methods svc,tsgs3vm_c0,tsgs3vm,tsgs3vm_tuned1se --png ijcnn1_u_0119dbd

Writes ``benchmarks/results/scale_accuracy/<dataset>.csv`` (one row per fit,
appended; ``rev`` is the git revision that ran it), logs every fit as a
nested run of the MLflow experiment ``benchmark-scale_accuracy`` (the store of
:mod:`weakkernels.pipeline.tracking`; ``--no-mlflow`` to skip), and prints a
markdown table of the medians. ``--plot`` draws error vs L and error vs U per
method (medians over seeds) from the CSV, for the revisions named by
``--rev`` (comma-separated; default: the newest in the file).
"""

from __future__ import annotations

import argparse
import copy
import csv
import functools
import os
import sys
import time
from pathlib import Path

import numpy as np

from _bases import revision
from _tracking import parent_run
from weakkernels._selection import SELECT_STAGES, one_se_better

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("WEAKKERNELS_DATA", ROOT.parent / "shared/data/raw"))
OUT = ROOT / "benchmarks" / "results" / "scale_accuracy"
N_VAL = 1000
# rows of ijcnn1.tst outside its 20 000 test and N_VAL validation rows
N_IJCNN1_OTHER = 70701
# C* grid of the ``_tuned`` methods, in units of paper 004's C n_l / n_u
CSTAR_GRID = (0.0, 0.1, 1.0)
# ... and of the ``_tuned5`` methods: the estimator's held-out candidates
CSTAR_GRID5 = SELECT_STAGES
DEFAULT_METHODS = "svc,nystroem,tsgs3vm,tsgs3vm_c0"
COLUMNS = ["dataset", "method", "L", "U", "seed", "error", "balanced_error",
           "features", "fit_cpu_s", "C", "sigma", "C_star", "val_error", "rev"]


def _minmax(Xp, *others):
    lo, hi = Xp.min(0), Xp.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return [((A - lo) / span).astype(np.float32) for A in (Xp, *others)]


@functools.lru_cache(maxsize=2)
def _raw(name: str):
    """The mirror's parsed set, read once per process (``load`` and
    ``load_other`` both need ijcnn1's)."""
    from weakkernels.pipeline.datasets import load_raw

    return load_raw(name, DATA)


def load(dataset: str):
    """``(X_pool, y_pool, X_test, y_test, X_val, y_val, sigma)`` as the module
    docstring says; the MNIST validation rows are picked per seed in
    :func:`split` (``X_val`` is None here)."""
    from weakkernels.kernels import resolve_sigma
    from weakkernels.pipeline.datasets import DATASETS

    raw = _raw(dataset.removesuffix("_tstu"))
    if dataset == "mnist":  # pixels / 255 by the registry's parser
        n = DATASETS["mnist"].extra["n_train"]
        X, y = raw.X.astype(np.float32), raw.y.astype(int)
        return X[:n], y[:n], X[n:], y[n:], None, None, 0.0128
    X, y = np.asarray(raw.X, dtype=np.float64), (raw.y > 0).astype(int)
    if dataset.startswith("ijcnn1"):
        pool, test, val = _ijcnn1_rows(y.size)
    else:
        perm = np.random.default_rng(0).permutation(y.size)
        pool, val, test = perm[:-10000], perm[-10000:-9000], perm[-9000:]
    Xp, Xt, Xv = _minmax(X[pool], X[test], X[val])
    return Xp, y[pool], Xt, y[test], Xv, y[val], resolve_sigma("scale", Xp)


def _ijcnn1_rows(n):
    """Pool, test and validation rows of ijcnn1 (training file then
    ``ijcnn1.tst``). The test file is in time order: the validation rows are
    a seeded sample of its rows after the test rows, not a contiguous block."""
    pool, test = np.arange(49990), np.arange(49990, 69990)
    val = np.sort(np.random.default_rng(0).choice(
        np.arange(69990, n), N_VAL, replace=False))
    return pool, test, val


def load_other(dataset: str):
    """``ijcnn1_tstu``'s unlabeled source: the rows of ``ijcnn1.tst`` outside
    the test and validation rows, scaled as the pool (None for other sets)."""
    if dataset != "ijcnn1_tstu":
        return None
    X = np.asarray(_raw("ijcnn1").X, dtype=np.float64)
    pool, _, val = _ijcnn1_rows(X.shape[0])
    other = np.setdiff1d(np.arange(69990, X.shape[0]), val)
    assert other.size == N_IJCNN1_OTHER, other.size  # split() samples from it
    return _minmax(X[pool], X[other])[1]


def split(dataset, yp, n_lab, n_unl, seed, Xt_rows):
    """Labeled pool indices, unlabeled rows (as ``("pool"|"test"|"other",
    idx)``) and,
    for MNIST, the validation pool indices (else None)."""
    rng = np.random.default_rng(seed)
    if dataset == "mnist":
        lab = np.sort(rng.choice(yp.size, n_lab, replace=False))
        rest = np.setdiff1d(np.arange(yp.size), lab)
        val = np.sort(rng.choice(rest, N_VAL, replace=False))
        n_test = min(n_unl, Xt_rows)
        return lab, [("test", np.arange(n_test)),
                     ("pool", rest[: max(0, n_unl - n_test)])], val
    from sklearn.model_selection import train_test_split

    lab = np.sort(train_test_split(np.arange(yp.size), train_size=n_lab,
                                   stratify=yp, random_state=seed)[0])
    if dataset == "ijcnn1_tstu":  # load_other's rows, a seeded sample
        return lab, [("other", np.sort(rng.permutation(N_IJCNN1_OTHER)[:n_unl]))], None
    rest = rng.permutation(np.setdiff1d(np.arange(yp.size), lab))
    return lab, [("pool", np.sort(rest[:n_unl]))], None


def unlabeled_rows(parts, Xp, Xt, Xo=None):
    """The unlabeled rows of :func:`split`'s ``parts`` (pool, test or, for
    ``ijcnn1_tstu``, :func:`load_other`'s rows)."""
    return np.vstack([{"test": Xt, "pool": Xp, "other": Xo}[src][i]
                      for src, i in parts])


def make(method: str, C: float, sigma: float, seed: int):
    """``(estimator, semi_supervised, tuned)`` for a method name."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    from weakkernels import CCCPTSVM, FRS3VM, TSGS3VM

    if method == "svc":
        return SVC(C=C, gamma=sigma), False, False
    if method == "nystroem":
        return make_pipeline(Nystroem(gamma=sigma, n_components=2000,
                                      random_state=seed), LinearSVC(C=C)), False, False
    head = method.split("_")[0]
    cls = {"tsgs3vm": TSGS3VM, "frs3vm": FRS3VM, "cccp": CCCPTSVM}.get(head)
    if cls is None:
        raise SystemExit(f"unknown method {method!r}")
    kw = {"C": C, "sigma": sigma}
    if cls is not CCCPTSVM:  # the exact kernel machine has no seed
        kw["random_state"] = seed
    tuned = False
    for token in method.split("_")[1:]:
        if token == "c0":
            kw["C_star"] = 0.0
        elif token == "rule" and cls is not CCCPTSVM:
            # paper 004's C* rule as given, no held-out choice of C*
            kw["validation_fraction"] = None
        elif token == "c01":  # a tenth of paper 004's rule (set at fit)
            kw["C_star"] = 0.1
        elif token in ("tuned", "tuned5"):
            tuned = token
        elif token == "s01" and cls is CCCPTSVM:
            kw["s"] = -0.1
        elif token in ("sq", "sm"):
            kw["loss"] = "squared_hinge" if token == "sq" else "smooth_hinge"
        elif token in ("ushg", "uramp", "uda") and cls is not CCCPTSVM:
            kw["unlabeled_loss"] = token[1:]
        elif token == "ucccp" and cls is not CCCPTSVM:
            kw["unlabeled_loss"] = "ramp_cccp"
        elif token in ("mean", "clip") and cls is not CCCPTSVM:
            kw["balance"] = "mean" if token == "mean" else "clipped"
        elif token in ("rff", "ny"):
            kw["features"] = "fourier" if token == "rff" else "nystroem"
        elif token[:1] == "f" and token[1:].isdigit() and cls is TSGS3VM:
            kw["max_features"] = int(token[1:])  # features / landmarks
        else:
            raise SystemExit(f"unknown method token {token!r} in {method!r}")
    return cls(**kw), True, tuned


def _errors(est, X, y):
    p = est.predict(X)
    rec = [float(np.mean(p[y == c] != c)) for c in np.unique(y)]
    return float(np.mean(p != y)), float(np.mean(rec))


def fits(method, a, sigma, seed, L, XL, yl, XU, Xv, yv):
    """Fit one method on one split: yields ``(name, estimator, cpu_s, C*,
    val_error)``; a ``_tuned`` method yields its grid's plain and ``_c0``
    rows and then the validation winner under its own name."""
    est, semi, tuned = make(method, a.C, sigma, seed)
    n_u = XU.shape[0]
    if not semi:
        t0 = time.process_time()
        est.fit(XL, yl)
        yield method, est, time.process_time() - t0, "", ""
        return
    X = np.vstack([XL, XU])
    y = np.r_[yl, np.full(n_u, -1)]
    rule = a.C * L / n_u
    grid = {"tuned": CSTAR_GRID, "tuned5": CSTAR_GRID5}.get(tuned) or (
        (est.C_star,) if est.C_star is not None else (1.0,))
    base = method.replace("_" + tuned, "") if tuned else method
    cands = []
    for mult in grid:
        if tuned or est.C_star is not None:
            est.set_params(C_star=mult * rule)
            if "validation_fraction" in est.get_params():
                # the row's C*, not one the estimator chooses from it (its
                # cross-validation below 4 096 rows, its held-out tenth from
                # 10 000 labels)
                est.set_params(validation_fraction=None)
        t0 = time.process_time()
        est.fit(X, y)
        cpu = time.process_time() - t0
        val = _errors(est, Xv, yv)[0] if Xv is not None else ""
        name = (method if not tuned else
                base + "_c0" if mult == 0 else base if mult == 1 else
                f"{base}_x{mult:g}" if tuned == "tuned5" else None)
        if name is not None:
            yield name, est, cpu, est.C_star_, val
        if tuned:
            cands.append((val, copy.deepcopy(est), cpu, est.C_star_,
                          est.predict(Xv) != yv))
    if tuned:
        # ties go to the smaller C* (the grid ascends): no unlabeled weight
        # that the validation rows do not pay for
        best = min(cands, key=lambda c: c[0])
        sep = "_" if tuned == "tuned5" else ""
        yield method, *best[1:4], best[0]
        chosen = one_se_rule(cands)
        yield method + sep + "1se", *chosen[1:4], chosen[0]
        if tuned == "tuned5":  # the narrow grid's choices, same fits
            narrow = [c for c, m in zip(cands, grid, strict=True)
                      if m in CSTAR_GRID]
            best = min(narrow, key=lambda c: c[0])
            yield base + "_tuned", *best[1:4], best[0]
            chosen = one_se_rule(narrow)
            yield base + "_tuned1se", *chosen[1:4], chosen[0]


def one_se_rule(cands):
    """The validation winner if it beats the grid's first candidate (C* = 0,
    the model's own supervised machine) by more than one standard error of
    the paired difference on the validation rows, else that first candidate:
    the rule of the pipeline's tune stage
    (:func:`weakkernels.pipeline.search.one_se_better`). ``cands`` are
    ``(val_error, est, cpu, C*, wrong)`` tuples, ``wrong`` a boolean vector
    over the validation rows."""
    best = min(cands, key=lambda c: c[0])
    return best if one_se_better(best[4], cands[0][4])[0] else cands[0]


def _mlflow_fit(est, row, semi_name):
    import mlflow

    from weakkernels.pipeline.tracking import log_resolved_params

    rec = dict(zip(COLUMNS, row, strict=True))
    with mlflow.start_run(run_name=f"{rec['method']} L={rec['L']} U={rec['U']} "
                                   f"seed={rec['seed']}", nested=True):
        mlflow.set_tags({"method": rec["method"], "dataset": rec["dataset"],
                         "rev": rec["rev"]})
        mlflow.log_params({k: rec[k] for k in ("L", "U", "seed")})
        if semi_name:
            log_resolved_params(est)
        mlflow.log_metrics({k: float(rec[k]) for k in
                            ("error", "balanced_error", "fit_cpu_s", "val_error")
                            if rec[k] != ""})


def run(a, argv) -> int:
    Xp, yp, Xt, yt, Xv, yv, sigma = load(a.dataset)
    Xo = load_other(a.dataset)
    Ls = [int(v) for v in (a.L or ("1000" if a.dataset == "mnist" else "2000")
                           ).split(",")]
    Us = [yp.size + (Xt.shape[0] if a.dataset == "mnist" else 0) - 1 if v == "all"
          else int(v) for v in (a.U or "all").split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{a.dataset}.csv"
    new = not path.exists()
    rows, rev = [], revision()
    # the CSV is the parent's artifact even when the run is interrupted
    with parent_run("benchmark-scale_accuracy", __file__, vars(a), argv,
                    f"{a.dataset} {a.methods}", enabled=not a.no_mlflow,
                    artifacts=[path]) as parent:
        with open(path, "a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(COLUMNS)
            for seed in [int(s) for s in a.seeds.split(",")]:
                for L in Ls:
                    for U in Us:
                        lab, parts, val = split(a.dataset, yp, L, U, seed,
                                                Xt.shape[0])
                        XU = unlabeled_rows(parts, Xp, Xt, Xo)
                        Xv_, yv_ = (Xp[val], yp[val]) if val is not None else (Xv, yv)
                        for m in a.methods.split(","):
                            for name, est, cpu, cstar, verr in fits(
                                    m, a, sigma, seed, L, Xp[lab], yp[lab], XU,
                                    Xv_, yv_):
                                err, berr = _errors(est, Xt, yt)
                                D = getattr(est, "n_features_model_", "")
                                row = [a.dataset, name, L, XU.shape[0], seed,
                                       f"{err:.5f}", f"{berr:.5f}", D,
                                       f"{cpu:.1f}", a.C, f"{sigma:.6g}",
                                       "" if cstar == "" else f"{cstar:.6g}",
                                       "" if verr == "" else f"{verr:.5f}", rev]
                                w.writerow(row)
                                fh.flush()
                                rows.append(row)
                                if parent is not None:
                                    _mlflow_fit(est, row, cstar != "")
                                print(" ".join(map(str, row)), flush=True)
    print(table(rows))
    return 0


def table(rows) -> str:
    """Markdown table of the medians over seeds; a model at chance (balanced
    error >= 45 %) is flagged, never printed as a plain result."""
    out = ["| method | L | U | error % (median) | balanced % | CPU s | seeds |",
           "|---|---|---|---|---|---|---|"]
    keys = sorted({(r[1], int(r[2]), int(r[3])) for r in rows},
                  key=lambda k: (k[1], k[2], k[0]))
    for m, L, U in keys:
        sel = [r for r in rows if (r[1], int(r[2]), int(r[3])) == (m, L, U)]
        med = [float(np.median([float(r[i]) for r in sel])) for i in (5, 6, 8)]
        flag = " **at chance**" if med[1] >= 0.45 else ""
        out.append(f"| {m} | {L} | {U} | {100 * med[0]:.2f}{flag} | "
                   f"{100 * med[1]:.2f} | {med[2]:.0f} | {len(sel)} |")
    return "\n".join(out)


def plot(dataset: str, rev: str | None, methods: str | None = None,
         name: str | None = None) -> int:
    """Error vs L (at the largest U of each L) and error vs U (per L) from the
    CSV, one line per method (``methods``: comma-separated, else all), medians
    over seeds, for the revision(s) ``rev``; written to ``<name or
    dataset>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import pandas as pd

    df = pd.read_csv(OUT / f"{dataset}.csv", dtype={"rev": str})
    if "rev" in df and df["rev"].notna().any():
        rev = rev or df["rev"].dropna().iloc[-1]
        df = df[df["rev"].isin(rev.split(","))]
    if methods:
        df = df[df["method"].isin(methods.split(","))]
    med = df.groupby(["method", "L", "U"], as_index=False)["error"].median()
    # the error-vs-L panel only where some method has more than one L
    with_L = bool((med.groupby("method")["L"].nunique() > 1).any())
    fig, axes = plt.subplots(1, 1 + with_L, figsize=(5.5 * (1 + with_L), 4),
                             squeeze=False)
    axes = axes[0]
    for m, g in med.groupby("method"):
        byL = g.loc[g.groupby("L")["U"].idxmax()]
        if byL["L"].nunique() > 1:
            axes[0].plot(byL["L"], 100 * byL["error"], "o-", label=m)
        for L, gl in g.groupby("L"):
            if gl["U"].nunique() > 1:
                axes[-1].plot(gl["U"], 100 * gl["error"], "o-", label=f"{m} L={L}")
    labels = ("L (labeled rows)", "U (unlabeled rows)")[-len(axes):]
    for ax, x in zip(axes, labels, strict=True):
        ax.set_xscale("log")
        # a tick at each size measured, not the log axis' minor labels,
        # which overlap on a one- or two-decade axis
        ax.set_xticks(sorted(med[x[0]].unique()))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(x)
        ax.set_ylabel("test error %")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    fig.suptitle(f"{dataset}: error vs {'L and vs U' if with_L else 'U'} "
                 f"(median over seeds; rev {rev})")
    fig.tight_layout()
    out = OUT / f"{name or dataset}.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=["ijcnn1", "ijcnn1_tstu", "cod-rna", "mnist"])
    ap.add_argument("--L", default=None, help="labeled sizes, comma-separated")
    ap.add_argument("--U", default=None, help="unlabeled sizes ('all': the rest)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--methods", default=None,
                    help=f"comma-separated (default {DEFAULT_METHODS}); with "
                         "--plot: the lines to draw (default all)")
    ap.add_argument("--no-mlflow", action="store_true")
    ap.add_argument("--plot", metavar="DATASET", default=None,
                    help="draw the figures of DATASET from its CSV and exit")
    ap.add_argument("--rev", default=None,
                    help="--plot: the revision(s) to draw, comma-separated")
    ap.add_argument("--png", default=None,
                    help="--plot: the figure's name (default: the dataset's)")
    a = ap.parse_args(argv)
    if a.plot:
        return plot(a.plot, a.rev, a.methods, a.png)
    if a.dataset is None:
        ap.error("--dataset is required (or --plot DATASET)")
    a.methods = a.methods or DEFAULT_METHODS
    return run(a, argv)


if __name__ == "__main__":
    raise SystemExit(main())
