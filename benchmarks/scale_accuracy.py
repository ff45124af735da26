"""Accuracy that grows with the data: learning curves in L and U, side by side.

Every method of a row sees the same labeled rows, the same unlabeled rows and
the same test rows, in one run, one thread each (CPU seconds reported).

Data sets (from the data mirror, ``$WEAKKERNELS_DATA`` or ``../shared/data/raw``
beside the clone; features min-max scaled on the pool, MNIST pixels / 255):

* ``ijcnn1``: the 49 990-row training file is the pool (L stratified labeled
  rows, then U of the rest), the test rows are the first 20 000 of
  ``ijcnn1.tst``; sigma = 1 / (d Var X) on the pool, C = 10.
* ``mnist``: paper 004 Table 1.5's protocol: 1 000 (or 100) seeded training
  labels, U = the first U test images, then the remaining training images;
  error on all 10 000 test images; sigma = 0.0128, C = 10.

Methods (``--methods``, comma-separated):

* ``svc``: ``SVC(C, gamma=sigma)`` on the L labels;
* ``nystroem``: ``Nystroem(2000 landmarks of the labeled rows) + LinearSVC(C)``
  on the labels -- what a supervised user picks at scale;
* ``tsgs3vm``, ``frs3vm``: ``TSGS3VM(C, sigma)`` / ``FRS3VM(C, sigma)``
  defaults; suffixes change one setting each: ``_c0`` ``C_star=0`` (its own
  supervised machine), ``_c01`` a tenth of paper 004's ``C n_l / n_u``,
  ``_sq`` ``loss="squared_hinge"``, ``_rff`` / ``_ny`` ``features="fourier"``
  / ``"nystroem"`` (e.g. ``tsgs3vm_rff_sq_c0``).

Usage::

    python benchmarks/scale_accuracy.py --dataset ijcnn1 --L 200,2000,20000 \\
        --seeds 0,1 --methods svc,nystroem,tsgs3vm,tsgs3vm_c0,tsgs3vm_sq
    python benchmarks/scale_accuracy.py --dataset mnist --U 2000,5000,10000,60000

Writes ``benchmarks/results/scale_accuracy/<dataset>.csv`` (one row per fit,
appended) and prints a markdown table of the medians.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("WEAKKERNELS_DATA", ROOT.parent / "shared/data/raw"))
OUT = ROOT / "benchmarks" / "results" / "scale_accuracy"


def load(dataset: str):
    """``(X_pool, y_pool, X_test, y_test, sigma)`` as the module docstring."""
    from weakkernels._dsg import resolve_sigma
    from weakkernels.pipeline.datasets import DATASETS, load_raw

    raw = load_raw(dataset, DATA)
    if dataset == "mnist":  # pixels / 255 by the registry's parser
        n = DATASETS["mnist"].extra["n_train"]
        X, y = raw.X.astype(np.float32), raw.y.astype(int)
        return X[:n], y[:n], X[n:], y[n:], 0.0128
    X, y = np.asarray(raw.X, dtype=np.float64), (raw.y > 0).astype(int)
    Xp, yp, Xt, yt = X[:49990], y[:49990], X[49990:69990], y[49990:69990]
    lo, hi = Xp.min(0), Xp.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    Xp, Xt = ((Xp - lo) / span).astype(np.float32), ((Xt - lo) / span).astype(
        np.float32)
    return Xp, yp, Xt, yt, resolve_sigma("scale", Xp)


def split(dataset, yp, n_lab, n_unl, seed, Xt_rows):
    """Labeled pool indices, unlabeled rows (as ``("pool"|"test", idx)``)."""
    rng = np.random.default_rng(seed)
    if dataset == "mnist":
        lab = np.sort(rng.choice(yp.size, n_lab, replace=False))
        rest = np.setdiff1d(np.arange(yp.size), lab)
        n_test = min(n_unl, Xt_rows)
        return lab, [("test", np.arange(n_test)),
                     ("pool", rest[: max(0, n_unl - n_test)])]
    from sklearn.model_selection import train_test_split

    lab = np.sort(train_test_split(np.arange(yp.size), train_size=n_lab,
                                   stratify=yp, random_state=seed)[0])
    rest = rng.permutation(np.setdiff1d(np.arange(yp.size), lab))
    return lab, [("pool", np.sort(rest[:n_unl]))]


def make(method: str, C: float, sigma: float, seed: int):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    from weakkernels import FRS3VM, TSGS3VM

    if method == "svc":
        return SVC(C=C, gamma=sigma), False
    if method == "nystroem":
        return make_pipeline(Nystroem(gamma=sigma, n_components=2000,
                                      random_state=seed), LinearSVC(C=C)), False
    kw = {"C": C, "sigma": sigma, "random_state": seed}
    cls = FRS3VM if method.startswith("frs3vm") else TSGS3VM
    for token in method.split("_")[1:]:
        if token == "c0":
            kw["C_star"] = 0.0
        elif token == "c01":  # a tenth of paper 004's rule (set in fit_one)
            kw["C_star"] = "tenth"
        elif token == "sq":
            kw["loss"] = "squared_hinge"
        elif token in ("rff", "ny"):
            kw["features"] = "fourier" if token == "rff" else "nystroem"
        else:
            raise SystemExit(f"unknown method token {token!r} in {method!r}")
    return cls(**kw), True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=["ijcnn1", "mnist"], required=True)
    ap.add_argument("--L", default=None, help="labeled sizes, comma-separated")
    ap.add_argument("--U", default=None, help="unlabeled sizes ('all': the rest)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--methods", default="svc,nystroem,tsgs3vm,tsgs3vm_c0")
    a = ap.parse_args(argv)
    Xp, yp, Xt, yt, sigma = load(a.dataset)
    Ls = [int(v) for v in (a.L or ("1000" if a.dataset == "mnist" else "2000")
                           ).split(",")]
    Us = [yp.size + (Xt.shape[0] if a.dataset == "mnist" else 0) - 1 if v == "all"
          else int(v) for v in (a.U or "all").split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{a.dataset}.csv"
    new = not path.exists()
    rows = []
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(["dataset", "method", "L", "U", "seed", "error",
                        "balanced_error", "features", "fit_cpu_s", "C", "sigma"])
        for seed in [int(s) for s in a.seeds.split(",")]:
            for L in Ls:
                for U in Us:
                    lab, parts = split(a.dataset, yp, L, U, seed, Xt.shape[0])
                    XU = np.vstack([(Xt if src == "test" else Xp)[i]
                                    for src, i in parts])
                    n_u = XU.shape[0]
                    for m in a.methods.split(","):
                        est, semi = make(m, a.C, sigma, seed)
                        if semi:
                            X = np.vstack([Xp[lab], XU])
                            y = np.r_[yp[lab], np.full(n_u, -1)]
                            if est.get_params()["C_star"] == "tenth":
                                est.set_params(C_star=0.1 * a.C * L / n_u)
                        else:
                            X, y = Xp[lab], yp[lab]
                        t0 = time.process_time()
                        est.fit(X, y)
                        cpu = time.process_time() - t0
                        p = est.predict(Xt)
                        err = float(np.mean(p != yt))
                        rec = [float(np.mean(p[yt == c] != c)) for c in np.unique(yt)]
                        D = getattr(est, "n_features_model_", "")
                        row = [a.dataset, m, L, n_u, seed, f"{err:.5f}",
                               f"{np.mean(rec):.5f}", D, f"{cpu:.1f}", a.C,
                               f"{sigma:.6g}"]
                        w.writerow(row)
                        fh.flush()
                        rows.append(row)
                        print(" ".join(map(str, row)), flush=True)
    print("\n| method | L | U | error % (median) | balanced % | CPU s |")
    print("|---|---|---|---|---|---|")
    keys = sorted({(r[1], r[2], r[3]) for r in rows}, key=lambda k: (k[1], k[2], k[0]))
    for m, L, U in keys:
        sel = [r for r in rows if (r[1], r[2], r[3]) == (m, L, U)]
        med = [float(np.median([float(r[i]) for r in sel])) for i in (5, 6, 8)]
        # a model at chance is flagged, never printed as a result
        flag = " **at chance**" if med[1] >= 0.45 else ""
        print(f"| {m} | {L} | {U} | {100 * med[0]:.2f}{flag} | {100 * med[1]:.2f} | "
              f"{med[2]:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
