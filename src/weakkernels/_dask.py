"""Random-feature estimators on Dask arrays: the chunked L-BFGS objective of
:mod:`weakkernels._dsg` computed where the rows live.

``fit(X, y)`` with ``X`` a row-chunked ``dask.array.Array`` (dense or
scipy.sparse chunks) persists ``X`` on the cluster of the current
``distributed.Client`` and hands the estimator a :class:`DaskRows` in place of
the array. The solver's point sets on those rows are :class:`DaskPrimalSet`:
every evaluation of the objective sends the primal weights ``v`` (D x K) to
one task per Dask chunk; the task regenerates the chunk's features from the
seeded frequencies (the worker draws them from the spec's seed once per fit,
never receives them), runs the same chunk kernels as the in-memory solver
(:func:`weakkernels._dsg.primal_chunk`, :func:`weakkernels._dsg.fused_chunk`)
over the in-memory solver's sub-chunks: the set's rows cut every
``SolverOptions.primal_chunk_rows`` rows, each sub-chunk computed by the
task of the Dask chunk where it starts. The task returns one D x K
partial per sub-chunk and the client adds them in the set's order -- the
in-memory solver's sum -- so the model is the in-memory fit's bit for bit,
whatever the chunking of ``X``, the number of workers or which worker ran
what; a task lost with its worker is recomputed from the graph and gives the
same partials.

A level of the solver whose features the in-memory solver would hold (they
fit :func:`weakkernels._dsg.primal_cache_bytes` of the client) is not sent to
the workers at all: its rows are gathered to the client once and it is
evaluated there exactly as in memory (:meth:`DaskRows.primal_set`). Those are
the small levels where L-BFGS makes most of its evaluations, each a few
milliseconds of arithmetic that tasks would spend many times over in
scheduling (docs/benchmarks/design_notes.md, "Dask workers").

Memory on a worker: its chunks of ``X`` (a chunk may be a read-only memory map
of a ``.npy`` file -- ``np.load(path, mmap_mode="r")`` -- then a task reads it
and drops the pages it touched from the worker's resident set afterwards, so
the rows cost the worker one chunk at a time, not its share of the set) and
the features of one sub-chunk; a worker holds no features between tasks.

Importing this module does not import dask: numpy users pay nothing, and a
dask input without dask installed cannot exist.
"""

from __future__ import annotations

import uuid

import numpy as np
import scipy.sparse as sp

from weakkernels._dsg import (
    RowLoss,
    _PrimalSet,
    add_in_order,
    chunk_backward,
    chunk_forward,
    fused_chunk,
    fused_zeros,
    primal_chunk,
    release_mapped_rows,
)
from weakkernels._options import DEFAULT_OPTIONS
from weakkernels._threads import one_blas_thread_cached
from weakkernels.kernels import cell_moments
from weakkernels.random_features import as_compute_rows

