"""Shared helpers of the CCCP benchmarks (paper 004): data loading and grids.

Protocol of Sec. 1.6.1 (after Chapelle & Zien 2005): every data set comes with
fixed splits into labeled and unlabeled points; the test error is measured on the
unlabeled points (transduction) and averaged over the splits; the reported number
is the *best mean test error over the hyper-parameter grid*, i.e. the
hyper-parameters are chosen on the test set, as in the paper's Table 1.3. This
is optimistic for every row alike and is stated with each table.
"""

from __future__ import annotations

import itertools
import json
import lzma
import os
import time
from pathlib import Path

import numpy as np
import scipy.io as sio

# the data mirror beside the clone (../shared/data/raw), or $WEAKKERNELS_DATA
DATA = Path(os.environ.get("WEAKKERNELS_DATA",
                           Path(__file__).resolve().parents[2] / "shared/data/raw"))

# RampSVM with this s never sees y f(x) < s, so beta stays 0 and Algorithm 1.2
# is the hinge SVM after its first convex solve (checked against SVC in tests).
HINGE_S = -1e12


def parse_param(text: str):
    """``key=value`` from the command line, the value read as JSON when it
    parses (numbers, lists), else kept as a string."""
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def load_mat(rel: str) -> dict:
    with lzma.open(DATA / rel) as fh:
        return sio.loadmat(fh)


def g50c():
    """g50c with its 10 official splits (MATLAB 1-based indices -> 0-based)."""
    d = load_mat("chapelle_lds/g50c.mat.xz")
    y = (d["y"].ravel() > 0).astype(int)  # {0, 1}: -1 is the unlabeled marker
    splits = [
        (d["idxLabs"][i].astype(int) - 1, d["idxUnls"][i].astype(int) - 1)
        for i in range(d["idxLabs"].shape[0])
    ]
    return d["X"].astype(float), y, splits


def sslbook(i: int, n_labeled: int = 100):
    """SSL-book benchmark set ``i`` with its official splits (12 of them)."""
    d = load_mat(f"sslbook/data{i}.mat.xz")
    s = load_mat(f"sslbook/splits{i}-labeled{n_labeled}.mat.xz")
    y_raw = d["y"].ravel()
    classes = np.unique(y_raw)
    y = np.searchsorted(classes, y_raw)
    splits = [
        (s["idxLabs"][k].astype(int) - 1, s["idxUnls"][k].astype(int) - 1)
        for k in range(s["idxLabs"].shape[0])
    ]
    return d["X"].astype(float), y, splits


def coil20(n_splits: int = 10, per_class: int = 2, seed: int = 0):
    """scikit-feature COIL-20 (substitute for Chapelle's coil20; MANIFEST note b).

    No official splits ship with this copy, so we draw ``n_splits`` random splits
    with ``per_class`` labeled images per object (20 x 2 = 40 labeled, the size
    of the paper's labeled set), the rest unlabeled.
    """
    d = load_mat("coil20_skfeature/COIL20.mat.xz")
    X = d["X"].astype(float)
    y = d["Y"].ravel().astype(int) - 1
    rng = np.random.default_rng(seed)
    splits = []
    for _ in range(n_splits):
        lab = np.sort(
            np.concatenate(
                [rng.permutation(np.flatnonzero(y == c))[:per_class]
                 for c in np.unique(y)]
            )
        )
        splits.append((lab, np.setdiff1d(np.arange(y.size), lab)))
    return X, y, splits


