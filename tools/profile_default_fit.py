"""Where the default TSGS3VM fit's time goes, against the flop floor.

One fit of ``TSGS3VM(sigma=0.0128, C=10, random_state=0)`` (defaults
otherwise) on paper 004's MNIST Table 1.5 protocol (1 000 seeded training
labels, 10 classes one-vs-rest, U = the first U test images then the
remaining training images; the split of the former ``scale_accuracy.py``),
timed with spies on the solver's own functions -- no change to ``src``.
``--method`` names the primal minimiser:

* ``newton`` (the default): the estimator's own default ``SolverOptions``,
  not overridden -- truncated Newton (``primal_method="newton"``,
  ``weakkernels._dsg.newton``) at ``newton_max_iter`` iterations per
  solve, without the L-BFGS finish (``newton_finish=False``), the model
  selection's candidates at ``selection_newton_max_iter``;
* ``lbfgs``: ``solver_options=SolverOptions(primal_method="lbfgs")``
  (``PRIMAL_METHOD``), scipy's L-BFGS, the minimiser of the L-BFGS
  sections of ``docs/benchmarks/profile.md`` (made when it was the
  default).

Counted:

* the candidate fits of the model selection (each call of
  ``fit_expansion`` from ``weakkernels._base``: a fold's fit of the
  cross-validated choice, ``cv_fold<i>``, or the held-out part's,
  ``holdout``, which carries every C* candidate as a chain), then the
  ``final`` fit;
* per fit, level and annealing weight (a stage): objective evaluations as the
  solver runs them (``PrimalSolver.objective``: every L-BFGS evaluation,
  and the start of a stage under either minimiser) and the rows each one
  reads; with L-BFGS, its solves, iterations and function evaluations as
  scipy counts them; with Newton (``newton_minimize``, spied where
  ``weakkernels._dsg.primal`` calls it), its solves, iterations, the solves
  stopped at their iteration cap and those stopped above their gradient
  tolerance before it (a line search without decrease, no descent, a
  negligible decrease), the conjugate-gradient systems and their steps (one
  Hessian-vector product each, ``_Hessian.product``) and the systems that
  reached ``newton_cg_max_iter``, the curvature evaluations
  (``_Hessian.at``), the gradient evaluations
  (``_Outputs.value_and_gradient``), the line searches (``_Outputs.search``)
  with their evaluations of the loss (the trial steps, on the kept
  outputs: they read no features), and the rows each of these reads;
* the phases, as exclusive CPU and wall seconds (a phase's time minus the
  time of the spied phases it calls, so the rows add up to the fit):
  the landmarks and their Cholesky factor (``expansion_basis``), feature
  generation (``NystromSpec._kernel``: ``k(X, Z)``; ``NystromSpec.features``
  beyond it: the row whitening ``k(X, Z) L^-T`` of held levels;
  ``primal_chunk``), the forward and backward products (``chunk_forward``,
  ``chunk_backward``), the loss of the K one-vs-rest outputs
  (``RowLoss.__call__``), the whitening of the coefficients
  (``Whitening.lift`` / ``lower``), L-BFGS's own work (``minimize`` beyond
  the objective), the held-out scoring, and the work after the solve; with
  Newton also its loop (``newton_minimize`` beyond what it calls), the
  outputs at a solve's start (``_Outputs.__init__``), the value and
  gradient (``value_and_gradient``), the loss on the kept outputs (at the
  iterate, and the line search's trials: ``_Outputs._loss``), the line
  search, the curvature on the Hessian's sample (``_Hessian.at``), the
  Hessian-vector products (``_Hessian.product``), the conjugate gradients'
  own work (``_conjugate_gradients`` beyond the products) and the Hessian
  sample's set-up (``PrimalSolver.hessian_sets``). Under Newton the forward
  and backward products are labelled by the Newton phase that runs them
  (``[Newton: Hessian products]``, ``[Newton: curvature]``,
  ``[Newton: line search]``, ``[Newton: gradient]``, ``[Newton: start
  outputs]``; unlabelled: the objective evaluations and the rest), and the
  features ``hessian_sets`` builds for the Hessian's own sample of a set
  larger than ``newton_hessian_rows`` by ``[Newton: Hessian sample]``. The
  curvature evaluations also count the sets whose curvature was zero on
  every row (the products skip them; their forward product was wasted).

Flops are counted from the shapes the spies see (2 per multiply-add), and the
floor is the issue's: the kernel block ``k(X, Z)`` once, ``n m d 2``, plus
one pass of the features for all K outputs, ``n m K 2 2`` (forward and
backward), in seconds at this machine's measured one-thread GEMM rate
(float32 and float64, measured at the start of the run, CPU seconds).
"Passes of the features" are the feature rows read over the training rows
``n``, a pass being a fused objective evaluation's read: a row read forward
and backward (by an objective evaluation, or by a Hessian-vector product on
the Hessian's sample) counts one, a row read by a forward or a backward
product alone (Newton's start outputs, line-search direction, gradient and
curvature) counts a half, so that a pass stays ``n m K 2 2`` flops of
products and the floor at the fit's passes stays comparable between the
minimisers (with L-BFGS: the rows read by all objective evaluations over
``n``, as before). "Reads of the features" count every product's rows as
one (a fused evaluation's too: its second read of a block is from cache).

CPU seconds (``time.process_time``) are the main figure; wall seconds are
recorded too (on a shared machine they include waiting). Run with one
thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        nice -n 10 .venv/bin/python tools/profile_default_fit.py \\
        --n-unlabeled 2000 [--method newton | --method lbfgs] \\
        [--cv | --rule] [--cprofile] [--out FILE]

``--cv`` (the default) keeps the estimator's ``selection="auto"``
(at <= 4 096 rows: 5-fold cross-validation of C* and the loss); ``--rule``
sets ``selection=None`` (paper 004's C* rule, one fit).
``--cprofile`` also runs the fit under cProfile and keeps its top functions
(by own time) in the result; its overhead is in that fit's seconds. The
result, ``tools/results/profile_default_fit_newton_U<U>[_rule].json``
(Newton) or ``tools/results/profile_default_fit_U<U>[_rule].json``
(L-BFGS) by default, is summarised in ``docs/benchmarks/profile.md``, whose
tables ``--tables FILE ...`` prints from result files (the Newton counters
where a file has them); ``--summarise FILE`` recomputes a file's derived
figures (passes, flops, floor) from its counts.
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
# the minimiser ``--method lbfgs`` names (scipy's L-BFGS, an override of the
# estimator's default); ``--method newton`` names none: the default's own
PRIMAL_METHOD = "lbfgs"
METHODS = ("newton", "lbfgs")
SOLVE = "solver: stage loop (other)"
# the Newton phases (weakkernels._dsg.newton)
NEWTON = "Newton: iteration loop (other)"
N_START = "Newton: outputs at a solve's start (other)"
N_GRAD = "Newton: value + gradient (other)"
N_SEARCH = "Newton: line search (other)"
N_CURV = "Newton: curvature on the Hessian sample (other)"
N_HPROD = "Newton: Hessian-vector products (other)"
N_CG = "Newton: conjugate gradients' own work"
N_HSETS = "Newton: Hessian sample set-up (other)"
# the Newton phase a product runs in, by the innermost one that encloses it
N_CONTEXT = {N_HPROD: "Hessian products", N_CURV: "curvature",
             N_SEARCH: "line search", N_GRAD: "gradient",
             N_START: "start outputs"}
# the Newton counters of a stage (summed over its solves)
NEWTON_COUNTS = ("newton_solves", "newton_nit", "newton_capped",
                 "newton_above_tol", "cg_systems", "cg_steps", "cg_capped",
                 "curvatures", "gradient_evaluations", "line_searches",
                 "line_search_losses", "line_search_backtracked",
                 "line_search_failed", "newton_rows_forward",
                 "newton_rows_backward", "hessian_rows_forward",
                 "hessian_rows_backward", "loss_rows", "curvature_sets_flat",
                 "curvature_rows_flat")


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

    def wrap(self, owner, name, label, flops=None, after=None, before=None):
        """Time ``owner.name`` under ``label`` (a string, or a function of
        the call's arguments); ``flops(*args)`` counts its flops,
        ``before(*args)`` sees the call's arguments before it runs,
        ``after((cpu, wall), result, *args)`` sees its inclusive seconds and
        its result."""
        orig = getattr(owner, name)
        spy = self

        def wrapper(*args, **kwargs):
            lab = label(*args, **kwargs) if callable(label) else label
            if before is not None:
                before(*args, **kwargs)
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

    def innermost(self, labels):
        """The innermost of ``labels`` enclosing the current call (None:
        none does)."""
        for frame in reversed(self._stack):
            if frame[2] in labels:
                return frame[2]
        return None

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
        self._n_products = 0  # Hessian-vector products, over the fit
        self._cg_from = 0
        self.est = None  # the estimator fitted (its selection_)

    def key(self, solver, w):
        return f"{self.fit}|level{solver.cur['level']}|w={float(w):g}"

    def begin_fit(self, problem):
        if problem.select is not None:
            holdout = getattr(self.est, "selection_", None) == "holdout"
            self.fit = "holdout" if holdout else f"cv_fold{self._n_fold}"
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

    # -- truncated Newton (weakkernels._dsg.newton) ------------------------
    def _add(self, holder, **counts):
        """Add ``counts`` to the stage of ``holder`` (an ``_Outputs`` or a
        ``_Hessian``: its solver and weight)."""
        st = self.stages[self.key(holder.solver, holder.w)]
        for k, v in counts.items():
            st[k] = st.get(k, 0) + int(v)
        return st

    def newton_solved(self, res, solver, z, w, max_iter, gtol):
        """After ``newton_minimize``: its iterations, and where it stopped
        (at its cap ``max_iter``, or above ``gtol`` before it)."""
        st = self.stages[self.key(solver, w)]
        above = res.gnorm > gtol
        capped = above and res.nit >= max_iter
        for k, v in (("newton_solves", 1), ("newton_nit", res.nit),
                     ("newton_capped", capped), ("newton_above_tol", above)):
            st[k] = st.get(k, 0) + int(v)
        # per solve: iterations, the cap, the final gradient over its tolerance
        st.setdefault("newton_solve_list", []).append(
            [int(res.nit), int(max_iter), float(res.gnorm / max(gtol, 1e-300))])

    @staticmethod
    def _set_rows(out):
        return sum(ps.m for _, ps in out.sets)

    def newton_start(self, out):
        """``_Outputs.__init__``: a forward product on every row it keeps."""
        self._add(out, newton_rows_forward=self._set_rows(out))

    def newton_gradient(self, out):
        """``value_and_gradient``: the loss on the kept outputs and a
        backward product on every row."""
        rows = self._set_rows(out)
        self._add(out, gradient_evaluations=1, newton_rows_backward=rows,
                  loss_rows=rows)

    def newton_search(self, out, t):
        """``search``: the direction's forward product on every row; ``t``
        the step taken (None: no decrease)."""
        self._add(out, line_searches=1, newton_rows_forward=self._set_rows(out),
                  line_search_failed=t is None,
                  line_search_backtracked=t is not None and t < 1.0)

    def newton_trial(self, out):
        """A trial step's loss in the line search (on the kept outputs)."""
        self._add(out, line_search_losses=1, loss_rows=self._set_rows(out))

    def curvature(self, hess):
        """``_Hessian.at``: a forward product on the Hessian's sample."""
        flat = [hs.m for (_, hs, _), c in zip(hess.sets, hess.curv, strict=True)
                if c is None]
        self._add(hess, curvatures=1, hessian_rows_forward=sum(
            hs.m for _, hs, _ in hess.sets),
            # sets whose curvature was zero on every row (skipped by the
            # products: their forward product here bought nothing)
            curvature_sets_flat=len(flat), curvature_rows_flat=sum(flat))

    def hessian_product(self, hess):
        """``_Hessian.product``: a forward and a backward product on the
        sample's sets that have curvature."""
        rows = sum(hs.m for (_, hs, _), c in zip(hess.sets, hess.curv, strict=True)
                   if c is not None)
        self._n_products += 1
        self._add(hess, cg_steps=1, hessian_rows_forward=rows,
                  hessian_rows_backward=rows)

    def cg_begin(self, *args, **kwargs):
        self._cg_from = self._n_products

    def cg_done(self, product, b, rtol, max_iter):
        """After ``_conjugate_gradients`` (``product``: a ``_Hessian``'s
        bound ``damped``): one system, at its step cap or not."""
        steps = self._n_products - self._cg_from
        st = self._add(product.__self__, cg_systems=1,
                       cg_capped=steps >= max_iter)
        st["cg_max_steps"] = max(st.get("cg_max_steps", 0), steps)


def instrument(spy: Spy, counters: Counters) -> None:
    """Wrap the fit's phases (see the module docstring)."""
    import scipy.optimize

    from weakkernels import _base, tsgs3vm
    from weakkernels._dsg import chunks, newton, primal
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
    def in_newton(base, contexts=N_CONTEXT):
        """``base``, or ``base [Newton: <phase>]`` inside a Newton phase of
        ``contexts``."""
        def label(*a, **k):
            ctx = spy.innermost(contexts)
            return base if ctx is None else f"{base} [Newton: {contexts[ctx]}]"
        return label

    # features built by hessian_sets: the Hessian's own sample of a set
    sample = {N_HSETS: "Hessian sample"}

    spy.wrap(NystromSpec, "_kernel",
             in_newton("features: k(X, Z) (distances + exp)", sample),
             flops=kflops)
    spy.wrap(NystromSpec, "features",
             in_newton("features: row whitening k(X, Z) L^-T", sample),
             flops=wflops)
    spy.wrap(chunks, "primal_chunk", in_newton("features: chunk (other)", sample))
    spy.wrap(chunks, "chunk_forward", in_newton("products: forward P v"),
             flops=prod_flops)
    spy.wrap(chunks, "chunk_backward", in_newton("products: backward P^T g"),
             flops=prod_flops)
    spy.wrap(chunks, "fused_chunk", "products: fused pass (other)")
    spy.wrap(chunks.RowLoss, "__call__", "loss: K one-vs-rest outputs")
    spy.wrap(chunks.Whitening, "lift", "whitening of coefficients T v",
             flops=white_flops)
    spy.wrap(chunks.Whitening, "lower", "whitening of gradients T' g",
             flops=white_flops)
    spy.wrap(chunks._PrimalSet, "mean", "solver: feature means (balance)")

    # truncated Newton: newton_minimize as primal calls it (its own name
    # there), the classes' methods and the conjugate gradients (a global of
    # the newton module, looked up at each call)
    spy.wrap(primal, "newton_minimize", NEWTON,
             after=lambda t, res, *a: counters.newton_solved(res, *a))
    spy.wrap(newton._Outputs, "__init__", N_START,
             after=lambda t, out, self, *a: counters.newton_start(self))
    spy.wrap(newton._Outputs, "value_and_gradient", N_GRAD,
             after=lambda t, out, self: counters.newton_gradient(self))
    spy.wrap(newton._Outputs, "search", N_SEARCH,
             after=lambda t, out, self, *a: counters.newton_search(self, out))
    spy.wrap(newton._Outputs, "_loss",
             lambda *a: ("loss: K one-vs-rest outputs [Newton: line-search "
                         "trials]" if spy.inside(N_SEARCH) else
                         "loss: K one-vs-rest outputs [Newton: at the iterate]"),
             after=lambda t, out, self, *a: (counters.newton_trial(self)
                                             if spy.inside(N_SEARCH) else None))
    spy.wrap(newton._Hessian, "at", N_CURV,
             after=lambda t, out, self, z: counters.curvature(self))
    spy.wrap(newton._Hessian, "product", N_HPROD,
             after=lambda t, out, self, d: counters.hessian_product(self))
    spy.wrap(newton, "_conjugate_gradients", N_CG, before=counters.cg_begin,
             after=lambda t, out, *a: counters.cg_done(*a))
    spy.wrap(PrimalSolver, "hessian_sets", N_HSETS)


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
    counters.est = est
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
        for c in NEWTON_COUNTS:  # (a Newton fit's)
            if c in v:
                f[c] = f.get(c, 0) + v[c]
        if "newton_solve_list" in v:
            f["newton_max_nit"] = max(f.get("newton_max_nit", 0),
                                      *(n for n, _, _ in v["newton_solve_list"]))
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
    stages = rec["stages"]
    evals = sum(v["evaluations"] for v in stages.values())
    rows = sum(v["rows_read"] for v in stages.values())

    def total(c):
        return sum(v.get(c, 0) for v in stages.values())

    # a pass: a row read forward and backward (see the module docstring)
    newton_rows = total("newton_rows_forward") + total("newton_rows_backward")
    hessian_rows = total("hessian_rows_forward") + total("hessian_rows_backward")
    passes = (rows + 0.5 * (newton_rows + hessian_rows)) / n
    fl = floor(n, m, d, K, passes, rec["gemm_rates"])
    # k(X, Z): the levels' and the rest, and the Newton Hessian's own sample
    kname = "features: k(X, Z) (distances + exp)"
    kernel = {"flops": sum(ph["flops"] for name, ph in rec["phases"].items()
                           if name.startswith(kname))}
    sample = rec["phases"].get(f"{kname} [Newton: Hessian sample]")
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
        **({"kernel_rows_hessian_sample": sample["flops"] / (2.0 * m * d)}
           if sample and m else {}),
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
        **(_newton_summary(rec, n, rows, newton_rows, hessian_rows)
           if total("newton_solves") else {}),
    }