_INSTALL_HINT = "pip install 'weakkernels[dask]'"


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a Dask collection (checked without importing dask)."""
    return (type(X).__module__.split(".")[0] == "dask"
            and hasattr(X, "__dask_graph__"))


def _client():
    """The current ``distributed.Client``; a clear error when there is none or
    when the optional dependencies are missing."""
    try:
        from distributed import get_client
    except ImportError as exc:  # pragma: no cover - dask arrays need dask
        raise ImportError(
            f"fitting on a dask array needs dask and distributed: {_INSTALL_HINT}"
        ) from exc
    try:
        return get_client()
    except ValueError as exc:
        raise ValueError(
            "fitting on a dask array needs a distributed.Client: start one "
            "(Client(address) for a running scheduler, Client(LocalCluster()) "
            "on this machine) before fit."
        ) from exc


def as_dask_array(X):
    """A dask collection as the dask array the solvers read: an array as it
    is; a dask DataFrame's values, its partitions' row counts computed once
    (``to_dask_array(lengths=True)``: the chunks must have known sizes);
    anything else is refused, saying what to pass."""
    if hasattr(X, "chunks") and hasattr(X, "numblocks"):
        return X
    if hasattr(X, "to_dask_array"):
        return X.to_dask_array(lengths=True)
    raise TypeError(
        f"X is a dask {type(X).__name__}; pass a dask array (for a dask "
        "DataFrame df: df.to_dask_array(lengths=True)) or a NumPy array.")


def dask_inputs(X, y):
    """``fit``'s hook: a dask ``X`` becomes :class:`DaskRows` (its chunks
    persisted on the workers) and a dask ``y`` a NumPy array (n values: the
    labels are read on the client); any other input is returned as it is."""
    if not is_dask_collection(X):
        return X, y
    client = _client()
    rows = DaskRows.persist(as_dask_array(X), client)
    if is_dask_collection(y):
        y = client.compute(y).result()
    return rows, np.asarray(y)


def map_rows(method, X, width: int | None):
    """``method`` (decision_function, predict, predict_proba) on a dask
    ``X``, lazily, chunk by chunk (``map_blocks``): ``width`` None for one
    value per row, else the number of columns."""
    X = as_dask_array(X)
    X = X.rechunk({1: -1}) if X.numblocks[1] != 1 else X
    meta_dtype = method(_first_row(X)).dtype
    if width is None:
        return X.map_blocks(method, drop_axis=1, dtype=meta_dtype,
                            meta=np.empty((0,), dtype=meta_dtype))
    return X.map_blocks(method, chunks=(X.chunks[0], (width,)), dtype=meta_dtype,
                        meta=np.empty((0, 0), dtype=meta_dtype))


def _first_row(X):
    """One row of ``X`` (its first chunk's), for the output dtype."""
    row = X[:1].compute()
    return row if row.shape[0] else np.zeros((1, X.shape[1]))


# -- tasks (run on the workers) ------------------------------------------------
# Frequencies a worker process drew for the fits it serves, by fit token: the
# spec's seed regenerates them once per fit (nothing D x d travels).
_FREQUENCIES: dict = {}
_FREQUENCIES_KEPT = 4


def _frequencies(shared):
    token, spec, n_blocks = shared
    got = _FREQUENCIES.get(token)
    if got is None:
        with one_blas_thread_cached():
            got = spec.blocks(0, n_blocks)
        while len(_FREQUENCIES) >= _FREQUENCIES_KEPT:
            _FREQUENCIES.pop(next(iter(_FREQUENCIES)))
        _FREQUENCIES[token] = got
    return got


def _rows_task(block, local):
    """Rows ``local`` of a chunk, copied (for a gather to the client)."""
    out = _take(block, local)
    out = out.copy() if isinstance(out, np.ndarray) else out
    release_mapped_rows(block)
    return out


def _take(block, local):
    """Rows ``local`` (a ``(start, stop)`` pair or an index array) of a chunk."""
    if isinstance(local, tuple):
        return block[local[0]:local[1]]
    return block[local]


def _n_rows(local) -> int:
    return local[1] - local[0] if isinstance(local, tuple) else local.size


def _sub(local, c0: int, c1: int):
    if isinstance(local, tuple):
        return (local[0] + c0, local[0] + c1)
    return local[c0:c1]


def _stack(parts):
    """Rows of several chunks, one after the other (dense or CSR)."""
    if sp.issparse(parts[0]):
        return sp.vstack(parts, format="csr")
    return np.concatenate([np.asarray(p) for p in parts])


def _chunks(shared, grid, norm, block, sel):
    """``(c0, c1, psi)`` of a task's sub-chunks of ``grid[0]`` rows (the fit's
    ``SolverOptions.primal_chunk_rows``), regenerated from the frequencies. ``sel =
    (local, rows, tail, copied)``: this chunk's rows ``local`` from the first sub-chunk
    that starts in it, their row numbers in the set, the rows (from the next chunks)
    that complete its last sub-chunk -- the sub-chunks are the in-memory solver's, on
    the set's own chunk grid, whatever the Dask chunks -- and the rows ``local`` copied
    once per level, or None (then they are read from the chunk).

    The task's sub-chunks are computed in one set of buffers (``work``, see
    :func:`weakkernels.random_features.work_array`: new arrays per
    sub-chunk cost the workers 2.4-2.9x the in-process CPU): each ``psi``
    is overwritten by the next, so a caller uses it before asking for the
    next."""
    local, _, tail, copied = sel
    if copied is not None:
        block, local = copied, (0, copied.shape[0])
    spec = shared[1]
    W, second = _frequencies(shared)
    own = _n_rows(local)
    tail = _stack(tail) if tail else None
    n = own + (tail.shape[0] if tail is not None else 0)
    work = {}
    try:
        for c0 in range(0, n, grid[0]):
            c1 = min(n, c0 + grid[0])
            X = _take(block, _sub(local, c0, min(c1, own)))
            if c1 > own:
                X = _stack([X, tail])
            X = as_compute_rows(X, spec.dtype, work)
            yield c0, c1, primal_chunk(_aligned(X), spec, W, second, norm,
                                       work=work)
    finally:
        release_mapped_rows(block)


def _aligned(a):
    """``a`` in aligned memory. An array that came over the network may sit
    at any byte offset of its frame, and numpy multiplies unaligned arrays
    without BLAS: another summation order, other bits (1e-14 in ``P^T g``),
    and the model would depend on which worker a chunk landed on."""
    if sp.issparse(a):
        return a
    return np.require(a, requirements=["A"])


# The tasks return one partial per sub-chunk: the client adds them all in
# the set's order (the in-memory solver's sum, the same bits); a sum per
# task first would round by Dask chunk.
def _forward_task(shared, grid, norm, block, sel, v32):
    v32 = _aligned(v32)
    with one_blas_thread_cached():
        parts = [chunk_forward(P, v32, grid[1])
                 for _, _, P in _chunks(shared, grid, norm, block, sel)]
    return np.concatenate(parts) if parts else np.zeros((0, v32.shape[1]))


def _backward_task(shared, grid, norm, block, sel, g32):
    g32 = _aligned(g32)
    with one_blas_thread_cached():
        return [chunk_backward(P, g32[c0:c1])
                for c0, c1, P in _chunks(shared, grid, norm, block, sel)]


def _fused_task(shared, grid, norm, block, sel, pointwise, v32, shift, s, m, w,
                n_sums):
    fn = RowLoss(pointwise, s, m, w, n_sums)
    v32, shift = _aligned(v32), _aligned(shift)
    rows = sel[1]
    parts = []
    with one_blas_thread_cached():
        for c0, c1, P in _chunks(shared, grid, norm, block, sel):
            r = (np.arange(rows[0] + c0, rows[0] + c1) if isinstance(rows, tuple)
                 else rows[c0:c1])
            parts.append(fused_chunk(P, v32, shift, fn, r, grid[1]))
    return parts


def _mean_task(shared, grid, norm, block, sel):
    with one_blas_thread_cached():
        return [P.sum(axis=0, dtype=np.float64)
                for _, _, P in _chunks(shared, grid, norm, block, sel)]


def _same(value):
    """A value as a task, not scattered data: the scheduler can recompute it
    on another worker when the one holding it dies (a scattered value would
    be lost with it); the workers fetch it once each."""
    return value


def _selection(block, sel, copy):
    """A level's selection, placed beside its chunk (the scheduler runs this
    where the chunk is); the tail rows (futures in ``sel``) arrive here once
    per level. ``copy``: a sample's rows (an index array) are copied out of
    the chunk here, once: scattered over a memory-mapped chunk, they are
    otherwise read back page by page at every evaluation (each task drops
    the pages it read; docs/benchmarks/design_notes.md, "Dask workers")."""
    local = sel[0]
    copied = (_rows_task(block, local) if copy and not isinstance(local, tuple)
              else None)
    return (*sel, copied)


def _value_range(block):
    """(all finite, max |value|) of one chunk."""
    values = block.data if sp.issparse(block) else np.asarray(block)
    if values.size == 0:
        return True, 0.0
    v64 = values.astype(np.float64, copy=False)
    finite = bool(np.isfinite(v64).all())
    out = finite, float(np.abs(v64).max()) if finite else float("inf")
    release_mapped_rows(block)
    return out


def _cell_moments(parts):
    """:func:`weakkernels.kernels.cell_moments` of one cell of rows, ``parts``
    its pieces in order (several when the cell spans chunks)."""
    return cell_moments(parts[0] if len(parts) == 1 else _stack(parts))


def _cell_moments_task(block, local):
    out = cell_moments(_take(block, local))
    release_mapped_rows(block)
    return out


# -- the client side -----------------------------------------------------------
class DaskRows:
    """Rows of a row-chunked dask array persisted on the cluster, in the role
    of ``X`` inside ``fit``.

    ``rows[index]`` (sorted or not, a boolean mask, a slice) gathers those
    rows to the client as a NumPy array or CSR matrix -- for the few rows
    ``fit`` reads itself (labeled points, landmarks, calibration samples).
    ``take(index)`` is a lazy view of rows (a point set of the problem);
    ``primal_set`` is the point set of the L-BFGS solver
    (:class:`DaskPrimalSet`), found by :func:`weakkernels._dsg._fit_primal`
    by this attribute.
    """

    row_source = True

    def __init__(self, client, blocks, offsets, n_cols, index=None, base=None):
        self.client = client
        self.blocks = blocks
        self.offsets = offsets
        self.index = index  # sorted global rows of this view; None: all
        self.base = self if base is None else base
        n = int(offsets[-1]) if index is None else index.size
        self.shape = (n, int(n_cols))
        self.ndim = 2
        if base is None:
            self._stats = None
            self._where = None  # chunk key -> the workers holding it
            self._shared = None  # (W kept alive, future of the frequencies, spec)
            self._losses = None  # (pointwise kept alive, its future)
            self.itemsize = 8  # bytes per stored value (persist sets it)

    @classmethod
    def persist(cls, X, client) -> DaskRows:
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got a dask array of shape {X.shape}.")
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError("X has unknown chunk sizes: call "
                             "X.compute_chunk_sizes() before fit.")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})  # whole rows in each chunk
        blocks = client.compute(list(X.to_delayed()[:, 0]))
        offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
        rows = cls(client, blocks, offsets, X.shape[1])
        rows.itemsize = X.dtype.itemsize
        return rows

    # -- rows ----------------------------------------------------------------
    def _global(self, sel) -> np.ndarray:
        """Global row numbers of this view's rows ``sel``."""
        n = self.shape[0]
        if isinstance(sel, slice):
            sel = np.arange(n)[sel]
        sel = np.asarray(sel)
        if sel.dtype == bool:
            sel = np.flatnonzero(sel)
        sel = sel.astype(np.int64, copy=False)
        return sel if self.index is None else self.index[sel]

    def take(self, sel) -> DaskRows:
        """A lazy view of this view's rows ``sel`` (kept sorted)."""
        rows = np.sort(self._global(sel))
        return DaskRows(self.client, self.blocks, self.offsets, self.shape[1],
                        index=rows, base=self.base)

    def _per_block(self, rows):
        """``(block, local rows, slice of rows)`` for sorted global ``rows``."""
        which = np.searchsorted(self.offsets, rows, side="right") - 1
        cuts = np.flatnonzero(np.diff(which)) + 1
        starts = np.concatenate([[0], cuts]).astype(int)
        stops = np.concatenate([cuts, [rows.size]]).astype(int)
        for a, b in zip(starts, stops, strict=True):
            if a == b:
                continue
            blk = int(which[a])
            local = rows[a:b] - self.offsets[blk]
            if local[-1] - local[0] + 1 == local.size:  # a contiguous run
                local = (int(local[0]), int(local[-1]) + 1)
            yield blk, local, (a, b)

    def __getitem__(self, sel):
        rows = self._global(sel)
        order = np.argsort(rows, kind="stable")
        srt = rows[order]
        futs = [self.client.submit(_rows_task, self.blocks[blk], local, pure=False,
                                   **self.beside(self.blocks[blk]))
                for blk, local, _ in self._per_block(srt)]
        parts = self.client.gather(futs)
        if not parts:
            return np.zeros((0, self.shape[1]))
        if sp.issparse(parts[0]):
            out = sp.vstack(parts, format="csr")
        else:
            out = np.concatenate([np.asarray(p) for p in parts])
        if np.any(order != np.arange(order.size)):
            inverse = np.empty_like(order)
            inverse[order] = np.arange(order.size)
            out = out[inverse]
        return out

    def __array__(self, dtype=None, copy=None):
        out = self[slice(None)]
        out = out.toarray() if sp.issparse(out) else out
        return out if dtype is None else out.astype(dtype)

    def __len__(self) -> int:
        return self.shape[0]

    def beside(self, block, refresh=False) -> dict:
        """``submit`` keywords that run a task on the worker holding
        ``block`` (any other worker if that one is gone). Left to itself the
        scheduler may run it on an idle worker and copy the chunk there: the
        chunk would then cost memory on both (a memory-mapped one is read
        whole to be sent, and arrives as an in-memory copy)."""
        from distributed import wait

        base = self.base
        if refresh or getattr(base, "_where", None) is None:
            wait(base.blocks)  # where a chunk is known once it is computed
            base._where = {k: sorted(v) for k, v in
                           self.client.who_has(base.blocks).items()}
        held_by = base._where.get(block.key)
        return ({"workers": held_by[:1], "allow_other_workers": True}
                if held_by else {})

    # -- one pass of checks --------------------------------------------------
    def _base_stats(self):
        base = self.base
        if base._stats is None:
            futs = [self.client.submit(_value_range, b, pure=False,
                                       **self.beside(b, refresh=True))
                    for b in base.blocks]
            base._stats = self.client.gather(futs)
        return base._stats

    def _view_stats(self):
        if self.index is None:
            return self._base_stats()
        futs = [self.client.submit(_value_range_of, self.blocks[blk], local,
                                   pure=False, **self.beside(self.blocks[blk]))
                for blk, local, _ in self._per_block(self.index)]
        return self.client.gather(futs)

    def value_range(self) -> tuple[bool, float]:
        """(every value finite, the largest magnitude) over this view's rows,
        computed on the workers."""
        stats = self._view_stats()
        return (all(s[0] for s in stats),
                max((s[1] for s in stats), default=0.0))

    def moments(self, cell_rows: int) -> tuple[float, float]:
        """Sum and sum of squares of every stored value, as
        :func:`weakkernels.kernels.resolve_sigma` needs them: on its grid of
        ``cell_rows`` rows, cell by cell in order, each cell where its chunk
        is (a cell over several chunks first gathers its pieces into one
        task). The in-memory bits, so ``sigma="scale"`` -- and with it the
        whole model -- does not depend on the chunks; sums per chunk differed
        from them in the last bits (tests/test_dask.py)."""
        futs = []
        every = self._global(slice(None))  # once: a cell's rows are a slice of it
        for r0 in range(0, self.shape[0], cell_rows):
            rows = every[r0:r0 + cell_rows]
            pieces = list(self._per_block(rows))
            if len(pieces) == 1:
                blk, local, _ = pieces[0]
                futs.append(self.client.submit(
                    _cell_moments_task, self.blocks[blk], local, pure=False,
                    **self.beside(self.blocks[blk])))
            else:
                parts = [self.client.submit(_rows_task, self.blocks[blk], local,
                                            pure=False, **self.beside(self.blocks[blk]))
                         for blk, local, _ in pieces]
                futs.append(self.client.submit(_cell_moments, parts, pure=False))
        total = total_sq = 0.0
        for s_, q in self.client.gather(futs):  # in the cells' order
            total += s_
            total_sq += q
        return total, total_sq

    # -- the solver's point sets ---------------------------------------------
    def _frequency_future(self, spec, W, n_blocks):
        base = self.base
        # keyed on the spec too: a Nyström fit streams whitened rows on its
        # held-size levels (spec.row_whitened()) and k(X, Z) on larger ones
        if (base._shared is None or base._shared[0] is not W
                or base._shared[2] is not spec):
            token = uuid.uuid4().hex
            fut = self.client.submit(_same, (token, spec, int(n_blocks)),
                                     pure=False)
            base._shared = (W, fut, spec)
        return base._shared[1]

    def _loss_future(self, pointwise):
        base = self.base
        if base._losses is None or base._losses[0] is not pointwise:
            fut = self.client.submit(_same, pointwise, pure=False)
            base._losses = (pointwise, fut)
        return base._losses[1]

    def primal_set(self, index, idx, spec, W, second, norm, hold=False,
                   pool=None, opts=DEFAULT_OPTIONS):
        """The point set of rows ``index[idx]`` of this view (the solver's
        ``(source, index)`` set at a level with sample ``idx``).

        ``hold`` (the in-memory solver's rule: the level's n x D features fit
        :func:`weakkernels._dsg.primal_cache_bytes` of this process): the
        set's rows are gathered here once (n x d, a fraction of the features'
        bytes) and the set is the in-memory solver's own
        (:class:`weakkernels._dsg._PrimalSet`, features held, ``pool``'s
        threads): the same chunks and sums, so the same bits as the
        in-memory fit on this level, and no task per evaluation. Else a
        :class:`DaskPrimalSet`: the features are regenerated on the workers
        at every evaluation, as the in-memory solver streams them."""
        if hold:
            return _PrimalSet(_GatheredSet(self, index, idx, opts), 0, idx, spec,
                              W, second, norm, True, pool)
        n_blocks = W.shape[-1] // spec.block_size
        return DaskPrimalSet(self, index, idx,
                             self._frequency_future(spec, W, n_blocks), norm,
                             W.shape[-1], opts)


    def worker_budget(self, fraction: float) -> float:
        """Bytes of copied rows a worker may keep: the in-memory solver's
        hold ``fraction`` of the smallest worker ``memory_limit`` (none set:
        no limit)."""
        info = self.client.scheduler_info()["workers"].values()
        limits = [w.get("memory_limit") or 0 for w in info]
        if not limits or not all(limits):
            return float("inf")
        return fraction * min(limits)


