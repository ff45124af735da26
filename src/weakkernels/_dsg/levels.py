"""The growing nested samples of the primal solver and their tolerances."""

from __future__ import annotations

import numpy as np

from weakkernels._options import DEFAULT_OPTIONS, SolverOptions


def primal_levels(sizes, seed: int, held_rows: int | None = None,
                  opts: SolverOptions = DEFAULT_OPTIONS) -> list:
    """The growing seeded samples of ``solver="lbfgs"``: a list of levels,
    each a list of per-set sorted row indices (None: all rows of the set).

    Level 0 holds at most ``opts.primal_start_rows`` rows of each set, every
    next level ``opts.primal_growth`` times more, the last one every row. The
    samples are nested (prefixes of one seeded permutation per set), so each
    level refines the previous level's estimate of the same objective.

    The first sampled level of more than ``held_rows`` rows in all (None: no
    bound) is the last sampled one: the next holds every row. Past the held
    bound every evaluation streams its features and costs its row count, so
    the levels between would add a third of the final level's passes
    (``sum 4^-k``) to a start that the first of them already brings within
    the sampling noise.

    A sampled level of more than ``opts.primal_merge_fraction`` of the next
    level's rows is dropped (200 labeled and 4 800 unlabeled rows: level 0
    would hold 4 296 of the 5 000, so the fit has one level, every row).
    """
    perms = [None if n <= opts.primal_start_rows else np.random.Generator(
        np.random.Philox(key=seed + 3 + s)).permutation(n)
        for s, n in enumerate(sizes)]
    levels, m = [], opts.primal_start_rows
    while True:
        level = [None if p is None or m >= n else np.sort(p[:m])
                 for p, n in zip(perms, sizes, strict=True)]
        levels.append(level)
        if all(i is None for i in level):
            break
        if held_rows is not None and level_rows(sizes, level) > held_rows:
            levels.append([None] * len(sizes))
            break
        m *= opts.primal_growth
    rows = [level_rows(sizes, level) for level in levels]
    return [level for k, level in enumerate(levels)
            if k + 1 == len(levels)
            or rows[k] <= opts.primal_merge_fraction * rows[k + 1]]


def level_rows(sizes, level) -> int:
    """Rows of a :func:`primal_levels` level over all sets."""
    return sum(n if i is None else i.size for n, i in zip(sizes, level, strict=True))


def _set_variances(sizes, level) -> list:
    """Per set, ``(n - m) / (n m)``: the variance of the scaled-to-full sample
    sum of :func:`primal_levels`' ``level`` (without replacement, in units of
    the set's per-row variance; 0 for a whole set)."""
    return [0.0 if i is None else (n - i.size) / (n * i.size)
            for n, i in zip(sizes, level, strict=True)]


def level_gtol(gtol: float, g_start: float, sizes, coarse, fine,
               fraction: float) -> float:
    """The gradient tolerance of level ``fine`` warm-started from the solution
    of the nested level ``coarse`` (:func:`primal_levels`).

    ``g_start`` is the max-norm of ``fine``'s gradient at that start. The
    start is (nearly) stationary on ``coarse``, so ``g_start`` measures the
    difference of the two samples' gradients: per set, variance ``s^2 (V_c
    - V_f)`` for nested samples, where ``fine``'s own sampling noise is
    ``s^2 V_f`` (``V`` from :func:`_set_variances`, ``s`` the set's unknown
    per-row spread). Summed over the sets, the noise is at least ``g_start
    sqrt(min_s V_f / (V_c - V_f))`` -- exactly that when one set is sampled
    (MNIST's and ijcnn1's unlabeled rows) -- and the level stops at
    ``fraction`` of it, never below ``gtol``. A set that is sampled on
    ``coarse`` and whole on ``fine`` (ratio 0: its share of ``g_start`` was
    all sampling error, none left), the last level (every row) and
    ``fraction = 0`` keep ``gtol``.
    """
    ratios = [vf / (vc - vf) for vc, vf in zip(_set_variances(sizes, coarse),
                                               _set_variances(sizes, fine),
                                               strict=True) if vc > vf]
    if fraction <= 0 or not ratios or min(ratios) <= 0:
        return gtol
    return max(gtol, fraction * g_start * float(np.sqrt(min(ratios))))
