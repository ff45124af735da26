"""The features of one point set, chunk by chunk: the products of the chunked
objective (``psi v``, ``psi^T g``, the fused row-separable pass) with partial
sums added in chunk order, so the models are the same bits for any thread
count, held or regenerated features, in memory or on Dask workers.
"""

from __future__ import annotations

import numpy as np

from weakkernels._options import DEFAULT_OPTIONS, SolverOptions
from weakkernels._validation import available_memory


def primal_cache_bytes(opts: SolverOptions = DEFAULT_OPTIONS) -> int:
    """Bytes the L-BFGS solver may hold as cached features."""
    return int(min(opts.primal_cache_max_bytes,
                   opts.primal_cache_fraction * available_memory()))


def primal_chunk(X, spec, W, second, norm, work=None) -> np.ndarray:
    """The streamed features ``stream_features * norm`` of the rows ``X``
    (compute dtype): the chunk kernel of :class:`_PrimalSet`, and of the
    point sets whose chunks live on Dask workers (:mod:`weakkernels._dask`).
    ``psi`` is this times the spec's whitening ``T`` (Nyström's ``L^-T``;
    None: ``psi`` itself), which the solvers apply to the coefficients and
    gradients once per evaluation (:class:`Whitening`), never per row.
    ``work``: buffers kept across the calls of one thread
    (:func:`weakkernels.random_features.work_array`; the features returned
    are overwritten by the next call), or None."""
    P = spec.stream_features(X, W, second, parallel=False, work=work)
    P *= norm
    return P


class Whitening:
    """``psi = P T`` with ``P`` the streamed chunks (:func:`primal_chunk`)
    and ``T`` the spec's whitening (float64; None: the identity): ``psi v =
    P (T v)`` and ``psi^T g = T^T (P^T g)`` -- ``m^2`` work per evaluation
    instead of per row."""

    def __init__(self, spec):
        self.T = spec.whitening()

    def lift(self, v: np.ndarray) -> np.ndarray:
        """``T v``: coefficients of ``psi`` -> of the streamed features."""
        return v if self.T is None else self.T @ v

    def lower(self, g: np.ndarray) -> np.ndarray:
        """``T^T g``: a product with the streamed features -> with ``psi``."""
        return g if self.T is None else self.T.T @ g


# The blocks of a chunk's products are SolverOptions.fused_block_bytes: a
# constant, so the blocks, and the sums, are the same on every machine.
_BLOCK_BYTES = DEFAULT_OPTIONS.fused_block_bytes