def _newton_summary(rec: dict, n: int, rows: int, newton_rows: int,
                    hessian_rows: int) -> dict:
    """The Newton counters of a fit, summed, and its passes by purpose."""
    stages = rec["stages"]
    out = {c: sum(v.get(c, 0) for v in stages.values()) for c in NEWTON_COUNTS}
    out["cg_max_steps"] = max(v.get("cg_max_steps", 0) for v in stages.values())
    # per solve: the iterations, by fit kind (the candidates' and the final)
    solves = defaultdict(list)
    for key, v in stages.items():
        kind = "final" if key.startswith("final|") else "candidates"
        solves[kind] += v.get("newton_solve_list", [])
    out["newton_solves_by_kind"] = {
        kind: {"solves": len(ls), "iterations": sum(s[0] for s in ls),
               "max_iterations": max(s[0] for s in ls),
               "caps": sorted({s[1] for s in ls}),
               "at_cap_above_tol": sum(s[0] >= s[1] and s[2] > 1 for s in ls),
               "above_tol": sum(s[2] > 1 for s in ls)}
        for kind, ls in sorted(solves.items()) if ls}
    out["passes_by_purpose"] = {
        "objective evaluations (fused)": rows / n,
        "Newton: start outputs, line-search directions, gradients":
            0.5 * newton_rows / n,
        "Newton: Hessian sample (curvature + Hessian-vector products)":
            0.5 * hessian_rows / n}
    out["reads_of_the_features"] = (rows + newton_rows + hessian_rows) / n
    return out


