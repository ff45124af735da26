"""Seeded random features: every block is a pure function of ``(seed, block)``.

Random Fourier features (Rahimi & Recht 2007) for shift-invariant kernels, as used
by the triply / quadruply stochastic solvers (paper 000 Eq. (2), paper 002 Sec. 3,
paper 003 Sec. 4):

* Gaussian RBF ``exp(-sigma ||x - x'||^2)``: ``omega ~ N(0, 2 sigma I)``,
  ``phi(x) = sqrt(2) cos(omega^T x + b)``, ``b ~ U[0, 2 pi)``;
* Laplacian ``exp(-sigma ||x - x'||_1)``: ``omega_k ~ Cauchy(0, sigma)`` i.i.d.;

and random Maclaurin features (Kar & Karnick 2012) for the dot-product kernel
``(sigma <x, x'> + coef0) ** degree`` used in paper 002's high-dimensional runs: a
feature draws an order ``N`` with probability ``q_N`` proportional to the Maclaurin
coefficient ``a_N = binom(degree, N) coef0^(degree-N) sigma^N`` and returns
``sqrt(a_N / q_N) prod_{i<N} <w_i, x>`` with Rademacher ``w_i``; it is unbiased,
``E[phi(x) phi(x')] = k(x, x')``.

Why counter-based: the doubly stochastic methods regenerate old features at
prediction time instead of storing them (paper 000 Alg. 1-2, "random feature
generator initialized by a predefined seed according to iteration"). Here every
random number is a hash of ``(seed, block, stream, index)`` (SplitMix64 finalizer),
so a block can be regenerated in any order, in parallel, bit-identically between
training and prediction and across thread counts, with no generator state at all.

A block of ``B`` features is scaled by ``1/sqrt(B)`` so that one block alone is an
unbiased kernel approximation: ``sum_j phi_j(x) phi_j(x') ~ k(x, x')``.
"""

from __future__ import annotations

import copy
import math
from numbers import Integral

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from weakkernels._constraints import RANDOM_FEATURE_CONSTRAINTS
from weakkernels._threads import one_blas_thread
from weakkernels._validation import (
    _canonical_csr,
    _precheck_sparse,
    available_memory,
    size_text,
)
from weakkernels.kernels import KERNEL_CODES, RANDOM_FEATURE_KERNELS

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


