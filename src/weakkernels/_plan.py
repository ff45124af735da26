"""Pre-fit plans of every estimator: from the shapes and the parameters
alone, before anything is allocated, the bytes a fit will hold and the steps
it will take (:func:`plan_fit` for the random-feature estimators TSGS3VM,
FRS3VM, TSGSU and QSGS2AUC, :func:`plan_kernel_fit` for the exact-kernel
CCCP-TSVM and RampSVM).

A plan that does not fit in the memory this process may use
(:func:`weakkernels._validation.available_memory`: the memory the OS reports
available, lowered by ``ulimit -v`` / ``-d`` and the cgroup's
``memory.max``) is refused with a ``ValueError`` naming the parameter that
set its size and the numbers, as scikit-learn refuses a bad parameter at
``fit``; numpy's unnamed ``MemoryError`` (or the kernel's OOM killer) is never
reached for the sizes planned here. A one-vs-rest plan whose coefficients are
far more than usual warns (:class:`~weakkernels._validation.PlanWarning`)
with the class count and the coefficients it will hold.

What is counted (the terms that grow with a size parameter; the interpreter,
numba and the input itself are not):

* the basis: Fourier frequencies ``d x D`` (``degree x d x D`` for the
  polynomial kernel) in the feature dtype, or Nystroem landmarks ``m x d``
  and two ``m x m`` float64 matrices (``K_ZZ``, its Cholesky factor);
* the coefficients: ``K x D`` per one-vs-rest output; L-BFGS holds
  :data:`LBFGS_VECTORS` float64 values per coefficient, the direct solve of
  TSGSU a ``D x D`` system;
* the outputs: :data:`OUTPUT_COPIES` float64 values per row and output for
  the L-BFGS objective;
* the features in flight: one chunk of ``primal_chunk_rows x D`` per thread
  (L-BFGS; a level's held feature matrix is sized by the solver within a
  quarter of the available memory, ``primal_cache_bytes``) or one minibatch
  block (SGD).

``solver="sgd"`` adds one block of ``block_size`` features per step up to the
feature budget, so an unbounded budget is as large as the planned steps
(``n_passes`` / ``max_iter`` / ``min_iter``, capped at
``SolverOptions.sgd_max_steps`` with a ``ConvergenceWarning``).

The exact-kernel machines hold their kernel cache (``cache_size``, by default
a fraction of the available memory, at most the full matrix), the rows twice
(the input and the solver's ordered copy), :data:`SMO_VECTORS` float64
vectors per dual variable for each problem solved at once (``n_jobs``) and
the solutions of the one-vs-rest problems.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numba
import numpy as np
from joblib import effective_n_jobs

from weakkernels._dsg import (
    nystroem_size,
    primal_cache_bytes,
    resolve_basis,
)
from weakkernels._options import options_of
from weakkernels._smo import cache_rows, default_cache_mb
from weakkernels._validation import PlanWarning, available_memory, size_text

# float64 values L-BFGS holds per coefficient: scipy's L-BFGS-B keeps
# (2 maxcor + 5) n values with its default maxcor = 10 (25 n), the solver its
# iterate, gradient and back-propagated sums (D x K each) and their copies
LBFGS_VECTORS = 32
# float64 outputs per row and output the L-BFGS objective holds at once (the
# outputs, the pointwise gradient, the losses' temporaries)
OUTPUT_COPIES = 4
# a one-vs-rest L-BFGS fit over more coefficients than this warns: scipy's
# L-BFGS-B costs O(maxcor x coefficients) per iteration on one core besides
# the objective (300 classes x 800 landmarks, 2.4e5 coefficients: ~2 minutes,
# most of it in L-BFGS-B itself); MNIST's default is 10 x 5 920 = 5.9e4
ONE_VS_REST_WARN_COEFFICIENTS = 1 << 17
# solver="sgd": a plan of more steps than this warns, naming them (each step
# is a Python-level iteration; see RELIABILITY.md, "Bounds checked before the
# fit", for what a step cost there); the hard cap is SolverOptions.sgd_max_steps
SGD_WARN_STEPS = 1 << 20
# float64 vectors the SMO solver and the CCCP loop hold per dual variable of
# a problem (alpha, gradient, G_bar, targets, caps, beta, the active set, ...)
SMO_VECTORS = 12


@dataclass(frozen=True)
class FitPlan:
    """What one fit will hold and do, from shapes and parameters.

    ``parts`` are ``(what, bytes)``; ``steps`` SGD steps, L-BFGS iterations
    per annealing stage or CCCP steps per problem (an upper bound: they
    usually stop on their tolerance long before). ``size``: which parameters
    set ``n_features`` (the expansion's features, or a kernel problem's dual
    variables), ``advice``: what to change, both for the messages."""

    estimator: str
    solver: str
    basis: str
    n_rows: int
    n_features_in: int
    n_outputs: int
    n_features: int
    block_size: int
    steps: int
    parts: tuple[tuple[str, int], ...]
    size: str = ""
    advice: str = ""
    lever: str = ""
    steps_from: str = ""

    @property
    def n_bytes(self) -> int:
        return int(sum(b for _, b in self.parts))

    def describe(self) -> str:
        """``"<part> <size>, <part> <size>, ..."``, largest part first."""
        parts = sorted(self.parts, key=lambda p: -p[1])
        return ", ".join(f"{what} {size_text(b)}" for what, b in parts if b > 0)


def _basis_parts(basis: str, kernel: str, degree: int, d: int, D: int, B: int,
                 itemsize: int) -> list[tuple[str, int]]:
    if basis == "nystroem":
        return [("landmarks", D * d * 8), ("landmark kernel and its Cholesky "
                                            "factor", 2 * D * D * 8)]
    per = d * (int(degree) if kernel == "poly" else 1)
    # the expansion's copy and the solver's; a block is drawn in float64
    return [("frequencies", 2 * (per + 1) * D * itemsize),
            ("a frequency block being drawn", (per + 1) * min(B, D) * (8 + itemsize))]


def _solver_parts(solver: str, n_rows: int, K: int, D: int, itemsize: int,
                  batch_rows: int, block_size: int, opts) -> list[tuple[str, int]]:
    chunk = min(n_rows, opts.primal_chunk_rows) * D * itemsize
    if solver == "sgd":  # a step computes the features of its new block only
        return [("coefficients", 2 * K * D * itemsize),
                ("minibatch features", 2 * batch_rows * block_size * 8)]
    if solver == "direct":  # TSGSU: the normal equations of Eq. (9)
        return [("normal equations", 3 * D * D * 8), ("features in flight", chunk)]
    return [("coefficients (L-BFGS)", LBFGS_VECTORS * K * (D + 1) * 8),
            ("outputs", OUTPUT_COPIES * n_rows * K * 8),
            ("features in flight", numba.get_num_threads() * chunk),
            # a level's feature matrix, held where it fits the solver's budget
            ("held features", min(n_rows * D * itemsize, primal_cache_bytes(opts)))]


def _has_blocks(est) -> bool:
    """Whether ``block_size`` is a parameter (FRS3VM's one block is D)."""
    return "block_size" in est.get_params(deep=False)


def _feature_source(est, size_param: str, solver: str, basis: str, n: int, D: int,
                    B: int, steps: int) -> tuple[str, str]:
    """Which parameters set the planned feature count, and what to change."""
    given = getattr(est, size_param, None)
    if solver == "sgd" and given is None:
        named = ", ".join(f"{p}={getattr(est, p)!r}" for p in
                          ("n_passes", "max_iter", "min_iter") if hasattr(est, p))
        cap = options_of(est).sgd_max_steps
        return (f"solver='sgd' plans {steps} steps ({named}; at most "
                f"sgd_max_steps = {cap} run), each adding a block of "
                f"block_size={B} features: {min(steps, cap)} blocks, "
                f"{D} features ({size_param}=None sets no bound)",
                f"bound {size_param} or lower n_passes / max_iter")
    advice = f"lower {size_param}" + (
        " (or block_size)" if basis == "fourier" and _has_blocks(est) else "")
    if given is not None:
        blocks = f" (block_size={B})" if _has_blocks(est) else ""
        return f"{size_param}={given!r}{blocks} gives {D} {basis} features", advice
    return (f"the default feature count ({size_param}=None) is {D} {basis} "
            f"features for {n} rows", advice)


def plan_fit(est, *, n_rows: int, n_features_in: int, n_outputs: int,
             block_size: int, max_blocks: int, n_iter: int,
             features_given: bool, batch_rows: int = 0, n_labeled: int = 0,
             size_param: str = "max_features") -> FitPlan:
    """The plan of a random-feature fit with the layout ``fit`` chose
    (``block_size`` x ``max_blocks`` of :func:`weakkernels._dsg.
    default_blocks`, ``n_iter`` of :func:`weakkernels._dsg.iteration_budget`),
    resolving the basis as :func:`weakkernels._dsg.expansion_basis` will;
    ``n_labeled`` rows get one-vs-rest targets (TSGS3VM's ``Y``);
    ``size_param``: the estimator's feature budget, named in the messages."""
    solver, kernel = est.solver, est.kernel
    opts = options_of(est)
    B, n, d, K = int(block_size), int(n_rows), int(n_features_in), int(n_outputs)
    basis = "fourier"
    if solver == "sgd":
        # one new block per step until the budget is in
        D = B * min(int(max_blocks), max(1, min(int(n_iter), opts.sgd_max_steps)))
    else:
        D = B * int(max_blocks)
        m = D if features_given else nystroem_size(n, d, opts)
        if getattr(est, "features", "fourier") != "fourier":
            basis = resolve_basis(est.features, solver, kernel, n, d, m, opts)
        D = m if basis == "nystroem" else D
    itemsize = np.dtype(est.dtype).itemsize
    parts = (_basis_parts(basis, kernel, getattr(est, "degree", 1), d, D, B,
                          itemsize)
             + _solver_parts(solver, n, K, D, itemsize, int(batch_rows), B, opts)
             # the +-1 targets of the labeled rows per output, and their mask
             + [("targets", int(n_labeled) * K * 9)])
    size, advice = _feature_source(est, size_param, solver, basis, n, D, B,
                                   int(n_iter))
    steps_from = ", ".join(f"{p}={getattr(est, p)!r}" for p in
                           ("n_passes", "max_iter", "min_iter") if hasattr(est, p))
    return FitPlan(type(est).__name__, solver, basis, n, d, K, D, B, int(n_iter),
                   tuple(parts), f"{size} of {d} inputs", advice, size_param,
                   steps_from)


def plan_kernel_fit(est, *, n_rows: int, n_features_in: int, n_outputs: int,
                    n_variables: int, n_base: int, n_steps: int) -> FitPlan:
    """The plan of an exact-kernel fit (CCCP-TSVM, RampSVM): ``n_outputs``
    problems of ``n_variables`` dual variables each (CCCP-TSVM: the labeled
    rows, every unlabeled row twice and the balancing variable), over a
    cache of kernel rows of ``n_base`` base points (``cache_size`` or
    :func:`weakkernels._smo.default_cache_mb`), at most ``n_steps`` CCCP
    steps each."""
    n, d, K, m = int(n_rows), int(n_features_in), int(n_outputs), int(n_variables)
    dtype, base = np.dtype(est.cache_dtype), int(n_base)
    mb = (default_cache_mb(base, dtype.itemsize) if est.cache_size is None
          else float(est.cache_size))
    at_once = min(K, max(1, int(effective_n_jobs(est.n_jobs))))
    cached = cache_rows(mb, base, dtype.itemsize) * base * dtype.itemsize
    parts = (("kernel cache", cached),
             ("rows (the input and the solver's ordered copy)", 2 * n * d * 8),
             ("dual variables", at_once * SMO_VECTORS * m * 8),
             ("solutions", K * (n + m) * 8))
    return FitPlan(type(est).__name__, "smo", "kernel", n, d, K, m, 1,
                   int(n_steps), parts,
                   f"{n} rows of {d} inputs give {m} dual variables a problem",
                   "pass cache_size (MB) or fewer rows",
                   "the number of unlabeled rows")


def check_plan(est, plan: FitPlan, classes=None) -> FitPlan:
    """Refuse ``plan`` when it does not fit in :func:`available_memory`
    (``ValueError`` naming what set its size, the one-vs-rest classes and
    the numbers); warn when a one-vs-rest plan holds more than
    :data:`ONE_VS_REST_WARN_COEFFICIENTS` coefficients, or an SGD plan takes
    more than :data:`SGD_WARN_STEPS` steps. ``classes``: the
    labels per class of a multiclass fit (None otherwise). Returns
    ``plan``."""
    name, K, D = plan.estimator, plan.n_outputs, plan.n_features
    ovr = ""
    if K > 1:
        lo, hi = (0, 0) if classes is None else (int(np.min(classes)),
                                                  int(np.max(classes)))
        few = "" if classes is None else (
            f" ({int(np.sum(classes))} labels, "
            f"{lo if lo == hi else f'{lo} to {hi}'} a class)")
        ovr = (f"one-vs-rest over {K} classes{few} holds {K} x {D} = "
               f"{K * D:.3g} coefficients")
    limit = available_memory()
    if plan.n_bytes > limit:
        advice = plan.advice + (", or fit fewer classes" if K > 1 else "")
        raise ValueError(
            f"{name}: {plan.size}{'; ' + ovr if ovr else ''}: the fit needs "
            f"{size_text(plan.n_bytes)} ({plan.describe()}); at most "
            f"{size_text(limit)} fit in the memory this process may use "
            "(available memory, lowered by ulimit -v / -d and the cgroup's "
            f"memory.max): {advice}.")
    if plan.solver == "sgd" and plan.steps > SGD_WARN_STEPS:
        warnings.warn(
            f"{name}: solver='sgd' plans {plan.steps} steps ({plan.steps_from}; "
            f"at most sgd_max_steps = {options_of(est).sgd_max_steps} run) over "
            f"{plan.n_rows} "
            f"rows and up to {D} features: expect hours. Lower n_passes or "
            "max_iter.", PlanWarning, stacklevel=3)
    if K > 1 and plan.solver != "sgd" and K * D > ONE_VS_REST_WARN_COEFFICIENTS:
        steps = ("L-BFGS iterations a stage" if plan.solver != "smo"
                 else "CCCP steps a problem")
        warnings.warn(
            f"{name}: {ovr} ({size_text(plan.n_bytes)} planned), each of up to "
            f"{plan.steps} {steps} updating all of them: expect minutes to "
            f"hours. Lower {plan.lever}, or merge classes.",
            PlanWarning, stacklevel=3)
    return plan
