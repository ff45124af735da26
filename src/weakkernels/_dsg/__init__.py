"""The random-feature solvers of TSGS3VM, FRS3VM, TSGSU and QSG-S2AUC.

One dispatch, :func:`fit_expansion`, trains the expansion of a
:class:`~weakkernels._dsg.problem.Problem` (the estimator's point sets and
loss) by one of the solvers:

* :mod:`~weakkernels._dsg.sgd` -- the papers' doubly (triply, quadruply)
  stochastic functional gradients, ``solver="sgd"``;
* :mod:`~weakkernels._dsg.primal` -- L-BFGS in the primal of a fixed
  expansion on growing nested samples (:mod:`~weakkernels._dsg.levels`),
  chunk by chunk (:mod:`~weakkernels._dsg.chunks`), ``solver="lbfgs"``;
* :mod:`~weakkernels._dsg.direct` -- the normal equations of a quadratic
  loss (TSGSU's ``solver="direct"``).

The expansion and its fitted state are in :mod:`~weakkernels._dsg.model`, its
size and basis in :mod:`~weakkernels._dsg.layout`; every tunable of the
solvers is a field of :class:`weakkernels.SolverOptions`, carried by the
problem. The names the estimators, ``_dask`` and the tests use are
re-exported here.
"""

from __future__ import annotations

import warnings

from sklearn.exceptions import ConvergenceWarning

from weakkernels._dsg.chunks import (
    _BLOCK_BYTES,
    RowLoss,
    Whitening,
    _PrimalSet,
    add_in_order,
    chunk_backward,
    chunk_forward,
    fused_chunk,
    fused_zeros,
    moment_terms,
    primal_cache_bytes,
    primal_chunk,
)
from weakkernels._dsg.direct import solve_quadratic
from weakkernels._dsg.layout import (
    BASIS_CONSTRAINTS,
    DSG_CONSTRAINTS,
    EXPANSION_CONSTRAINTS,
    SOLVERS,
    check_feature_memory,
    default_blocks,
    expansion_basis,
    feature_layout,
    iteration_budget,
    nystroem_landmarks,
    nystroem_size,
    primal_features,
    resolve_basis,
)
from weakkernels._dsg.levels import level_gtol, level_rows, primal_levels
from weakkernels._dsg.model import (
    Expansion,
    FunctionalModel,
    callback_monitor,
    expansion_state,
    seeded_sample,
    set_expansion_state,
)
from weakkernels._dsg.primal import PrimalSolver, fit_primal
from weakkernels._dsg.problem import Problem, release_mapped_rows
from weakkernels._dsg.sgd import (
    SCHEDULES,
    _fit_sgd,
    check_sgd_curve,
    sgd_tail,
    step_size,
)
from weakkernels._selection import one_se_stage
from weakkernels.random_features import FeatureSpec

__all__ = [
    "BASIS_CONSTRAINTS", "DSG_CONSTRAINTS", "EXPANSION_CONSTRAINTS", "SCHEDULES",
    "SOLVERS", "Expansion", "FunctionalModel", "PrimalSolver", "Problem",
    "RowLoss", "Whitening", "_BLOCK_BYTES", "_PrimalSet", "_fit_sgd",
    "add_in_order", "callback_monitor", "check_feature_memory", "check_sgd_curve",
    "chunk_backward", "chunk_forward", "default_blocks", "expansion_basis",
    "expansion_state", "feature_layout", "fit_expansion", "fit_primal",
    "fused_chunk", "fused_zeros", "iteration_budget", "level_gtol", "level_rows",
    "moment_terms", "nystroem_landmarks", "nystroem_size", "one_se_stage",
    "primal_cache_bytes", "primal_chunk", "primal_features", "primal_levels",
    "release_mapped_rows", "resolve_basis", "seeded_sample", "set_expansion_state",
    "sgd_tail", "solve_quadratic", "step_size",
]


def fit_expansion(problem: Problem, spec: FeatureSpec, *, solver: str,
                  max_blocks: int, n_iter: int, batch_size, step=None,
                  anneal: float = 0.0, tol: float = 1e-5, seed: int = 0,
                  monitor=None, monitor_every: int = 10) -> Expansion:
    """Train ``f`` for ``problem`` on the seeded features of ``spec``.

    ``solver="sgd"``: the doubly stochastic functional gradient of the papers
    (paper 000 Algorithm 1 / Eq. (7), paper 002 Eq. (22), paper 003 Eq.
    (14)-(16)): ``n_iter`` steps, each on minibatches of ``batch_size`` (an int,
    or one per set) and a fresh feature block (cyclically revisited once
    ``max_blocks`` are in), with ``eta_t = step(t, n_iter)`` and
    ``f <- (1 - eta lam) f - eta grad``; the annealing weight rises linearly
    over the first ``anneal`` fraction of the steps.

    ``solver="lbfgs"``: the same objective on the fixed expansion of the first
    ``max_blocks`` seeded blocks, solved in its primal by L-BFGS (at most
    ``n_iter`` iterations per annealing stage, stopping when the projected
    gradient is below ``tol`` times its initial size). Every row counts: the
    stages run on growing nested samples up to all rows (:func:`primal_levels`),
    the objective evaluated chunk by chunk (:class:`_PrimalSet`).

    ``monitor(n_iter, model, intercept)`` is called every ``monitor_every``
    SGD steps, or after each L-BFGS stage.
    """
    # pages of a memory-mapped input read before the solve (validation, sigma)
    # or by it leave the resident set (:func:`release_mapped_rows`)
    for source, _ in problem.sets:
        release_mapped_rows(source)
    try:
        return _fit(problem, spec, solver, max_blocks, n_iter, batch_size, step,
                    anneal, tol, seed, monitor, monitor_every)
    finally:
        for source, _ in problem.sets:
            release_mapped_rows(source)


def _fit(problem, spec, solver, max_blocks, n_iter, batch_size, step, anneal, tol,
         seed, monitor, monitor_every):
    if solver == "lbfgs":
        check_feature_memory(spec, max_blocks * spec.block_size)
        return fit_primal(problem, spec, max_blocks, n_iter, anneal, tol, seed,
                          monitor)
    max_steps = problem.options.sgd_max_steps
    if n_iter > max_steps:
        warnings.warn(
            f"solver='sgd': {n_iter} steps asked (n_passes / max_iter / "
            f"min_iter); stopping at the ceiling of {max_steps} "
            "(SolverOptions.sgd_max_steps).", ConvergenceWarning, stacklevel=3)
        n_iter = max_steps
    # T steps add at most T blocks
    check_feature_memory(spec, min(max_blocks, max(int(n_iter), 1)) * spec.block_size)
    return _fit_sgd(problem, spec, max_blocks, n_iter, batch_size, step, anneal,
                    seed, monitor, monitor_every)