class FeatureSpec:
    """What a seed-based model needs to regenerate its features.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "poly"}
    sigma, degree, coef0 : kernel parameters (see :mod:`weakkernels.kernels`).
    n_features_in : int
        Input dimension d.
    block_size : int
        Features per block; block ``b`` is a pure function of ``(seed, b)``.
    seed : int
        Non-negative integer below 2**63.
    dtype : numpy dtype, float32 (default compute path) or float64.
    """

    def __init__(self, kernel, sigma, degree, coef0, n_features_in, block_size, seed,
                 dtype=np.float32):
        if kernel not in RANDOM_FEATURE_KERNELS:
            raise ValueError(
                f"kernel={kernel!r} has no random features; use one of "
                f"{list(RANDOM_FEATURE_KERNELS)}"
            )
        self.kernel = kernel
        self.code = KERNEL_CODES[kernel]
        self.sigma = float(sigma)
        self.degree = int(degree)
        self.coef0 = float(coef0)
        self.d = int(n_features_in)
        self.block_size = int(block_size)
        self.seed = int(seed)
        self.dtype = np.dtype(dtype)
        if self.kernel == "poly":
            n = np.arange(self.degree + 1)
            binom = np.array([math.comb(self.degree, int(i)) for i in n], dtype=float)
            a = binom * self.coef0 ** (self.degree - n) * self.sigma**n
            if self.coef0 == 0.0:
                a[:-1] = 0.0
                a[-1] = self.sigma**self.degree
            q = a / a.sum()
            self._a, self._q = a, q
            self._q_cum = np.cumsum(q)
            self._q_cum[-1] = 1.0

    @property
    def is_fourier(self) -> bool:
        return self.kernel in ("rbf", "laplacian")

    def block(self, b: int, cols: np.ndarray | None = None):
        """Regenerate block ``b``: ``(W, phase)`` for Fourier kernels or
        ``(W, scale)`` for random Maclaurin features. ``cols`` (Fourier
        only): just these rows of W, bit-identical to the full block's."""
        B, d = self.block_size, self.d
        if self.is_fourier:
            phase = np.empty(B, dtype=np.float64)
            if cols is not None:
                W = np.empty((cols.size, B), dtype=np.float64)
                _fill_fourier_rows(self.seed, b, self.code, self.sigma, d,
                                   np.asarray(cols, dtype=np.int64), W, phase)
                return W.astype(self.dtype), phase.astype(self.dtype)
            W = np.empty((d, B), dtype=np.float64)
            _fill_fourier_block(self.seed, b, self.code, self.sigma, W, phase)
            return W.astype(self.dtype), phase.astype(self.dtype)
        if cols is not None:
            raise ValueError("cols is for the Fourier kernels only.")
        W = np.empty((self.degree, d, B), dtype=np.float64)
        scale = np.empty(B, dtype=np.float64)
        _fill_maclaurin_block(self.seed, b, self._q_cum, self._a, self._q, W, scale)
        return W.astype(self.dtype), scale.astype(self.dtype)

    def blocks(self, first: int, stop: int, cols: np.ndarray | None = None):
        """Blocks ``first .. stop-1`` concatenated along the feature axis
        (``cols``: only those rows of W, see :meth:`block`).

        Written block by block into the result (a list of blocks and their
        concatenation held W twice: 2 x 192 MB at d = 47 000, D = 1024)."""
        B, n = self.block_size, max(0, stop - first)
        rows = self.d if cols is None else cols.size
        shape = (rows,) if self.is_fourier else (self.degree, rows)
        W = np.empty(shape + (n * B,), dtype=self.dtype)
        second = np.empty(n * B, dtype=self.dtype)
        for i, b in enumerate(range(first, stop)):
            W[..., i * B : (i + 1) * B], second[i * B : (i + 1) * B] = (
                self.block(b, cols))
        return W, second

    @property
    def norm(self) -> float:
        """Per-feature normalization so that one block approximates the kernel."""
        if self.is_fourier:
            return math.sqrt(2.0 / self.block_size)
        return math.sqrt(1.0 / self.block_size)

    def median_frequency_norm(self) -> float:
        """Median of ``||omega_j||`` over the first >= 256 features (cached).

        Every block draws its frequencies from one distribution, so this is a
        property of the spec, computed once (regenerating a few blocks) rather
        than from each ``W`` a solver passes in (per call, a d x 256 pass and
        a partition: docs/benchmarks/design_notes.md, "Random features").
        """
        cached = self.__dict__.get("_median_frequency_norm")
        if cached is None:
            W, _ = self.blocks(0, -(-_PHASE_SAMPLE // self.block_size))
            w2 = np.einsum("ij,ij->j", W, W, dtype=np.float64)
            cached = math.sqrt(float(np.median(w2)))
            self._median_frequency_norm = cached
        return cached

    def check_phase_range(self, X: np.ndarray) -> None:
        """Refuse float32 Fourier features whose phases float32 cannot hold.

        The phase of feature ``j`` at ``x`` is ``omega_j . x + b_j``; its
        float32 error grows with ``||omega_j|| ||x||``. Refuses (ValueError
        naming the scale of X and sigma) when the *median* over the features
        of ``||omega_j||``, times ``max_i ||x_i||``, exceeds
        ``FLOAT32_PHASE_LIMIT``: then most features are noise. The median, not
        the maximum, because the Laplacian kernel's Cauchy frequencies always
        include a few huge ones; those few lose accuracy gracefully (the
        cosine clamps). Costs one pass over ``X`` (n d) against the GEMM's
        n d F.
        """
        if self.dtype != np.float32 or not self.is_fourier or X.shape[0] == 0:
            return
        # float32 sums: an overflow to inf is a refusal, as it should be
        x_norm = _max_row_norm(X)
        w_norm = self.median_frequency_norm()
        scale = x_norm * w_norm
        if not scale <= FLOAT32_PHASE_LIMIT:
            raise ValueError(
                f"X has rows of norm up to {x_norm:.3g} and sigma={self.sigma:.3g} "
                f"gives random frequencies of norm ~{w_norm:.3g}: the feature "
                f"phases omega.x reach ~{scale:.3g}, beyond {FLOAT32_PHASE_LIMIT:g} "
                "where float32 (dtype='float32') computes them accurately. Scale "
                "the features (e.g. min-max to [0, 1]), lower sigma, or use "
                "dtype='float64'."
            )

    def features(self, X, W, second, parallel: bool | None = None,
                 work: dict | None = None) -> np.ndarray:
        """The feature map of the given (concatenated) blocks at ``X`` (dense,
        or scipy.sparse: CSR rows are projected by :func:`csr_project`).

        ``parallel=False`` runs the serial kernels only (the caller is a
        worker thread of its own pool); None decides by the work size.
        ``work``: buffers the caller keeps across calls (:func:`work_array`):
        the features are written into them, and overwritten by the next
        call; None: new arrays."""
        X = as_compute_rows(X, self.dtype, work)
        sparse = sp.issparse(X)
        out = work_array(work, "features", (X.shape[0], W.shape[-1]), self.dtype)
        if self.is_fourier:
            self.check_phase_range(X)
            Z = (csr_project(X, W, out=out, parallel=parallel) if sparse
                 else np.matmul(X, W, out=out))
            par = (_parallel_worth_it(Z.size) if parallel is None
                   else int(parallel))
            _KERNELS[self.dtype][2 + par](Z, second, self.dtype.type(self.norm))
            return Z
        if sparse:
            _maclaurin_features_csr(X, W, second, self.norm, out)
        else:
            _maclaurin_features(X, W, second, self.dtype.type(self.norm), out)
        return out

    def stream_features(self, X, W, second, parallel: bool | None = None,
                        work: dict | None = None):
        """What the chunked L-BFGS objective streams: the features themselves
        (no :meth:`whitening`; see :meth:`NystromSpec.stream_features`);
        ``work`` as in :meth:`features`."""
        return self.features(X, W, second, parallel, work)

    def whitening(self) -> None:
        """None: :meth:`stream_features` are the features."""
        return None

    def row_whitened(self) -> FeatureSpec:
        """Itself: Fourier features have no whitening to move."""
        return self

    def accumulate(self, X, W, second, coefT, scale, out, buf=None) -> None:
        """``out += scale * features(X) @ coefT.T``.

        Fourier kernels: GEMM into a reused buffer (a fresh n x F array per call
        costs page faults that dominate small batches), then the fused
        cosine-dot kernel; the n x F feature matrix is never kept.
        Call inside :func:`weakkernels._threads.one_blas_thread` -- see there for why.
        """
        if not self.is_fourier:
            Phi = self.features(X, W, second)
            out += scale * (Phi.astype(np.float64) @ coefT.T.astype(np.float64))
            return
        self.check_phase_range(X)
        n, F = X.shape[0], W.shape[1]
        rows = max(1, min(n, _GEMM_ELEMS // max(F, 1)))
        if buf is None or buf.size < rows * F:
            buf = np.empty(rows * F, dtype=self.dtype)
        cos_dot = _KERNELS[self.dtype][_parallel_worth_it(rows * F)]
        sparse = sp.issparse(X)
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            Z = buf[: (r1 - r0) * F].reshape(r1 - r0, F)
            if sparse:  # CSR rows: the same fused path after the projection
                csr_project(X, W, out=Z, row0=r0)
            else:
                np.matmul(X[r0:r1], W, out=Z)
            cos_dot(Z, second, coefT, float(scale) * self.norm, out[r0:r1])

    def decision(self, X, coefT: np.ndarray, n_blocks: int,
                 blocks_per_chunk: int | None = None) -> np.ndarray:
        """``f(X) = sum_b features_b(X) @ coef_b`` regenerating blocks by seed
        (paper 000 Algorithm 2, "TSGS3VM Predict").

        Rows are converted to the compute dtype ``_PREDICT_ROWS`` at a time, so a
        memory-mapped X larger than RAM is never copied whole.
        """
        n = X.shape[0]
        K = coefT.shape[0]
        out = np.zeros((n, K), dtype=np.float64)
        if blocks_per_chunk is None:
            # 4096 features per chunk, fewer when d x 4096 frequencies would
            # exceed 2^24 entries (64 MB in float32, not d x 4096 of them):
            # unchanged, so bit-identical, for d <= 4096.
            feats = min(4096, max(1, _CHUNK_FREQUENCIES // max(self.d, 1)))
            blocks_per_chunk = max(1, feats // self.block_size)
        coefT = np.ascontiguousarray(coefT, dtype=self.dtype)
        B = self.block_size
        with one_blas_thread():
            for r0 in range(0, n, _PREDICT_ROWS):
                r1 = min(n, r0 + _PREDICT_ROWS)
                Xc = as_compute_rows(X[r0:r1], self.dtype)
                Xc, cols = self._used_columns(Xc)
                for b0 in range(0, n_blocks, blocks_per_chunk):
                    b1 = min(n_blocks, b0 + blocks_per_chunk)
                    W, second = self.blocks(b0, b1, cols)
                    coef_chunk = np.ascontiguousarray(coefT[:, b0 * B : b1 * B])
                    self.accumulate(Xc, W, second, coef_chunk, 1.0, out[r0:r1])
        return out

    def _used_columns(self, X):
        """``(X', cols)``: CSR rows ``X`` restricted to the columns ``cols``
        they store, renumbered ``0 .. len(cols)-1`` (order kept, so ``X' @
        W[cols]`` sums the same products in the same order as ``X @ W``:
        bit-identical). Regenerating only those rows of the frequencies made
        predicting one document of 75 terms with a d = 47 000 model cost 75
        rows of W instead of 47 000. ``cols`` is None (use all of W) for
        dense rows, the Maclaurin features, or rows that use most columns."""
        if not (sp.issparse(X) and self.is_fourier):
            return X, None
        cols = np.unique(X.indices)
        if cols.size > self.d // 2:
            return X, None
        idx = np.searchsorted(cols, X.indices).astype(X.indices.dtype)
        Xc = sp.csr_matrix((X.data, idx, X.indptr), shape=(X.shape[0], cols.size))
        return Xc, cols

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "sigma": self.sigma,
            "degree": self.degree,
            "coef0": self.coef0,
            "n_features_in": self.d,
            "block_size": self.block_size,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }

    @classmethod
    def from_dict(cls, d: dict) -> FeatureSpec:
        return cls(
            d["kernel"], d["sigma"], d["degree"], d["coef0"], d["n_features_in"],
            d["block_size"], d["seed"], np.dtype(d["dtype"]),
        )


class NystromSpec:
    """Nyström features of the RBF kernel on a seeded sample of landmarks.

    ``phi(x) = k(x, Z) L^{-T}`` with ``L L^T = K_ZZ + jitter I`` (Cholesky,
    float64), so ``phi(x) . phi(x') = k(x, Z) (K_ZZ + jitter I)^{-1} k(Z, x')``,
    the Nyström approximation of ``k`` (Williams & Seeger 2001) in the
    whitened form Falkon preconditions with (Rudi, Carratino & Rosasco 2017;
    Meanti et al. 2020): the primal problem on ``phi`` is the kernel machine
    restricted to ``span{k(z_j, .)}``, as well conditioned as the kernel
    allows. Unlike random Fourier features the basis adapts to the data, so
    far fewer features reach the exact kernel's accuracy
    (docs/benchmarks/design_notes.md, "Random features").

    The model file stores the landmarks (``m x d`` floats, not a seed alone)
    and recomputes ``L`` when it is loaded. One block of ``m`` features: the
    L-BFGS solver only (the SGD of the papers draws fresh Fourier blocks).
    """

    is_fourier = False
    kind = "nystroem"
    # K_ZZ (m x m, float64) and L^-T are built at fit and at load: 16 384
    # landmarks are 2 GiB each; a model file asking for more is refused
    MAX_LANDMARKS = 1 << 14
    # K_ZZ's diagonal is 1 for the RBF kernel: a jitter of 1e-6 bounds the
    # condition number of L by 1e3 and moves phi.phi' by <= 1e-6 relative
    JITTER = 1e-6

    def __init__(self, kernel, sigma, landmarks, dtype=np.float32, seed=0):
        if kernel != "rbf":
            raise ValueError(
                f'features="nystroem" supports kernel="rbf" only; got {kernel!r}.')
        self.kernel = kernel
        self.sigma = float(sigma)
        self.degree, self.coef0 = 2, 1.0
        self.dtype = np.dtype(dtype)
        self.seed = int(seed)
        # landmarks rounded to the compute dtype first: the model file stores
        # them so (float32: half the bytes) and L computed from the stored
        # values is the same after loading, bit for bit
        self.landmarks = np.ascontiguousarray(landmarks, dtype=self.dtype)
        Z = self.landmarks.astype(np.float64)
        if not 1 <= Z.shape[0] <= self.MAX_LANDMARKS:
            raise ValueError(
                f"{Z.shape[0]} Nyström landmarks; between 1 and "
                f"{self.MAX_LANDMARKS} are supported (lower max_features).")
        self.block_size = Z.shape[0]
        self.d = Z.shape[1]
        sq = np.einsum("ij,ij->i", Z, Z)
        from scipy.linalg import cholesky
        from scipy.linalg.lapack import dtrtri

        # one BLAS thread: a threaded Cholesky rounds differently (2e-7 in
        # L^-T, 2e-3 in the decision values on cod-rna), and a model file
        # reloaded in a process with another thread count -- a Dask worker --
        # must give the fitted model's scores
        with one_blas_thread():
            K = np.exp(-self.sigma * np.maximum(
                sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0.0))
            K[np.diag_indices_from(K)] += self.JITTER
            L = cholesky(K, lower=True)
            # T = L^{-T}: phi(x) = k(x, Z) T. LAPACK's triangular inverse
            # (m^3 / 3 flops), not a solve against the identity (m^3): 4 096
            # landmarks 0.7 s against 2.3 s, at every fit and model load
            Linv, info = dtrtri(L, lower=1)
            if info != 0:  # L's diagonal is >= sqrt(JITTER) > 0: cannot occur
                raise np.linalg.LinAlgError(f"dtrtri failed (info={info}).")
            T = Linv.T
        self._T = np.ascontiguousarray(T, dtype=self.dtype)
        # the distances ||x||^2 + ||z||^2 - 2 x.z in float64: in float32 the
        # cancellation near a landmark, amplified by L^-T (condition up to
        # 1e3), moved a fit by 1e-4 between dense and CSR storage of the rows
        self._W = np.ascontiguousarray(Z.T)  # (d, m) float64
        self._sq = sq
        self._per_row, self._twin = False, None  # see row_whitened

    @property
    def norm(self) -> float:
        return 1.0

    def block(self, b: int, cols=None):
        return self.blocks(b, b + 1, cols)

    def blocks(self, first: int, stop: int, cols=None):
        """The one block: ``(Z^T, ||z||^2)``; ``cols``: those rows of Z^T."""
        if (first, stop) != (0, 1):
            raise ValueError("a Nyström expansion is one block (0, 1).")
        if cols is not None:
            return np.ascontiguousarray(self._W[cols]), self._sq
        return self._W, self._sq

    def check_phase_range(self, X) -> None:
        """Nothing to check: no phases (kept for the FeatureSpec interface)."""

    def features(self, X, W, second, parallel: bool | None = None,
                 work: dict | None = None) -> np.ndarray:
        """``phi(X)`` (n, m) in the compute dtype: ``k(X, Z) L^{-T}``, the
        kernel values in float64, the whitening product in the compute
        dtype; ``work`` as in :meth:`FeatureSpec.features`."""
        K = self._kernel(X, W, second, parallel, work)
        return np.matmul(K, self._T, out=work_array(
            work, "features", (K.shape[0], self._T.shape[1]), self.dtype))

    def stream_features(self, X, W, second, parallel: bool | None = None,
                        work: dict | None = None):
        """What the chunked L-BFGS objective streams: ``k(X, Z)``, without the
        whitening. The solver applies :meth:`whitening` ``T`` to the
        coefficients once per evaluation instead (``phi v = k(X, Z) (T v)``,
        ``phi^T g = T^T (k(Z, X) g)``, Falkon's order), so a row costs
        ``m d`` as a Fourier feature row does, not the ``m (d + m)`` of
        :meth:`features` -- at 10^6 rows of 28 columns and 4 096 landmarks,
        0.23 TFLOP per pass instead of 34 -- and the training outputs are
        computed as :meth:`decision` computes them. ``work`` as in
        :meth:`FeatureSpec.features`."""
        if self._per_row:
            return self.features(X, W, second, parallel, work)
        return self._kernel(X, W, second, parallel, work)

    def whitening(self) -> np.ndarray | None:
        """``T = L^{-T}`` (m, m) in float64, from the stored compute-dtype
        copy (the one :meth:`decision` folds with); None for
        :meth:`row_whitened`."""
        return None if self._per_row else self._T.astype(np.float64)

    def row_whitened(self) -> NystromSpec:
        """This spec with :meth:`stream_features` whitened row by row (the
        full ``phi``, ``m^2`` per row) and no :meth:`whitening`: for a
        sample small enough to hold, whose chunks are built once and read at
        every evaluation -- there the ``m^2`` products per evaluation of the
        folded form cost more than the rows (docs/benchmarks/design_notes.md,
        "Random features"). One shared twin (the same object at every
        call)."""
        if self._twin is None:
            twin = copy.copy(self)
            twin._per_row, twin._twin = True, twin
            self._twin = twin
        return self._twin

    def _kernel(self, X, W, second, parallel: bool | None = None,
                work: dict | None = None) -> np.ndarray:
        """``k(X, Z)`` (n, m) in the compute dtype: the distances in float64,
        the exponential in the compute dtype (float32: one fused numba pass
        over the products, :func:`_rbf_from_products`). ``work`` as in
        :meth:`FeatureSpec.features`."""
        X = as_compute_rows(X, np.float64, work)
        out = work_array(work, "kernel", (X.shape[0], W.shape[1]), self.dtype)
        f32 = self.dtype == np.float32
        if f32 and not sp.issparse(X) and X.shape[1] <= _NARROW_ROWS:
            # narrow rows: the products and their exponential in row blocks
            # of _KERNEL_BLOCK_BYTES, so G never leaves the cache; one G
            # for every block (a new 1 MB one per block: see work_array)
            xx = np.einsum("ij,ij->i", X, X)
            bits = np.empty(W.shape[1], dtype=np.int32)
            step = max(16, _KERNEL_BLOCK_BYTES // (8 * max(W.shape[1], 1)))
            G = work_array(work, "products", (min(step, X.shape[0]), W.shape[1]),
                           np.float64)
            for r0 in range(0, X.shape[0], step):
                r1 = min(X.shape[0], r0 + step)
                Gb = np.matmul(X[r0:r1], W, out=G[:r1 - r0])
                _rbf_from_products(Gb, xx[r0:r1], second, self.sigma,
                                   out[r0:r1], bits)
            return out
        # the float64 products: where the kernel goes in float64
        G = work_array(work, "products", out.shape, np.float64) if f32 else out
        if sp.issparse(X):
            csr_project(X, np.asarray(W, dtype=np.float64), out=G,
                        parallel=parallel)
            xx = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            np.matmul(X, W, out=G)
            xx = np.einsum("ij,ij->i", X, X)
        if f32:
            _rbf_from_products(G, xx, second, self.sigma, out,
                               np.empty(G.shape[1], dtype=np.int32))
            return out
        G *= -2.0
        G += xx[:, None]
        G += second[None, :]
        np.maximum(G, 0.0, out=G)
        G *= -self.sigma
        np.exp(G, out=G)
        return G

    def _fold(self, coefT: np.ndarray) -> np.ndarray:
        """``L^{-T} coef`` (m, K) in the compute dtype, the product in float64:
        ``phi(X) coef = k(X, Z) (L^{-T} coef)``, so a row costs m (d + K), not
        the m^2 of ``phi(x)``."""
        return np.ascontiguousarray(
            (self._T.astype(np.float64) @ coefT.T.astype(np.float64))
            .astype(self.dtype))

    def accumulate(self, X, W, second, coefT, scale, out, buf=None) -> None:
        """``out += scale * phi(X) @ coefT.T`` (float64), with the whitening
        folded into the coefficients (:meth:`_fold`)."""
        out += scale * (self._kernel(X, W, second) @ self._fold(coefT))

    def decision(self, X, coefT: np.ndarray, n_blocks: int,
                 blocks_per_chunk: int | None = None) -> np.ndarray:
        """``f(X) = phi(X) coef = k(X, Z) (L^{-T} coef)`` in row chunks (n, K)
        float64, the whitening folded into the coefficients once."""
        out = np.zeros((X.shape[0], coefT.shape[0]), dtype=np.float64)
        rows = max(1, _GEMM_ELEMS // max(self.block_size, 1))
        with one_blas_thread():
            alpha = self._fold(coefT)
            for r0 in range(0, X.shape[0], rows):
                G = self._kernel(X[r0:r0 + rows], self._W, self._sq)
                out[r0:r0 + rows] = G @ alpha
        return out

    def to_dict(self) -> dict:
        return {"kind": self.kind, "kernel": self.kernel, "sigma": self.sigma,
                "degree": self.degree, "coef0": self.coef0, "n_features_in": self.d,
                "block_size": self.block_size, "seed": self.seed,
                "dtype": self.dtype.name}


def spec_from_state(meta: dict, arrays: dict):
    """The feature spec of a model file: Fourier / Maclaurin (seeds only) or
    Nyström (its landmarks array)."""
    if meta.get("kind") == NystromSpec.kind:
        Z = arrays["landmarks"]
        if Z.ndim != 2 or Z.shape != (meta["block_size"], meta["n_features_in"]):
            raise ValueError("landmarks do not match the spec's shape")
        return NystromSpec(meta["kernel"], meta["sigma"], Z, np.dtype(meta["dtype"]),
                           meta["seed"])
    return FeatureSpec.from_dict(meta)


def seed_from_random_state(random_state) -> int:
    """Turn ``random_state`` into the plain integer seed the kernels see."""
    rs = check_random_state(random_state)
    return int(rs.randint(0, 2**31 - 1))


class RandomFeatures(TransformerMixin, BaseEstimator):
    """Seeded random features for the RBF, Laplacian and polynomial kernels.

    Like scikit-learn's ``RBFSampler``, but every block of ``block_size`` features
    is a pure function of ``(seed, block)`` (see the module docstring), so the
    transform is bit-identical across processes, thread counts and block orders,
    and nothing but the seed needs to be stored. ``transform(X) @ transform(Y).T``
    approximates ``k(X, Y)`` without bias.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float, default=1.0
        Kernel width: ``exp(-sigma ||x - x'||^2)`` for RBF (scikit-learn's gamma).
    degree : int, default=2
        Degree of the polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    coef0 : float, default=1.0
    n_components : int, default=512
        Number of features; a multiple of ``block_size`` is used (rounded up).
    block_size : int, default=64
    dtype : {"float32", "float64"}, default="float32"
    random_state : int, RandomState instance or None

    See Also
    --------
    sklearn.kernel_approximation.RBFSampler : scikit-learn's random Fourier
        features.

    References
    ----------
    .. [1] Rahimi, A., Recht, B. Random features for large-scale kernel
       machines. NIPS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from weakkernels import RandomFeatures
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> Z = RandomFeatures(n_components=64, random_state=0).fit_transform(X)
    >>> Z.shape
    (5, 64)
    """

    _parameter_constraints = {
        **RANDOM_FEATURE_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "block_size": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, kernel="rbf", sigma=1.0, degree=2, coef0=1.0,
                 n_components=512, block_size=64, dtype="float32", random_state=None):
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.n_components = n_components
        self.block_size = block_size
        self.dtype = dtype
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        _precheck_sparse(X, True)  # bad indices never reach the kernels
        X = _canonical_csr(validate_data(self, X, accept_sparse="csr",
                                         dtype=np.float64, ensure_all_finite=True))
        B = min(self.block_size, self.n_components)
        self.n_blocks_ = -(-self.n_components // B)
        self.spec_ = FeatureSpec(
            self.kernel, self.sigma, self.degree, self.coef0, X.shape[1], B,
            seed_from_random_state(self.random_state), np.dtype(self.dtype),
        )
        need = self.n_blocks_ * B * X.shape[1] * (
            1 if self.spec_.is_fourier else self.degree) * self.spec_.dtype.itemsize
        limit = min(1 << 34, available_memory())
        if need > limit:
            # transform holds every block's frequencies at once (at most 16
            # GiB, and what this process may use)
            raise ValueError(
                f"n_components={self.n_components} of {X.shape[1]} inputs need "
                f"{size_text(need)} of frequencies, more than the "
                f"{size_text(limit)} this process may use; lower n_components.")
        # The block norm assumes one block approximates k; with several blocks the
        # concatenation is rescaled so the whole map does.
        self._rescale = 1.0 / math.sqrt(self.n_blocks_)
        return self

    def transform(self, X):
        check_is_fitted(self)
        _precheck_sparse(X, True)
        X = _canonical_csr(validate_data(self, X, accept_sparse="csr",
                                         dtype=np.float64, reset=False))
        W, second = self.spec_.blocks(0, self.n_blocks_)
        Phi = self.spec_.features(X, W, second)
        return Phi * self.spec_.dtype.type(self._rescale)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = [self.dtype]
        tags.input_tags.sparse = True
        return tags


def set_num_threads(n: int) -> None:
    """Set numba's thread count (results do not depend on it)."""
    numba.set_num_threads(int(n))
