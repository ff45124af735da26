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

from weakkernels._kernel_rows import _LAPLACIAN as _LAPLACIAN
from weakkernels._kernel_rows import _LINEAR as _LINEAR
from weakkernels._kernel_rows import _POLY as _POLY
from weakkernels._kernel_rows import _RBF as _RBF
from weakkernels._kernel_rows import BLOCK_MIN_FEATURES as BLOCK_MIN_FEATURES

# the compiled kernels, importable from here as before the split
from weakkernels._kernel_rows import FASTMATH as FASTMATH
from weakkernels._kernel_rows import ROW_BLOCK as ROW_BLOCK
from weakkernels._kernel_rows import _add_row as _add_row
from weakkernels._kernel_rows import _add_row_fast as _add_row_fast
from weakkernels._kernel_rows import _csr_decision as _csr_decision
from weakkernels._kernel_rows import _csr_kernel_row as _csr_kernel_row
from weakkernels._kernel_rows import _decision as _decision
from weakkernels._kernel_rows import _dense_block as _dense_block
from weakkernels._kernel_rows import _dense_block_impl as _dense_block_impl
from weakkernels._kernel_rows import _expansion_row as _expansion_row
from weakkernels._kernel_rows import _ipow as _ipow
from weakkernels._kernel_rows import _kernel_diag as _kernel_diag
from weakkernels._kernel_rows import _kernel_row as _kernel_row
from weakkernels._kernel_rows import _point_row as _point_row
from weakkernels._kernel_rows import _point_row_impl as _point_row_impl
from weakkernels._kernel_rows import _rows_block as _rows_block
from weakkernels._kernel_rows import _transform_dots as _transform_dots
from weakkernels._smo_kernels import _EPS as _EPS
from weakkernels._smo_kernels import PASS_CHUNK as PASS_CHUNK
from weakkernels._smo_kernels import STATUS_CONVERGED as STATUS_CONVERGED
from weakkernels._smo_kernels import STATUS_MAX_ITER as STATUS_MAX_ITER
from weakkernels._smo_kernels import TAU as TAU
from weakkernels._smo_kernels import TOL_FLOOR as TOL_FLOOR
from weakkernels._smo_kernels import _base_row as _base_row
from weakkernels._smo_kernels import _bias as _bias
from weakkernels._smo_kernels import _first_max as _first_max
from weakkernels._smo_kernels import _free_slot as _free_slot
from weakkernels._smo_kernels import _get_row as _get_row
from weakkernels._smo_kernels import _gradient_from_scratch as _gradient_from_scratch
from weakkernels._smo_kernels import _kernel_times as _kernel_times
from weakkernels._smo_kernels import _max_all as _max_all
from weakkernels._smo_kernels import _min_all as _min_all
from weakkernels._smo_kernels import _pov_runs as _pov_runs
from weakkernels._smo_kernels import _shrink as _shrink
from weakkernels._smo_kernels import _smo_solve as _smo_solve
from weakkernels._smo_kernels import _unshrink as _unshrink
from weakkernels._smo_kernels import _update_full as _update_full
from weakkernels._smo_kernels import _update_run as _update_run
from weakkernels._smo_kernels import _wss2_full as _wss2_full
from weakkernels._smo_kernels import _wss2_run as _wss2_run
from weakkernels._threads import one_blas_thread
from weakkernels._validation import available_memory

# Default kernel cache: this fraction of the memory the OS reports available
# when the problem is built (MemAvailable of /proc/meminfo, else
# os.sysconf's available pages), capped at the full kernel matrix.
CACHE_MEMORY_FRACTION = 0.25

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