def _block_rows(P, block_bytes: int) -> int:
    """Rows of ``P`` per block of ``block_bytes``."""
    return max(1, block_bytes // max(P.shape[1] * P.itemsize, 1))


def chunk_forward(P, v32, block_bytes: int = _BLOCK_BYTES) -> np.ndarray:
    """``P v`` (n, K) in float64 from float32 products, in row blocks of
    ``block_bytes`` (the blocked GEMM re-reads a block it keeps in cache)."""
    step = _block_rows(P, block_bytes)
    if P.shape[0] <= step:
        return (P @ v32).astype(np.float64)
    return np.concatenate([(P[r0:r0 + step] @ v32).astype(np.float64)
                           for r0 in range(0, P.shape[0], step)])


def chunk_backward(P, g) -> np.ndarray:
    """``P^T g`` (D, K) in float64 from float32 products, computed as ``(g^T
    P)^T``: the layout in which BLAS reads ``P`` (row-major, n x D) once in
    order -- half the time of ``P.T @ g`` at 2 048 x 5 920 with K = 10."""
    return (g.astype(P.dtype, copy=False).T @ P).T.astype(np.float64)


def fused_chunk(P, v32, shift, fn, rows, block_bytes: int = _BLOCK_BYTES):
    """One chunk of a row-separable loss: ``f = P v + shift``, ``(value, g) =
    fn(rows, f)``; returns ``(value, P^T g, sum g)`` in float64, the rows
    taken in blocks of ``block_bytes`` (row-separable: the loss of a block
    needs only its own outputs; the second read of a block finds it in the
    cache). ``value`` is a float, or an array of ``fn.n_sums`` sums
    (:func:`moment_terms`)."""
    step = _block_rows(P, block_bytes)
    value, back, gsum = fused_zeros(v32, fn)
    for r0 in range(0, P.shape[0], step):
        Pb = P[r0:r0 + step]
        f = chunk_forward(Pb, v32, block_bytes) + shift  # one block: one product
        val, g = fn(rows[r0:r0 + step], f)
        value = value + (float(val) if np.ndim(val) == 0
                         else np.asarray(val, dtype=np.float64))
        back += chunk_backward(Pb, g)
        gsum += g.sum(axis=0)
    return value, back, gsum


def fused_zeros(v32, fn):
    """``(value, P^T g, sum g)`` of no rows for :func:`fused_chunk`."""
    value = 0.0 if fn.n_sums is None else np.zeros(fn.n_sums)
    return value, np.zeros(v32.shape), np.zeros(v32.shape[1])


def moment_terms(s, f, rows, m, w):
    """The ``pointwise`` form of a ``Problem.moments`` loss: the sums
    ``(sum f, sum f^2)`` of a block's outputs ``f`` (r, 1), and ``g = f``, so
    that the fused pass also returns ``psi^T f`` and ``sum f``."""
    return np.array([f.sum(), float(np.sum(f * f))]), f


def add_in_order(parts):
    """Element-wise sums of the tuples ``parts``, added in list order (the
    reduction order never depends on threads or workers)."""
    total = parts[0]
    for p in parts[1:]:
        total = tuple(a + b for a, b in zip(total, p, strict=True))
    return total


class RowLoss:
    """``fn(rows, f)`` of :meth:`_PrimalSet.fused`: set ``s``'s part of
    ``problem.pointwise`` (or :func:`moment_terms`, whose value is
    ``n_sums`` sums) with ``m`` rows drawn at annealing weight ``w``. A
    class, not a lambda, so a point set whose chunks live elsewhere can ship
    the loss once and only ``(s, m, w)`` per evaluation."""

    def __init__(self, pointwise, s: int, m: int, w: float, n_sums=None):
        self.pointwise, self.s, self.m, self.w = pointwise, s, m, w
        self.n_sums = n_sums

    def __call__(self, rows, f):
        return self.pointwise(self.s, f, rows, self.m, self.w)


class _PrimalSet:
    """The features of one point set for the chunked L-BFGS objective.

    ``psi = features * norm`` of the rows ``idx`` (sorted; None: all rows) of
    set ``s``, in chunks of ``options.primal_chunk_rows`` rows (the
    :class:`SolverOptions` of ``problem``). The chunks are
    held when the level's n x D matrix fits the memory budget
    (:func:`primal_cache_bytes`), else regenerated from the seeded
    frequencies at every product, so memory stays O(chunk x D) whatever n is.
    Chunk boundaries do not depend on the thread count and partial sums are
    added in chunk order: the products are bit-identical for any number of
    threads. ``chunks``: the held chunks of the same rows under the same
    spec, built by another solve of the same fit (they are not rebuilt).
    """

    def __init__(self, problem, s, idx, spec, W, second, norm, cache, pool,
                 chunks=None):
        self.problem, self.s, self.idx = problem, s, idx
        self.spec, self.W, self.second, self.norm = spec, W, second, norm
        self.m = problem.sizes()[s] if idx is None else idx.size
        self.pool = pool
        opts = getattr(problem, "options", DEFAULT_OPTIONS)
        self.step, self.block_bytes = opts.primal_chunk_rows, opts.fused_block_bytes
        self.starts = list(range(0, self.m, self.step)) or [0]
        # (chunks given: the same rows' features, held by an earlier solve)
        self.chunks = (chunks if chunks is not None
                       else self._map(self._features) if cache else None)

    def _features(self, c: int) -> np.ndarray:
        r0 = self.starts[c]
        r1 = min(self.m, r0 + self.step)
        sel = np.arange(r0, r1) if self.idx is None else self.idx[r0:r1]
        X = self.problem.rows(self.s, sel, self.spec.dtype)
        return primal_chunk(X, self.spec, self.W, self.second, self.norm)

    def _chunk(self, c: int) -> np.ndarray:
        return self.chunks[c] if self.chunks is not None else self._features(c)

    def _map(self, fn):
        """``[fn(c) for c in chunks]``, the chunks spread over the pool's
        threads (numpy's GEMM and the nogil numba kernels release the GIL)."""
        n = len(self.starts)
        if self.pool is None or n == 1:
            return [fn(c) for c in range(n)]
        return list(self.pool.map(fn, range(n)))

    def _sum(self, fn) -> np.ndarray:
        """``sum_c fn(c)`` in float64, added in chunk order."""
        parts = self._map(fn)
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out

    def forward(self, v32: np.ndarray) -> np.ndarray:
        """``psi v`` (m, K) in float64."""
        parts = self._map(lambda c: chunk_forward(self._chunk(c), v32,
                                                  self.block_bytes))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def backward(self, g: np.ndarray) -> np.ndarray:
        """``psi^T g`` (D, K): float32 chunk products summed in float64."""
        g32 = g.astype(self.spec.dtype)

        def part(c):
            P = self._chunk(c)
            r0 = self.starts[c]
            return chunk_backward(P, g32[r0:r0 + P.shape[0]])

        return self._sum(part)

    def fused(self, v32: np.ndarray, shift: np.ndarray, fn):
        """One pass for a row-separable loss: per chunk, ``f = psi v + shift``,
        ``(value, g) = fn(rows, f)`` and ``psi^T g``; returns the sums over
        the chunks (in chunk order) of value, ``psi^T g`` and ``g``."""
        def part(c):
            P = self._chunk(c)
            r0 = self.starts[c]
            rows = (np.arange(r0, r0 + P.shape[0]) if self.idx is None
                    else self.idx[r0:r0 + P.shape[0]])
            return fused_chunk(P, v32, shift, fn, rows, self.block_bytes)

        return add_in_order(self._map(part))

    def mean(self) -> np.ndarray:
        """Column means of ``psi`` (D,) in float64 (the balance centre)."""
        total = self._sum(lambda c: self._chunk(c).sum(axis=0, dtype=np.float64))
        return total / max(self.m, 1)
