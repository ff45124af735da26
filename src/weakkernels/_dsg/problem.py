"""The problem a random-feature estimator hands to the solvers: its point
sets, its loss and the options of the solve; and the reading of its rows.
"""

from __future__ import annotations

import mmap

import numpy as np
import scipy.sparse as sp

from weakkernels._options import DEFAULT_OPTIONS


class Problem:
    """What a random-feature estimator hands to :func:`fit_expansion`.

    The papers' solvers differ only in their point sets and their loss; the
    loop (sampling, features, steps, monitoring) is shared.

    Parameters
    ----------
    sets : list of ``(source, index)``
        Point set ``s`` is ``source[index]`` (``index=None``: all rows). The
        source may be a memory-mapped file: rows are gathered by sorted index.
    n_outputs : int
        Number of expansions sharing the features (one-vs-rest outputs).
    loss : callable ``loss(fs, idx, sizes, w) -> (value, grads)``
        ``fs[s]`` (m_s, K) are the outputs ``f + b`` on the rows ``idx[s]`` of
        set ``s`` (all rows when ``idx[s]`` is None), ``sizes[s]`` the full set
        sizes, ``w`` in [0, 1] the annealing weight of a non-convex part.
        ``value`` estimates the data term of the objective, unbiased over the
        rows drawn (so a sum over a set is ``sizes[s] / m_s`` times the
        sample's sum), and ``grads[s]`` (m_s, K) is its derivative w.r.t.
        ``fs[s]``.
    lam : float
        The objective is ``lam / 2 ||f||_H^2 + loss``.
    intercept : {"none", "free", "balance"}
        ``"free"``: an unregularized bias learned with ``f``; ``"balance"``:
        the bias is ``balance(f_B)`` computed from the outputs on set
        ``balance_set`` (SGD) or, for ``solver="lbfgs"``, the mean constraint
        ``mean_B f = balance_target`` held exactly by centering the features on
        set B (paper 004 Eq. 1.13). ``balance_target`` a callable
        ``target(f_B) -> (K,)`` (L-BFGS only): an *anchored* constraint; the
        first stage (C* = 0) is fitted with a free bias, every later stage
        holds ``mean_B f = target(f_B)`` of the outputs it starts from, and the
        returned machine is shifted to hold it on its own outputs.
    pointwise : callable ``pointwise(s, f, rows, m, w) -> (value, grad)`` or None
        A loss that is a sum over the rows of each set: set ``s``'s part at
        outputs ``f`` (r, K) of its rows ``rows`` (indices in the set) when
        ``m`` of its rows are drawn. The L-BFGS solver then evaluates the
        loss and its gradient chunk by chunk, with the features of a chunk
        generated once per evaluation instead of twice when they are streamed.
    curvature : callable ``curvature(s, f, rows, m, w) -> (r, K)`` or None
        The second derivatives of ``pointwise`` w.r.t. ``f`` (it is
        separable per row and output), negative parts clipped to zero (a
        generalised Hessian), scaled as ``pointwise`` is for ``m`` rows
        drawn. Needed by ``options.primal_method="newton"``; without it the
        primal solver uses L-BFGS.
    flat : callable ``flat(s, w) -> bool`` or None
        With ``curvature``: True where set ``s``'s loss at weight ``w`` has
        no curvature at any output (a piecewise-linear loss), so that Newton
        neither samples the set nor reads its features for the Hessian
        (``curvature`` would give zeros there: the same steps, bit for bit).
    moments : callable ``moments(totals, ms, w) -> (value, coefs)`` or None
        L-BFGS only, one output (``K = 1``): the same loss as ``loss``,
        which depends on the outputs of each set only through their sums
        ``totals[s] = (sum f, sum f^2)`` over its ``ms[s]`` rows (the square
        losses of paper 002's Eq. 8 and paper 003's all-pairs Eq. 8);
        ``coefs[s] = (c1, c2)`` its derivatives w.r.t. those two sums, so a
        row's derivative is ``c1 + 2 c2 f``. On a level whose features are
        streamed the solver then needs one pass over the rows per
        evaluation (``psi^T f`` and the two sums, the features generated
        once), and from rows held elsewhere only (D,) sums come back; a
        level whose features are held uses ``loss``.
    uses : callable ``uses(w) -> list of bool`` or None
        Which sets the loss reads at annealing weight ``w`` (None: all). The
        L-BFGS solver skips the others' products (e.g. the unlabeled set while
        C* is annealed from 0).
    outputs_on : int or None
        L-BFGS only: the set whose outputs under the returned machine the
        caller reads (``Expansion.balance_outputs``, e.g. to warn when every
        unlabeled row gets one class); None: no final pass over the data.
    majorize : callable ``majorize(f, rows) -> float`` or None
        L-BFGS only: a loss with a concave part on set ``outputs_on``,
        minimised by the concave-convex procedure (paper 004 Algorithm 1.3).
        Before each solve of an annealing stage with ``w > 0`` the solver
        hands it the outputs ``f`` of that set's rows ``rows`` (the current
        level's sample; None: all rows); it re-linearises the concave part
        there and returns the fraction of its slopes that moved. The stage
        ends when that fraction is at most ``options.cccp_tol``, or after
        ``options.cccp_max_steps`` solves.
    select : ``(s, score)`` or None
        L-BFGS only: the fit only chooses an annealing weight, on held-out
        labeled rows in set ``s`` (which the loss must not read). The
        stages (:data:`SELECT_STAGES`, from ``w = 0``, the supervised
        machine) run on level 0, each from the previous one; then each is
        carried, warm-started level by level, to the largest level whose
        features are held (the choice is made at the largest sample it can
        afford to solve for every candidate: the best weight grows with the
        rows). There ``score(f, rows) -> (m,)`` gives each stage's per-row
        errors from its outputs ``f + b`` on the set's rows ``rows``
        (indices in the set; None: all); the stage kept is
        :func:`one_se_stage`'s, returned as ``Expansion.weight`` with its
        machine (on that level) and every stage's ``(weight, error)``.
    options : SolverOptions or None
        The solver's tunables (None: :data:`DEFAULT_OPTIONS`).
    feature_cache : dict or None
        L-BFGS / Newton: a dict shared by the problems of one fit (the folds
        and candidates of a model selection): the held features of a set's
        rows are built once and read by every solve on the same rows, basis
        and feature count (None: each solve builds its own).
    """

    def __init__(self, sets, n_outputs, loss, *, lam=1.0, intercept="none",
                 balance=None, balance_set=1, balance_target=None, uses=None,
                 pointwise=None, outputs_on=None, majorize=None, select=None,
                 moments=None, curvature=None, flat=None, options=None,
                 feature_cache=None):
        if moments is not None and (int(n_outputs) != 1 or pointwise is not None
                                    or uses is not None):
            raise ValueError("a loss of the outputs' moments has one output, "
                             "reads every set and has no pointwise form")
        self.moments = moments
        self.feature_cache = feature_cache
        self.options = DEFAULT_OPTIONS if options is None else options
        self.sets = sets
        self.select = select
        self.majorize = majorize
        self.outputs_on = outputs_on
        self.uses = uses
        self.pointwise = pointwise
        self.curvature = curvature if pointwise is not None else None
        self.flat = flat
        self.K = int(n_outputs)
        self.loss = loss
        self.lam = float(lam)
        self.intercept = intercept
        self.balance = balance
        self.balance_set = balance_set
        self.balance_target = balance_target

    def sizes(self):
        return [s.shape[0] if i is None else i.size for s, i in self.sets]

    def rows(self, s: int, idx, dtype):
        """Rows ``idx`` (sorted; None = all) of set ``s`` in compute dtype:
        a dense C-contiguous array, or CSR for a sparse source (gathered by
        row, never densified)."""
        source, index = self.sets[s]
        if index is not None:
            pick = index if idx is None else index[idx]
        else:
            pick = idx
        X = source if pick is None else source[pick]
        if sp.issparse(X):
            return sp.csr_matrix(X).astype(dtype, copy=False)
        out = np.ascontiguousarray(X, dtype=dtype)
        if not np.may_share_memory(out, source):  # a copy: the pages can go
            release_mapped_rows(source, *_row_span(pick, source.shape[0]))
        return out