def _max_iter(est) -> int:
    """L-BFGS iterations per solve the fit allowed."""
    from weakkernels._options import options_of

    return int(est.max_iter or options_of(est).lbfgs_max_iter)


def _newton_options(est) -> dict:
    """The Newton options of the fit (what the default runs with)."""
    from weakkernels._options import options_of

    o = options_of(est)
    return {k: getattr(o, k) for k in (
        "primal_method", "newton_max_iter", "newton_finish",
        "selection_newton_max_iter", "newton_cg_max_iter", "newton_cg_tol",
        "newton_hessian_rows")}


def _capped(rec: dict) -> int:
    """Solves stopped at the iteration cap (from the counts of a record
    made before ``capped`` was counted: a single solve at the cap)."""
    cap = rec["fitted"].get("lbfgs_max_iter")
    return sum(st["capped"] if "capped" in st
               else int(cap is not None and st["solves"] == 1 and st["nit"] >= cap)
               for st in rec["stages"].values())


def _method(rec: dict) -> str:
    """The minimiser a record profiled (records older than ``--method``
    are L-BFGS's)."""
    return rec.get("method", "lbfgs")


def _newton(rec: dict) -> bool:
    """Whether a record has Newton solves."""
    return "newton_solves" in rec["summary"]


def _label(rec: dict) -> str:
    p = rec["protocol"]
    # (the rule's older records: validation_fraction=None, as it was spelt)
    rule = any(f"{k}=None" in p["estimator"]
               for k in ("selection", "validation_fraction"))
    method = ", Newton" if _method(rec) == "newton" else ""
    return f"U = {p['n_unlabeled']} ({'rule' if rule else 'default'}{method})"


