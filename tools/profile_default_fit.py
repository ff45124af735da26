"""Where the default TSGS3VM fit's time goes, against the flop floor.

One fit of ``TSGS3VM(sigma=0.0128, C=10, random_state=0,
solver_options=SolverOptions(primal_method="lbfgs"))`` (defaults otherwise)
on paper 004's MNIST Table 1.5 protocol (1 000 seeded training
labels, 10 classes one-vs-rest, U = the first U test images then the
remaining training images; the split of the former ``scale_accuracy.py``),
timed with spies on the solver's own functions -- no change to ``src``.
The spies count scipy's L-BFGS (its iterations and evaluations), so the fit
names the L-BFGS minimiser: the results of ``docs/benchmarks/profile.md``
were made when it was the default; the truncated-Newton default
(``primal_method="newton"``) evaluates the loss outside
``PrimalSolver.objective`` and is not profiled by this tool:

* the candidate fits of the cross-validated choice (each call of
  ``fit_expansion`` from ``weakkernels.tsgs3vm``: a fold's fit, which
  carries every C* candidate as a chain, or the final fit);
* per fit, level and annealing weight: L-BFGS solves, iterations and
  function evaluations as scipy counts them, objective evaluations as the
  solver runs them (``PrimalSolver.objective``), the rows each one reads;
* the phases, as exclusive CPU and wall seconds (a phase's time minus the
  time of the spied phases it calls, so the rows add up to the fit):
  the landmarks and their Cholesky factor (``expansion_basis``), feature
  generation (``NystromSpec._kernel``: ``k(X, Z)``; ``NystromSpec.features``
  beyond it: the row whitening ``k(X, Z) L^-T`` of held levels;
  ``primal_chunk``), the forward and backward products (``chunk_forward``,
  ``chunk_backward``), the loss of the K one-vs-rest outputs
  (``RowLoss.__call__``), the whitening of the coefficients
  (``Whitening.lift`` / ``lower``), L-BFGS's own work (``minimize`` beyond
  the objective), the held-out scoring, and the work after the solve.

Flops are counted from the shapes the spies see (2 per multiply-add), and the
floor is the issue's: the kernel block ``k(X, Z)`` once, ``n m d 2``, plus
one pass of the features for all K outputs, ``n m K 2 2`` (forward and
backward), in seconds at this machine's measured one-thread GEMM rate
(float32 and float64, measured at the start of the run, CPU seconds).
"Passes of the features" are the rows read by all objective evaluations
over the training rows ``n``.

CPU seconds (``time.process_time``) are the main figure; wall seconds are
recorded too (on a shared machine they include waiting). Run with one
thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        nice -n 10 .venv/bin/python tools/profile_default_fit.py \\
        --n-unlabeled 2000 [--cv | --rule] [--cprofile] [--out FILE]

``--cv`` (the default) keeps the estimator's ``selection="auto"``
(at <= 4 096 rows: 5-fold cross-validation of C* and the loss); ``--rule``
sets ``selection=None`` (paper 004's C* rule, one fit).
``--cprofile`` also runs the fit under cProfile and keeps its top functions
(by own time) in the result; its overhead is in that fit's seconds. The
result, ``tools/results/profile_default_fit_U<U>[_rule].json`` by
default, is summarised in ``docs/benchmarks/profile.md``, whose tables
``--tables FILE ...`` prints from result files; ``--summarise FILE``
recomputes a file's derived figures (passes, flops, floor) from its counts.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "tools" / "results"
# the data mirror beside the clone (../shared/data/raw), or $WEAKKERNELS_DATA
DATA = Path(os.environ.get("WEAKKERNELS_DATA", ROOT.parent / "shared/data/raw"))
SIGMA, C = 0.0128, 10.0
# the minimiser whose work the spies count (scipy's L-BFGS)
PRIMAL_METHOD = "lbfgs"
SOLVE = "solver: stage loop (other)"


# -- the data ---------------------------------------------------------------
def mnist_rows(n_unlabeled: int, n_labeled: int = 1000, seed: int = 0):
    """``(X, y, X_test, y_test)`` of the Table 1.5 protocol (``y == -1``:
    unlabeled): MNIST from the checksummed registry (pixels / 255), 60 000
    training and 10 000 test images; ``n_labeled`` seeded training labels, the
    first ``min(U, 10 000)`` test images then the remaining training images
    as the U unlabeled rows (the split the former ``scale_accuracy.py``
    benchmark used, including its seeded 1 000-row validation draw, so the
    labeled rows are the same)."""
    from weakkernels.pipeline.datasets import DATASETS, load_raw

    raw = load_raw("mnist", DATA)
    n = DATASETS["mnist"].extra["n_train"]
    X, y = raw.X.astype(np.float32), raw.y.astype(int)
    Xp, yp, Xt, yt = X[:n], y[:n], X[n:], y[n:]
    rng = np.random.default_rng(seed)
    lab = np.sort(rng.choice(yp.size, n_labeled, replace=False))
    rest = np.setdiff1d(np.arange(yp.size), lab)
    rng.choice(rest, 1000, replace=False)  # the old validation draw: same stream
    n_test = min(n_unlabeled, Xt.shape[0])
    XU = np.vstack([Xt[:n_test], Xp[rest[: max(0, n_unlabeled - n_test)]]])
    Xf = np.vstack([Xp[lab], XU])
    yf = np.concatenate([yp[lab], np.full(XU.shape[0], -1)])
    return Xf, yf, Xt, yt


# -- the spies --------------------------------------------------------------
class Spy:
    """Calls, inclusive and exclusive CPU / wall seconds and flops per label.

    :meth:`wrap` replaces ``owner.name`` by a timed wrapper (undone by
    :meth:`restore`); a phase's exclusive time is its time minus that of the
    wrapped phases it calls, so the exclusive times of a fit add up to it.
    """

    def __init__(self):
        self.stats = defaultdict(lambda: {"calls": 0, "cpu": 0.0, "wall": 0.0,
                                          "cpu_excl": 0.0, "wall_excl": 0.0,
                                          "flops": 0.0})
        self._stack = []
        self._undo = []
        self.n_wrapped_calls = 0

    def wrap(self, owner, name, label, flops=None, after=None):
        """Time ``owner.name`` under ``label`` (a string, or a function of
        the call's arguments); ``flops(*args)`` counts its flops,
        ``after((cpu, wall), result, *args)`` sees its inclusive seconds and
        its result."""
        orig = getattr(owner, name)
        spy = self

        def wrapper(*args, **kwargs):
            lab = label(*args, **kwargs) if callable(label) else label
            spy._stack.append([0.0, 0.0, lab])
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                out = orig(*args, **kwargs)
            finally:
                dc, dw = time.process_time() - c0, time.perf_counter() - w0
                child = spy._stack.pop()
                s = spy.stats[lab]
                s["calls"] += 1
                s["cpu"] += dc
                s["wall"] += dw
                s["cpu_excl"] += dc - child[0]
                s["wall_excl"] += dw - child[1]
                if spy._stack:
                    spy._stack[-1][0] += dc
                    spy._stack[-1][1] += dw
                spy.n_wrapped_calls += 1
            if flops is not None:
                s["flops"] += float(flops(*args, **kwargs))
            if after is not None:
                after((dc, dw), out, *args, **kwargs)
            return out

        wrapper.__wrapped__ = orig
        self._undo.append((owner, name, orig))
        setattr(owner, name, wrapper)

    def inside(self, label) -> bool:
        """Whether a call of ``label`` encloses the current one."""
        return any(frame[2] == label for frame in self._stack)

    def restore(self):
        for owner, name, orig in reversed(self._undo):
            setattr(owner, name, orig)
        self._undo.clear()


def _level_rows(solver, w):
    """Rows an objective evaluation of ``solver`` reads at weight ``w``."""
    idx, sizes = solver.cur["idx"], solver.sizes
    return sum(n if i is None else i.size
               for n, i, u in zip(sizes, idx, solver.used_sets(w), strict=True) if u)


class Counters:
    """The solver's plan and its per-(fit, level, weight) counts."""

    def __init__(self):
        self.fit = "fit"
        self.fits = []  # one dict per fit_expansion call
        self.stages = defaultdict(lambda: {"evaluations": 0, "rows_read": 0,
                                           "solves": 0, "nit": 0, "nfev": 0,
                                           "cpu": 0.0, "wall": 0.0})
        self._solver = None
        self._n_fold = 0

    def key(self, solver, w):
        return f"{self.fit}|level{solver.cur['level']}|w={float(w):g}"

    def begin_fit(self, problem):
        if problem.select is not None:
            self.fit = f"cv_fold{self._n_fold}"
            self._n_fold += 1
        else:
            self.fit = "final"
        self.fits.append({"fit": self.fit, "select": problem.select is not None})
        return self.fit

    def solver_made(self, solver):
        """After ``PrimalSolver.__init__``: its levels, stages and plan."""
        self._solver = solver
        self.fits[-1].update(
            sizes=list(map(int, solver.sizes)),
            landmarks=int(solver.D), K=int(solver.K),
            level_rows=[int(sum(n if i is None else i.size
                                for n, i in zip(solver.sizes, lv, strict=True)))
                        for lv in solver.levels],
            stages=[float(w) for w in solver.stages],
            pick_level=int(solver.pick_level),
            plan=[[int(k), float(w), int(a), int(b)] for k, w, a, b in solver.plan],
            levels=[])

    def entered(self, solver, k):
        cur = solver.cur
        self.fits[-1]["levels"].append({
            "level": int(k), "rows": int(cur["rows"]),
            "features_held": bool(cur["cache"]),
            "row_whitened": bool(getattr(cur["spec"], "_per_row", False)),
            "past_held_bound": bool(solver.large(k))})

    def objective(self, solver, z, w, t=None):
        """An evaluation; ``t``: its seconds when outside a solve (the
        stage's start, which ``run`` evaluates before the solve)."""
        st = self.stages[self.key(solver, w)]
        st["evaluations"] += 1
        st["rows_read"] += _level_rows(solver, w)
        if t is not None:
            self.timed(solver, w, t)

    def timed(self, solver, w, t):
        st = self.stages[self.key(solver, w)]
        st["cpu"] += t[0]
        st["wall"] += t[1]

    def minimized(self, res, w):
        st = self.stages[self.key(self._solver, w)]
        st["solves"] += 1
        st["nit"] += int(res.nit)
        st["nfev"] += int(res.nfev)
        # L-BFGS-B's status 1: stopped at the iteration (or evaluation) cap
        st["capped"] = st.get("capped", 0) + int(res.status == 1)


def instrument(spy: Spy, counters: Counters) -> None:
    """Wrap the fit's phases (see the module docstring)."""
    import scipy.optimize

    from weakkernels import _base, tsgs3vm
    from weakkernels._dsg import chunks, primal
    from weakkernels._dsg.primal import PrimalSolver
    from weakkernels.random_features import NystromSpec

    def kflops(self, X, W, *a, **k):
        return 2.0 * X.shape[0] * W.shape[0] * W.shape[1]

    def wflops(self, X, W, *a, **k):  # features beyond the kernel: k L^-T
        return 2.0 * X.shape[0] * W.shape[1] * self._T.shape[1]

    def prod_flops(P, M, *a, **k):
        return 2.0 * P.shape[0] * P.shape[1] * (1 if M.ndim == 1 else M.shape[1])

    def white_flops(self, v):
        return 0.0 if self.T is None else 2.0 * self.T.size * v.shape[-1]

    # the fit shell of the random-feature estimators (weakkernels._base)
    spy.wrap(_base.RandomFeatureClassifier, "fit",
             "fit: other (set-up, targets, checks)")
    spy.wrap(tsgs3vm, "validate_semi_supervised", "fit: input validation")
    spy.wrap(_base, "expansion_basis",
             "basis: landmarks, K_ZZ, Cholesky, L^-1")
    spy.wrap(_base, "fit_expansion",
             lambda problem, **k: f"{counters.begin_fit(problem)}: solver (other)")
    spy.wrap(tsgs3vm, "one_se_stage", "cv: one-SE choice")
    spy.wrap(_base.RandomFeatureClassifier, "_set_model_state",
             "after: model state")
    spy.wrap(tsgs3vm._S3VMBase, "_decision",
             "after: decision values on the labels (Platt)")
    spy.wrap(tsgs3vm, "fit_platt", "after: Platt fits")
    spy.wrap(tsgs3vm, "check_unlabeled_predictions", "after: output checks")

    spy.wrap(PrimalSolver, "__init__", "solver: set-up (levels, plan)",
             after=lambda t, out, self, *a, **k: counters.solver_made(self))
    spy.wrap(PrimalSolver, "enter", "solver: enter level (other)",
             after=lambda t, out, self, k: counters.entered(self, k))
    spy.wrap(PrimalSolver, "_solve", SOLVE,
             after=lambda t, out, self, z, w, *a: counters.timed(self, w, t))
    spy.wrap(PrimalSolver, "objective", "objective: other",
             after=lambda t, out, self, z, w: counters.objective(
                 self, z, w, None if spy.inside(SOLVE) else t))
    spy.wrap(PrimalSolver, "_score", "cv: held-out scoring (other)")
    spy.wrap(PrimalSolver, "_anchor", "solver: balance anchor (other)")
    spy.wrap(PrimalSolver, "run", "solver: run (other)")
    spy.wrap(primal, "_set_primal", "solver: model update per stage")
    spy.wrap(scipy.optimize, "minimize", "L-BFGS: scipy's own work",
             after=lambda t, res, fun, x0, args=(), **k: counters.minimized(
                 res, args[0]))
    spy.wrap(NystromSpec, "_kernel", "features: k(X, Z) (distances + exp)",
             flops=kflops)
    spy.wrap(NystromSpec, "features", "features: row whitening k(X, Z) L^-T",
             flops=wflops)
    spy.wrap(chunks, "primal_chunk", "features: chunk (other)")
    spy.wrap(chunks, "chunk_forward", "products: forward P v", flops=prod_flops)
    spy.wrap(chunks, "chunk_backward", "products: backward P^T g",
             flops=prod_flops)
    spy.wrap(chunks, "fused_chunk", "products: fused pass (other)")
    spy.wrap(chunks.RowLoss, "__call__", "loss: K one-vs-rest outputs")
    spy.wrap(chunks.Whitening, "lift", "whitening of coefficients T v",
             flops=white_flops)
    spy.wrap(chunks.Whitening, "lower", "whitening of gradients T' g",
             flops=white_flops)
    spy.wrap(chunks._PrimalSet, "mean", "solver: feature means (balance)")


# -- the machine's GEMM rate --------------------------------------------------
def gemm_rates(m: int, d: int, K: int, repeat: int = 3) -> dict:
    """One-thread GEMM rates (flop per CPU second, best of ``repeat``) in the
    fit's shapes: the kernel products (2 048 x d by d x m, float64 as
    ``NystromSpec._kernel`` computes them, and float32), the forward
    (2 048 x m by m x K) and backward (K x 2 048 by 2 048 x m) products in
    float32, and a square 2 048 float32 / float64 GEMM."""
    rng = np.random.default_rng(0)
    n = 2048
    cases = {
        "kernel_f64": (rng.random((n, d)), rng.random((d, m))),
        "kernel_f32": (rng.random((n, d), dtype=np.float32),
                       rng.random((d, m), dtype=np.float32)),
        "forward_f32": (rng.random((n, m), dtype=np.float32),
                        rng.random((m, K), dtype=np.float32)),
        "backward_f32": (rng.random((K, n), dtype=np.float32),
                         rng.random((n, m), dtype=np.float32)),
        "square_f32": (rng.random((n, n), dtype=np.float32),
                       rng.random((n, n), dtype=np.float32)),
        "square_f64": (rng.random((n, n)), rng.random((n, n))),
    }
    rates = {}
    for name, (A, B) in cases.items():
        flops = 2.0 * A.shape[0] * A.shape[1] * B.shape[1]
        reps = max(1, int(2e9 // flops))  # >= ~2 GFLOP per timing
        best = np.inf
        for _ in range(repeat):
            t0 = time.process_time()
            for _ in range(reps):
                A @ B
            best = min(best, (time.process_time() - t0) / reps)
        rates[name] = flops / max(best, 1e-9)
    return rates


def floor(n: int, m: int, d: int, K: int, passes: float, rates: dict) -> dict:
    """The issue's floor: ``k(X, Z)`` once (``n m d 2``) and one pass of the
    features for the K outputs (``n m K 2 2``, forward and backward), in CPU
    seconds at this machine's measured rates -- in the fit's shapes
    (``kernel_f32``; the slower of ``forward_f32`` / ``backward_f32``: a
    pass of K = 10 columns is bound by reading the n x m features) and at
    the square float32 GEMM's peak (a lower floor) -- and the same products
    at the passes the fit made (the algorithm's floor, were every product
    at that rate)."""
    kernel = 2.0 * n * m * d
    a_pass = 4.0 * n * m * K
    shape = (rates["kernel_f32"], min(rates["forward_f32"], rates["backward_f32"]))
    peak = (rates["square_f32"],) * 2
    out = {"kernel_block_flops": kernel, "pass_flops": a_pass,
           "floor_flops": kernel + a_pass,
           "at_measured_passes_flops": kernel + passes * a_pass}
    for name, (rk, rp) in (("", shape), ("_at_peak", peak)):
        out[f"kernel_block_cpu_s{name}"] = kernel / rk
        out[f"pass_cpu_s{name}"] = a_pass / rp
        out[f"floor_cpu_s{name}"] = kernel / rk + a_pass / rp
        out[f"at_measured_passes_cpu_s{name}"] = kernel / rk + passes * a_pass / rp
    return out


# -- one profiled fit ---------------------------------------------------------
def profile_fit(est, X, y, use_cprofile: bool = False, top: int = 30) -> dict:
    """Fit ``est`` on ``(X, y)`` under the spies; the counters and phases."""
    spy, counters = Spy(), Counters()
    instrument(spy, counters)
    prof = cProfile.Profile() if use_cprofile else None
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        if prof is not None:
            prof.enable()
        est.fit(X, y)
        if prof is not None:
            prof.disable()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    finally:
        spy.restore()
    phases = {k: {"calls": v["calls"], "cpu_s": round(v["cpu_excl"], 4),
                  "wall_s": round(v["wall_excl"], 4),
                  "cpu_incl_s": round(v["cpu"], 4), "flops": v["flops"]}
              for k, v in sorted(spy.stats.items(), key=lambda kv: -kv[1]["cpu_excl"])}
    stages = {k: dict(v) for k, v in counters.stages.items()}
    # per fit of the choice: the sums over its levels and weights
    per_fit = defaultdict(lambda: {"evaluations": 0, "rows_read": 0, "nit": 0,
                                   "nfev": 0, "solves": 0})
    for k, v in stages.items():
        f = per_fit[k.split("|")[0]]
        for c in ("evaluations", "rows_read", "nit", "nfev", "solves"):
            f[c] += v[c]
    for f in counters.fits:
        s = spy.stats.get(f"{f['fit']}: solver (other)")
        per_fit[f["fit"]]["cpu_s"] = round(s["cpu"], 3) if s else None
        per_fit[f["fit"]]["wall_s"] = round(s["wall"], 3) if s else None
    out = {"fit_cpu_s": cpu, "fit_wall_s": wall, "phases": phases,
           "stages": stages, "per_fit": dict(per_fit), "fits": counters.fits,
           "spy_calls": spy.n_wrapped_calls}
    if prof is not None:
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats("tottime").print_stats(top)
        # file names relative to the clone and to site-packages, not this machine's
        site = str(Path(np.__file__).resolve().parents[1]) + "/"
        out["cprofile_top"] = [line.replace(site, "site-packages/")
                               .replace(str(ROOT) + "/", "")
                               for line in buf.getvalue().splitlines()]
    return out


def summarise(rec: dict, n: int, d: int) -> dict:
    """Passes, flops and the floor of a profiled fit."""
    m, K = rec["landmarks"], rec["K"]
    evals = sum(v["evaluations"] for v in rec["stages"].values())
    rows = sum(v["rows_read"] for v in rec["stages"].values())
    passes = rows / n
    fl = floor(n, m, d, K, passes, rec["gemm_rates"])
    kernel = rec["phases"].get("features: k(X, Z) (distances + exp)", {})
    groups = defaultdict(float)
    for name, ph in rec["phases"].items():
        groups[name.split(":")[0].split(" ")[0]] += ph["cpu_s"]
    return {
        "n_rows": n, "landmarks": m, "d": d, "K": K,
        "objective_evaluations": evals, "rows_read": rows,
        "passes_of_the_features": passes,
        "kernel_rows_computed": (kernel.get("flops", 0.0) / (2.0 * m * d)
                                 if m else 0.0),
        "kernel_blocks_computed": (kernel.get("flops", 0.0) / (2.0 * n * m * d)
                                   if m else 0.0),
        "lbfgs_iterations": sum(v["nit"] for v in rec["stages"].values()),
        "lbfgs_function_evaluations": sum(v["nfev"] for v in rec["stages"].values()),
        "counted_flops": sum(ph["flops"] for ph in rec["phases"].values()),
        "floor": fl,
        "fraction_above_floor": 1.0 - fl["floor_cpu_s"] / rec["fit_cpu_s"],
        "fraction_above_floor_at_peak":
            1.0 - fl["floor_cpu_s_at_peak"] / rec["fit_cpu_s"],
        "fraction_above_floor_at_measured_passes":
            1.0 - fl["at_measured_passes_cpu_s"] / rec["fit_cpu_s"],
        # the rate each counted product ran at in the fit (flop per CPU s)
        "achieved_flop_per_s": {k: ph["flops"] / ph["cpu_s"]
                                for k, ph in rec["phases"].items()
                                if ph["flops"] and ph["cpu_s"] > 0},
        "cpu_s_by_group": dict(sorted(groups.items(), key=lambda kv: -kv[1])),
    }


def _max_iter(est) -> int:
    """L-BFGS iterations per solve the fit allowed."""
    from weakkernels._options import options_of

    return int(est.max_iter or options_of(est).lbfgs_max_iter)


def _capped(rec: dict) -> int:
    """Solves stopped at the iteration cap (from the counts of a record
    made before ``capped`` was counted: a single solve at the cap)."""
    cap = rec["fitted"].get("lbfgs_max_iter")
    return sum(st["capped"] if "capped" in st
               else int(cap is not None and st["solves"] == 1 and st["nit"] >= cap)
               for st in rec["stages"].values())


def _label(rec: dict) -> str:
    p = rec["protocol"]
    rule = "selection=None" in p["estimator"]
    return f"U = {p['n_unlabeled']} ({'rule' if rule else 'default'})"


def tables(recs: list) -> str:
    """Markdown tables of result records: the summary, the phases, the
    fits of the choice, and the stages (the folds' stages summed)."""
    heads = [_label(r) for r in recs]
    lines = ["| | " + " | ".join(heads) + " |", "|---" * (len(recs) + 1) + "|"]

    def row(name, fn):
        lines.append(f"| {name} | " + " | ".join(fn(r) for r in recs) + " |")

    def sm(r):
        return r["summary"]

    row("rows n (labeled + unlabeled)", lambda r: f"{sm(r)['n_rows']:,}")
    row("landmarks m", lambda r: f"{sm(r)['landmarks']:,}")
    row("fit CPU s", lambda r: f"{r['fit_cpu_s']:.1f}")
    row("fit wall s (loaded machine)", lambda r: f"{r['fit_wall_s']:.1f}")
    row("solver fits (folds + final)", lambda r: str(len(r["fits"])))
    row("objective evaluations", lambda r: f"{sm(r)['objective_evaluations']:,}")
    row("L-BFGS iterations", lambda r: f"{sm(r)['lbfgs_iterations']:,}")
    row("L-BFGS solves / at the iteration cap",
        lambda r: f"{sum(st['solves'] for st in r['stages'].values())} / "
                  f"{_capped(r)} (cap {r['fitted'].get('lbfgs_max_iter')})")
    row("passes of the features", lambda r: f"{sm(r)['passes_of_the_features']:.0f}")
    row("k(X, Z) blocks computed (x n m d)",
        lambda r: f"{sm(r)['kernel_blocks_computed']:.2f}")
    row("floor: k(X, Z) + 1 pass, CPU s (fit's shapes)",
        lambda r: f"{sm(r)['floor']['floor_cpu_s']:.2f}")
    row("floor at the square GEMM peak, CPU s",
        lambda r: f"{sm(r)['floor']['floor_cpu_s_at_peak']:.2f}")
    row("time above the floor",
        lambda r: f"{100 * sm(r)['fraction_above_floor']:.1f} %")
    row("k(X, Z) + the fit's passes at the shapes' rate, CPU s",
        lambda r: f"{sm(r)['floor']['at_measured_passes_cpu_s']:.1f}")
    row("time above that", lambda r:
        f"{100 * sm(r)['fraction_above_floor_at_measured_passes']:.1f} %")
    row("test error (10 000 images)",
        lambda r: f"{100 * r['test_error']:.2f} %" if "test_error" in r else "")
    row("C* kept", lambda r: f"{r['fitted']['C_star_']:.3g}")
    out = ["\n".join(lines), ""]

    names = []
    for r in recs:
        names += [k for k in r["phases"] if k not in names]
    lines = ["| phase (exclusive CPU s, share of the fit) | " + " | ".join(heads)
             + " |", "|---" * (len(recs) + 1) + "|"]
    for k in names:
        if all(r["phases"].get(k, {}).get("cpu_s", 0.0) < 5e-4 * r["fit_cpu_s"]
               for r in recs):
            continue  # below 0.05 % of every fit
        cells = []
        for r in recs:
            ph = r["phases"].get(k)
            share = 0.0 if ph is None else 100 * ph["cpu_s"] / r["fit_cpu_s"]
            cells.append("" if ph is None else f"{ph['cpu_s']:.2f} ({share:.1f} %)")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    out += ["\n".join(lines), ""]

    for r in recs:
        lines = [f"**{_label(r)}**: stages (level rows, weight of C*; the "
                 "folds' stages summed)", "",
                 "| fit | level rows | w | evaluations | L-BFGS iterations "
                 "| rows / evaluation | CPU s | wall s |",
                 "|---|---|---|---|---|---|---|---|"]
        agg = {}
        for key, st in r["stages"].items():
            fit, level, w = key.split("|")
            fit = "cv folds" if fit.startswith("cv_fold") else fit
            f0 = next(f for f in r["fits"] if f["fit"] == key.split("|")[0])
            lrows = f0["level_rows"][int(level.removeprefix("level"))]
            a = agg.setdefault((fit, lrows, w), dict.fromkeys(
                ("evaluations", "nit", "rows_read", "cpu", "wall"), 0))
            for c in a:
                a[c] += st[c]
        for (fit, lrows, w), a in agg.items():
            per = a["rows_read"] / max(a["evaluations"], 1)
            lines.append(f"| {fit} | {lrows:,} | {w.removeprefix('w=')} | "
                         f"{a['evaluations']:,} | {a['nit']:,} | {per:,.0f} | "
                         f"{a['cpu']:.1f} | {a['wall']:.1f} |")
        out += ["\n".join(lines), ""]
    return "\n".join(out)


def machine() -> dict:
    info = {"platform": platform.platform(), "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
            "threads": {k: os.environ.get(k) for k in
                        ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                         "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                         "NUMBA_CPU_NAME")}}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-unlabeled", type=int, default=2000)
    ap.add_argument("--n-labeled", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0,
                    help="the labeled draw (scale_accuracy.py's seed)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--cv", dest="rule", action="store_false",
                      help='selection="auto" (the default)')
    mode.add_argument("--rule", dest="rule", action="store_true",
                      help="selection=None (paper 004's C* rule)")
    ap.set_defaults(rule=False)
    ap.add_argument("--cprofile", action="store_true",
                    help="run the fit under cProfile too (its top functions)")
    ap.add_argument("--no-score", action="store_true",
                    help="skip the test error on the 10 000 test images")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--tables", type=Path, nargs="+", metavar="JSON",
                    help="print the markdown tables of result files (no fit)")
    ap.add_argument("--summarise", type=Path, metavar="JSON",
                    help="recompute the summary of a result file (no fit)")
    a = ap.parse_args(argv)
    if a.tables:
        print(tables([json.loads(p.read_text()) for p in a.tables]))
        return None
    if a.summarise:
        rec = json.loads(a.summarise.read_text())
        if "lbfgs_max_iter" not in rec["fitted"]:
            from weakkernels import TSGS3VM

            rec["fitted"]["lbfgs_max_iter"] = _max_iter(TSGS3VM())
        rec["summary"] = summarise(rec, rec["summary"]["n_rows"],
                                   rec["summary"]["d"])
        a.summarise.write_text(json.dumps(rec, indent=1, default=float) + "\n")
        return rec

    from weakkernels import TSGS3VM, SolverOptions

    info = machine()
    X, y, Xt, yt = mnist_rows(a.n_unlabeled, a.n_labeled, a.seed)
    n, d = X.shape
    kw = {"selection": None} if a.rule else {}
    kw["solver_options"] = SolverOptions(primal_method=PRIMAL_METHOD)
    # warm-up on 300 rows with the same settings: the numba kernels compiled
    # (or loaded from NUMBA_CACHE_DIR) before the timed fit
    lab = np.flatnonzero(y >= 0)[:200]
    unl = np.flatnonzero(y < 0)[:100]
    TSGS3VM(sigma=SIGMA, C=C, random_state=0, **kw).fit(
        X[np.r_[lab, unl]], y[np.r_[lab, unl]])
    est = TSGS3VM(sigma=SIGMA, C=C, random_state=0, **kw)
    rec = profile_fit(est, X, y, use_cprofile=a.cprofile)
    rec["landmarks"] = int(est.n_features_model_)
    rec["K"] = int(est.classes_.size if est.classes_.size > 2 else 1)
    rec["gemm_rates"] = gemm_rates(rec["landmarks"], d, rec["K"])
    rec["summary"] = summarise(rec, n, d)
    rec.update(
        command=" ".join(["tools/profile_default_fit.py",
                          *(argv or sys.argv[1:])]),
        rev=_revision(), machine={**info, "loadavg_end": os.getloadavg()},
        protocol={"dataset": "mnist", "n_labeled": a.n_labeled,
                  "n_unlabeled": a.n_unlabeled, "seed": a.seed,
                  "estimator": f"TSGS3VM(sigma={SIGMA}, C={C}, random_state=0"
                               + (", selection=None" if a.rule else "")
                               + ", solver_options=SolverOptions("
                               f"primal_method={PRIMAL_METHOD!r}))"},
        fitted={"C_star_": float(est.C_star_),
                "lbfgs_max_iter": _max_iter(est),
                "selection_": est.selection_,
                "validation_fraction_": est.validation_fraction_,
                "n_folds_": est.n_folds_,
                "unlabeled_loss_": est.unlabeled_loss_,
                "n_iter_": int(est.n_iter_),
                "validation_errors_": np.asarray(
                    getattr(est, "validation_errors_", [])).tolist()})
    if not a.no_score:
        c0 = time.process_time()
        rec["test_error"] = float(np.mean(est.predict(Xt) != yt))
        rec["predict_cpu_s"] = time.process_time() - c0
    out = a.out or RESULTS / (f"profile_default_fit_U{a.n_unlabeled}"
                              + ("_rule" if a.rule else "") + ".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rec, indent=1, default=float) + "\n")
    s = rec["summary"]
    print(f"fit {rec['fit_cpu_s']:.1f} s CPU ({rec['fit_wall_s']:.1f} s wall), "
          f"m = {s['landmarks']}, {s['objective_evaluations']} evaluations, "
          f"{s['passes_of_the_features']:.1f} passes, floor "
          f"{s['floor']['floor_cpu_s']:.2f} s "
          f"({100 * s['fraction_above_floor']:.1f} % above); -> {out}")
    for name, ph in list(rec["phases"].items())[:15]:
        print(f"  {ph['cpu_s']:9.2f} s  {ph['calls']:7d}  {name}")
    return rec


def _revision() -> str:
    """The commit the profile ran at (``+dirty`` with uncommitted changes)."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()

    dirty = "+dirty" if git("status", "--porcelain", "--", "src") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


if __name__ == "__main__":
    main()
