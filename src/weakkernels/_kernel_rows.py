"""Kernel evaluations of the exact-kernel solver, compiled: kernel rows of
dense and CSR points (one at a time, or in dgemm blocks of ``ROW_BLOCK``
rows), the kernel diagonal and the decision sums of a kernel expansion. Every
function is an ``@njit`` kernel over arrays and scalars; re-exported by
:mod:`weakkernels._smo`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload

from weakkernels.kernels import KERNEL_CODES

# fastmath flags without ``nnan``/``ninf``; only used on kernel evaluations,
# whose inputs are validated finite. The SMO loop itself meets infinite bounds
# (the free balancing variable) and must not use fastmath.
FASTMATH = {"nsz", "arcp", "contract", "reassoc"}

# Dense kernel rows with at least this many features are computed in aligned
# blocks of ROW_BLOCK rows, each block one BLAS matrix product (dgemm) plus
# the norms: row p is always row ``p % ROW_BLOCK`` of the product of the rows
# ``ROW_BLOCK * (p // ROW_BLOCK) ...`` with X, whoever asks for it (the cache
# fill, a cache miss, the balancing column), so its bits do not depend on the
# cache size. Below, the exponentials dominate and the product gains nothing
# (measured: benchmarks/cccp_ijcnn1_scale.py, d = 22); those rows keep the
# row-at-a-time loop of :func:`_kernel_row`.
ROW_BLOCK = 32
BLOCK_MIN_FEATURES = 64


_RBF = KERNEL_CODES["rbf"]
_LAPLACIAN = KERNEL_CODES["laplacian"]
_POLY = KERNEL_CODES["poly"]
_LINEAR = KERNEL_CODES["linear"]

# --------------------------------------------------------------------------
# kernel evaluations
# --------------------------------------------------------------------------


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _ipow(x, degree):
    # Integer power by repeated multiplication: pow() with fastmath may take
    # approximate paths, and a negative base with a float exponent is NaN-prone.
    r = 1.0
    for _ in range(degree):
        r *= x
    return r


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _kernel_row(xi, xi_sq, X, sqnorm, code, sigma, degree, coef0, out):
    """``out[q] = k(xi, X[q])`` for every row of ``X`` (one kernel row)."""
    n, d = X.shape
    if code == 0:  # rbf, with precomputed squared norms
        # two passes, squared distances first, then the exponentials:
        # between the libm calls the latency-bound sums overlap no work; apart,
        # consecutive sums (and calls) overlap. Each entry's arithmetic is the
        # one-pass loop's: the same sum (this inner loop, these flags), the same
        # exp call (bits compared in tests/test_cccp_cache.py).
        for q in range(n):
            dot = 0.0
            for t in range(d):
                dot += xi[t] * X[q, t]
            d2 = xi_sq + sqnorm[q] - 2.0 * dot
            if d2 < 0.0:
                d2 = 0.0
            out[q] = d2
        for q in range(n):
            out[q] = math.exp(-sigma * out[q])
        return
    for q in range(n):
        if code == 1:  # laplacian
            acc = 0.0
            for t in range(d):
                acc += abs(xi[t] - X[q, t])
            out[q] = math.exp(-sigma * acc)
        else:
            dot = 0.0
            for t in range(d):
                dot += xi[t] * X[q, t]
            if code == 2:  # poly
                out[q] = _ipow(sigma * dot + coef0, degree)
            else:  # linear
                out[q] = dot


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _csr_kernel_row(vi_idx, vi_val, vi_sq, vi_l1, colptr, rowidx, colval, sqnorm,
                    l1, code, sigma, degree, coef0, out):
    """``out[q] = k(v, X[q])`` for a sparse vector ``v`` and every row of sparse ``X``.

    ``v`` is given by its sorted column indices ``vi_idx`` and values
    ``vi_val``, its squared norm ``vi_sq`` and L1 norm ``vi_l1``; ``X`` by its
    columns (CSC ``colptr/rowidx/colval``, one entry per row and column) and
    the squared norms ``sqnorm`` and L1 norms ``l1`` of its rows.

    Inverted index: ``out`` accumulates ``v_t * X[q, t]`` over the nonzeros
    ``t`` of ``v`` and, for each, over the rows ``q`` holding column ``t``.
    The cost is ``sum_{t in v} nnz(X[:, t])`` -- on the SSL-book Text set
    about 3 600 products per row against 78 000 for a scatter of ``v`` and a
    gather over every row of ``X`` (measured 20x fewer operations;
    ``benchmarks/sparse_text.py --kernel-rows``) -- plus ``n`` for the kernel
    transform. Each ``out[q]`` sums the same products in the same (ascending
    ``t``) order as the dense :func:`_kernel_row` restricted to the common
    nonzeros (a zero product adds exactly nothing), so both paths agree to
    rounding. RBF uses ``||v - x||^2 = ||v||^2 + ||x||^2 - 2 <v, x>`` (paper
    004's kernel rows from precomputed squared norms); Laplacian ``||v - x||_1
    = ||v||_1 + ||x||_1 - sum_{t in both} (|v_t| + |x_t| - |v_t - x_t|)``.
    """
    n = sqnorm.shape[0]
    for q in range(n):
        out[q] = 0.0
    for a in range(vi_idx.shape[0]):
        t = vi_idx[a]
        v = vi_val[a]
        if code == 1:  # laplacian: overlap of the L1 norms
            av = abs(v)
            for k in range(colptr[t], colptr[t + 1]):
                x = colval[k]
                out[rowidx[k]] += av + abs(x) - abs(v - x)
        else:
            for k in range(colptr[t], colptr[t + 1]):
                out[rowidx[k]] += v * colval[k]
    for q in range(n):
        if code == 1:
            d1 = vi_l1 + l1[q] - out[q]
            if d1 < 0.0:
                d1 = 0.0
            out[q] = math.exp(-sigma * d1)
        elif code == 0:  # rbf
            d2 = vi_sq + sqnorm[q] - 2.0 * out[q]
            if d2 < 0.0:
                d2 = 0.0
            out[q] = math.exp(-sigma * d2)
        elif code == 2:  # poly
            out[q] = _ipow(sigma * out[q] + coef0, degree)
        # linear: out[q] is the dot product already


def _point_row(X, p, sqnorm, code, sigma, degree, coef0, out):
    """Kernel row of training point ``p`` against every row of ``X`` (compiled only).

    ``X`` is a dense 2-D array or the sparse tuple ``(indptr, indices, data,
    l1, colptr, rowidx, colval, rowmap)`` of :func:`csr_points` (the rows as
    CSR, read through ``rowmap``, and as CSC); numba picks the implementation
    from the type, so every solver function below is compiled once per layout
    and the kernel cache is the same for both.
    """
    raise NotImplementedError("only callable from numba-compiled code")


@overload(_point_row, jit_options={"cache": True, "nogil": True})
def _point_row_impl(X, p, sqnorm, code, sigma, degree, coef0, out):
    if isinstance(X, types.Array):
        def dense(X, p, sqnorm, code, sigma, degree, coef0, out):
            _kernel_row(X[p], sqnorm[p], X, sqnorm, code, sigma, degree, coef0, out)
        return dense

    def sparse(X, p, sqnorm, code, sigma, degree, coef0, out):
        indptr, indices, data, l1, colptr, rowidx, colval, rowmap = X
        r = rowmap[p]
        a = indptr[r]
        b = indptr[r + 1]
        _csr_kernel_row(indices[a:b], data[a:b], sqnorm[p], l1[p], colptr, rowidx,
                        colval, sqnorm, l1, code, sigma, degree, coef0, out)
    return sparse


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _transform_dots(G, sq_rows, sqnorm, code, sigma, degree, coef0, out):
    """``out[r, q] = k`` from the dot products ``G[r, q] = <x_r, x_q>``.

    RBF: ``exp(-sigma max(0, ||x_r||^2 + ||x_q||^2 - 2 G))``; poly and linear
    from ``G`` alone (the Laplacian kernel has no product form).
    """
    b, n = G.shape
    for r in range(b):
        for q in range(n):
            dot = G[r, q]
            if code == 0:
                d2 = sq_rows[r] + sqnorm[q] - 2.0 * dot
                if d2 < 0.0:
                    d2 = 0.0
                out[r, q] = math.exp(-sigma * d2)
            elif code == 2:
                out[r, q] = _ipow(sigma * dot + coef0, degree)
            else:
                out[r, q] = dot


def _dense_block(X, b0, b1, sqnorm, code, sigma, degree, coef0, out):
    """Kernel rows ``b0 .. b1-1`` of dense ``X`` into ``out[:b1-b0]``: one dgemm
    (:func:`np.dot` in numba is BLAS) plus the norms. Compiled only; the
    sparse layout has no block path (its rows come from the inverted index).
    """
    raise NotImplementedError("only callable from numba-compiled code")


@overload(_dense_block, jit_options={"cache": True, "nogil": True})
def _dense_block_impl(X, b0, b1, sqnorm, code, sigma, degree, coef0, out):
    if isinstance(X, types.Array):
        def dense(X, b0, b1, sqnorm, code, sigma, degree, coef0, out):
            G = np.dot(X[b0:b1], X.T)
            _transform_dots(G, sqnorm[b0:b1], sqnorm, code, sigma, degree, coef0,
                            out[: b1 - b0])
        return dense

    def sparse(X, b0, b1, sqnorm, code, sigma, degree, coef0, out):
        raise ValueError("sparse kernel rows have no block path")
    return sparse


@njit(cache=True, nogil=True)
def _rows_block(X, b0, b1, sqnorm, code, sigma, degree, coef0, block, out):
    """Kernel rows of base points ``b0 .. b1-1`` (``b0`` a multiple of ``block``).

    ``block > 1`` (dense only): aligned dgemm blocks of ``block`` rows;
    ``block == 1``: one row at a time (:func:`_point_row`, dense or sparse).
    """
    if block > 1:
        for a in range(b0, b1, block):
            e = min(a + block, b1)
            _dense_block(X, a, e, sqnorm, code, sigma, degree, coef0,
                         out[a - b0: e - b0])
    else:
        for p in range(b0, b1):
            _point_row(X, p, sqnorm, code, sigma, degree, coef0, out[p - b0])


@njit(cache=True, nogil=True)
def _kernel_diag(X, sqnorm, code, sigma, degree, coef0):
    n = sqnorm.shape[0]
    out = np.empty(n)
    for q in range(n):
        if code == 0 or code == 1:
            out[q] = 1.0
        elif code == 2:
            out[q] = _ipow(sigma * sqnorm[q] + coef0, degree)
        else:
            out[q] = sqnorm[q]
    return out


def _expansion_row(F, r, coef, intercept, row):
    """``F[r, c] = intercept[c] + sum_s coef[c, s] row[s]``: the decision values
    of point ``r`` from its kernel row to the support vectors."""
    for c in range(coef.shape[0]):
        acc = intercept[c]
        for s in range(coef.shape[1]):
            acc += coef[c, s] * row[s]
        F[r, c] = acc


# One source compiled twice, so that each path keeps its arithmetic: the dense
# decision sums with fastmath (reassociated, vectorized), the CSR one in order.
# Not cached on their own (one cache entry would serve both flag sets); each
# caller's cached code holds its copy.
_add_row_fast = njit(fastmath=FASTMATH)(_expansion_row)
_add_row = njit(_expansion_row)


@njit(fastmath=FASTMATH, cache=True, nogil=True)
def _decision(Z, SV, sv_sq, coef, intercept, code, sigma, degree, coef0):
    """``F[r, c] = sum_s coef[c, s] k(Z[r], SV[s]) + intercept[c]``, row by row."""
    n = Z.shape[0]
    n_out, n_sv = coef.shape
    F = np.empty((n, n_out))
    row = np.empty(n_sv)
    for r in range(n):
        zsq = 0.0
        for t in range(Z.shape[1]):
            zsq += Z[r, t] * Z[r, t]
        _kernel_row(Z[r], zsq, SV, sv_sq, code, sigma, degree, coef0, row)
        _add_row_fast(F, r, coef, intercept, row)
    return F


@njit(cache=True, nogil=True)
def _csr_decision(z_indptr, z_indices, z_data, sv_colptr, sv_rowidx, sv_colval,
                  sv_sq, sv_l1, coef, intercept, code, sigma, degree, coef0):
    """:func:`_decision` for CSR ``Z`` and support vectors given as CSC."""
    n = z_indptr.shape[0] - 1
    n_out, n_sv = coef.shape
    F = np.empty((n, n_out))
    row = np.empty(n_sv)
    for r in range(n):
        a = z_indptr[r]
        b = z_indptr[r + 1]
        zsq = 0.0
        zl1 = 0.0
        for t in range(a, b):
            zsq += z_data[t] * z_data[t]
            zl1 += abs(z_data[t])
        _csr_kernel_row(z_indices[a:b], z_data[a:b], zsq, zl1, sv_colptr, sv_rowidx,
                        sv_colval, sv_sq, sv_l1, code, sigma, degree, coef0, row)
        _add_row(F, r, coef, intercept, row)
    return F
