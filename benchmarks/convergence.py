"""Why does TSGS3VM not reach the exact SVM? Convergence measurements.

TSGS3VM (paper 000 Algorithm 1) is doubly stochastic functional gradient descent
on ``R(f) = 1/2 ||f||^2 + C mean_L hinge + C* mean_U u`` with the update
``f <- (1 - gamma_t) f - gamma_t (stochastic loss gradient)`` and a fresh block of
random Fourier features per step. This script measures how far its iterates are
from the exact optimum and which of the suspected causes explain the gap.

Objective. With the unlabeled loss off (``C_star=0, balance="none", anneal=0``) the
problem is the convex bias-free SVM

    P(f) = 1/2 ||f||^2 + C_svc * sum_{i in L} max(0, 1 - y_i f(x_i))

(scikit-learn's *sum* units of C; the old TSGS3VM weighs the *mean* hinge, so it
is given ``C = C_svc * n_l``). For a TSGS3VM iterate ``f = sum_b phi_b . coef_b``
over ``T`` blocks, ``||f||^2`` is measured in the random-feature space:
``Psi = [phi_1 .. phi_T] / sqrt(T)`` approximates the kernel and ``f = Psi
(sqrt(T) coef)``, so ``||f||^2 := T ||coef||^2`` (an upper bound on the norm of f in
the RKHS of the approximate kernel, not the exact-kernel RKHS norm).

References, all on the same labeled points:
  * ``exact``   bias-free kernel SVM, the exact optimum ``P*`` of the same P
                (dual coordinate descent on the box-constrained dual, duality gap
                printed); every relative gap ``(P(f) - P*) / P*`` uses it;
  * ``svc``     scikit-learn ``SVC(C=C_svc, gamma=sigma)`` (with its unregularized
                intercept, so its objective can be lower than ``P*``);
  * ``rff-F``   the exact optimum of P over ``F`` fixed random Fourier features
                (same kernel), i.e. the random-feature approximation error alone;
  * ``cccp``    CCCP-TSVM (paper 004) for the semi-supervised part.

Parts (CSV column ``part``):
  1. ``sup``    supervised-only TSGS3VM curves: schedules (decay / constant x
                eta0), feature budgets, float32 vs float64; objective gap and
                test error vs iterations and vs seconds (callback time excluded);
                the uniformly and t-weighted averaged iterates are recorded from
                the callback (coefficients padded with zeros).
  2. ``semi``   the unlabeled loss on (C* = C_svc n_l / n_u per point, sum units):
                test error vs iterations, as printed (no balance, no annealing) and
                with the defaults (quantile balance, annealing 0.5).
  3. ``emul``   a NumPy re-implementation of the supervised Algorithm 1 (same
                update, own features) to switch single suspects on and off:
                labeled minibatch with replacement (as TSGS3VM) vs the full
                labeled set each step, and fresh features per step vs one fixed
                set of features (FRS3VM-like).
  4. ``final``  one fit per setting, final objective / test error / time only:
                used for an AFTER run of a deterministic solver
                (``--extra-kwargs '{"solver": "lbfgs"}'``).

Data: cod-rna and ijcnn1 min-max scaled to [0, 1], random split (seed 0) into 200
labeled / 2000 unlabeled / 2000 test; g50c official split 0 (50 labeled / 500
unlabeled = test). sigma = 1 / (d Var X) (scikit-learn's gamma="scale").

Usage (BEFORE, old code in a worktree)::

    NUMBA_NUM_THREADS=1 PYTHONPATH=<old worktree>/src \\
        .venv/bin/python benchmarks/convergence.py --out benchmarks/results/convergence

AFTER (new API; C in sum units, deterministic solver: final numbers only)::

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/convergence.py \\
        --out <dir> --extra-kwargs '{"solver": "lbfgs"}'

The data mirror is found next to the repository (``../shared/data/raw``) or via
the environment variable ``WEAKKERNELS_DATA``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
DEFAULT_OUT = HERE.parent / "results" / "convergence"


def mirror_dir() -> Path:
    env = os.environ.get("WEAKKERNELS_DATA")
    if env:
        return Path(env)
    return HERE.parents[1].parent / "shared/data/raw"


# ---------------------------------------------------------------- data ------
def load_problem(name: str, seed: int = 0):
    """Return dict with XL, yL (+-1), XU, Xte, yte (+-1), sigma."""
    from weakkernels.pipeline.datasets import load_raw

    raw = load_raw(name, mirror_dir())
    X = np.asarray(raw.X, dtype=np.float64)
    y = np.where(np.asarray(raw.y) > 0, 1.0, -1.0)
    if name == "g50c":
        L = np.asarray(raw.split_labeled[0])
        U = np.asarray(raw.split_unlabeled[0])
        Te = U  # transductive: the test points are the unlabeled ones
    else:
        lo, hi = X.min(0), X.max(0)
        X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
        p = np.random.default_rng(seed).permutation(len(X))
        L, U, Te = p[:200], p[200:2200], p[2200:4200]
    sigma = 1.0 / (X.shape[1] * X.var())
    return dict(
        name=name, XL=X[L], yL=y[L], XU=X[U], Xte=X[Te], yte=y[Te], sigma=float(sigma)
    )


def rbf(A, B, sigma):
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-sigma * np.maximum(sq, 0.0))


def hinge_sum(y, f):
    return float(np.maximum(0.0, 1.0 - y * f).sum())


# ------------------------------------------------------- exact solvers ------
def _dual_cd_py(Q, C, tol, max_epochs):
    n = Q.shape[0]
    a = np.zeros(n)
    g = -np.ones(n)  # gradient of 1/2 a'Qa - 1'a
    for _ in range(max_epochs):
        viol = 0.0
        for i in range(n):
            gi = g[i]
            pg = min(gi, 0.0) if a[i] <= 0 else (max(gi, 0.0) if a[i] >= C else gi)
            viol = max(viol, abs(pg))
            if pg != 0.0:
                new = min(max(a[i] - gi / Q[i, i], 0.0), C)
                d = new - a[i]
                if d != 0.0:
                    a[i] = new
                    g += d * Q[:, i]
        if viol < tol:
            break
    return a


try:  # numba makes the dual CD ~100x faster; the fallback is plain Python
    from numba import njit

    _dual_cd = njit(cache=False)(_dual_cd_py)
except Exception:  # pragma: no cover
    _dual_cd = _dual_cd_py


def exact_biasfree_svm(K, y, C, tol=1e-9):
    """Bias-free SVM: min 1/2 a'Ka + C sum hinge(y K a). Returns (a, P, gap)."""
    Q = K * np.outer(y, y)
    alpha = _dual_cd(Q, float(C), tol, 100000)
    a = alpha * y
    quad = float(a @ K @ a)
    P = 0.5 * quad + C * hinge_sum(y, K @ a)
    D = float(alpha.sum()) - 0.5 * quad
    return a, P, (P - D) / P


