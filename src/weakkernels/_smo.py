"""Numba SMO solver for the convex sub-problem of the CCCP algorithms of paper 004.

Collobert, Sinz, Weston & Bottou, *Large Scale Transductive SVMs* (JMLR 2006),
Algorithms 1.2 and 1.3: every CCCP iteration solves

.. math::

    \\max_\\alpha \\; \\alpha \\cdot \\zeta - \\tfrac12 \\alpha^T K \\alpha
    \\quad \\text{s.t.} \\quad \\textstyle\\sum_k \\alpha_k = 0,
    \\quad A_k \\le \\alpha_k \\le B_k .

Sign convention (the one of the paper and of LaSVM): ``alpha_k`` is the *signed*
coefficient of example ``k`` (``y_k alpha_k >= 0`` for a plain SVM), ``K`` is the
plain kernel matrix (not ``y y^T * K``), and the equality constraint is
``sum(alpha) = 0``. The paper's per-example bounds ``lo_k <= y_k alpha_k <= hi_k``
become ``A_k = lo_k, B_k = hi_k`` for ``y_k = +1`` and ``A_k = -hi_k,
B_k = -lo_k`` for ``y_k = -1`` (:func:`bounds_from_margins`). Bounds may be
infinite: the balancing variable ``alpha_0`` of Eq. 1.15 is a free Lagrange
multiplier.

The gradient is ``g = zeta - K alpha``; at the optimum ``g_k = b`` for every free
``alpha_k`` (so ``f(x_k) = (K alpha)_k + b = zeta_k``), which is how the bias of
Algorithms 1.2/1.3 is read off. The stopping rule is the maximal-violating-pair
gap ``max_{alpha_i < B_i} g_i - min_{alpha_j > A_j} g_j < tol``, identical to
LIBSVM's (and scikit-learn's ``SVC(tol=...)``) after the change of variables
``alpha_libsvm = y * alpha``.

Several optimisation variables may share one *base point*: CCCP-TSVM duplicates
every unlabeled point with both labels (Sec. 1.5.3), and the balancing example
``x_0`` (Eq. 1.15) is a virtual base point whose kernel row is the mean of the
unlabeled rows. Kernel rows are cached per base point, so the duplicates cost no
extra kernel evaluations and no extra cache memory.

Base points may be a dense array or a scipy.sparse matrix (kept as CSR plus
a CSC inverted index, never densified): every kernel row -- one row of the
``K`` of Eq. 1.9 and of Algorithm 1.3's dual -- then comes from sparse dot
products (:func:`_csr_kernel_row`), and the solver and its row cache are the
same compiled code for both layouts.

Solver pieces: second-order working-set selection (Fan, Chen & Lin 2005, LIBSVM
WSS2), a bounded LRU cache of kernel rows (``cache_size`` MB as in scikit-learn;
the full matrix is never formed unless it fits in the cache), LIBSVM-style
shrinking with gradient reconstruction, and an iteration cap. The compiled
functions release the GIL (``nogil``): solves over one fully cached problem
run in threads, each through its own :meth:`KernelProblem.solver_view`.
"""

from __future__ import annotations

import copy
import math
import mmap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from numba.core import types
from numba.extending import overload

from weakkernels._threads import one_blas_thread
from weakkernels._validation import available_memory
from weakkernels.kernels import KERNEL_CODES

# fastmath flags without ``nnan``/``ninf``; only used on kernel evaluations,
# whose inputs are validated finite. The SMO loop itself meets infinite bounds
# (the free balancing variable) and must not use fastmath.
FASTMATH = {"nsz", "arcp", "contract", "reassoc"}

# LIBSVM's TAU: curvature floor for pairs with K_ii + K_jj - 2 K_ij <= 0 (e.g.
# the two copies of one unlabeled point, which share their feature vector).
TAU = 1e-12

STATUS_CONVERGED = 0
STATUS_MAX_ITER = 1

# Smallest accepted KKT tolerance. The gap ``max g_i - min g_j`` is a difference
# of gradients ``zeta - K alpha``, each a sum of n rounded products: its float64
# error is ~ n * eps * max|K alpha| >= 1e-14 for a few hundred unit-size terms,
# so a tolerance far below that is never met (``tol=1e-300`` looped forever).
TOL_FLOOR = 1e-12

_EPS = float(np.finfo(np.float64).eps)

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


# Default kernel cache: this fraction of the memory the OS reports available
# when the problem is built (MemAvailable of /proc/meminfo, else
# os.sysconf's available pages), capped at the full kernel matrix.
CACHE_MEMORY_FRACTION = 0.25

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


# --------------------------------------------------------------------------
# LRU kernel-row cache over base points
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _base_row(p, X, sqnorm, k0, k00, has_x0, code, sigma, degree, coef0, out):
    """Kernel row of base point ``p`` against all base points (x_0 last)."""
    n_pts = sqnorm.shape[0]
    if p < n_pts:
        _point_row(X, p, sqnorm, code, sigma, degree, coef0, out[:n_pts])
        if has_x0:
            out[n_pts] = k0[p]
    else:  # the virtual balancing example x_0 (Eq. 1.15)
        for q in range(n_pts):
            out[q] = k0[q]
        out[n_pts] = k00


@njit(cache=True, nogil=True)
def _free_slot(data, slot_of, owner, stamp, counters):
    """A slot for a new row: the next never-used one, else the least recently used.

    ``counters[3]`` counts the slots filled so far (slots are filled in order
    and never emptied).
    """
    cap = data.shape[0]
    if counters[3] < cap:
        s = counters[3]
        counters[3] += 1
        return s
    s = 0
    oldest = stamp[0]
    for t in range(1, cap):
        if stamp[t] < oldest:
            oldest = stamp[t]
            s = t
    if owner[s] >= 0:
        slot_of[owner[s]] = -1
    return s