def _row_span(pick, n: int) -> tuple[int, int]:
    """``(first, stop)`` of the rows ``pick`` (None, a slice or sorted
    indices) of an ``n``-row array."""
    if pick is None:
        return 0, n
    if isinstance(pick, slice):
        first, stop, _ = pick.indices(n)
        return first, max(first, stop)
    pick = np.asarray(pick)
    return (int(pick[0]), int(pick[-1]) + 1) if pick.size else (0, 0)


def release_mapped_rows(X, start: int = 0, stop: int | None = None) -> None:
    """Drop the pages holding rows ``start .. stop-1`` of a read-only
    memory-mapped ``X`` (``np.load(path, mmap_mode="r")``, or a view of one)
    from this process's resident set (``madvise(MADV_DONTNEED)``); a no-op
    for any other array.

    The solver copies each chunk of rows it reads, so the mapped pages are
    not needed again until the next pass, which faults them back from the
    kernel's page cache (or the file): the resident set stays the solver's
    own memory, not the input file (docs/benchmarks/solver_defaults.md).
    Only whole pages inside the rows'
    byte range are dropped; the mapping is read-only, so dropping a page
    another thread is reading only makes it fault again.
    """
    # the mapping behind X, also when validation made X a plain ndarray view;
    # only ndarrays' bases are followed (a Dask point set's .base is itself)
    mapped = X
    while isinstance(mapped, np.ndarray):
        mapped = mapped.base
    if (not isinstance(mapped, mmap.mmap) or not hasattr(mapped, "madvise")
            or X.ndim < 1 or X.strides[0] <= 0):
        return
    whole = np.frombuffer(mapped, dtype=np.uint8)
    if whole.flags.writeable:
        # only read-only mappings: a private (copy-on-write) page dropped
        # would lose what was written to it
        return
    stop = X.shape[0] if stop is None else stop
    # byte offsets inside the mapping (it starts page-aligned; the array may
    # start past it: the .npy header, a slice)
    base = whole.__array_interface__["data"][0]
    del whole  # no export of the mapping left behind
    first = X.__array_interface__["data"][0] - base + start * X.strides[0]
    last = first + (stop - start) * X.strides[0]
    page = mmap.PAGESIZE
    first = -(-first // page) * page
    last = last // page * page
    if last > first:
        mapped.madvise(mmap.MADV_DONTNEED, first, last - first)
