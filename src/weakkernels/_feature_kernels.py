"""The compiled kernels of the seeded random features: the counter-based
generator (SplitMix64 of ``(seed, block, stream, index)``), the Fourier and
Maclaurin weight fills, the float32 cosine, the RBF rows of the Nyström
features, and the projection of CSR rows. Functions over arrays and scalars;
:mod:`weakkernels.random_features` builds the feature specs on them and
re-exports these names.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

# fastmath without nnan/ninf (umap removed blanket fastmath after NaN bugs): the
# reassociation lets LLVM vectorize reductions; NaN checks stay intact.

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_TWO_PI = 2.0 * math.pi

# float32 range reduction constants: 2*pi split in a high part exactly representable
# with few mantissa bits and a low remainder (Cody-Waite), so k*2pi is exact enough.
# Rows per GEMM chunk are chosen so one chunk of Z holds about this many floats
# (8 MB in float32). Large enough that the cosine pass crosses
# _PARALLEL_MIN_WORK and runs on both cores, which 1 MB chunks never did
# (docs/benchmarks/design_notes.md, "Random features").
_GEMM_ELEMS = 1 << 21

# Nyström's float32 kernel on dense rows of at most _NARROW_ROWS columns
# computes the float64 products X Z^T and their exponential in row blocks of
# about _KERNEL_BLOCK_BYTES of products: with few inner terms the GEMM is
# bound by writing G, which a block keeps in cache (d = 28, 2 048 landmarks:
# 17 ms per 2 048 rows in 64-row blocks against 30 ms in one product).
# Wider rows are bound by the arithmetic, where small blocks slow the GEMM
# (d = 784, 5 920 landmarks: 678 ms in 64-row blocks against 564 ms).
_NARROW_ROWS = 64
_KERNEL_BLOCK_BYTES = 1 << 20

# Rows converted to the compute dtype at a time when predicting.
_PREDICT_ROWS = 1 << 16
# Frequencies (d x features) regenerated at a time when predicting.
_CHUNK_FREQUENCIES = 1 << 24

_INV_2PI_F = np.float32(1.0 / _TWO_PI)
_2PI_HI_F = np.float32(6.28125)
_2PI_LO_F = np.float32(_TWO_PI - 6.28125)
_H2_MAX_F = np.float32((math.pi / 2) ** 2)

# Largest phase scale ``||omega|| * ||x||`` the float32 path accepts. The float32
# phase ``omega.x + b`` is only known to its ulp (2^-7 rad at 2^16), and the
# GEMM's rounding error grows with ``sum_k |omega_k x_k| <= ||omega|| ||x||``;
# the range reduction of _fast_cos adds ~2.8e-8 |x| (1.8e-3 rad at 2^16). Beyond,
# cos(phase) is noise: TSGS3VM on X * 1e8 with sigma = 1 returned |f| ~ 1e34
# (the reduction left |r| >> pi) and accuracy 0.51.
FLOAT32_PHASE_LIMIT = float(2**16)
_PHASE_SAMPLE = 256


@njit(inline="always")
def _mix64(z):
    """SplitMix64 finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix."""
    z = (z ^ (z >> _U64(30))) * _M1
    z = (z ^ (z >> _U64(27))) * _M2
    return z ^ (z >> _U64(31))


@njit(inline="always")
def _stream_key(seed, block, stream):
    """Key of one random stream: hash of (seed, block, stream)."""
    k = _mix64(_U64(seed) + _GOLDEN)
    k = _mix64(k ^ (_U64(block) * _GOLDEN + _U64(0x632BE59BD9B4E019)))
    return _mix64(k ^ (_U64(stream) + _U64(0xD1B54A32D192ED03)))


@njit(inline="always")
def _uniform(key, counter):
    """Uniform in the open interval (0, 1) from a key and a counter (53 bits)."""
    h = _mix64(key ^ _mix64(_U64(counter) * _GOLDEN + _U64(1)))
    return ((h >> _U64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def _normal(key, counter):
    """Standard normal by Box-Muller from two counter-addressed uniforms."""
    u1 = _uniform(key, _U64(2) * _U64(counter))
    u2 = _uniform(key, _U64(2) * _U64(counter) + _U64(1))
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(_TWO_PI * u2)


@njit(cache=True)
def _fill_fourier_block(seed, block, code, sigma, W, phase):
    """Fill ``W`` (d, B) and ``phase`` (B,) of one Fourier block.

    RBF: ``omega ~ N(0, 2 sigma I)``; Laplacian: ``omega_k ~ Cauchy(0, sigma)``
    (paper 000 Sec. 3.2, Rahimi & Recht 2007).
    """
    d = W.shape[0]
    _fill_fourier_rows(seed, block, code, sigma, d, np.arange(d), W, phase)


@njit(cache=True)
def _fill_fourier_rows(seed, block, code, sigma, d, cols, W, phase):
    """Rows ``cols`` of one Fourier block: ``W[r, j]`` is entry ``(cols[r],
    j)`` of :func:`_fill_fourier_block`'s ``W`` -- the same counter ``j d +
    k``, so the same bits. A sparse batch of rows needs only the frequencies
    of the columns it uses (paper 000 Alg. 2 regenerates the features from
    the seed; counter-based numbers let it regenerate just these)."""
    m, B = W.shape
    kw = _stream_key(seed, block, 0)
    kb = _stream_key(seed, block, 1)
    std = math.sqrt(2.0 * sigma)
    for j in range(B):
        for r in range(m):
            c = j * d + cols[r]
            if code == 0:
                W[r, j] = std * _normal(kw, c)
            else:
                W[r, j] = sigma * math.tan(math.pi * (_uniform(kw, c) - 0.5))
        phase[j] = _TWO_PI * _uniform(kb, j)


@njit(cache=True)
def _fill_maclaurin_block(seed, block, log_q_cum, a, q, W, scale):
    """Fill one random Maclaurin block: ``W`` (degree, d, B) signs, ``scale`` (B,).

    Feature ``j`` draws its order ``N`` from the cumulative ``q`` and gets
    ``scale[j] = sqrt(a_N / q_N)``; its sign vectors ``i < N`` are Rademacher and
    those ``i >= N`` are all zero, which :func:`_maclaurin_features` reads as "not
    part of the product" (order 0 is the empty product 1).
    """
    degree, d, B = W.shape
    ks = _stream_key(seed, block, 2)
    kn = _stream_key(seed, block, 3)
    for j in range(B):
        u = _uniform(kn, j)
        n = 0
        while n < degree and u > log_q_cum[n]:
            n += 1
        scale[j] = math.sqrt(a[n] / q[n]) if q[n] > 0 else 0.0
        for i in range(degree):
            for k in range(d):
                if i < n:
                    s = _uniform(ks, (j * degree + i) * d + k)
                    W[i, k, j] = 1.0 if s < 0.5 else -1.0
                else:
                    W[i, k, j] = 0.0


@njit(inline="always", fastmath=FASTMATH)
def _fast_cos(x):
    """float32 cosine, branch-free so LLVM vectorizes it (no SVML needed).

    Reduce ``x`` to ``r`` in [-pi, pi], then ``cos r = 1 - 2 sin^2(r/2)`` with a
    degree-11 odd Taylor polynomial for ``sin`` on [-pi/2, pi/2] (error < 1e-7,
    far below the Monte-Carlo error of any random-feature expansion), written
    in ``h^2 = (r/2)^2`` alone: ``sin^2 h = h^2 p(h^2)^2``.

    Range reduction error: the callers' fastmath ``reassoc`` lets LLVM fold
    the two Cody-Waite steps into one product by ``float32(2 pi)``, so ``r``
    is off by ~2.8e-8 ``|x|`` (measured against ``np.cos`` in float64,
    ``tests/test_random_features_range.py``): 1.8e-3 rad at the accepted
    limit ``FLOAT32_PHASE_LIMIT``, below the float32 ulp of ``x`` there
    (7.8e-3), so the phase itself, not the reduction, bounds the accuracy.
    An exact reduction in float64 costs a large share of the cosine pass
    (docs/benchmarks/design_notes.md, "Random features"). Inputs beyond the
    limit are refused by
    :meth:`FeatureSpec.check_phase_range`; ``h^2`` is still clamped to
    ``(pi/2)^2``, so a stray large phase (a Cauchy frequency of the Laplacian
    kernel) gives a bounded value, never the polynomial far outside its range
    (which returned up to ~1e34, or inf). One ``min`` is cheaper than
    clamping ``r`` on both sides.
    """
    k = np.floor(x * _INV_2PI_F + np.float32(0.5))
    r = (x - k * _2PI_HI_F) - k * _2PI_LO_F
    h = r * np.float32(0.5)
    h2 = min(h * h, _H2_MAX_F)
    p = np.float32(-2.5052108385441720e-08)
    p = p * h2 + np.float32(2.7557319223985893e-06)
    p = p * h2 + np.float32(-1.9841269841269841e-04)
    p = p * h2 + np.float32(8.3333333333333333e-03)
    p = p * h2 + np.float32(-1.6666666666666667e-01)
    p = p * h2 + np.float32(1.0)
    return np.float32(1.0) - np.float32(2.0) * h2 * (p * p)


def _make_fourier_kernels(cos_fn, real):
    """Compile the Fourier kernels for one cosine and one float type.

    The projection ``Z = X @ W`` is a GEMM done by BLAS (register-blocked, far
    faster than a hand loop); these kernels do the rest in one pass over ``Z``.
    Each row is reduced in a fixed order, so results are bit-identical for any
    number of numba threads. Serial and parallel variants are both compiled: a
    parallel region costs a thread wake-up, which on a busy 2-core machine took
    milliseconds -- 10x the work of a small minibatch step (see
    :func:`_parallel_worth_it`).
    """

    def cos_dot(Z, phase, coefT, scale, out):
        """``out[i, k] += scale * sum_j coefT[k, j] cos(Z[i, j] + phase[j])``."""
        n, F = Z.shape
        K = coefT.shape[0]
        for i in prange(n):
            for c in range(K):
                s = real(0.0)
                for j in range(F):
                    s += coefT[c, j] * cos_fn(Z[i, j] + phase[j])
                out[i, c] += scale * s

    def cos_features(Z, phase, norm):
        """In place: ``Z[i, j] = norm * cos(Z[i, j] + phase[j])`` (the map)."""
        n, F = Z.shape
        for i in prange(n):
            for j in range(F):
                Z[i, j] = norm * cos_fn(Z[i, j] + phase[j])

    # nogil: the chunked objective of the L-BFGS solver (_dsg) runs the
    # serial variants on row chunks from a thread pool
    return tuple(
        njit(parallel=par, fastmath=FASTMATH, cache=True, nogil=True)(fn)
        for fn in (cos_dot, cos_features)
        for par in (False, True)
    )


# Below this many (row x feature) evaluations a kernel call runs serially.
_PARALLEL_MIN_WORK = 1 << 21


def _parallel_worth_it(work: int) -> int:
    return 1 if work >= _PARALLEL_MIN_WORK and numba.get_num_threads() > 1 else 0


@njit(inline="always")
def _np_cos(x):
    return np.cos(x)


_KERNELS = {
    np.dtype(np.float32): _make_fourier_kernels(_fast_cos, np.float32),
    np.dtype(np.float64): _make_fourier_kernels(_np_cos, np.float64),
}

_LOG2E = 1.0 / math.log(2.0)
_LN2 = math.log(2.0)
# exp(t) below this is flushed to 0 (e^-80 = 1.8e-35): no float32 subnormals,
# which slow the products of the features by orders of magnitude on x86
_EXP_MIN = -80.0


@njit(inline="always", fastmath=FASTMATH)
def _rbf_row(g, xx, zz, sigma, out, o, bits):
    """One row of the RBF kernel in float32: ``out[j] = exp(-sigma max(xx +
    zz[j] - 2 g[j], 0))`` from the float64 products ``g[j] = x . z_j`` and
    squared norms (float64, where the distance cancels); ``o`` is
    ``out.view(int32)``, ``bits`` one int32 row of scratch.

    ``exp t`` branch-free so LLVM vectorizes it: ``t = k ln 2 + r`` with
    ``|r| <= ln 2 / 2`` (the reduction in float64: in float32 the rounding
    of ``t`` itself gave 4e-6 relative error at ``t = -70``), a degree-7
    Taylor polynomial for ``e^r`` in float32 (error < 3e-8), and ``2^k``
    added to the exponent bits in a second pass over the row. Against
    float64 ``np.exp``: relative error ~1e-7, the float32 rounding of the
    result (``tests/test_nystroem.py``).
    """
    m = g.shape[0]
    for j in range(m):
        t = -sigma * max(xx + zz[j] - 2.0 * g[j], 0.0)
        keep = t >= _EXP_MIN
        t = max(t, _EXP_MIN)
        k = np.floor(t * _LOG2E + 0.5)
        r = np.float32(t - k * _LN2)
        p = np.float32(1.0 / 5040.0)
        p = p * r + np.float32(1.0 / 720.0)
        p = p * r + np.float32(1.0 / 120.0)
        p = p * r + np.float32(1.0 / 24.0)
        p = p * r + np.float32(1.0 / 6.0)
        p = p * r + np.float32(0.5)
        p = p * r + np.float32(1.0)
        p = p * r + np.float32(1.0)
        out[j] = p if keep else np.float32(0.0)
        bits[j] = (np.int32(k) << 23) if keep else np.int32(0)
    for j in range(m):
        o[j] += bits[j]


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _rbf_from_products(G, xx, zz, sigma, out, bits):
    """``out[i, j] = k(x_i, z_j)`` (RBF, float32) from the products ``G = X
    Z^T`` (float64, BLAS's GEMM or :func:`csr_project`), in one pass over
    ``G`` (:func:`_rbf_row`): numpy's seven passes (multiply, adds, maximum,
    scale, exp, cast) cost 7x more (2048 x 4096: 119 against 16 ms), and the
    streamed Nyström solver evaluates this at every pass over the rows. (A
    numba loop computing the products itself, never writing ``G``, was no
    faster than the GEMM at d = 28: 28-30 against 24 ms at 2048 x 2048.)"""
    o = out.view(np.int32)
    for i in range(G.shape[0]):
        _rbf_row(G[i], xx[i], zz, sigma, out[i], o[i], bits)


def _csr_project_rows(indptr, indices, data, row0, Wf, ld, Z):
    """``Z[i, :] = sum_p data[p] W[indices[p], :]`` over the stored entries of
    CSR row ``row0 + i``: the projections ``omega_j^T x`` inside the Fourier
    features ``sqrt(2) cos(omega_j^T x + b_j)`` of paper 000 Sec. 2
    (approximating the kernel as in its Eq. (2)), ``Z = X W``, for a block
    of sparse rows, without densifying them.

    ``W`` (d, F) arrives flat: row ``k`` is ``Wf[k * ld : k * ld + F]``, so
    a column slice of the growing expansion (row stride ``ld > F``) is read
    in place with unit stride (as a strided 2-D array numba did not
    vectorize the inner loop: 2.4x slower). Row-wise "axpy" form: each
    stored ``x_k`` adds ``x_k W[k, :]`` to the output row, so the cost is
    ``nnz x F`` and W is read only at the rows of the nonzero columns. One
    thread owns one output row and sums its entries in storage order: the
    result does not depend on the thread count.
    """
    n, F = Z.shape
    for i in prange(n):
        z = Z[i]
        z[:] = 0.0
        for p in range(indptr[row0 + i], indptr[row0 + i + 1]):
            v = data[p]
            k = indices[p] * ld
            # two 1-D unit-stride views: indexing Wf[k + j] directly ran 2x
            # slower (not vectorized)
            w = Wf[k : k + F]
            for j in range(F):
                z[j] += v * w[j]


# serial, parallel (see _make_fourier_kernels for why both)
_CSR_PROJECT = tuple(
    njit(parallel=par, fastmath=FASTMATH, cache=True, nogil=True)(_csr_project_rows)
    for par in (False, True)
)


def _flat_rows(W: np.ndarray) -> tuple[np.ndarray, int]:
    """``(Wf, ld)`` with ``W[k, j] == Wf[k * ld + j]``, without a copy when W
    has unit column stride (C-contiguous, or a column slice of such)."""
    item = W.itemsize
    if W.shape[0] == 0 or W.shape[1] == 0:
        return np.zeros(1, dtype=W.dtype), W.shape[1]
    if W.strides[1] != item or W.strides[0] % item or W.strides[0] < W.shape[1] * item:
        W = np.ascontiguousarray(W)
    ld = W.strides[0] // item
    size = (W.shape[0] - 1) * ld + W.shape[1]
    # every element of this span lies in W's own buffer (rows of one array)
    Wf = np.lib.stride_tricks.as_strided(W, shape=(size,), strides=(item,))
    return Wf, ld


def csr_project(X, W: np.ndarray, out: np.ndarray | None = None,
                row0: int = 0, parallel: bool | None = None) -> np.ndarray:
    """``X[row0:row0 + len(out)] @ W`` for a CSR matrix ``X`` into ``out``.

    The Python boundary of :func:`_csr_project_rows`: checks the format,
    shapes and dtypes, so the numba kernel sees only arrays and scalars.

    Why a numba kernel and not scipy's ``X[rows] @ W`` (the same row-wise
    algorithm, ``csr_matvecs``): on a contiguous W the two are level; on a
    column slice -- what the growing SGD expansion passes every step --
    scipy first copies all of W, and it allocates a fresh result per call,
    where the fused cosine path reuses one buffer (measured by a benchmark
    script that left the tree with the decision studies, at the record
    revision of docs/fidelity.md). The parallel variant gained nothing on a
    loaded 2-core machine; it is used only above _PARALLEL_MIN_WORK, as the
    cosine kernels are.
    """
    if not (sp.issparse(X) and X.format == "csr"):
        raise TypeError(f"csr_project needs a CSR matrix; got {type(X).__name__}.")
    if W.ndim != 2 or W.shape[0] != X.shape[1]:
        raise ValueError(
            f"W has shape {W.shape}; expected ({X.shape[1]}, n_features)."
        )
    if X.dtype != W.dtype:
        raise ValueError(f"X is {X.dtype} and W {W.dtype}; they must match.")
    if out is None:
        out = np.empty((X.shape[0] - row0, W.shape[1]), dtype=W.dtype)
    if (out.dtype != W.dtype or out.shape[1] != W.shape[1]
            or not out.flags.c_contiguous
            or not 0 <= row0 <= row0 + out.shape[0] <= X.shape[0]):
        raise ValueError("csr_project: out has the wrong shape, dtype or layout.")
    Wf, ld = _flat_rows(W)
    nnz = int(X.indptr[row0 + out.shape[0]] - X.indptr[row0])
    par = _parallel_worth_it(nnz * W.shape[1]) if parallel is None else int(parallel)
    _CSR_PROJECT[par](
        X.indptr, X.indices, X.data, int(row0), Wf, int(ld), out
    )
    return out


def as_compute_rows(X, dtype, work: dict | None = None):
    """Rows in the compute dtype: CSR stays CSR (no densifying), dense
    becomes C-contiguous (a copy, when one is needed, in a buffer of
    ``work``; see :func:`work_array`)."""
    if sp.issparse(X):
        return sp.csr_matrix(X).astype(dtype, copy=False)
    if (work is None or not isinstance(X, np.ndarray) or X.ndim != 2
            or (X.dtype == dtype and X.flags.c_contiguous)):
        return np.ascontiguousarray(X, dtype=dtype)
    out = work_array(work, f"rows {np.dtype(dtype).name}", X.shape, dtype)
    out[...] = X
    return out


def work_array(work: dict | None, key: str, shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape``: a new one when
    ``work`` is None, else a view of the buffer ``work[key]`` (made, or
    remade larger, on demand), the same memory at every call with that
    ``work`` -- so what a call returned in it is overwritten by the next.

    For the loops that compute features chunk after chunk in one thread (a
    Dask task's sub-chunks). In a Dask worker every new array above 128 KiB
    is a new memory map, faulted in page by page (zeroed) and unmapped: the
    nanny starts workers with ``MALLOC_TRIM_THRESHOLD_`` set, and a set
    threshold stops glibc raising its mmap threshold to the size of the
    blocks a process frees, as it does in a plain process. A 2 048-row
    chunk of 2 048 streamed Nyström features (d = 28, float32) makes 34
    such arrays -- the 16 MB kernel, its 32 blocks of 1 MB float64
    products, the float64 rows: reused buffers give a worker the CPU of one
    process on a pass, with the same bits (docs/benchmarks/design_notes.md,
    "Dask workers")."""
    if work is None:
        return np.empty(shape, dtype=dtype)
    n = math.prod(shape)
    buf = work.get(key)
    if buf is None or buf.size < n or buf.dtype != dtype:
        buf = work[key] = np.empty(max(n, 1), dtype=dtype)
    return buf[:n].reshape(shape)


