"""The compiled SMO loop of :mod:`weakkernels._smo`: the LRU kernel-row
cache's lookup, LIBSVM's second-order working-set selection, the SMO
iterations, shrinking and the bias. Every function is an ``@njit`` kernel
over arrays and scalars (the kernel rows they read: :mod:`weakkernels.
_kernel_rows`); re-exported by :mod:`weakkernels._smo`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from weakkernels._kernel_rows import (
    _kernel_diag,
    _point_row,
    _rows_block,
)

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
