"""Model selection shared by the estimators, the pipeline's tuner and the
benchmarks: paper 004's C* rule, the C* candidates, and the one-standard-error
rule that keeps a reference machine unless a candidate's gain is resolved.

NumPy only, below the solvers and the estimators, so that every layer above
(the exact-kernel machines, the pipeline) reads these rules without importing
the stochastic solver.
"""

from __future__ import annotations

import numpy as np

# The C* candidates of a held-out or cross-validated choice, as multiples of
# paper 004's rule; the annealing path of the choice solves them in this order,
# each from the previous solution, and 0 is the supervised machine.
SELECT_STAGES = (0.0, 0.1, 1.0, 3.0, 10.0)


def c_star_rule(C: float, n_labeled: int, n_unlabeled: int) -> float:
    """Paper 004's default weight of the unlabeled term, ``C * L / U``
    (Collobert et al. 2006, Sec. 1.5; paper 000 Sec. 6): per-point weights
    under which the unlabeled term as a whole weighs as much as the labeled
    one. ``U`` is taken as at least 1.

    Examples
    --------
    >>> c_star_rule(10.0, 100, 900)
    1.1111111111111112
    """
    return C * n_labeled / max(n_unlabeled, 1)


def one_se_better(wrong, wrong_ref) -> tuple[bool, float, float]:
    """Whether a candidate beats a reference by more than one standard error
    of the paired difference of their per-point errors on the same validation
    points; returns ``(better, mean difference, standard error)``.

    The one-standard-error rule of Hastie, Tibshirani & Friedman (ESL 2nd
    ed., Sec. 7.10), read as "keep the simpler model unless the evidence is
    one SE strong"; paired, because both are scored on the same points, so
    the noise they share (the hard points) cancels. A tie keeps the
    reference -- and one point of difference is always a tie: with a single
    nonzero d_i the mean and the SE are both 1/n, so the comparison carries a
    relative margin instead of leaving it to the last bit of rounding."""
    d = np.asarray(wrong, float) - np.asarray(wrong_ref, float)
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    return bool(-d.mean() > se * (1 + 1e-9)), float(d.mean()), se


def one_se_stage(errors, ref: int = 0) -> int:
    """The annealing stage to keep from per-row errors on held-out rows.

    ``errors[j]`` (m,) are stage ``j``'s 0/1 errors on the same rows, stage
    ``ref`` the reference: by default stage 0, the supervised machine
    (C* = 0). Another stage is kept only if it beats the reference by more
    than one standard error of the paired difference (:func:`one_se_better`),
    and among those the one with the fewest errors (the first on ties).
    Paper 004 chooses C* on a labeled validation set; the rule keeps the
    supervised machine unless the unlabeled term's gain is resolved, because
    on data without cluster structure that term only costs. A cross-validated
    choice on a few labels takes paper 004's rule as the reference instead
    (``ref`` its stage): few labels resolve a collapse of the rule, not the
    smaller gain of the unlabeled term.
    """
    best, best_err = ref, np.inf
    if np.size(errors[ref]) < 2:
        return ref  # no standard error: nothing is resolved
    for j in range(len(errors)):
        err = float(np.mean(errors[j]))
        if j != ref and one_se_better(errors[j], errors[ref])[0] and err < best_err:
            best, best_err = j, err
    return best