def median_sigma(X, n_sample=1000, seed=0) -> float:
    """``1 / median ||x - x'||^2`` over a sample of pairs (the grid's centre)."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], size=min(n_sample, X.shape[0]), replace=False)
    Z = X[idx]
    sq = np.sum(Z * Z, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * Z @ Z.T
    return float(1.0 / np.median(d2[np.triu_indices(len(idx), 1)]))


def semi_labels(y, lab, unl):
    ys = np.full(y.size, -1)
    ys[lab] = y[lab]
    return ys


def grid_search(make, X, y, splits, grid: dict, *, transductive: bool):
    """Mean test error (on the unlabeled points) over ``splits`` for each setting.

    ``make(**setting, n_labeled=L, n_unlabeled=U)`` returns an unfitted
    estimator. Transductive estimators fit on all points with ``y == -1`` on the
    unlabeled ones; supervised ones fit on the labeled points only. Returns a
    list of ``(setting, mean_error, std_error, median_fit_seconds)``.
    """
    keys = sorted(grid)
    results = []
    for values in itertools.product(*(grid[k] for k in keys)):
        setting = dict(zip(keys, values, strict=True))
        errs, times = [], []
        for lab, unl in splits:
            est = make(**setting, n_labeled=lab.size, n_unlabeled=unl.size)
            t0 = time.perf_counter()
            if transductive:
                est.fit(X, semi_labels(y, lab, unl))
            else:
                est.fit(X[lab], y[lab])
            times.append(time.perf_counter() - t0)
            errs.append(np.mean(est.predict(X[unl]) != y[unl]))
        results.append(
            (setting, float(np.mean(errs)), float(np.std(errs)),
             float(np.median(times)))
        )
    return results


def best(results):
    return min(results, key=lambda r: r[1])


def fmt_setting(setting: dict) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in setting.items())


def ssl_rows(X, y, splits, *, C_grid, sigma_grid, s_grid, cstar_factors,
             cccp_kw=None, svm_sigma_grid=None):
    """The rows of Table 1.3 for one data set.

    * SVM: hinge SVM on the labeled points (our SMO, via RampSVM with s -> -inf);
      grid over (C, sigma).
    * CCCP-TSVM, s = 0, U C* = L C: grid over (C, sigma).
    * CCCP-TSVM, U C* = L C: grid over (C, sigma, s).
    * CCCP-TSVM: grid over (C, sigma, s, C*), C* = factor * L C / U.

    Returns ``[(row name, best result tuple), ...]``.
    """
    from weakkernels import CCCPTSVM, RampSVM

    cccp_kw = cccp_kw or {}

    def svm(C, sigma, n_labeled, n_unlabeled):
        return RampSVM(C=C, sigma=sigma, s=HINGE_S)

    def tsvm(C, sigma, s, factor, n_labeled, n_unlabeled):
        return CCCPTSVM(C=C, sigma=sigma, s=s,
                        C_star=factor * C * n_labeled / n_unlabeled, **cccp_kw)

    base = {"C": C_grid, "sigma": sigma_grid}
    rows = []
    svm_grid = {"C": C_grid, "sigma": svm_sigma_grid or sigma_grid}
    res = grid_search(svm, X, y, splits, svm_grid, transductive=False)
    rows.append(("SVM (hinge, labeled only)", best(res)))
    res0 = grid_search(tsvm, X, y, splits, {**base, "s": [0.0], "factor": [1.0]},
                       transductive=True)
    rows.append(("CCCP-TSVM, s=0, UC*=LC", best(res0)))
    res_s = grid_search(tsvm, X, y, splits,
                        {**base, "s": [s for s in s_grid if s != 0.0],
                         "factor": [1.0]}, transductive=True)
    rows.append(("CCCP-TSVM, UC*=LC (s tuned)", best(res0 + res_s)))
    res_all = grid_search(tsvm, X, y, splits,
                          {**base, "s": s_grid,
                           "factor": [f for f in cstar_factors if f != 1.0]},
                          transductive=True)
    rows.append(("CCCP-TSVM (s and C* tuned)", best(res0 + res_s + res_all)))
    return rows


def print_table(title, rows, paper=None):
    paper = paper or {}
    print(f"\n{title}\n")
    print("| row | mean test error % (std) | paper % | best setting | "
          "median fit s |")
    print("|---|---|---|---|---|")
    for name, (setting, err, std, t) in rows:
        ref = paper.get(name, "-")
        print(f"| {name} | {100 * err:.2f} ({100 * std:.2f}) | {ref} | "
              f"{fmt_setting(setting)} | {t:.3f} |")