def rff_features(X, W, phase):
    """sqrt(2/F) cos(X W + phase): the random Fourier features of the RBF kernel."""
    return np.sqrt(2.0 / W.shape[1]) * np.cos(X @ W + phase)


def draw_rff(d, F, sigma, rng):
    W = rng.normal(0.0, math.sqrt(2.0 * sigma), size=(d, F))
    return W, rng.uniform(0.0, 2 * math.pi, size=F)


def references(pb, C_svc, rff_sizes, log):
    """Exact bias-free optimum, SVC, and exact optima on F fixed random features."""
    from sklearn.svm import SVC

    XL, yL, Xte, yte, sigma = pb["XL"], pb["yL"], pb["Xte"], pb["yte"], pb["sigma"]
    K = rbf(XL, XL, sigma)
    Kte = rbf(Xte, XL, sigma)
    refs = {}
    t = time.perf_counter()
    a, P, gap = exact_biasfree_svm(K, yL, C_svc)
    refs["exact"] = dict(
        objective=P,
        test_err=float(np.mean(np.sign(Kte @ a) != yte)),
        seconds=time.perf_counter() - t,
        note=f"duality gap {gap:.1e}",
    )
    t = time.perf_counter()
    svc = SVC(C=C_svc, gamma=sigma).fit(XL, yL)
    sec = time.perf_counter() - t
    a_s = np.zeros(len(yL))
    a_s[svc.support_] = svc.dual_coef_[0]
    b = float(svc.intercept_[0])
    P_svc = 0.5 * float(a_s @ K @ a_s) + C_svc * hinge_sum(yL, K @ a_s + b)
    refs["svc"] = dict(
        objective=P_svc,
        test_err=float(np.mean(svc.predict(Xte) != yte)),
        seconds=sec,
        note=f"intercept {b:.3f}",
    )
    rng = np.random.default_rng(12345)
    for F in rff_sizes:
        W, ph = draw_rff(XL.shape[1], F, sigma, rng)
        PsiL = rff_features(XL, W, ph)
        t = time.perf_counter()
        aF, PF, gapF = exact_biasfree_svm(PsiL @ PsiL.T, yL, C_svc)
        w = PsiL.T @ aF
        fte = np.concatenate(
            [rff_features(Xte[i : i + 500], W, ph) @ w for i in range(0, len(Xte), 500)]
        )
        refs[f"rff-{F}"] = dict(
            objective=PF,
            test_err=float(np.mean(np.sign(fte) != yte)),
            seconds=time.perf_counter() - t,
            note=f"duality gap {gapF:.1e}",
        )
    for k, v in refs.items():
        log(
            f"  ref {k:10s} P={v['objective']:.4f} test_err={v['test_err']:.4f} "
            f"({v['note']}, {v['seconds']:.2f}s)"
        )
    return refs


# ------------------------------------------------- TSGS3VM measurements ------
def feature_norm_sq(est):
    """||f||^2 in the random-feature space: T ||coef||^2 over T blocks."""
    coef = np.asarray(est.coef_, dtype=np.float64)
    T = getattr(est, "n_blocks_", None)
    if T is None:
        return float("nan")
    return float(T) * float((coef * coef).sum())


def checkpoints(T, n=32, extra=()):
    pts = set(np.unique(np.round(np.logspace(0, math.log10(T), n)).astype(int)))
    pts.update(e for e in extra if 1 <= e <= T)
    pts.add(T)
    return pts


class Recorder:
    """Callback: objective / test error of the last and averaged iterates at
    log-spaced checkpoints; its own time is excluded from the seconds."""

    def __init__(self, pb, C_svc, T, average=True, extra_pts=(), every=1):
        self.pb, self.C_svc, self.average = pb, C_svc, average
        self.pts = checkpoints(T, extra=extra_pts)
        self.every = every
        self.rows = []
        self.t0 = None
        self.cb_time = 0.0
        self.sum_u = None  # sum of coefficient vectors (uniform average)
        self.sum_w = None  # sum of t * coefficients (t-weighted average)
        self.wsum = 0.0
        self.count = 0

    def _eval(self, est):
        pb = self.pb
        fL = np.asarray(est.decision_function(pb["XL"]), dtype=np.float64)
        fte = np.asarray(est.decision_function(pb["Xte"]), dtype=np.float64)
        P = 0.5 * feature_norm_sq(est) + self.C_svc * hinge_sum(pb["yL"], fL)
        return P, float(np.mean(np.where(fte > 0, 1.0, -1.0) != pb["yte"]))

    def __call__(self, est, n_iter):
        t_in = time.perf_counter()
        secs = t_in - self.t0 - self.cb_time
        c = np.asarray(est.coef_, dtype=np.float64)
        if self.average:
            F = c.shape[1]
            if self.sum_u is None or self.sum_u.shape[1] < F:
                def pad(s, F=F, c=c):
                    # grow a running sum to the current feature count
                    if s is None:
                        return c * 0
                    return np.pad(s, ((0, 0), (0, F - s.shape[1])))

                self.sum_u, self.sum_w = pad(self.sum_u), pad(self.sum_w)
            self.sum_u[:, :F] += c
            self.sum_w[:, :F] += n_iter * c
            self.wsum += n_iter
            self.count += 1
        if n_iter in self.pts:
            P, err = self._eval(est)
            row = dict(iteration=n_iter, seconds=secs, objective=P, test_err=err)
            if self.average:
                saved = est.coef_
                for tag, s, z in (
                    ("avg", self.sum_u, self.count),
                    ("wavg", self.sum_w, self.wsum),
                ):
                    est.coef_ = (s / z).astype(saved.dtype)
                    row[f"objective_{tag}"], row[f"test_err_{tag}"] = self._eval(est)
                est.coef_ = saved
            self.rows.append(row)
        self.cb_time += time.perf_counter() - t_in


