"""Model selection shared by the estimators, the pipeline's tuner and the
benchmarks: paper 004's C* rule, the C* candidates, and the one-standard-error
rule that keeps a reference machine unless a candidate's gain is resolved.

NumPy only, below the solvers and the estimators, so that every layer above
(the exact-kernel machines, the pipeline) reads these rules without importing
the stochastic solver.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral

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
    on data without cluster structure that term only costs (S4VM's promise:
    Li & Zhou, ICML 2011). The estimators' cross-validated and held-out
    choices both take the supervised machine as the reference.
    """
    best, best_err = ref, np.inf
    if np.size(errors[ref]) < 2:
        return ref  # no standard error: nothing is resolved
    for j in range(len(errors)):
        err = float(np.mean(errors[j]))
        if j != ref and one_se_better(errors[j], errors[ref])[0] and err < best_err:
            best, best_err = j, err
    return best


# The estimators' ``selection="auto"`` (TSGS3VM, FRS3VM), by the size of the
# problem, as HistGradientBoosting's ``early_stopping="auto"`` validates from
# 10 000 samples on (docs/benchmarks/design_notes.md, "The estimators'
# defaults"; docs/benchmarks/solvers.md, "Model selection"):
# - from this many labels, hold out AUTO_VALIDATION_FRACTION of them: a tenth
#   of the labels resolves the differences the C* candidates make;
AUTO_VALIDATION_MIN_LABELS = 10_000
AUTO_VALIDATION_FRACTION = 0.1
# - on a problem of at most this many rows (every row a Nystrom landmark: the
#   exact kernel machine, a fit of seconds), ``cv`` folds of cross-validation
#   over the labels, with ramp_cccp one more candidate for the binary default
#   loss: where the rule falls to chance on small problems, the choice does
#   not; not above this size, where the k + 1 fits would cost minutes;
AUTO_CV_MAX_ROWS = 4096
# - between the two, hold out this fraction of the labels: the C* candidates
#   fitted without them face the supervised machine (C* = 0) there by the
#   one-SE rule, so no size runs the rule unchecked.
AUTO_HELD_FRACTION = 0.2
SELECTIONS = ("auto", "holdout", "cv")


def _deprecated_validation_fraction(selection, validation_fraction, cv):
    """``(selection, validation_fraction, cv)`` with the former meanings of
    ``validation_fraction`` -- an int for k folds, None for no choice --
    named (a FutureWarning says how; removed in 0.3)."""
    if validation_fraction is None:
        new, selection = "selection=None", None
    elif isinstance(validation_fraction, Integral):
        new, selection = f'selection="cv", cv={validation_fraction}', "cv"
        cv = int(validation_fraction)
    else:
        return selection, validation_fraction, cv
    warnings.warn(f"validation_fraction={validation_fraction} is deprecated and "
                  f"will be removed in 0.3: pass {new}.", FutureWarning,
                  stacklevel=5)
    return selection, "auto", cv


def _fraction(value, n_labels: int) -> float:
    """``validation_fraction`` as a number: ``"auto"`` is
    AUTO_VALIDATION_FRACTION from AUTO_VALIDATION_MIN_LABELS labels on, else
    AUTO_HELD_FRACTION."""
    if value != "auto":
        return float(value)
    return (AUTO_VALIDATION_FRACTION if n_labels >= AUTO_VALIDATION_MIN_LABELS
            else AUTO_HELD_FRACTION)


def _holdout_fraction(value, y_labeled, counts):
    """The fraction ``selection="holdout"`` holds out, checked: both parts
    need a label of every class (``train_test_split``'s rounding)."""
    value = _fraction(value, y_labeled.size)
    held = math.ceil(float(value) * y_labeled.size)
    if counts.min() < 2:
        raise ValueError(
            f'selection="holdout" needs at least 2 labels of every class (one '
            f"on each side); the fewest are {counts.min()}: pass "
            "selection=None.")
    if held < counts.size or y_labeled.size - held < counts.size:
        raise ValueError(
            f"validation_fraction={value} holds out {held} of the "
            f"{y_labeled.size} labels; both parts need at least one label "
            f"of each of the {counts.size} classes: pass a fraction in "
            f"[{counts.size / y_labeled.size:.3g}, "
            f"{1 - counts.size / y_labeled.size:.3g}], selection=\"cv\" "
            "or selection=None.")
    return float(value)


def resolve_selection(selection, validation_fraction, cv, y_labeled, solver: str,
                      n_rows: int):
    """How an S3VM chooses C* on this fit: ``("holdout", fraction)``,
    ``("cv", folds)`` or ``(None, None)`` (C* as given).

    ``selection`` is the estimator's switch (``"auto"``, ``"holdout"``,
    ``"cv"`` or None), ``validation_fraction`` the held-out fraction (or
    ``"auto"``), ``cv`` the folds; ``y_labeled`` the labels, ``n_rows``
    labeled + unlabeled rows (a Dask input resolves as its rows in memory
    do). An explicit choice the labels cannot carry is an error; ``"auto"``
    falls back to none instead.

    Examples
    --------
    >>> y = np.repeat([0, 1], 50)
    >>> resolve_selection("auto", "auto", 5, y, "lbfgs", n_rows=1000)
    ('cv', 5)
    >>> resolve_selection("auto", "auto", 5, y, "lbfgs", n_rows=20_000)
    ('holdout', 0.2)
    >>> resolve_selection(None, "auto", 5, y, "lbfgs", n_rows=1000)
    (None, None)
    """
    selection, validation_fraction, cv = _deprecated_validation_fraction(
        selection, validation_fraction, cv)
    if selection is None:
        return None, None
    y_labeled = np.asarray(y_labeled)
    counts = np.unique(y_labeled, return_counts=True)[1]
    if selection != "auto":
        if solver != "lbfgs":
            raise ValueError(f'selection="{selection}" needs solver="lbfgs" (it '
                             "chooses among the annealing stages of the L-BFGS "
                             "solver).")
        if selection == "holdout":
            return "holdout", _holdout_fraction(validation_fraction, y_labeled,
                                                counts)
        if counts.min() < cv:
            raise ValueError(
                f"cv={cv} folds need at least {cv} labels of every class; "
                f"the fewest are {counts.min()}.")
        return "cv", int(cv)
    if solver != "lbfgs":
        return None, None
    frac = _fraction(validation_fraction, y_labeled.size)
    if y_labeled.size >= AUTO_VALIDATION_MIN_LABELS:
        return ("holdout", frac) if counts.min() * frac >= 1 else (None, None)
    if n_rows <= AUTO_CV_MAX_ROWS:
        return ("cv", int(cv)) if counts.min() >= cv else (None, None)
    # a held-out part needs a label of every class on both sides
    held = math.ceil(frac * y_labeled.size)
    if counts.min() >= 2 and counts.size <= held <= y_labeled.size - counts.size:
        return "holdout", frac
    return None, None
