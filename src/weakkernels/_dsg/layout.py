"""The expansion's size and basis: the default feature counts, seeded Fourier
features or Nyström landmarks, the iteration budget, and the parameter
constraints of the loop every random-feature estimator shares.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels._constraints import (
    BATCH_SIZE,
    BLOCK_SIZE,
    ETA0,
    RANDOM_FEATURE_CONSTRAINTS,
    SIGMA_OR_SCALE,
    TOL,
)
from weakkernels._dsg.model import seeded_sample
from weakkernels._options import DEFAULT_OPTIONS, SolverOptions
from weakkernels._validation import available_memory
from weakkernels.random_features import (
    FeatureSpec,
    NystromSpec,
)

SOLVERS = ("lbfgs", "sgd")


def iteration_budget(solver: str, max_iter, n_passes: float, n_rows: int,
                     batch_size: int, min_iter: int = 1,
                     opts: SolverOptions = DEFAULT_OPTIONS) -> int:
    """``T`` for :func:`fit_expansion`: L-BFGS iterations per annealing stage
    (``max_iter`` or ``opts.lbfgs_max_iter``), or SGD steps -- ``max_iter`` if
    given, else ``n_passes`` passes of ``batch_size`` over ``n_rows`` rows, at
    least ``min_iter``."""
    if solver != "sgd":
        return int(max_iter or opts.lbfgs_max_iter)
    if max_iter is not None:
        return int(max_iter)
    return max(int(min_iter), math.ceil(n_passes * n_rows / batch_size))


# Parameters of every estimator trained by fit_expansion (TSGS3VM, FRS3VM,
# TSGSU, QSGS2AUC), validated by name: each merges this into its own
# ``_parameter_constraints``. ``sigma`` may be "scale" (resolve_sigma).
DSG_CONSTRAINTS = {
    **RANDOM_FEATURE_CONSTRAINTS,
    "sigma": SIGMA_OR_SCALE,
    "solver": [StrOptions(set(SOLVERS))],
    "tol": TOL,
    "batch_size": BATCH_SIZE,
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "eta0": ETA0,
    "callback": [callable, None],
    "callback_every": [Interval(Integral, 1, None, closed="left")],
    "solver_options": [SolverOptions, None],
}


# The feature budget of the expansions grown block by block (default_blocks);
# FRS3VM sizes its fixed expansion by n_components instead.
EXPANSION_CONSTRAINTS = {
    "block_size": BLOCK_SIZE,
    "max_features": [Interval(Integral, 1, None, closed="left"), None],
}


def default_blocks(solver: str, set_sizes, max_features, block_size: int,
                   n_features_in: int = 1,
                   opts: SolverOptions = DEFAULT_OPTIONS) -> int:
    """Blocks of an estimator's expansion: ``max_features`` if given, else
    unbounded for ``solver="sgd"`` (new blocks every step, as the papers) and
    :func:`primal_features` of all the training rows for ``"lbfgs"``."""
    rows = sum(int(n) for n in set_sizes)
    default = (None if solver == "sgd"
               else primal_features(rows, block_size, n_features_in, opts))
    return feature_layout(max_features, block_size, default)


def primal_features(n_rows: int, block_size: int, n_features_in: int = 1,
                    opts: SolverOptions = DEFAULT_OPTIONS) -> int:
    """Default size ``D`` of the fixed expansion for ``n_rows`` training rows
    of ``n_features_in`` columns, a multiple of ``block_size``.

    * Small sets (cost rule): as many features as keep the feature matrix
      near ``opts.primal_budget`` entries, between ``opts.lbfgs_features`` and
      ``opts.lbfgs_max_features``.
    * Capacity that grows with the data: at least ``16 sqrt(n_rows)``
      features (random-feature learning needs ``D ~ sqrt(n) log n`` for the
      kernel machine's rate, Rudi & Rosasco 2017), up to
      ``opts.lbfgs_large_features`` and to as many as keep the n x D feature
      matrix within ``opts.held_feature_bytes`` in float32 (a constant, not
      the memory of the machine: the default model must not depend on where
      it is fitted). Beyond, that bound caps the arithmetic of one pass, so D
      falls to ``opts.streamed_features`` and stays there: the features are
      streamed, a pass costs ``D d`` per row, as Nyström's streamed landmarks
      do (set ``max_features`` to buy more).
    * Memory of the frequencies: ``n_features_in x D <= opts.frequency_budget``
      entries above ``opts.lbfgs_features`` features.
    """
    n = max(int(n_rows), 1)
    o = opts
    D = max(o.lbfgs_features, min(o.lbfgs_max_features, o.primal_budget // n))
    held = o.held_feature_bytes // (4 * n)
    D = max(D, min(int(16 * math.sqrt(n)), o.lbfgs_large_features, held))
    if held < o.streamed_features:  # streamed rather than held
        D = max(D, o.streamed_features)
    D = max(o.lbfgs_features, min(D, o.frequency_budget // max(n_features_in, 1)))
    return max(block_size, D // block_size * block_size)


# The ``features`` parameter of every estimator with a fixed expansion.
BASIS_CONSTRAINTS = {"features": [StrOptions({"auto", "fourier", "nystroem"})]}


def nystroem_size(n_rows: int, n_features_in: int,
                  opts: SolverOptions = DEFAULT_OPTIONS) -> int:
    """Default landmark count of ``features="nystroem"``: every row up to
    ``opts.nystroem_all_rows`` (the Nyström machine is then the exact kernel
    machine, up to the jitter), else ~``opts.nystroem_sqrt_factor sqrt(n)``
    (Falkon's O(sqrt(n)) landmarks, Rudi et al. 2017; a multiple of 32, as a
    ``max_features`` budget is) and never fewer than that floor, the Fourier
    default (:func:`primal_features`, ~16 sqrt(n)) or
    ``opts.nystroem_streamed``.

    The growth stops where the n x m feature matrix outgrows
    ``opts.held_feature_bytes`` (a constant, not the machine's memory: the
    model must not depend on where it is fitted); past that bound the floor
    falls too, down to ``opts.nystroem_streamed`` streamed landmarks, whose
    fit costs m d per row and pass -- linear in n from there on (rows narrow
    enough, :func:`_streams`). The m x d landmarks stay within
    ``opts.nystroem_max_entries`` (else ``features="auto"`` is Fourier). The
    factor is above the Fourier one because a landmark is worth more than a
    random frequency."""
    o = opts
    n = max(int(n_rows), 1)
    held = o.held_feature_bytes // (4 * n)  # the Fourier rule's held bound
    wide = o.nystroem_max_entries // max(int(n_features_in), 1)
    grow = min(int(o.nystroem_sqrt_factor * math.sqrt(n)), held, wide) // 32 * 32
    streamed = o.nystroem_streamed if _streams(n_features_in, o) else 0
    return min(n, max(min(o.nystroem_all_rows, held), grow, streamed,
                      primal_features(n, 32, n_features_in, o)))


def _streams(n_features_in: int, opts: SolverOptions = DEFAULT_OPTIONS) -> bool:
    """Rows narrow enough for ``opts.nystroem_streamed`` landmarks within
    ``opts.nystroem_max_entries`` landmark entries."""
    return (opts.nystroem_streamed * max(int(n_features_in), 1)
            <= opts.nystroem_max_entries)


def _set_rows(rows_and_index):
    """``(X, idx)`` -> the row count of the set (``idx`` None: every row)."""
    X, idx = rows_and_index
    return X.shape[0] if idx is None else idx.size


def nystroem_landmarks(first, rest, m: int, seed: int) -> np.ndarray:
    """``m`` landmarks for ``features="nystroem"`` (float64, dense) from two
    point sets, each ``(X, idx)`` (rows ``X[idx]``; ``idx`` None: all of X):
    every row of ``first`` while they are at most half of ``m`` (else a
    seeded sample of ``m / 2``), the rest a seeded uniform sample of
    ``rest``. ``first`` holds the rows with labels -- labeled rows (S3VM),
    positives and negatives (AUC), similar-pair rows (SU) -- ``rest`` the
    unlabeled ones. With the labeled rows among the landmarks, the
    supervised kernel machine on them (an SVC's expansion) lies in the span,
    so the capacity never falls below the SVC's."""
    parts = []
    taken = 0
    for (X, idx), want, stream in ((first, max(1, m // 2), 11), (rest, None, 12)):
        n = _set_rows((X, idx))
        pick = seeded_sample(n, max(1, m - taken) if want is None else want,
                             seed, stream=stream)
        taken += pick.size
        p = X[pick if idx is None else idx[pick]]
        parts.append(p.toarray() if hasattr(p, "toarray") else np.asarray(p))
    return np.vstack(parts).astype(np.float64)


def resolve_basis(features: str, solver: str, kernel: str, n_rows: int,
                  n_features_in: int, m: int,
                  opts: SolverOptions = DEFAULT_OPTIONS) -> str:
    """``features`` resolved for an expansion of ``m`` features on ``n_rows`` rows of
    ``n_features_in`` columns: ``"auto"`` is Nyström where it applies -- a fixed
    expansion (L-BFGS, or TSGSU's direct solve), the RBF kernel, ``m x d`` landmark
    entries within ``opts.nystroem_max_entries``, and an n x m feature matrix within
    ``opts.held_feature_bytes`` or rows narrow enough to stream
    ``opts.nystroem_streamed`` landmarks (a streamed row costs ``m d``, as a Fourier
    one) -- else Fourier (the papers' SGD, the other kernels, very wide rows such as
    text: there the dense landmarks cost more than the seeded frequencies; large wide
    sets were not measured with Nyström). The rule reads shapes only: dense and sparse
    storage of the same rows get the same basis and the same model."""
    if features == "nystroem" and solver == "sgd":
        raise ValueError('features="nystroem" needs solver="lbfgs" (the '
                         "papers' SGD draws fresh Fourier blocks).")
    if features != "auto":
        return features
    fits = (m * n_features_in <= opts.nystroem_max_entries
            and (4 * m * n_rows <= opts.held_feature_bytes
                 or _streams(n_features_in, opts)))
    if solver != "sgd" and kernel == "rbf" and fits:
        return "nystroem"
    return "fourier"


def expansion_basis(features: str, *, solver: str, kernel: str, sigma: float,
                    degree, coef0, first, rest, m, block_size: int,
                    max_blocks: int, dtype, seed: int,
                    opts: SolverOptions = DEFAULT_OPTIONS):
    """The basis of a fixed expansion: ``(spec, block_size, max_blocks,
    kind)``. Where ``features`` resolve to Nyström (:func:`resolve_basis`)
    the :class:`NystromSpec` on :func:`nystroem_landmarks` of ``first`` /
    ``rest`` (one block of all its features), else the seeded Fourier
    :class:`FeatureSpec` of ``max_blocks`` blocks of ``block_size``. ``m``:
    the feature budget, None for the default :func:`nystroem_size` of all
    the rows."""
    n = _set_rows(first) + _set_rows(rest)
    d = first[0].shape[1]
    m = nystroem_size(n, d, opts) if m is None else int(m)
    if resolve_basis(features, solver, kernel, n, d, m, opts) != "nystroem":
        return (FeatureSpec(kernel, sigma, degree, coef0, d, block_size, seed,
                            dtype), block_size, max_blocks, "fourier")
    spec = NystromSpec(kernel, sigma, nystroem_landmarks(first, rest, m, seed),
                       dtype, seed)
    return spec, spec.block_size, 1, "nystroem"


def feature_layout(max_features, block_size: int, default=None) -> int:
    """Blocks in a feature budget of ``max_features`` (None: ``default``
    features, or unbounded when that is None too)."""
    B = int(block_size)
    if max_features is None:
        return 2**62 if default is None else max(1, int(default) // B)
    if max_features < B:
        raise ValueError(
            f"max_features={max_features} is smaller than one block "
            f"(block_size={B})."
        )
    return int(max_features) // B


def check_feature_memory(spec: FeatureSpec, n_features: int) -> None:
    """Refuse, before allocating, an expansion whose frequencies (``d x D``,
    ``degree x d x D`` for the polynomial kernel) do not fit in the memory
    available now; the message names the parameters that set ``D``."""
    fourier_like = spec.is_fourier or isinstance(spec, NystromSpec)
    per = spec.d * (1 if fourier_like else spec.degree) * spec.dtype.itemsize
    need = per * int(n_features)
    avail = available_memory()
    if need > avail:
        raise ValueError(
            f"{n_features} random features of {spec.d} inputs need "
            f"{need / 2**30:.3g} GiB for their frequencies, more than the "
            f"{avail / 2**30:.3g} GiB available: lower max_features / "
            "n_components / block_size.")