def tsgs_kwargs(C_svc, n_l, n_u, units, semi):
    """C, C_star in the estimator's units (old code: mean units)."""
    if units == "mean":
        C = C_svc * n_l
        C_star = C_svc * n_l if semi else 0.0  # per point C_svc n_l/n_u, times n_u
    else:
        C = C_svc
        C_star = C_svc * n_l / n_u if semi else 0.0
    return dict(C=C, C_star=C_star)


def fit_tsgs(pb, kw, recorder=None):
    from weakkernels import TSGS3VM

    X = np.vstack([pb["XL"], pb["XU"]])
    y = np.concatenate([(pb["yL"] > 0).astype(int), -np.ones(len(pb["XU"]), int)])
    if recorder is not None:
        kw = dict(kw, callback=recorder, callback_every=recorder.every)
    est = TSGS3VM(**kw)
    t = time.perf_counter()
    if recorder is not None:
        recorder.t0 = t
    est.fit(X, y)
    total = time.perf_counter() - t
    return est, total - (recorder.cb_time if recorder else 0.0)


# ------------------------------------------------------------ emulator ------
def emulate(
    pb,
    C_svc,
    T,
    *,
    sampling="replace",
    features="fresh",
    F_fixed=1024,
    B=32,
    batch=256,
    seed=0,
    pts=(),
):
    """NumPy Algorithm 1, supervised only (decay step 1/(1+t), i.e. eta0 = 1).

    f_{t+1} = (1 - g_t) f_t - g_t * sum_i G_i phi(x_i) phi(.),
    G_i = C_old / m * hinge'(y_i f(x_i)) y_i  (C_old = C_svc n_l, mean units).
    ``sampling``: "replace" (m = min(batch, n_l) labeled draws with replacement,
    as TSGS3VM) or "full" (all labeled points, the exact labeled gradient).
    ``features``: "fresh" (a new block of B features per step; ||f||^2 = t
    ||c||^2), "fixed" (one set of F_fixed features, every step updates all) or
    "kernel" (no random features: kernel SGD on f = sum_i alpha_i k(x_i, .), the
    exact RKHS norm; isolates the feature sampling).
    Records last and uniformly averaged iterate."""
    XL, yL, Xte, yte, sigma = pb["XL"], pb["yL"], pb["Xte"], pb["yte"], pb["sigma"]
    n_l, d = XL.shape
    C_old = C_svc * n_l
    rng = np.random.default_rng(seed)
    frng = np.random.default_rng(seed + 1000)
    m = min(batch, n_l)
    if features == "kernel":
        K, Kte = rbf(XL, XL, sigma), rbf(Xte, XL, sigma)
        alpha = np.zeros(n_l)
        a_sum = np.zeros(n_l)
    elif features == "fixed":
        W, ph = draw_rff(d, F_fixed, sigma, frng)
        PL, Pte = rff_features(XL, W, ph), rff_features(Xte, W, ph)
        w = np.zeros(F_fixed)
        w_sum = np.zeros(F_fixed)
    else:
        coefs = np.zeros((T, B))  # per-block coefficients, explicit
        c_sum = np.zeros((T, B))  # running sum of the iterates (padded with 0)
    fL = np.zeros(n_l)
    fte = np.zeros(len(Xte))
    fL_sum = np.zeros(n_l)
    fte_sum = np.zeros(len(Xte))
    rows = []
    t0 = time.perf_counter()
    for t in range(T):
        g = 1.0 / (1.0 + t)
        if sampling == "full":
            idx = np.arange(n_l)
        else:
            idx = rng.integers(0, n_l, size=m)
        yb = yL[idx]
        G = (C_old / len(idx)) * np.where(yb * fL[idx] < 1.0, -1.0, 0.0) * yb
        if features == "kernel":
            alpha *= 1.0 - g
            np.add.at(alpha, idx, -g * G)
            fL = K @ alpha
            fte = Kte @ alpha
            a_sum += alpha
        elif features == "fixed":
            step = PL[idx].T @ G
            w *= 1.0 - g
            w -= g * step
            fL = PL @ w
            fte = Pte @ w
            w_sum += w
        else:
            Wb, phb = draw_rff(d, B, sigma, frng)
            PhiL = rff_features(XL, Wb, phb)
            cb = -g * (PhiL[idx].T @ G)
            coefs[:t] *= 1.0 - g
            coefs[t] = cb
            c_sum[: t + 1] += coefs[: t + 1]
            fL = (1.0 - g) * fL + PhiL @ cb
            fte = (1.0 - g) * fte + rff_features(Xte, Wb, phb) @ cb
        fL_sum += fL
        fte_sum += fte
        n = t + 1
        if n in pts:
            if features == "kernel":
                nrm = float(alpha @ K @ alpha)
                nrm_avg = float((a_sum / n) @ K @ (a_sum / n))
            elif features == "fixed":
                nrm, nrm_avg = float(w @ w), float((w_sum / n) @ (w_sum / n))
            else:
                nrm = n * float((coefs[:n] ** 2).sum())
                nrm_avg = n * float(((c_sum[:n] / n) ** 2).sum())
            rows.append(
                dict(
                    iteration=n,
                    seconds=time.perf_counter() - t0,
                    objective=0.5 * nrm + C_svc * hinge_sum(yL, fL),
                    test_err=float(np.mean(np.sign(fte) != yte)),
                    objective_avg=0.5 * nrm_avg + C_svc * hinge_sum(yL, fL_sum / n),
                    test_err_avg=float(np.mean(np.sign(fte_sum / n) != yte)),
                )
            )
    return rows