def _stage_passes(st: dict, n: int) -> float:
    """A stage's passes of the features (see the module docstring)."""
    half = sum(st.get(c, 0) for c in ("newton_rows_forward",
                                      "newton_rows_backward",
                                      "hessian_rows_forward",
                                      "hessian_rows_backward"))
    return (st["rows_read"] + 0.5 * half) / n


def _newton_rows(row, sm) -> None:
    """The summary table's Newton rows (``row(name, fn)``; ``sm(r)``: a
    record's summary)."""
    def nw(fn):
        return lambda r: fn(sm(r), r) if _newton(r) else ""

    def by_kind(s, key):
        kinds = s["newton_solves_by_kind"]
        return " / ".join(f"{kinds[k][key]}" if k in kinds else "-"
                          for k in ("candidates", "final"))

    row("Newton solves / at the iteration cap / above tolerance before it",
        nw(lambda s, r: f"{s['newton_solves']} / {s['newton_capped']} / "
                        f"{s['newton_above_tol'] - s['newton_capped']}"))
    row("Newton iterations", nw(lambda s, r: f"{s['newton_nit']:,}"))
    row("Newton iterations per solve, max: candidates / final",
        nw(lambda s, r: by_kind(s, "max_iterations")))
    row("Newton iteration caps: candidates / final", nw(lambda s, r: " / ".join(
        ",".join(map(str, s["newton_solves_by_kind"][k]["caps"]))
        if k in s["newton_solves_by_kind"] else "-"
        for k in ("candidates", "final"))))
    row("solves at the cap: candidates / final",
        nw(lambda s, r: by_kind(s, "at_cap_above_tol")))
    row("CG steps = Hessian-vector products",
        nw(lambda s, r: f"{s['cg_steps']:,}"))
    row("CG steps per Newton iteration",
        nw(lambda s, r: f"{s['cg_steps'] / max(s['newton_nit'], 1):.1f}"))
    row("CG systems / at the step cap (max steps)",
        nw(lambda s, r: f"{s['cg_systems']} / {s['cg_capped']} "
                        f"(cap {r['fitted'].get('newton_cg_max_iter')}, "
                        f"max {s['cg_max_steps']})"))
    row("rows per Hessian-vector product (mean)",
        nw(lambda s, r: f"{s['hessian_rows_backward'] / max(s['cg_steps'], 1):,.0f}"))
    row("gradient evaluations / curvature evaluations",
        nw(lambda s, r: f"{s['gradient_evaluations']:,} / {s['curvatures']:,}"))
    row("k(X, Z) rows of the Hessian's own samples",
        nw(lambda s, r: f"{s.get('kernel_rows_hessian_sample', 0):,.0f}"))
    row("curvature: set evaluations all zero / their rows read",
        nw(lambda s, r: f"{s['curvature_sets_flat']} / "
                        f"{s['curvature_rows_flat']:,}"))
    row("line searches / trial losses / backtracked / failed",
        nw(lambda s, r: f"{s['line_searches']:,} / {s['line_search_losses']:,}"
                        f" / {s['line_search_backtracked']}"
                        f" / {s['line_search_failed']}"))
    for label, key in (
            ("passes: objective evaluations (stage starts)",
             "objective evaluations (fused)"),
            ("passes: Newton start outputs, directions, gradients",
             "Newton: start outputs, line-search directions, gradients"),
            ("passes: Hessian sample (curvature + products)",
             "Newton: Hessian sample (curvature + Hessian-vector products)")):
        row(label, nw(lambda s, r, key=key: f"{s['passes_by_purpose'][key]:.0f}"))
    row("reads of the features (each product's rows / n)",
        nw(lambda s, r: f"{s['reads_of_the_features']:.0f}"))


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
    any_newton = any(_newton(r) for r in recs)
    any_lbfgs = any(_method(r) == "lbfgs"
                    or any(st["solves"] for st in r["stages"].values())
                    for r in recs)
    if any_newton:
        row("minimiser", lambda r: "Newton (default options)"
            if _method(r) == "newton" else "L-BFGS (primal_method=\"lbfgs\")")
    row("solver fits (folds + final)", lambda r: str(len(r["fits"])))
    row("objective evaluations", lambda r: f"{sm(r)['objective_evaluations']:,}")
    if any_lbfgs:
        row("L-BFGS iterations", lambda r: f"{sm(r)['lbfgs_iterations']:,}")
        row("L-BFGS solves / at the iteration cap",
            lambda r: f"{sum(st['solves'] for st in r['stages'].values())} / "
                      f"{_capped(r)} (cap {r['fitted'].get('lbfgs_max_iter')})")
    if any_newton:
        _newton_rows(row, sm)
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
        if _newton(r):
            out += [_newton_stages(r), ""]
            continue
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