class _GatheredSet:
    """The rows of one point set gathered to the client, in the role of the
    :class:`weakkernels._dsg.Problem` a :class:`weakkernels._dsg._PrimalSet`
    reads: ``rows(s, sel, dtype)`` for the set's row numbers ``sel`` (sorted,
    among the sample ``idx``; ``s`` is the one set here)."""

    def __init__(self, rows: DaskRows, index, idx, options=DEFAULT_OPTIONS):
        pos = np.arange(rows.shape[0]) if index is None else np.asarray(index)
        self.options = options  # read by the _PrimalSet (its chunk grid)
        self.n = int(pos.size)
        self.idx = idx
        self.X = rows[pos if idx is None else pos[idx]]

    def sizes(self):
        return [self.n]

    def rows(self, s: int, sel, dtype):
        at = sel if self.idx is None else np.searchsorted(self.idx, sel)
        return as_compute_rows(self.X[at], dtype)


def _value_range_of(block, local):
    return _value_range(_take(block, local))


class DaskPrimalSet:
    """:class:`weakkernels._dsg._PrimalSet`'s interface (``m``, ``forward``,
    ``backward``, ``fused``, ``mean``) over rows held by Dask workers, with
    its sub-chunks and sums: the set's rows cut every
    ``opts.primal_chunk_rows`` rows, each sub-chunk computed by the task of
    the Dask chunk where it starts (the few rows it has in the next chunks
    are sent there once per level), one partial per sub-chunk, added on the
    client in the set's order. The products are the in-memory solver's bit
    for bit, for any chunking of ``X`` and any number of workers.
    """

    def __init__(self, rows: DaskRows, index, idx, shared, norm, n_features,
                 opts=DEFAULT_OPTIONS):
        pos = np.arange(rows.shape[0]) if index is None else np.asarray(index)
        if idx is not None:
            pos = pos[idx]
        self.m = int(pos.size)
        glob = rows._global(pos)
        if glob.size > 1 and np.any(np.diff(glob) < 0):
            raise ValueError("a point set's rows must be sorted")
        self.rows, self.shared, self.norm = rows, shared, norm
        self.D = int(n_features)
        client = rows.client
        step = opts.primal_chunk_rows
        self.grid = (step, opts.fused_block_bytes)
        # a sample's rows are copied on the workers when all of them would
        # fit the hold fraction of one worker's memory_limit
        copy = (idx is not None and self.m * rows.shape[1] * rows.base.itemsize
                <= rows.worker_budget(opts.primal_cache_fraction))
        spans = list(rows._per_block(glob))  # (block, local rows, (a, b))
        self.parts = []  # (block, selection, (p0, p1) of its sub-chunks)
        for k, (blk, local, (a, b)) in enumerate(spans):
            p0 = -(-a // step) * step  # the first sub-chunk starting here
            if p0 >= b:
                continue  # inside a sub-chunk started in an earlier chunk
            p1 = min(self.m, p0 + (b - 1 - p0) // step * step + step)
            tail = []  # its last sub-chunk's rows b .. p1, in the next chunks
            for blk2, local2, (a2, b2) in spans[k + 1:]:
                if a2 >= p1:
                    break
                block2 = rows.blocks[blk2]
                tail.append(client.submit(_rows_task, block2,
                                          _sub(local2, 0, min(b2, p1) - a2),
                                          pure=False, **rows.beside(block2)))
            # the set's own row numbers (what the pointwise loss indexes)
            set_rows = (p0, p1) if idx is None else np.asarray(idx[p0:p1])
            block = rows.blocks[blk]
            sel = client.submit(_selection, block,
                                (_sub(local, p0 - a, b - a), set_rows, tail), copy,
                                pure=False,
                                **rows.beside(block, refresh=not self.parts))
            self.parts.append((block, sel, (p0, p1)))

    def _run(self, fn, *args, per_part=None):
        client = self.rows.client
        futs = [client.submit(fn, self.shared, self.grid, self.norm, block, sel,
                              *(per_part(span) if per_part else ()), *args,
                              pure=False, **self.rows.beside(block))
                for block, sel, span in self.parts]
        return gather_or_raise(client, futs)

    def forward(self, v32: np.ndarray) -> np.ndarray:
        """``psi v`` (m, K) in float64."""
        if not self.parts:
            return np.zeros((0, v32.shape[1]))
        return np.concatenate(self._run(_forward_task, v32))

    def backward(self, g: np.ndarray) -> np.ndarray:
        """``psi^T g`` (D, K) in float64, sub-chunk partials added in order."""
        g32 = g.astype(self.norm.dtype)  # norm is in the compute dtype
        parts = self._run(_backward_task,
                          per_part=lambda span: (g32[span[0]:span[1]],))
        return sum_in_order([p for task in parts for p in task],
                            (self.D, g.shape[1]))

    def fused(self, v32, shift, fn):
        """One pass of a row-separable loss (see ``_PrimalSet.fused``): the
        loss ``fn.pointwise`` goes to the workers once per fit, ``(s, m, w)``
        with every evaluation."""
        loss = self.rows._loss_future(fn.pointwise)
        parts = [p for task in self._run(_fused_task, loss, v32, shift, fn.s,
                                         fn.m, fn.w, fn.n_sums) for p in task]
        if not parts:  # an empty set adds nothing
            return fused_zeros(v32, fn)
        return add_in_order(parts)

    def mean(self) -> np.ndarray:
        """Column means of ``psi`` (D,) in float64."""
        parts = [p for task in self._run(_mean_task) for p in task]
        return sum_in_order(parts, (self.D,)) / max(self.m, 1)


def sum_in_order(parts, shape):
    """``sum(parts)`` added in list order (zeros of ``shape`` if empty)."""
    return add_in_order([(p,) for p in parts])[0] if parts else np.zeros(shape)


def gather_or_raise(client, futs):
    """``client.gather`` that turns a chunk task the cluster gave up on (its
    workers died ``distributed.scheduler.allowed-failures`` times) into an
    error naming the cause; a task lost with one worker is recomputed by the
    scheduler and returns the same partial sum."""
    from distributed import KilledWorker

    try:
        return client.gather(futs)
    except KilledWorker as exc:
        raise RuntimeError(
            "a chunk of the objective failed on every Dask worker that ran it "
            f"({exc}); the fit stopped without a model rather than continue "
            "without that chunk."
        ) from exc