def _max_row_norm(X) -> float:
    """``max_i ||x_i||`` summed in X's dtype (float32: an overflow is inf)."""
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        return math.sqrt(float(sq.max())) if sq.size else 0.0
    return math.sqrt(float(np.einsum("ij,ij->i", X, X).max()))


@njit(parallel=True, cache=True)
def _maclaurin_features(X, W, scale, norm, out):
    """``out[i, j] = norm * scale[j] * prod_{i' < N_j} <W[i', :, j], x_i>``.

    Unused orders have all-zero sign vectors; they are skipped by the order test.
    """
    n, d = X.shape
    degree, _, B = W.shape
    for i in prange(n):
        for j in range(B):
            v = scale[j] * norm
            for q in range(degree):
                nonzero = False
                dot = 0.0
                for k in range(d):
                    w = W[q, k, j]
                    if w != 0.0:
                        nonzero = True
                    dot += w * X[i, k]
                if nonzero:
                    v *= dot
            out[i, j] = v


def _maclaurin_features_csr(X, W, scale, norm, out) -> None:
    """:func:`_maclaurin_features` for CSR rows: each order's dot products
    ``<W[q, :, j], x>`` are one :func:`csr_project` (Kar & Karnick 2012's
    feature ``sqrt(a_N / q_N) prod_{q < N} <w_q, x>``), in float64 as the
    dense kernel sums them."""
    X64 = X.astype(np.float64, copy=False)
    used = np.any(W != 0, axis=1)  # (degree, B): order q part of feature j
    prod = np.broadcast_to(scale.astype(np.float64) * float(norm), out.shape).copy()
    for q in range(W.shape[0]):
        if not used[q].any():
            continue
        dots = csr_project(X64, np.ascontiguousarray(W[q], dtype=np.float64))
        prod *= np.where(used[q][None, :], dots, 1.0)
    out[:] = prod