# --------------------------------------------------------------- output ------
# The per-iteration columns: the iterate's objective, relative gap and test
# error, then the same for its average and its weighted average.
TRACE = ["iteration", "seconds",
         *(f"{m}{avg}" for avg in ("", "_avg", "_wavg")
           for m in ("objective", "rel_gap", "test_err"))]
FIELDS = [
    "part",
    "dataset",
    "C_svc",
    "run",
    "schedule",
    "eta0",
    "max_features",
    "dtype",
    "balance",
    "anneal",
    "extra",
    *TRACE,
    "note",
]


def plot_all(rows, out, datasets, Cs, one_pass):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def sel(**kw):
        return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]

    def series(run_rows, key, x="iteration"):
        pts = [
            (r[x], r[key])
            for r in run_rows
            if r.get(key) not in (None, "") and r.get(x) not in (None, "")
        ]
        pts.sort()
        return [p[0] for p in pts], [p[1] for p in pts]

    def grid(title):
        fig, axes = plt.subplots(
            len(Cs),
            len(datasets),
            squeeze=False,
            figsize=(3.6 * len(datasets), 2.7 * len(Cs)),
        )
        fig.suptitle(title, fontsize=9)
        panels = []  # one per data set (column) and C (row), titled
        for j, ds in enumerate(datasets):
            for i, C in enumerate(Cs):
                axes[i, j].set_title(f"{ds}, C={C:g}", fontsize=8)
                panels.append((axes[i, j], ds, C))
        return fig, axes, panels

    def refline(ax, ds, C, key, name, style):
        r = sel(part="ref", dataset=ds, C_svc=C, run=name)
        if r and r[0].get(key) not in (None, ""):
            ax.axhline(r[0][key], ls=style, color="k", lw=0.9, label=name)

    def finish(fig, axes, path, ylog, xlabel="iteration", ylabel=""):
        for ax in axes.flat:
            ax.set_xscale("log")
            if ylog:
                ax.set_yscale("log")
            ax.tick_params(labelsize=7)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.grid(alpha=0.3)
        h, lab = axes.flat[0].get_legend_handles_labels()
        for ax in axes.flat[1:]:
            for hh, ll in zip(*ax.get_legend_handles_labels(), strict=True):
                if ll not in lab:
                    h.append(hh)
                    lab.append(ll)
        fig.legend(h, lab, loc="lower center", ncol=min(6, len(lab)), fontsize=6.5)
        fig.tight_layout(rect=(0, 0.07 + 0.015 * (len(lab) // 6), 1, 0.96))
        fig.savefig(path, dpi=72)
        plt.close(fig)

    sup_runs = sorted(
        {r["run"] for r in rows if r["part"] == "sup"},
        key=lambda s: (not s.startswith("decay"), s),
    )
    sched = [
        r
        for r in sup_runs
        if r.startswith(("decay", "constant")) and "mf" not in r and "f64" not in r
    ]
    budget = [r for r in sup_runs if r not in sched]
    colors = {}
    cmap = plt.get_cmap("tab10")
    for i, r in enumerate(sched + budget):
        colors[r] = cmap(i % 10)

    for key, fname, ylog, ylab, refs in (
        ("rel_gap", "convergence_gap.png", True, "(P(f) - P*) / P*", ()),
        (
            "test_err",
            "convergence_error.png",
            False,
            "test error",
            (("svc", "--"), ("exact", ":")),
        ),
    ):
        for xkey, suffix in (("iteration", ""), ("seconds", "_seconds")):
            fig, axes, panels = grid(
                f"TSGS3VM supervised-only (C*=0, no balance): {key} vs "
                f"{xkey}; dashed black = averaged iterate of decay eta0=1"
            )
            for ax, ds, C in panels:
                for run in sched + budget:
                    if xkey == "iteration" and run in budget:
                        continue
                    if xkey == "seconds" and run not in budget + ["decay-1"]:
                        continue
                    rr = sel(part="sup", dataset=ds, C_svc=C, run=run)
                    xs, ys = series(rr, key, xkey)
                    if xs:
                        ax.plot(xs, ys, color=colors[run], lw=1, label=run)
                    if run == "decay-1" and xkey == "iteration":
                        xs, ys = series(rr, key + "_avg", xkey)
                        ax.plot(xs, ys, "k--", lw=0.9, label="decay-1 averaged")
                for name, style in refs:
                    refline(ax, ds, C, key, name, style)
                if key == "test_err":
                    refline(ax, ds, C, key, f"rff-{_largest_rff(rows)}", "-.")
                if xkey == "iteration":
                    ax.axvline(one_pass[ds], color="grey", lw=0.7)
            finish(
                fig,
                axes,
                out / fname.replace(".png", f"{suffix}.png"),
                ylog,
                xlabel=xkey,
                ylabel=ylab,
            )

    # semi-supervised
    semi_runs = sorted({r["run"] for r in rows if r["part"] == "semi"})
    if semi_runs:
        fig, axes, panels = grid(
            "unlabeled loss on (C* = C n_l / n_u): test error vs iteration"
        )
        for ax, ds, C in panels:
            for k, run in enumerate(semi_runs):
                xs, ys = series(
                    sel(part="semi", dataset=ds, C_svc=C, run=run), "test_err"
                )
                if xs:
                    ax.plot(xs, ys, color=cmap(k), lw=1, label=run)
            refline(ax, ds, C, "test_err", "svc", "--")
            refline(ax, ds, C, "test_err", "cccp", "-")
            ax.axvline(one_pass[ds], color="grey", lw=0.7)
        finish(fig, axes, out / "convergence_semi.png", False, ylabel="test error")

    emul_runs = sorted({r["run"] for r in rows if r["part"] == "emul"})
    if emul_runs:
        fig, axes, panels = grid(
            "NumPy Algorithm 1 (supervised, decay eta0=1): suspects "
            "switched one at a time; dashed = averaged iterate"
        )
        for ax, ds, C in panels:
            for k, run in enumerate(emul_runs):
                rr = sel(part="emul", dataset=ds, C_svc=C, run=run)
                xs, ys = series(rr, "rel_gap")
                if xs:
                    ax.plot(xs, ys, color=cmap(k), lw=1, label=run)
                xs, ys = series(rr, "rel_gap_avg")
                if xs:
                    ax.plot(xs, ys, "--", color=cmap(k), lw=0.8)
        finish(
            fig, axes, out / "convergence_emulator.png", True, ylabel="(P(f) - P*) / P*"
        )


def _largest_rff(rows):
    sizes = [
        int(r["run"][4:])
        for r in rows
        if r["part"] == "ref" and str(r["run"]).startswith("rff-")
    ]
    return max(sizes) if sizes else 0


# -------------------------------------------------------------- summary ------
NUMERIC = {"C_svc", "eta0", "max_features", *TRACE}


def read_csv(path):
    rows = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            row = {}
            for k, v in r.items():
                if k in NUMERIC and v not in ("", None):
                    row[k] = (
                        int(float(v))
                        if k in ("iteration", "max_features")
                        else float(v)
                    )
                elif v != "":
                    row[k] = v
            rows.append(row)
    return rows


def summarize(rows):
    """Markdown tables of the final numbers (printed; SECTION.md quotes them)."""
    out = []
    pr = out.append
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    Cs = sorted({r["C_svc"] for r in rows})

    def get(part, ds, C, run):
        return [
            r
            for r in rows
            if r["part"] == part
            and r["dataset"] == ds
            and r["C_svc"] == C
            and r["run"] == run
        ]

    def at(rr, it=None):
        rr = [r for r in rr if r.get("iteration") is not None]
        if not rr:
            return {}
        if it is None:
            return max(rr, key=lambda r: r["iteration"])
        c = [r for r in rr if r["iteration"] == it]
        return c[0] if c else {}

    def g(x, key):
        v = x.get(key)
        if v is None:
            return "-"
        return f"{100 * v:.1f}%" if key.startswith("test_err") else f"{v:.3g}"

    big = _largest_rff(rows)
    pr("### References (exact optima on the labeled points)\n")
    pr(
        "| data | C | P* (bias-free exact) | test err exact | SVC: P, err | "
        + " | ".join(f"rff-{F}: gap, err" for F in (256, 1024, big))
        + " | CCCP-TSVM err |"
    )
    pr("|---|---|---|---|---|" + "---|" * 3 + "---|")
    for ds in datasets:
        for C in Cs:
            e = get("ref", ds, C, "exact")
            if not e:
                continue
            e = e[0]
            sv = get("ref", ds, C, "svc")[0]
            cells = []
            for F in (256, 1024, big):
                rf = get("ref", ds, C, f"rff-{F}")
                cells.append(
                    f"{g(rf[0], 'rel_gap')}, {g(rf[0], 'test_err')}" if rf else "-"
                )
            cc = get("ref", ds, C, "cccp")
            pr(
                f"| {ds} | {C:g} | {e['objective']:.2f} | {g(e, 'test_err')} | "
                f"{sv['objective']:.2f}, {g(sv, 'test_err')} | "
                + " | ".join(cells)
                + f" | {g(cc[0], 'test_err') if cc else '-'} |"
            )
    for part, title in (
        (
            "sup",
            "Supervised-only TSGS3VM (C* = 0, no balance): "
            "relative objective gap / test error",
        ),
        (
            "emul",
            "NumPy Algorithm 1, decay eta0 = 1 (suspects one at "
            "a time): relative objective gap / test error",
        ),
    ):
        runs = list(dict.fromkeys(r["run"] for r in rows if r["part"] == part))
        if not runs:
            continue
        its = sorted({r["iteration"] for r in rows if r["part"] == part})
        T = its[-1]
        pr(f"\n### {title}\n")
        pr(
            f"Columns: at iteration 128 | at iteration {T} | averaged iterate at {T} "
            "(uniform; t-weighted in brackets where recorded) | seconds (callback "
            "excluded).\n"
        )
        for ds in datasets:
            pr(f"\n{ds}:\n")
            pr(
                "| run | C | gap@128 | err@128 | gap@T | err@T | avg gap@T | avg err@T | s |"  # noqa: E501 (a table row)
            )
            pr("|---|---|---|---|---|---|---|---|---|")
            for run in runs:
                for C in Cs:
                    rr = get(part, ds, C, run)
                    if not rr:
                        continue
                    a, z = at(rr, 128), at(rr)
                    avg = g(z, "rel_gap_avg")
                    avge = g(z, "test_err_avg")
                    if z.get("rel_gap_wavg") is not None:
                        avg += f" [{g(z, 'rel_gap_wavg')}]"
                        avge += f" [{g(z, 'test_err_wavg')}]"
                    pr(
                        f"| {run} | {C:g} | {g(a, 'rel_gap')} | {g(a, 'test_err')} | "
                        f"{g(z, 'rel_gap')} | {g(z, 'test_err')} | {avg} | {avge} | "
                        f"{z.get('seconds', float('nan')):.2f} |"
                    )
    bal = [r for r in rows if r["part"] == "sup-bal"]
    if bal:
        pr(
            "\n### Supervised, balance='quantile' (C* = 0): gap to the SVC objective "
            "(with intercept) and test error at the last iteration\n"
        )
        pr("| data | C | gap to SVC objective | err | (no balance: err) |")
        pr("|---|---|---|---|---|")
        for ds in datasets:
            for C in Cs:
                rr = [r for r in bal if r["dataset"] == ds and r["C_svc"] == C]
                if rr:
                    z = at(rr)
                    nb = at(get("sup", ds, C, "decay-1"))
                    pr(
                        f"| {ds} | {C:g} | {g(z, 'rel_gap')} | {g(z, 'test_err')} | "
                        f"{g(nb, 'test_err')} |"
                    )
    semi = list(dict.fromkeys(r["run"] for r in rows if r["part"] == "semi"))
    if semi:
        pr("\n### Unlabeled loss on (C* = C n_l / n_u): test error\n")
        its = sorted({r["iteration"] for r in rows if r["part"] == "semi"})
        pr(
            "Separate fits with max_iter = one pass (ceil(n_u / 256): 8 on cod-rna and "
            "ijcnn1, 2 on g50c; the paper's protocol) and 128, and the end of the "
            f"{its[-1]}-iteration curve.\n"
        )
        pr(
            f"| data | C | run | err, one pass | err, T=128 | err, T={its[-1]} | SVC | CCCP-TSVM |"  # noqa: E501 (a table row)
        )
        pr("|---|---|---|---|---|---|---|---|")
        for ds in datasets:
            for C in Cs:
                sv = get("ref", ds, C, "svc")
                cc = get("ref", ds, C, "cccp")
                for run in semi:
                    rr = get("semi", ds, C, run)
                    if not rr:
                        continue
                    short = sorted(
                        get("semi-T", ds, C, run), key=lambda r: r["iteration"]
                    )
                    e1 = g(short[0], "test_err") if short else "-"
                    e128 = g(short[-1], "test_err") if short else "-"
                    pr(
                        f"| {ds} | {C:g} | {run} | {e1} | {e128} | "
                        f"{g(at(rr), 'test_err')} | {g(sv[0], 'test_err') if sv else '-'} | "  # noqa: E501 (a table row)
                        f"{g(cc[0], 'test_err') if cc else '-'} |"
                    )
    fin = [r for r in rows if str(r.get("part", "")).startswith("final")]
    if fin:
        pr("\n### Final numbers (one fit per setting)\n")
        pr("| part | data | C | run | gap | test err | s | note |")
        pr("|---|---|---|---|---|---|---|---|")
        for r in fin:
            pr(
                f"| {r['part']} | {r['dataset']} | {r['C_svc']:g} | {r['run']} | "
                f"{g(r, 'rel_gap')} | {g(r, 'test_err')} | "
                f"{r.get('seconds', float('nan')):.2f} | {r.get('note', '')} |"
            )
    return "\n".join(out)


# ----------------------------------------------------------------- main ------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=["cod-rna", "ijcnn1", "g50c"])
    ap.add_argument(
        "--C",
        type=float,
        nargs="+",
        default=[1.0, 10.0],
        help="C_svc, scikit-learn SVC units (weight of the hinge SUM)",
    )
    ap.add_argument(
        "--max-iter", type=int, default=1000, help="iterations of the supervised curves"
    )
    ap.add_argument(
        "--semi-iter",
        type=int,
        default=500,
        help="iterations of the semi-supervised curves",
    )
    ap.add_argument(
        "--extra-kwargs",
        default="{}",
        help="JSON dict added to every TSGS3VM(...) call (AFTER runs)",
    )
    ap.add_argument(
        "--c-units",
        choices=["auto", "mean", "sum"],
        default="auto",
        help="units of the estimator's C: 'mean' (old code, C = C_svc "
        "n_l), 'sum' (scikit-learn); auto = sum iff 'solver' is "
        "in --extra-kwargs",
    )
    ap.add_argument(
        "--mode",
        choices=["auto", "curves", "final"],
        default="auto",
        help="auto: 'final' (one fit per setting, no callback) for "
        "solver=lbfgs, else per-iteration curves",
    )
    ap.add_argument("--quick", action="store_true", help="smoke test: tiny sizes")
    ap.add_argument(
        "--from-csv",
        type=Path,
        default=None,
        help="only redo the plots and the summary from a CSV",
    )
    args = ap.parse_args()
    if args.from_csv is not None:
        rows = read_csv(args.from_csv)
        ds = list(dict.fromkeys(r["dataset"] for r in rows))
        Cs = sorted({r["C_svc"] for r in rows})
        if any(r["part"] == "sup" for r in rows):
            one_pass = {d: (2 if d == "g50c" else 8) for d in ds}  # ceil(n_u / 256)
            args.out.mkdir(parents=True, exist_ok=True)
            plot_all(rows, args.out, ds, Cs, one_pass)
        print(summarize(rows))
        return

    print(
        "command:",
        " ".join(
            [
                f"{k}={shlex.quote(os.environ[k])}"
                for k in ("NUMBA_NUM_THREADS", "PYTHONPATH")
                if k in os.environ
            ]
            + [shlex.quote(a) for a in [sys.executable] + sys.argv]
        ),
        flush=True,
    )
    import weakkernels

    print("weakkernels from:", Path(weakkernels.__file__).parent, flush=True)
    extra = json.loads(args.extra_kwargs)
    units = (
        args.c_units
        if args.c_units != "auto"
        else ("sum" if "solver" in extra else "mean")
    )
    mode = (
        args.mode
        if args.mode != "auto"
        else ("final" if extra.get("solver") == "lbfgs" else "curves")
    )
    if args.quick:
        args.datasets, args.C = args.datasets[:1], args.C[:1]
        args.max_iter, args.semi_iter = 60, 40
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"C units: {units}; mode: {mode}; extra kwargs: {extra}", flush=True)
    T = args.max_iter
    rows = []
    t_all = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_all:6.1f}s] {msg}", flush=True)

    def add(base, recs, P_star):
        for r in recs:
            row = dict(base, **r)
            for tag in ("", "_avg", "_wavg"):
                if row.get("objective" + tag) is not None:
                    row["rel_gap" + tag] = (row["objective" + tag] - P_star) / P_star
            rows.append(row)

    one_pass = {}
    sup_configs = [  # run name, kwargs (on top of the supervised-only settings)
        ("decay-1", dict(learning_rate="decay", eta0=1.0)),
        ("decay-10", dict(learning_rate="decay", eta0=10.0)),
        ("decay-100", dict(learning_rate="decay", eta0=100.0)),
        ("constant-1", dict(learning_rate="constant", eta0=1.0)),
        ("constant-10", dict(learning_rate="constant", eta0=10.0)),
        ("constant-100", dict(learning_rate="constant", eta0=100.0)),
        ("decay-1-mf256", dict(learning_rate="decay", eta0=1.0, max_features=256)),
        ("decay-1-mf1024", dict(learning_rate="decay", eta0=1.0, max_features=1024)),
    ]
    # float64 once (cod-rna, largest C): its NumPy cosine path is ~5x slower
    f64_config = ("decay-1-f64", dict(learning_rate="decay", eta0=1.0, dtype="float64"))
    if args.quick:
        sup_configs = sup_configs[:1] + sup_configs[6:7]
    semi_configs = [
        ("as-printed", dict(balance="none", anneal=0.0)),
        ("default (quantile, anneal)", dict(balance="quantile", anneal=0.5)),
        ("as-printed decay-10", dict(balance="none", anneal=0.0, eta0=10.0)),
    ]
    rff_sizes = [256, 1024, 32 * T]
    for ds in args.datasets:
        pb = load_problem(ds)
        n_l, n_u = len(pb["yL"]), len(pb["XU"])
        one_pass[ds] = math.ceil(n_u / 256)
        log(
            f"{ds}: n_l={n_l} n_u={n_u} n_test={len(pb['yte'])} d={pb['XL'].shape[1]} "
            f"sigma={pb['sigma']:.4g} positives(L)={int((pb['yL'] > 0).sum())}"
        )
        for C in args.C:
            log(f"{ds} C_svc={C:g}")
            refs = references(pb, C, rff_sizes, log)
            P_star = refs["exact"]["objective"]
            for name, v in refs.items():
                rows.append(
                    dict(
                        part="ref",
                        dataset=ds,
                        C_svc=C,
                        run=name,
                        objective=v["objective"],
                        test_err=v["test_err"],
                        seconds=v["seconds"],
                        note=v["note"],
                        rel_gap=(v["objective"] - P_star) / P_star,
                    )
                )
            base_sup = dict(
                sigma=pb["sigma"],
                balance="none",
                anneal=0.0,
                random_state=0,
                max_iter=T,
                **tsgs_kwargs(C, n_l, n_u, units, semi=False),
            )
            base_semi = dict(
                sigma=pb["sigma"],
                random_state=0,
                max_iter=args.semi_iter,
                **tsgs_kwargs(C, n_l, n_u, units, semi=True),
            )
            if mode == "final":
                for name, kw, part in (
                    ("sup", base_sup, "final-sup"),
                    ("semi default", base_semi, "final-semi"),
                    (
                        "semi as-printed",
                        dict(base_semi, balance="none", anneal=0.0),
                        "final-semi",
                    ),
                ):
                    kw = dict(kw, **extra)
                    kw.pop("max_iter", None)  # a deterministic solver sets its own
                    row = dict(part=part, dataset=ds, C_svc=C, run=name)
                    try:
                        est, secs = fit_tsgs(pb, kw)
                        fL = np.asarray(est.decision_function(pb["XL"]), float)
                        fte = np.asarray(est.decision_function(pb["Xte"]), float)
                        P = 0.5 * feature_norm_sq(est) + C * hinge_sum(pb["yL"], fL)
                        err = float(np.mean(np.where(fte > 0, 1, -1) != pb["yte"]))
                        obj = P if part == "final-sup" else None
                        rows.append(
                            dict(
                                row,
                                seconds=secs,
                                objective=obj,
                                test_err=err,
                                extra=json.dumps(extra),
                                rel_gap=None
                                if obj is None
                                else (obj - P_star) / P_star,
                                note=f"estimator objective_={getattr(est, 'objective_', 'n/a')}",  # noqa: E501 (a table row)
                            )
                        )
                        log(
                            f"  final {name:18s} P={P:.4f} gap={(P - P_star) / P_star:.3e} "  # noqa: E501 (a table row)
                            f"err={err:.4f} {secs:.2f}s"
                        )
                    except Exception as exc:  # keep going; the CSV says what failed
                        rows.append(dict(row, note=f"FAILED: {exc!r}"))
                        log(f"  final {name} FAILED: {exc!r}")
                continue
            configs = list(sup_configs)
            if ds == args.datasets[0] and C == max(args.C) and not args.quick:
                configs.append(f64_config)
            for name, kw in configs:
                kw = dict(base_sup, **kw, **extra)
                rec = Recorder(
                    pb,
                    C,
                    T,
                    average=name in ("decay-1", "decay-10"),
                    extra_pts=(one_pass[ds], 128),
                )
                try:
                    est, secs = fit_tsgs(pb, kw, rec)
                except Exception as exc:
                    rows.append(
                        dict(
                            part="sup",
                            dataset=ds,
                            C_svc=C,
                            run=name,
                            note=f"FAILED: {exc!r}",
                        )
                    )
                    log(f"  sup {name} FAILED: {exc!r}")
                    continue
                base = dict(
                    part="sup",
                    dataset=ds,
                    C_svc=C,
                    run=name,
                    schedule=kw.get("learning_rate"),
                    eta0=kw.get("eta0"),
                    max_features=kw.get("max_features"),
                    dtype=kw.get("dtype", "float32"),
                    balance="none",
                    anneal=0,
                    extra=json.dumps(extra),
                )
                add(base, rec.rows, P_star)
                last = rec.rows[-1]
                log(
                    f"  sup {name:15s} {secs:6.2f}s gap={(last['objective'] - P_star) / P_star:9.3e} "  # noqa: E501 (a table row)
                    f"err={last['test_err']:.4f}"
                    + (
                        f" | avg gap={(last['objective_avg'] - P_star) / P_star:9.3e} "
                        f"err={last['test_err_avg']:.4f}"
                        if "objective_avg" in last
                        else ""
                    )
                )
            for name, kw in (
                ("supervised, balance=quantile", dict(balance="quantile")),
            ):
                if True:  # the balancing bias with the hinge (C*=0): the bias is
                    # set by the unlabeled quantile, not by the labeled hinge
                    kw = dict(base_sup, **kw, **extra)
                    rec = Recorder(pb, C, T, average=False, every=10, extra_pts=())
                    rec.pts = {t for t in checkpoints(T) if t % 10 == 0} | {T}
                    try:
                        est, secs = fit_tsgs(pb, kw, rec)
                        base = dict(
                            part="sup-bal",
                            dataset=ds,
                            C_svc=C,
                            run=name,
                            schedule="decay",
                            eta0=1.0,
                            balance="quantile",
                            anneal=0,
                            extra=json.dumps(extra),
                        )
                        add(base, rec.rows, refs["svc"]["objective"])
                        last = rec.rows[-1]
                        log(
                            f"  {name}: gap to SVC(with intercept) objective "
                            f"{(last['objective'] - refs['svc']['objective']) / refs['svc']['objective']:.3e} "  # noqa: E501 (a table row)
                            f"err={last['test_err']:.4f}"
                        )
                    except Exception as exc:
                        log(f"  {name} FAILED: {exc!r}")
            # semi-supervised
            from weakkernels.cccp_tsvm import CCCPTSVM

            t = time.perf_counter()
            Xs = np.vstack([pb["XL"], pb["XU"]])
            ys = np.concatenate([(pb["yL"] > 0).astype(int), -np.ones(n_u, int)])
            cc = CCCPTSVM(C=C, C_star=C * n_l / n_u, sigma=pb["sigma"]).fit(Xs, ys)
            err = float(
                np.mean(
                    np.where(cc.decision_function(pb["Xte"]) > 0, 1, -1) != pb["yte"]
                )
            )
            rows.append(
                dict(
                    part="ref",
                    dataset=ds,
                    C_svc=C,
                    run="cccp",
                    test_err=err,
                    seconds=time.perf_counter() - t,
                    note="CCCP-TSVM C*=C n_l/n_u",
                )
            )
            log(f"  ref cccp       test_err={err:.4f} ({time.perf_counter() - t:.2f}s)")
            for name, kw in semi_configs:
                kw = dict(base_semi, **kw, **extra)
                every = max(1, args.semi_iter // 100)
                rec = Recorder(pb, C, args.semi_iter, average=False, every=every)
                rec.pts = {
                    t
                    for t in checkpoints(
                        args.semi_iter, n=40, extra=(one_pass[ds], 128)
                    )
                    if t % every == 0
                } | {args.semi_iter}
                try:
                    est, secs = fit_tsgs(pb, kw, rec)
                except Exception as exc:
                    log(f"  semi {name} FAILED: {exc!r}")
                    continue
                base = dict(
                    part="semi",
                    dataset=ds,
                    C_svc=C,
                    run=name,
                    schedule=kw.get("learning_rate", "decay"),
                    eta0=kw.get("eta0", 1.0),
                    balance=kw.get("balance"),
                    anneal=kw.get("anneal"),
                    extra=json.dumps(extra),
                )
                for r in rec.rows:  # the objective printed is the supervised part
                    r.pop("objective", None)
                add(base, rec.rows, P_star)
                log(
                    f"  semi {name:28s} {secs:6.2f}s err={rec.rows[-1]['test_err']:.4f}"
                )
                # the same settings fitted for a shorter horizon T (the annealing
                # and the constant step depend on T): one pass (paper) and 128
                for T_short in (one_pass[ds], 128):
                    kws = dict(kw, max_iter=T_short)
                    kws.pop("callback", None)
                    est, secs = fit_tsgs(pb, kws)
                    fte = np.asarray(est.decision_function(pb["Xte"]), float)
                    err = float(np.mean(np.where(fte > 0, 1, -1) != pb["yte"]))
                    rows.append(
                        dict(
                            base,
                            part="semi-T",
                            iteration=T_short,
                            seconds=secs,
                            test_err=err,
                        )
                    )
                    log(f"  semi {name:28s} max_iter={T_short}: err={err:.4f}")
            # emulator
            for name, kw in (
                ("replace, fresh (=TSGS3VM)", dict()),
                ("full labeled, fresh", dict(sampling="full")),
                ("replace, exact kernel", dict(features="kernel")),
                (
                    "full labeled, exact kernel",
                    dict(sampling="full", features="kernel"),
                ),
                ("replace, fixed 1024", dict(features="fixed")),
                ("full labeled, fixed 1024", dict(sampling="full", features="fixed")),
            ):
                t = time.perf_counter()
                recs = emulate(
                    pb, C, T, pts=checkpoints(T, extra=(one_pass[ds], 128)), **kw
                )
                add(
                    dict(
                        part="emul",
                        dataset=ds,
                        C_svc=C,
                        run=name,
                        schedule="decay",
                        eta0=1.0,
                    ),
                    recs,
                    P_star,
                )
                last = recs[-1]
                log(
                    f"  emul {name:26s} {time.perf_counter() - t:5.2f}s "
                    f"gap={(last['objective'] - P_star) / P_star:9.3e} "
                    f"err={last['test_err']:.4f} | avg gap="
                    f"{(last['objective_avg'] - P_star) / P_star:9.3e} "
                    f"err={last['test_err_avg']:.4f}"
                )
    csv_path = args.out / (
        "convergence.csv" if mode == "curves" else "convergence_final.csv"
    )
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(
                {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}
            )
    log(f"wrote {csv_path} ({len(rows)} rows)")
    summary = summarize(read_csv(csv_path))
    (args.out / csv_path.with_suffix(".md").name).write_text(summary + "\n")
    print(summary, flush=True)
    if mode == "curves":
        plot_all(rows, args.out, args.datasets, args.C, one_pass)
        log(f"plots in {args.out}")
    log("done")


if __name__ == "__main__":
    main()