def _newton_stages(r: dict) -> str:
    """The stage table of a Newton record (the folds' stages summed)."""
    n = r["summary"]["n_rows"]
    lines = [f"**{_label(r)}**: stages (level rows, weight of C*; the "
             "candidates' fits summed)", "",
             "| fit | level rows | w | solves | Newton iterations (per solve) "
             "| at the cap | CG steps | line-search trial losses "
             "| objective evaluations | passes | CPU s | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    agg = {}
    for key, st in r["stages"].items():
        fit, level, w = key.split("|")
        fit = "cv folds" if fit.startswith("cv_fold") else fit
        f0 = next(f for f in r["fits"] if f["fit"] == key.split("|")[0])
        lrows = f0["level_rows"][int(level.removeprefix("level"))]
        a = agg.setdefault((fit, lrows, w), {
            "solves": [], "cg_steps": 0, "line_search_losses": 0,
            "evaluations": 0, "passes": 0.0, "cpu": 0.0, "wall": 0.0})
        a["solves"] += st.get("newton_solve_list", [])
        for c in ("cg_steps", "line_search_losses", "evaluations", "cpu", "wall"):
            a[c] += st.get(c, 0)
        a["passes"] += _stage_passes(st, n)
    for (fit, lrows, w), a in agg.items():
        its = [s[0] for s in a["solves"]]
        each = ("" if not its else f" ({its[0]} each)" if min(its) == max(its)
                else f" ({min(its)}-{max(its)})")
        capped = sum(s[0] >= s[1] and s[2] > 1 for s in a["solves"])
        cap = ",".join(str(c) for c in sorted({s[1] for s in a["solves"]}))
        lines.append(
            f"| {fit} | {lrows:,} | {w.removeprefix('w=')} | {len(its)} | "
            f"{sum(its):,}{each} | {capped} (cap {cap or '-'}) | "
            f"{a['cg_steps']:,} | {a['line_search_losses']:,} | "
            f"{a['evaluations']:,} | {a['passes']:,.0f} | {a['cpu']:.1f} | "
            f"{a['wall']:.1f} |")
    return "\n".join(lines)


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
    ap.add_argument("--method", choices=METHODS, default="newton",
                    help="the primal minimiser: newton, the estimator's "
                         "default options (no override; the default), or "
                         'lbfgs, SolverOptions(primal_method="lbfgs")')
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
    if a.method == "lbfgs":  # Newton: the estimator's own default options
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
                               + (", solver_options=SolverOptions("
                                  f"primal_method={PRIMAL_METHOD!r})"
                                  if a.method == "lbfgs" else "") + ")"},
        method=a.method,
        fitted={"C_star_": float(est.C_star_),
                "lbfgs_max_iter": _max_iter(est),
                **_newton_options(est),
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
    out = a.out or RESULTS / ("profile_default_fit_"
                              + ("newton_" if a.method == "newton" else "")
                              + f"U{a.n_unlabeled}"
                              + ("_rule" if a.rule else "") + ".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rec, indent=1, default=float) + "\n")
    s = rec["summary"]
    print(f"fit {rec['fit_cpu_s']:.1f} s CPU ({rec['fit_wall_s']:.1f} s wall), "
          f"m = {s['landmarks']}, {s['objective_evaluations']} evaluations, "
          f"{s['passes_of_the_features']:.1f} passes, floor "
          f"{s['floor']['floor_cpu_s']:.2f} s "
          f"({100 * s['fraction_above_floor']:.1f} % above); -> {out}")
    if "newton_solves" in s:
        print(f"  Newton: {s['newton_solves']} solves ({s['newton_capped']} at "
              f"the cap), {s['newton_nit']} iterations, {s['cg_steps']} CG "
              f"steps, {s['line_search_losses']} line-search trial losses; "
              f"exclusive phases sum to "
              f"{sum(ph['cpu_s'] for ph in rec['phases'].values()):.1f} s")
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