@njit(cache=True, nogil=True)
def _get_row(p, data, slot_of, owner, stamp, counters, X, sqnorm, k0, k00, has_x0,
             code, sigma, degree, coef0, block, buf):
    """Slot of ``data`` holding the row of base point ``p`` (computed on a miss).

    ``counters = [clock, hits, misses, slots filled, rows computed]``.
    Eviction picks the least recently used slot; the caller's other row was
    stamped last, so with >= 2 slots a fetch never evicts the row the caller
    is still using. With ``block > 1`` a miss computes the aligned block of
    rows holding ``p`` (one dgemm); its other rows are kept while the cache
    has never-used slots, and dropped once it is full.
    """
    counters[0] += 1
    s = slot_of[p]
    if s >= 0:
        counters[1] += 1
        stamp[s] = counters[0]
        return s
    counters[2] += 1
    n_pts = sqnorm.shape[0]
    if block == 1 or p >= n_pts:
        s = _free_slot(data, slot_of, owner, stamp, counters)
        owner[s] = p
        slot_of[p] = s
        stamp[s] = counters[0]
        counters[4] += 1
        _base_row(p, X, sqnorm, k0, k00, has_x0, code, sigma, degree, coef0,
                  data[s])
        return s
    b0 = (p // block) * block
    b1 = min(b0 + block, n_pts)
    _rows_block(X, b0, b1, sqnorm, code, sigma, degree, coef0, block, buf)
    counters[4] += b1 - b0
    s_p = -1
    for r in range(b0, b1):
        if r != p and (slot_of[r] >= 0 or counters[3] >= data.shape[0]):
            continue
        s = _free_slot(data, slot_of, owner, stamp, counters)
        owner[s] = r
        slot_of[r] = s
        # neighbours are stamped older than p, so p is evicted last
        stamp[s] = counters[0] if r == p else counters[0] - 1
        for q in range(n_pts):
            data[s, q] = buf[r - b0, q]
        if has_x0:
            data[s, n_pts] = k0[r]
        if r == p:
            s_p = s
    return s_p


# --------------------------------------------------------------------------
# SMO
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _kernel_times(w, data, slot_of, owner, stamp, counters, X, sqnorm, k0, k00,
                  has_x0, code, sigma, degree, coef0, block, buf):
    """``K w`` over base points, summing the cached rows of nonzero ``w``."""
    m = slot_of.shape[0]
    kw = np.zeros(m)
    for p in range(m):
        if w[p] != 0.0:
            s = _get_row(p, data, slot_of, owner, stamp, counters, X, sqnorm, k0,
                         k00, has_x0, code, sigma, degree, coef0, block, buf)
            wp = w[p]
            for q in range(m):
                kw[q] += wp * data[s, q]
    return kw


@njit(cache=True, nogil=True)
def _gradient_from_scratch(alpha, zeta, pov, g, only_inactive, is_active, data,
                           slot_of, owner, stamp, counters, X, sqnorm, k0, k00,
                           has_x0, code, sigma, degree, coef0, block, buf):
    """``g = zeta - K alpha``; variables sharing a base point share one row."""
    m = slot_of.shape[0]
    w = np.zeros(m)
    for k in range(alpha.shape[0]):
        w[pov[k]] += alpha[k]
    n_need = m
    if only_inactive:
        # only the entries of K w that shrunk variables read: the same sums
        # (same terms, same order), over fewer columns of the cached rows
        need = np.zeros(m, dtype=np.bool_)
        for k in range(alpha.shape[0]):
            if not is_active[k]:
                need[pov[k]] = True
        qs = np.flatnonzero(need)
        n_need = qs.shape[0]
    if n_need < m // 2:
        kw = np.zeros(m)
        for p in range(m):
            if w[p] != 0.0:
                s = _get_row(p, data, slot_of, owner, stamp, counters, X, sqnorm,
                             k0, k00, has_x0, code, sigma, degree, coef0, block,
                             buf)
                wp = w[p]
                for a in range(n_need):
                    q = qs[a]
                    kw[q] += wp * data[s, q]
    else:
        kw = _kernel_times(w, data, slot_of, owner, stamp, counters, X, sqnorm, k0,
                           k00, has_x0, code, sigma, degree, coef0, block, buf)
    for k in range(alpha.shape[0]):
        if not only_inactive or not is_active[k]:
            g[k] = zeta[k] - kw[pov[k]]


@njit(cache=True, nogil=True)
def _pov_runs(pov):
    """Runs of variables whose base points are consecutive.

    Run ``r`` is the variables ``start[r] ... start[r] + length[r] - 1`` with
    base points ``point[r] ... point[r] + length[r] - 1`` (``pov`` of
    CCCP-TSVM is two runs: the labeled points and the first copies of the
    unlabeled ones, then the second copies and x_0). Over
    a run, the variables' arrays and the kernel rows are read as contiguous
    slices, which the full-set passes of :func:`_smo_solve` need to vectorise.
    """
    n = pov.shape[0]
    start = np.empty(n, dtype=np.int64)
    point = np.empty(n, dtype=np.int64)
    length = np.empty(n, dtype=np.int64)
    n_runs = 0
    k = 0
    while k < n:
        k1 = k + 1
        while k1 < n and pov[k1] == pov[k1 - 1] + 1:
            k1 += 1
        start[n_runs] = k
        point[n_runs] = pov[k]
        length[n_runs] = k1 - k
        n_runs += 1
        k = k1
    return start[:n_runs].copy(), point[:n_runs].copy(), length[:n_runs].copy()


# The helpers below use the numpy error model: no zero-divisor test with an
# exception exit inside the loops. Their only division is by ``eta > 0``
# (floored at TAU when not positive), so both models give the same values.


@njit(cache=True, nogil=True, error_model="numpy")
def _max_all(v):
    """Largest entry of ``v`` (``-inf`` if empty; ``v`` holds no NaN), over four
    interleaved partial maxima: exact whatever the order."""
    n = v.shape[0]
    m0 = -np.inf
    m1 = -np.inf
    m2 = -np.inf
    m3 = -np.inf
    a = 0
    while a + 4 <= n:
        x0 = v[a]
        x1 = v[a + 1]
        x2 = v[a + 2]
        x3 = v[a + 3]
        m0 = x0 if x0 > m0 else m0
        m1 = x1 if x1 > m1 else m1
        m2 = x2 if x2 > m2 else m2
        m3 = x3 if x3 > m3 else m3
        a += 4
    while a < n:
        x0 = v[a]
        m0 = x0 if x0 > m0 else m0
        a += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


@njit(cache=True, nogil=True, error_model="numpy")
def _first_max(v):
    """Index of the first largest entry of ``v``; -1 if all are ``-inf``.

    The same index as a scan ``if v[k] > best`` from ``best = -inf``: the first
    index among equal maxima (+0.0 and -0.0 compare equal, in both). ``v``
    holds no NaN.
    """
    m = _max_all(v)
    if m == -np.inf:
        return -1
    for a in range(v.shape[0]):
        if v[a] == m:
            return a
    return -1


@njit(cache=True, nogil=True, error_model="numpy")
def _min_all(v):
    """Smallest entry of ``v`` (``inf`` if empty; ``v`` holds no NaN)."""
    n = v.shape[0]
    m0 = np.inf
    m1 = np.inf
    m2 = np.inf
    m3 = np.inf
    a = 0
    while a + 4 <= n:
        x0 = v[a]
        x1 = v[a + 1]
        x2 = v[a + 2]
        x3 = v[a + 3]
        m0 = x0 if x0 < m0 else m0
        m1 = x1 if x1 < m1 else m1
        m2 = x2 if x2 < m2 else m2
        m3 = x3 if x3 < m3 else m3
        a += 4
    while a < n:
        x0 = v[a]
        m0 = x0 if x0 < m0 else m0
        a += 1
    m0 = m1 if m1 < m0 else m0
    m2 = m3 if m3 < m2 else m2
    return m2 if m2 < m0 else m0


@njit(cache=True, nogil=True, error_model="numpy")
def _wss2_run(g, alpha, A, diag, row, kii, gmax, val, gdown):
    """One run of the full-set j selection: ``val`` (WSS2 gain, ``-inf`` if not
    a candidate) and ``gdown`` (``g``, ``inf`` if ``alpha`` cannot decrease).

    Every entry is computed as the scalar loop of :func:`_smo_solve` computes
    it for a candidate (same operations, same order); non-candidates are
    computed too, then masked, so the loop has no branch and vectorises.
    """
    for t in range(g.shape[0]):
        gk = g[t]
        down = alpha[t] > A[t]
        diff = gmax - gk
        eta = kii + diag[t] - 2.0 * row[t]
        if eta <= 0.0:
            eta = TAU
        v = diff * diff / eta
        val[t] = v if (down and diff > 0.0) else -np.inf
        gdown[t] = gk if down else np.inf


@njit(cache=True, nogil=True, error_model="numpy")
def _update_run(g, alpha, B, ri, rj, lam, gup):
    """One run of the full-set gradient update; ``gup``: the new ``g`` where
    ``alpha`` may increase, ``-inf`` elsewhere."""
    for t in range(g.shape[0]):
        gk = g[t] - lam * (ri[t] - rj[t])
        g[t] = gk
        gup[t] = gk if alpha[t] < B[t] else -np.inf


# Chunk of the full-set passes: its masked values are reduced while they are
# still in L1 (a few KB), not in a second pass over the whole vector.
PASS_CHUNK = 256


@njit(cache=True, nogil=True)
def _wss2_full(g, alpha, A, diag_all, row, kii, gmax, runs, val, gdown):
    """``(j, gmin)`` of the WSS2 step over all variables, as the scalar loop.

    ``j`` is the first variable of largest gain ``(gmax - g_k)^2 / eta_k``
    among those that may decrease with ``g_k < gmax`` (-1 if none), ``gmin``
    the smallest ``g_k`` among those that may decrease. Chunk by chunk: the
    first chunk holding the largest gain (strict ``>`` over the chunks in
    order) holds the first variable with it.
    """
    start, point, length = runs
    best = -np.inf
    best_at = 0
    gmin = np.inf
    for r in range(start.shape[0]):
        for c0 in range(0, length[r], PASS_CHUNK):
            c1 = min(c0 + PASS_CHUNK, length[r])
            k0 = start[r] + c0
            k1 = start[r] + c1
            p0 = point[r] + c0
            p1 = point[r] + c1
            # slices: the loop indexes from 0, contiguously, with no
            # negative-index test, so it vectorises
            _wss2_run(g[k0:k1], alpha[k0:k1], A[k0:k1], diag_all[p0:p1],
                      row[p0:p1], kii, gmax, val[k0:k1], gdown[k0:k1])
            cmax = _max_all(val[k0:k1])
            if cmax > best:
                best = cmax
                best_at = k0
            cmin = _min_all(gdown[k0:k1])
            gmin = cmin if cmin < gmin else gmin
    j = -1
    if best != -np.inf:
        j = best_at + _first_max(val[best_at:best_at + PASS_CHUNK])
    return j, gmin


@njit(cache=True, nogil=True)
def _update_full(g, alpha, B, ri, rj, lam, runs, gup):
    """``g -= lam (K_i - K_j)`` over all variables; returns ``(i, gmax)`` of the
    next iteration (first largest ``g`` among variables that may increase),
    chunk by chunk as :func:`_wss2_full`."""
    start, point, length = runs
    best = -np.inf
    best_at = 0
    for r in range(start.shape[0]):
        for c0 in range(0, length[r], PASS_CHUNK):
            c1 = min(c0 + PASS_CHUNK, length[r])
            k0 = start[r] + c0
            k1 = start[r] + c1
            p0 = point[r] + c0
            p1 = point[r] + c1
            _update_run(g[k0:k1], alpha[k0:k1], B[k0:k1], ri[p0:p1], rj[p0:p1],
                        lam, gup[k0:k1])
            cmax = _max_all(gup[k0:k1])
            if cmax > best:
                best = cmax
                best_at = k0
    if best == -np.inf:
        return -1, -np.inf
    i = best_at + _first_max(gup[best_at:best_at + PASS_CHUNK])
    return i, g[i]


@njit(cache=True, nogil=True)
def _smo_solve(X, sqnorm, k0, k00, has_x0, code, sigma, degree, coef0, pov, zeta,
               A, B, alpha, data, slot_of, owner, stamp, counters, tol, max_iter,
               shrinking, block, buf):
    """Solve the dual of Algorithm 1.2/1.3 in place of ``alpha`` (see module doc).

    ``alpha`` must be feasible on entry (``A <= alpha <= B``, ``sum(alpha) = 0``).
    Returns ``(g, b, n_iter, status)`` with the exact full gradient ``g``.
    """
    n = alpha.shape[0]
    n_pts = sqnorm.shape[0]
    diag = _kernel_diag(X, sqnorm, code, sigma, degree, coef0)
    m = n_pts + (1 if has_x0 else 0)
    diag_all = np.empty(m)
    diag_all[:n_pts] = diag
    if has_x0:
        diag_all[n_pts] = k00

    g = np.empty(n)
    is_active = np.ones(n, dtype=np.bool_)
    _gradient_from_scratch(alpha, zeta, pov, g, False, is_active, data, slot_of,
                           owner, stamp, counters, X, sqnorm, k0, k00, has_x0,
                           code, sigma, degree, coef0, block, buf)
    active = np.arange(n)
    n_active = n
    unshrunk = False
    shrink_every = min(n, 1000)
    counter = shrink_every
    it = 0
    status = STATUS_CONVERGED
    # (gmax, i) of the next iteration, found by the gradient update's pass
    # over the same variables in the same order (the selection below, fused:
    # one pass over the active set fewer per iteration); -2: not known
    next_i = -2
    next_gmax = -np.inf
    # While every variable is active (the 1 000 iterations after each
    # un-shrink, most of the work on large problems), the two passes run over
    # contiguous runs without branches (_wss2_full, _update_full): the same
    # per-variable arithmetic and the same first-index tie-breaking, so the
    # same iterates bit for bit, vectorised.
    runs = _pov_runs(pov)
    buf_a = np.empty(n)
    buf_b = np.empty(n)
    while True:
        if max_iter >= 0 and it >= max_iter:
            status = STATUS_MAX_ITER
            break
        if shrinking:
            counter -= 1
            if counter == 0:
                counter = shrink_every
                n_active = _shrink(alpha, g, A, B, active, n_active, is_active,
                                   tol, unshrunk)
                next_i = -2
        # --- i: maximal gradient among variables that may increase
        if next_i != -2:
            gmax = next_gmax
            i = next_i
        else:
            gmax = -np.inf
            i = -1
            for a in range(n_active):
                k = active[a]
                if alpha[k] < B[k] and g[k] > gmax:
                    gmax = g[k]
                    i = k
        next_i = -2
        gmin = np.inf
        j = -1
        if i >= 0:
            pi = pov[i]
            si = _get_row(pi, data, slot_of, owner, stamp, counters, X, sqnorm, k0,
                          k00, has_x0, code, sigma, degree, coef0, block, buf)
            kii = diag_all[pi]
            best = -np.inf
            # --- j: second-order selection (Fan, Chen & Lin 2005, WSS2)
            if n_active == n:
                j, gmin = _wss2_full(g, alpha, A, diag_all, data[si], kii, gmax,
                                     runs, buf_a, buf_b)
            else:
                for a in range(n_active):
                    k = active[a]
                    if alpha[k] > A[k]:
                        gk = g[k]
                        if gk < gmin:
                            gmin = gk
                        diff = gmax - gk
                        if diff > 0.0:
                            pk = pov[k]
                            eta = kii + diag_all[pk] - 2.0 * data[si, pk]
                            if eta <= 0.0:
                                eta = TAU
                            val = diff * diff / eta
                            if val > best:
                                best = val
                                j = k
        else:
            for a in range(n_active):
                k = active[a]
                if alpha[k] > A[k] and g[k] < gmin:
                    gmin = g[k]
        gap = gmax - gmin
        if shrinking and not unshrunk and gap <= 10.0 * tol and n_active < n:
            # As LIBSVM: once close, restore the full problem once so that
            # wrongly shrunk variables get a chance to move.
            unshrunk = True
            n_active = _unshrink(alpha, zeta, pov, g, active, is_active, data,
                                 slot_of, owner, stamp, counters, X, sqnorm, k0,
                                 k00, has_x0, code, sigma, degree, coef0, block, buf)
            counter = shrink_every
            continue
        if j < 0 or gap < tol:
            if n_active < n:
                n_active = _unshrink(alpha, zeta, pov, g, active, is_active, data,
                                     slot_of, owner, stamp, counters, X, sqnorm,
                                     k0, k00, has_x0, code, sigma, degree, coef0,
                                     block, buf)
                counter = shrink_every
                continue
            break
        # --- analytic step on the pair (i up, j down), clipped to the box
        pi = pov[i]
        pj = pov[j]
        sj = _get_row(pj, data, slot_of, owner, stamp, counters, X, sqnorm, k0,
                      k00, has_x0, code, sigma, degree, coef0, block, buf)
        si = slot_of[pi]  # still cached: it was stamped just before row j
        eta = diag_all[pi] + diag_all[pj] - 2.0 * data[si, pj]
        if eta <= 0.0:
            eta = TAU
        lam = (g[i] - g[j]) / eta
        room_i = B[i] - alpha[i]
        room_j = alpha[j] - A[j]
        if lam >= room_i and room_i <= room_j:
            lam = room_i
            alpha[i] = B[i]  # snap exactly: keeps "at bound" tests exact
            alpha[j] -= lam
            if room_i == room_j:
                alpha[j] = A[j]
        elif lam >= room_j:
            lam = room_j
            alpha[i] += lam
            alpha[j] = A[j]
        else:
            alpha[i] += lam
            alpha[j] -= lam
        ngmax = -np.inf
        ni = -1
        if n_active == n:
            ni, ngmax = _update_full(g, alpha, B, data[si], data[sj], lam, runs,
                                     buf_a)
        else:
            for a in range(n_active):
                k = active[a]
                pk = pov[k]
                g[k] -= lam * (data[si, pk] - data[sj, pk])
                if alpha[k] < B[k] and g[k] > ngmax:
                    ngmax = g[k]
                    ni = k
        next_i = ni
        next_gmax = ngmax
        it += 1
    if n_active < n:
        _unshrink(alpha, zeta, pov, g, active, is_active, data, slot_of, owner,
                  stamp, counters, X, sqnorm, k0, k00, has_x0, code, sigma, degree,
                  coef0, block, buf)
    b = _bias(alpha, g, A, B)
    return g, b, it, status


@njit(cache=True, nogil=True)
def _shrink(alpha, g, A, B, active, n_active, is_active, tol, unshrunk):
    """Drop bounded variables that cannot join a violating pair (LIBSVM rule)."""
    gmax = -np.inf
    gmin = np.inf
    for a in range(n_active):
        k = active[a]
        if alpha[k] < B[k] and g[k] > gmax:
            gmax = g[k]
        if alpha[k] > A[k] and g[k] < gmin:
            gmin = g[k]
    new_n = 0
    for a in range(n_active):
        k = active[a]
        at_upper = alpha[k] >= B[k]
        at_lower = alpha[k] <= A[k]
        drop = False
        if at_upper and at_lower:
            drop = True  # fixed variable (A == B)
        elif at_upper:
            drop = g[k] > gmax  # can only decrease; no i has a larger gradient
        elif at_lower:
            drop = g[k] < gmin  # can only increase; no j has a smaller gradient
        if drop:
            is_active[k] = False
        else:
            active[new_n] = k
            new_n += 1
    return new_n


@njit(cache=True, nogil=True)
def _unshrink(alpha, zeta, pov, g, active, is_active, data, slot_of, owner, stamp,
              counters, X, sqnorm, k0, k00, has_x0, code, sigma, degree, coef0,
              block, buf):
    """Reconstruct the gradient of shrunk variables and reactivate everything."""
    _gradient_from_scratch(alpha, zeta, pov, g, True, is_active, data, slot_of,
                           owner, stamp, counters, X, sqnorm, k0, k00, has_x0,
                           code, sigma, degree, coef0, block, buf)
    n = alpha.shape[0]
    for k in range(n):
        active[k] = k
        is_active[k] = True
    return n


@njit(cache=True, nogil=True)
def _bias(alpha, g, A, B):
    """``b``: mean gradient over free variables, else midpoint of the KKT range."""
    acc = 0.0
    n_free = 0
    gmax = -np.inf
    gmin = np.inf
    for k in range(alpha.shape[0]):
        lo = alpha[k] <= A[k]
        hi = alpha[k] >= B[k]
        if not lo and not hi:
            acc += g[k]
            n_free += 1
        if not hi and g[k] > gmax:
            gmax = g[k]
        if not lo and g[k] < gmin:
            gmin = g[k]
    if n_free > 0:
        return acc / n_free
    if math.isinf(gmax) or math.isinf(gmin):
        return gmax if math.isinf(gmin) else gmin
    return 0.5 * (gmax + gmin)


# --------------------------------------------------------------------------
# Python wrappers
# --------------------------------------------------------------------------


def bounds_from_margins(y: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Box ``A <= alpha <= B`` from the paper's ``lo <= y * alpha <= hi`` (y = +-1)."""
    y = np.asarray(y, dtype=np.float64)
    A = np.where(y > 0, lo, -hi).astype(np.float64)
    B = np.where(y > 0, hi, -lo).astype(np.float64)
    return A, B


def default_max_iter(n_vars: int) -> int:
    """SMO iteration cap used when the estimator's ``max_iter`` is ``None``.

    LIBSVM's own rule (``svm.cpp``, ``Solver::Solve``): ``max(10^7, 100 l)``
    pair steps for ``l`` variables, which LIBSVM applies even when scikit-learn's
    ``SVC`` passes ``max_iter=-1``. A well-posed problem needs O(l) to a few
    times l steps, so the cap never stops a healthy solve early; it only turns an
    ill-conditioned one (which cycled forever before) into a
    ``ConvergenceWarning``. Each step costs O(l), so the cap bounds one solve to
    O(l * max(10^7, 100 l)) work: seconds for l = 600 variables.
    """
    return int(max(10_000_000, 100 * int(n_vars)))


def kernel_bound(X: np.ndarray, code: int, sigma: float, degree: int,
                 coef0: float) -> float:
    """Upper bound on ``|k(x, x')|`` over the rows of ``X``; ``inf`` on overflow.

    RBF and Laplacian are bounded by 1; linear by ``max ||x||^2``
    (Cauchy-Schwarz); poly by ``(sigma max ||x||^2 + |coef0|) ** degree``,
    evaluated in logarithms so that ``degree=1000`` cannot overflow here.
    """
    if code == _RBF or code == _LAPLACIAN:
        return 1.0
    if X.shape[0] == 0 or X.shape[1] == 0:
        return 0.0
    with np.errstate(over="ignore"):
        if sp.issparse(X):
            r2 = float(np.max(_csr_norms(sp.csr_matrix(X))[0]))
        else:
            r2 = float(np.max(np.einsum("ij,ij->i", X, X)))
        if code == _LINEAR:
            return r2
        base = sigma * r2 + abs(coef0)
    if not math.isfinite(base):
        return math.inf
    if base == 0.0:
        return 0.0
    log_bound = degree * math.log(base)
    if log_bound > math.log(np.finfo(np.float64).max):
        return math.inf
    return math.exp(log_bound)


def check_precision(C: float, tol: float, k_bound: float, *, c_name: str,
                    kernel_desc: str) -> None:
    """Refuse ``tol``, ``C`` and kernel values whose SMO problem is meaningless.

    The coefficients live in boxes of width ``C`` that CCCP shifts by ``C``
    (Algorithm 1.2's ``beta``), so each coefficient carries a rounding error of
    ``eps * C``, and each gradient term one of ``eps * C * max|k|``. Once that
    exceeds ``tol`` the stopping rule cannot be decided (``C=1e17`` on 300
    points never returned). Raises ``ValueError`` naming the parameter.
    """
    if not tol >= TOL_FLOOR:
        raise ValueError(
            f"tol={tol:g} is below {TOL_FLOOR:g}: the KKT gap is a difference of "
            "sums of kernel terms whose float64 rounding error is larger, so SMO "
            f"could never stop. Use tol >= {TOL_FLOOR:g} (default 1e-3)."
        )
    if not math.isfinite(k_bound):
        raise ValueError(
            f"kernel values overflow float64 with {kernel_desc} on this X "
            "(max |k(x, x')| is not finite): lower degree, coef0 or sigma, or "
            "scale the features."
        )
    err = _EPS * C * k_bound
    if not err < tol:
        limit = tol / (_EPS * k_bound)
        raise ValueError(
            f"{c_name}={C:g} is numerically meaningless with {kernel_desc} "
            f"(max |k(x, x')| <= {k_bound:.3g}): the float64 rounding error of "
            f"one coefficient's term, eps * {c_name} * max|k| = {err:.3g}, is not "
            f"below tol={tol:g}, so SMO cannot reach its stopping rule. Use "
            f"{c_name} < {limit:.3g} (or a smaller kernel scale)."
        )


def _csr_norms(X):
    """Squared L2 and L1 norms of the rows of a CSR matrix (empty rows: 0)."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    data = np.asarray(X.data, dtype=np.float64)
    sq = np.bincount(rows, weights=data * data, minlength=X.shape[0])
    l1 = np.bincount(rows, weights=np.abs(data), minlength=X.shape[0])
    return sq.astype(np.float64), l1.astype(np.float64)


def csr_points(X, rows=None):
    """The sparse layout the numba kernels read: ``((indptr, indices, data, l1,
    colptr, rowidx, colval, rowmap), sqnorm)``.

    Base point ``p`` is row ``rowmap[p]`` of ``X`` (``rows``, a permutation of
    the rows; identity by default), so a caller that orders its points (labeled
    first) needs no reordered copy of ``X``: ``indptr/indices/data`` are
    ``X``'s own arrays, and the CSC index, ``l1`` and ``sqnorm`` are in
    base-point order.

    ``X`` must be CSR in canonical format (sorted indices, no duplicates: what
    :func:`weakkernels._validation.validate_semi_supervised` returns); its
    arrays are used without a copy where they already have the right dtypes.
    The CSC copy (``colptr/rowidx/colval``) is the inverted index of
    :func:`_csr_kernel_row`; together the two layouts hold the sparse data
    twice. ``l1`` and ``sqnorm`` are the rows' L1 and squared L2 norms.
    """
    if not (sp.issparse(X) and X.format == "csr"):
        raise TypeError(f"expected a CSR matrix, got {type(X).__name__}")
    if not X.has_canonical_format:
        raise ValueError("CSR matrix must have sorted indices and no duplicates")
    small = max(X.nnz, X.shape[0], X.shape[1]) < 2**31 - 1
    itype = np.int32 if small else np.int64
    indptr = np.ascontiguousarray(X.indptr, dtype=itype)
    indices = np.ascontiguousarray(X.indices, dtype=itype)
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    n = X.shape[0]
    if rows is None:
        rowmap = np.arange(n, dtype=itype)
    else:
        rowmap = np.ascontiguousarray(rows, dtype=itype)
        if rowmap.shape != (n,) or not np.array_equal(np.sort(rowmap),
                                                      np.arange(n)):
            raise ValueError("rows must be a permutation of the rows of X")
    inverse = np.empty(n, dtype=itype)
    inverse[rowmap] = np.arange(n, dtype=itype)
    Xc = X.tocsc()
    colptr = np.ascontiguousarray(Xc.indptr, dtype=itype)
    rowidx = inverse[Xc.indices]  # base-point numbers (order within a column
    colval = np.ascontiguousarray(Xc.data, dtype=np.float64)  # is irrelevant)
    del Xc
    sqnorm, l1 = _csr_norms(X)
    return (indptr, indices, data, l1, colptr, rowidx, colval, rowmap), (
        sqnorm[rowmap])


def default_cache_mb(m: int, itemsize: int = 8) -> float:
    """Default cache: ``CACHE_MEMORY_FRACTION`` of available memory, at most the
    full ``m x m`` kernel matrix (MB)."""
    full = float(m) * m * itemsize
    return min(CACHE_MEMORY_FRACTION * available_memory(), full) / 2**20


def cache_array(shape: tuple[int, int], dtype) -> np.ndarray:
    """Uninitialised cache rows in anonymous memory without huge-page advice.

    ``np.empty`` advises transparent huge pages (``MADV_HUGEPAGE``) for large
    arrays; with the kernel's ``defrag=madvise`` setting every first touch of
    a 2 MB page may then compact memory synchronously. The cache is written
    once, row after row, by the fill, and the compaction cost several times
    the writes (docs/benchmarks/design_notes.md, "The exact-kernel solver").
    The rows' values do not depend on where they are stored.
    """
    dtype = np.dtype(dtype)
    nbytes = int(shape[0]) * int(shape[1]) * dtype.itemsize
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    if nbytes < mmap.PAGESIZE or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)  # small, or no POSIX mmap
    buf = mmap.mmap(-1, nbytes, flags=flags)  # zero pages until written
    return np.frombuffer(buf, dtype=dtype).reshape(shape)  # keeps buf alive


def cache_rows(cache_size: float, m: int, itemsize: int = 8) -> int:
    """Number of kernel rows of length ``m`` that fit in ``cache_size`` MB (>= 2)."""
    return int(max(2, min(m, int(cache_size * 2**20) // (itemsize * max(m, 1)))))


@njit(cache=True, nogil=True)
def _fill_span(X, sqnorm, code, sigma, degree, coef0, block, b0, b1, n_fill, data,
               buf, direct):
    """Kernel rows of base points ``b0 .. b1-1`` for the cache fill; the rows of
    ``p < n_fill`` are stored in slot ``p`` of ``data``.

    The rows are computed in blocks (:func:`_rows_block`) into ``buf``, or, when
    ``direct`` (float64 ``data``, ``block == 1``, else a ``(0, 0)`` array) is
    given and every row of the span is cached, straight into their slots of
    the cache itself -- the cache's size in bytes fewer written and read.
    Touches no shared state but its own rows of ``data``, so spans run
    on concurrent threads (:meth:`KernelProblem._fill`).
    """
    n_pts = sqnorm.shape[0]
    if direct.shape[0] > 0 and b1 <= n_fill:
        for p in range(b0, b1):
            _point_row(X, p, sqnorm, code, sigma, degree, coef0, direct[p, :n_pts])
        return
    _rows_block(X, b0, b1, sqnorm, code, sigma, degree, coef0, block, buf)
    for p in range(b0, min(b1, n_fill)):
        row = buf[p - b0]
        for q in range(n_pts):
            data[p, q] = row[q]


@njit(cache=True, nogil=True)
def _add_weighted_rows(rows, r0, weight, b0, b1, k0):
    """``k0[q] += weight[p] * rows[r0 + p - b0, q]`` for ``p = b0 .. b1-1`` in
    ascending ``p``: Eq. 1.15's column summed in the order of the
    row-at-a-time sum it replaces, whatever thread computed the rows."""
    n_pts = k0.shape[0]
    for p in range(b0, b1):
        w = weight[p]
        if w != 0.0:
            r = r0 + p - b0
            for q in range(n_pts):
                k0[q] += w * rows[r, q]


@dataclass
class KernelProblem:
    """Base points, kernel spec and the LRU row cache shared by successive solves.

    CCCP solves several dual problems over the same base points; keeping one
    cache across them means later iterations mostly hit rows computed earlier.
    ``extra_mean_idx`` (base-point indices) adds the virtual balancing example
    ``x_0`` of Eq. 1.15 as the last base point. ``rows`` (a permutation of the
    rows of ``X``) makes base point ``p`` the row ``rows[p]``; sparse ``X`` is
    then read in place (no reordered copy), dense ``X`` is reordered once.

    ``cache_size`` (MB) bounds the row cache; ``None`` takes
    :func:`default_cache_mb` (a fraction of available memory, at most the
    full kernel matrix). ``cache_dtype`` float32 stores rows in half the
    memory (the rows are computed in float64 and rounded when stored; the
    SMO arithmetic stays float64). The cache is filled at construction with
    the rows of the first base points, in blocks, as many as it holds (all
    of them when the matrix fits); the balancing column of ``x_0`` is summed
    from the same blocks. The rows' values never depend on the cache size
    (see ``ROW_BLOCK``), so neither does the solution. ``n_threads`` computes
    the fill's spans of rows on that many threads (BLAS held to one thread
    each); the cache is the same bit for bit for every ``n_threads``.
    """

    X: np.ndarray
    code: int
    sigma: float
    degree: int
    coef0: float
    cache_size: float | None = None
    extra_mean_idx: np.ndarray | None = None
    rows: np.ndarray | None = None
    cache_dtype: type = np.float64
    n_threads: int = 1

    def __post_init__(self):
        if sp.issparse(self.X):
            # rows stay sparse (text, RCV1: paper 004 Sec. 1.6.2.1); the kernels
            # read CSR rows and a CSC inverted index
            self.X = sp.csr_matrix(self.X)
            self.points, self.sqnorm = csr_points(self.X, self.rows)
            self.block = 1
        else:
            if self.rows is not None:
                self.X = self.X[self.rows]
            self.X = np.ascontiguousarray(self.X, dtype=np.float64)
            self.sqnorm = np.einsum("ij,ij->i", self.X, self.X)
            self.points = self.X
            blocked = (self.X.shape[1] >= BLOCK_MIN_FEATURES
                       and self.code != _LAPLACIAN)
            self.block = ROW_BLOCK if blocked else 1
        n_pts = self.X.shape[0]
        self.has_x0 = self.extra_mean_idx is not None
        self.m = n_pts + int(self.has_x0)
        dtype = np.dtype(self.cache_dtype)
        if dtype not in (np.float64, np.float32):
            raise ValueError(f"cache_dtype must be float64 or float32, got {dtype}")
        if self.cache_size is None:
            self.cache_size = default_cache_mb(self.m, dtype.itemsize)
        self.capacity = cache_rows(self.cache_size, self.m, dtype.itemsize)
        self.data = cache_array((self.capacity, self.m), dtype)
        self.slot_of = np.full(self.m, -1, dtype=np.int64)
        self.owner = np.full(self.capacity, -1, dtype=np.int64)
        self.stamp = np.zeros(self.capacity, dtype=np.int64)
        # clock, hits, misses, slots filled, rows computed
        self.counters = np.zeros(5, dtype=np.int64)
        self.buf = np.empty((self.block if self.block > 1 else 0, n_pts))
        weight = np.zeros(n_pts)
        if self.has_x0:
            idx = np.ascontiguousarray(self.extra_mean_idx, dtype=np.int64)
            weight = np.bincount(idx, minlength=n_pts).astype(np.float64)
        k0 = np.zeros(n_pts)
        n_fill = min(self.capacity, n_pts)
        self.counters[4] = self._fill(weight, k0, n_fill)
        if self.has_x0:
            inv = 1.0 / idx.shape[0]
            k0 *= inv
            k00 = 0.0
            for v in k0[idx].tolist():  # ascending, as the sum it replaces
                k00 += v
            self.k0, self.k00 = k0, k00 * inv
            filled = self.owner[: self.counters[3]]
            self.data[: filled.size, n_pts] = k0[filled]
            if self.counters[3] < self.capacity:  # x_0's own row (Eq. 1.15)
                s = int(self.counters[3])
                self.counters[3] += 1
                self.counters[4] += 1
                self.owner[s] = n_pts
                self.slot_of[n_pts] = s
                self.data[s, :n_pts] = k0
                self.data[s, n_pts] = self.k00
        else:
            self.k0, self.k00 = np.zeros(0), 0.0

    def _fill(self, weight, k0, n_fill):
        """Rows of base points ``0 .. n_fill-1`` into slots ``0 .. n_fill-1``,
        and ``k0[q] += weight[p] k(x_p, x_q)`` over every ``p`` with weight.

        Spans of rows (whole ``ROW_BLOCK`` blocks: the rows' bits) are computed
        on ``n_threads`` threads (:func:`_fill_span`, which releases the GIL)
        in waves of one span per thread; after each wave the weighted rows are
        added to ``k0`` in ascending ``p`` (:func:`_add_weighted_rows`), so the
        cache and ``k0`` do not depend on the thread count. Rows neither cached
        nor weighted are not computed. Returns the rows computed.
        """
        n_pts = self.sqnorm.shape[0]
        weighted = np.flatnonzero(weight)
        stop = max(n_fill, int(weighted[-1]) + 1 if weighted.size else 0)
        block = self.block
        if block > 1:
            stop = min(n_pts, -(-stop // block) * block)
        chunk = 256 if block == 1 else block * max(1, 256 // block)
        spans = [(b0, min(b0 + chunk, stop)) for b0 in range(0, stop, chunk)]
        # past the cached rows only the spans the balancing column needs
        spans = [(a, b) for a, b in spans if a < n_fill or weight[a:b].any()]
        self.owner[:n_fill] = np.arange(n_fill)
        self.slot_of[:n_fill] = np.arange(n_fill)
        self.counters[3] = n_fill
        direct = (self.data if block == 1 and self.data.dtype == np.float64
                  else np.empty((0, 0)))
        n_threads = max(1, min(int(self.n_threads), len(spans)))
        # a span served straight into the float64 cache needs no buffer: a
        # fully cached direct fill allocates none (each is chunk x n_pts
        # float64, 123 MB per thread at MNIST's 60 000 points)
        buffered = not direct.shape[0] or any(b > n_fill for _, b in spans)
        rows = min(chunk, max(stop, 1)) if buffered else 0
        bufs = [np.empty((rows, n_pts)) for _ in range(n_threads)]

        def compute(span, buf):
            _fill_span(self.points, self.sqnorm, self.code, self.sigma,
                       self.degree, self.coef0, block, span[0], span[1], n_fill,
                       self.data, buf, direct)

        def accumulate(span, buf):
            a, b = span
            if direct.shape[0] > 0 and b <= n_fill:
                _add_weighted_rows(direct, a, weight, a, b, k0)
            else:
                _add_weighted_rows(buf, 0, weight, a, b, k0)

        with one_blas_thread():
            if n_threads == 1:
                for span in spans:
                    compute(span, bufs[0])
                    accumulate(span, bufs[0])
            else:
                with ThreadPoolExecutor(max_workers=n_threads) as pool:
                    for i in range(0, len(spans), n_threads):
                        wave = spans[i:i + n_threads]
                        list(pool.map(compute, wave, bufs))
                        for span, buf in zip(wave, bufs, strict=False):
                            accumulate(span, buf)
        return sum(b - a for a, b in spans)

    @property
    def hit_rate(self) -> float:
        """Fraction of row requests served from the cache since construction."""
        hits, misses = int(self.counters[1]), int(self.counters[2])
        return hits / (hits + misses) if hits + misses else 1.0

    @property
    def rows_computed(self) -> int:
        """Kernel rows computed so far (cache fill, misses and their blocks)."""
        return int(self.counters[4])

    @property
    def fully_cached(self) -> bool:
        """Every base point's row (x_0's included) is in the cache.

        Then no row request can miss: ``data``, ``slot_of`` and ``owner`` are
        only read from here on, and solves may share them across threads
        (:meth:`solver_view`).
        """
        return self.capacity >= self.m

    def solver_view(self) -> KernelProblem:
        """The same problem with its own LRU bookkeeping, for a concurrent solve.

        Shares the rows (``data``, ``slot_of``, ``owner``, points, norms,
        balancing column) and owns ``stamp``, ``counters`` (the clock and the
        hit / miss counts start at zero) and the block buffer, the only arrays
        a solve writes when no row can miss. Only for a fully cached problem
        (:attr:`fully_cached`): a miss would write the shared slots. Add the
        view's counts back with :meth:`absorb_counters`.
        """
        if not self.fully_cached:
            raise ValueError("only a fully cached problem can be shared by solves")
        view = copy.copy(self)
        view.stamp = self.stamp.copy()
        view.counters = self.counters.copy()
        view.counters[:3] = 0  # clock, hits, misses: this view's own
        view.buf = np.empty_like(self.buf)
        return view

    def absorb_counters(self, views) -> None:
        """Add the hits and misses counted by :meth:`solver_view` views.

        The totals equal those of the same solves run one after another on
        this problem (each request is a hit or a miss whoever makes it).
        """
        for view in views:
            if int(view.counters[2]) or view.counters[4] != self.counters[4]:
                raise RuntimeError("a shared kernel cache computed a row")
            self.counters[:3] += view.counters[:3]

    @property
    def x0_index(self) -> int:
        """Base-point index of the balancing example (only when ``has_x0``)."""
        return self.X.shape[0]

    def solve(self, pov, zeta, A, B, alpha=None, *, tol=1e-3, max_iter=-1,
              shrinking=True):
        """Solve ``max zeta.alpha - alpha'K alpha / 2``, ``sum alpha = 0``, box A..B.

        Parameters
        ----------
        pov : int array (n_vars,)
            Base point of each variable (``x0_index`` for the balancing variable).
        zeta, A, B : float arrays (n_vars,)
            Linear term and box bounds (``A`` may be ``-inf``, ``B`` ``+inf``).
        alpha : float array (n_vars,), optional
            Feasible starting point (warm start); zeros if omitted (feasible
            whenever ``A <= 0 <= B``, which holds for every CCCP sub-problem).

        Returns
        -------
        alpha, g, b, n_iter, status
            Solution, gradient ``zeta - K alpha``, bias, SMO iterations and
            ``STATUS_CONVERGED`` / ``STATUS_MAX_ITER``.
        """
        pov = np.ascontiguousarray(pov, dtype=np.int64)
        zeta = np.ascontiguousarray(zeta, dtype=np.float64)
        A = np.ascontiguousarray(A, dtype=np.float64)
        B = np.ascontiguousarray(B, dtype=np.float64)
        if alpha is None:
            alpha = np.zeros(pov.shape[0])
        alpha = np.array(alpha, dtype=np.float64)
        if np.any(A > alpha) or np.any(alpha > B):
            raise ValueError("starting alpha violates the box constraints")
        g, b, n_iter, status = _smo_solve(
            self.points, self.sqnorm, self.k0, self.k00, self.has_x0, self.code,
            self.sigma, self.degree, self.coef0, pov, zeta, A, B, alpha,
            self.data, self.slot_of, self.owner, self.stamp, self.counters,
            float(tol), int(max_iter), bool(shrinking), self.block, self.buf,
        )
        return alpha, g, float(b), int(n_iter), int(status)

    def kernel_times(self, w: np.ndarray) -> np.ndarray:
        """``K w`` for a weight vector over the base points (length ``m``)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        return _kernel_times(w, self.data, self.slot_of, self.owner, self.stamp,
                             self.counters, self.points, self.sqnorm, self.k0,
                             self.k00, self.has_x0, self.code, self.sigma, self.degree,
                             self.coef0, self.block, self.buf)

    def row(self, p: int) -> np.ndarray:
        """Copy of the (cached) kernel row of base point ``p``."""
        s = _get_row(p, self.data, self.slot_of, self.owner, self.stamp,
                     self.counters, self.points, self.sqnorm, self.k0, self.k00,
                     self.has_x0, self.code, self.sigma, self.degree, self.coef0,
                     self.block, self.buf)
        return self.data[s].copy()


def _as_canonical_csr(M):
    M = sp.csr_matrix(M, dtype=np.float64)
    if not M.has_canonical_format:
        M = M.copy()
        M.sum_duplicates()
    return M


def decision_values(Z, SV, coef, intercept, code, sigma, degree, coef0):
    """``F = K(Z, SV) @ coef.T + intercept`` without forming ``K(Z, SV)``.

    When ``Z`` or ``SV`` is scipy.sparse, both are read as CSR (a dense
    partner is converted, never the sparse one densified) and the kernel rows
    come from :func:`_csr_kernel_row`.
    """
    coef = np.ascontiguousarray(np.atleast_2d(coef), dtype=np.float64)
    intercept = np.ascontiguousarray(np.atleast_1d(intercept), dtype=np.float64)
    if sp.issparse(Z) or sp.issparse(SV):
        if Z.shape[1] != SV.shape[1]:
            raise ValueError(f"Z has {Z.shape[1]} features, SV {SV.shape[1]}")
        Zc = _as_canonical_csr(Z)
        (_, _, _, sv_l1, colptr, rowidx, colval, _), sv_sq = csr_points(
            _as_canonical_csr(SV))
        z_ptr = np.ascontiguousarray(Zc.indptr, dtype=np.int64)
        z_idx = np.ascontiguousarray(Zc.indices, dtype=np.int64)
        z_data = np.ascontiguousarray(Zc.data, dtype=np.float64)
        return _csr_decision(z_ptr, z_idx, z_data, colptr, rowidx, colval, sv_sq,
                             sv_l1, coef, intercept, int(code), float(sigma),
                             int(degree), float(coef0))
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    SV = np.ascontiguousarray(SV, dtype=np.float64)
    sv_sq = np.einsum("ij,ij->i", SV, SV)
    return _decision(Z, SV, sv_sq, coef, intercept, int(code), float(sigma),
                     int(degree), float(coef0))
