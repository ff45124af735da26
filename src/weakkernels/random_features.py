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
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from weakkernels._constraints import BLOCK_SIZE, RANDOM_FEATURE_CONSTRAINTS
from weakkernels._feature_kernels import _2PI_HI_F as _2PI_HI_F
from weakkernels._feature_kernels import _2PI_LO_F as _2PI_LO_F
from weakkernels._feature_kernels import _CHUNK_FREQUENCIES as _CHUNK_FREQUENCIES
from weakkernels._feature_kernels import _CSR_PROJECT as _CSR_PROJECT
from weakkernels._feature_kernels import _EXP_MIN as _EXP_MIN
from weakkernels._feature_kernels import _GEMM_ELEMS as _GEMM_ELEMS
from weakkernels._feature_kernels import _GOLDEN as _GOLDEN
from weakkernels._feature_kernels import _H2_MAX_F as _H2_MAX_F
from weakkernels._feature_kernels import _INV_2PI_F as _INV_2PI_F
from weakkernels._feature_kernels import _KERNEL_BLOCK_BYTES as _KERNEL_BLOCK_BYTES
from weakkernels._feature_kernels import _KERNELS as _KERNELS
from weakkernels._feature_kernels import _LN2 as _LN2
from weakkernels._feature_kernels import _LOG2E as _LOG2E
from weakkernels._feature_kernels import _M1 as _M1
from weakkernels._feature_kernels import _M2 as _M2
from weakkernels._feature_kernels import _NARROW_ROWS as _NARROW_ROWS
from weakkernels._feature_kernels import _PARALLEL_MIN_WORK as _PARALLEL_MIN_WORK
from weakkernels._feature_kernels import _PHASE_SAMPLE as _PHASE_SAMPLE
from weakkernels._feature_kernels import _PREDICT_ROWS as _PREDICT_ROWS
from weakkernels._feature_kernels import _TWO_PI as _TWO_PI
from weakkernels._feature_kernels import _U64 as _U64

# the compiled kernels, importable from here as before the split
from weakkernels._feature_kernels import FASTMATH as FASTMATH
from weakkernels._feature_kernels import FLOAT32_PHASE_LIMIT as FLOAT32_PHASE_LIMIT
from weakkernels._feature_kernels import _csr_project_rows as _csr_project_rows
from weakkernels._feature_kernels import _fast_cos as _fast_cos
from weakkernels._feature_kernels import _fill_fourier_block as _fill_fourier_block
from weakkernels._feature_kernels import _fill_fourier_rows as _fill_fourier_rows
from weakkernels._feature_kernels import _fill_maclaurin_block as _fill_maclaurin_block
from weakkernels._feature_kernels import _flat_rows as _flat_rows
from weakkernels._feature_kernels import _maclaurin_features as _maclaurin_features
from weakkernels._feature_kernels import (
    _maclaurin_features_csr as _maclaurin_features_csr,
)
from weakkernels._feature_kernels import _make_fourier_kernels as _make_fourier_kernels
from weakkernels._feature_kernels import _max_row_norm as _max_row_norm
from weakkernels._feature_kernels import _mix64 as _mix64
from weakkernels._feature_kernels import _normal as _normal
from weakkernels._feature_kernels import _np_cos as _np_cos
from weakkernels._feature_kernels import _parallel_worth_it as _parallel_worth_it
from weakkernels._feature_kernels import _rbf_from_products as _rbf_from_products
from weakkernels._feature_kernels import _rbf_row as _rbf_row
from weakkernels._feature_kernels import _stream_key as _stream_key
from weakkernels._feature_kernels import _uniform as _uniform
from weakkernels._feature_kernels import as_compute_rows as as_compute_rows
from weakkernels._feature_kernels import csr_project as csr_project
from weakkernels._feature_kernels import work_array as work_array
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
        "block_size": BLOCK_SIZE,
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
