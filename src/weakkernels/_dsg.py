"""Doubly stochastic functional-gradient machinery shared by the random-feature
solvers (TSGS3VM, FRS3VM, TSGSU, QSG-S2AUC).

The model is ``f(x) = scale * sum_b sum_{j in block b} chat_j phi_j(x)`` (paper 000
Eq. (7); Dai et al. 2014). A step of the functional update

    f_{t+1} = (1 - gamma_t) f_t - gamma_t zeta_t

multiplies every old coefficient by ``(1 - gamma_t)``: instead of touching them we
keep a running ``scale`` and store ``chat = alpha / scale`` (O(1) per step instead
of O(t)); the new block's coefficients are divided by the current scale.

Feature budget (``max_features``, not in any paper): once the model holds that
many features it stops adding blocks; the step's gradient is then projected on an
existing block chosen cyclically, so the cost per step stays bounded and the model
is still regenerated from its seed.
"""

from __future__ import annotations

import math
import mmap
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels._constraints import RANDOM_FEATURE_CONSTRAINTS, SIGMA_OR_SCALE
from weakkernels._threads import one_blas_thread
from weakkernels._validation import available_memory, check_divergence
from weakkernels.random_features import (
    FeatureSpec,
    NystromSpec,
    spec_from_state,
)

# Renormalize when the running scale falls below this: keeps chat far from
# float32 overflow (1/scale grows as prod(1 - gamma)^-1).
_MIN_SCALE = 1e-6
# A bounded expansion whose frequencies fit in this many bytes is allocated
# at its final size at once: np.empty only reserves address space, pages
# are committed as blocks are written, and growing by doubling held the old
# and the new copy at once (one SGD pass at d = 47 000: 0.77 + 1.54 GB).
_PREALLOC_BYTES = 1 << 32


class FunctionalModel:
    """Growing random-feature expansion with a running scale factor.

    ``n_outputs`` expansions (one per one-vs-rest class) share the features.
    Feature blocks are generated once, by seed, and cached while training; the
    cache is dropped after ``fit`` (prediction regenerates them by seed).
    """

    def __init__(self, spec: FeatureSpec, n_outputs: int, max_blocks: int):
        self.spec = spec
        self.K = int(n_outputs)
        self.max_blocks = int(max_blocks)
        self.n_blocks = 0
        self.scale = 1.0
        B = spec.block_size
        dt = spec.dtype
        per_block = B * spec.d * (spec.degree if not spec.is_fourier else 1)
        if self.max_blocks * per_block * dt.itemsize <= _PREALLOC_BYTES:
            cap = self.max_blocks
        else:
            cap = min(self.max_blocks, 16)
        if spec.is_fourier:
            self._W = np.empty((spec.d, cap * B), dtype=dt)
        else:
            self._W = np.empty((spec.degree, spec.d, cap * B), dtype=dt)
        self._second = np.empty(cap * B, dtype=dt)
        self._chat = np.zeros((self.K, cap * B), dtype=dt)
        self._buf = None

    # -- storage -----------------------------------------------------------
    def _grow(self) -> None:
        B = self.spec.block_size
        cap = self._second.size // B
        new_cap = min(self.max_blocks, 2 * cap)
        F = new_cap * B
        W = np.empty(self._W.shape[:-1] + (F,), dtype=self._W.dtype)
        W[..., : cap * B] = self._W
        second = np.empty(F, dtype=self._second.dtype)
        second[: cap * B] = self._second
        chat = np.zeros((self.K, F), dtype=self._chat.dtype)
        chat[:, : cap * B] = self._chat
        self._W, self._second, self._chat = W, second, chat

    @property
    def n_features(self) -> int:
        return self.n_blocks * self.spec.block_size

    def _block_slice(self, b: int) -> slice:
        B = self.spec.block_size
        return slice(b * B, (b + 1) * B)

    # -- evaluation ----------------------------------------------------------
    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """``f(X)`` (n, K) in float64 with the cached blocks (call inside
        :func:`weakkernels._threads.one_blas_thread`)."""
        out = np.zeros((X.shape[0], self.K), dtype=np.float64)
        F = self.n_features
        if F == 0:
            return out
        if self._buf is None or self._buf.size < (1 << 18):
            self._buf = np.empty(1 << 18, dtype=self.spec.dtype)
        self.spec.accumulate(
            X,
            self._W[..., :F],
            self._second[:F],
            self._chat[:, :F],
            self.scale,
            out,
            buf=self._buf,
        )
        return out

    # -- the functional gradient step ----------------------------------------
    def step(self, X: np.ndarray, G: np.ndarray, gamma: float, t: int) -> None:
        """One update ``f <- (1 - gamma) f - gamma sum_i G[i] phi(x_i) phi(.)``.

        ``X`` (m, d) are the minibatch points in compute dtype, ``G`` (m, K) the
        loss derivatives times their weights (``C l'(f(x), y) / m`` etc.), so that
        ``sum_i G[i] k(x_i, .)`` is the minibatch estimate of the loss part of the
        functional gradient (paper 000 Eq. (4)); the random block makes it
        Eq. (5)-(7).
        """
        spec = self.spec
        if self.n_blocks < self.max_blocks:
            b = self.n_blocks
            if self._second.size < (b + 1) * spec.block_size:
                self._grow()
            W, second = spec.block(b)
            sl = self._block_slice(b)
            self._W[..., sl] = W
            self._second[sl] = second
            self.n_blocks += 1
        else:
            # Budget reached: revisit the existing blocks in a fixed cycle.
            b = t % self.max_blocks
            sl = self._block_slice(b)
        Phi = spec.features(X, self._W[..., sl], self._second[sl])  # (m, B)
        coef = Phi.astype(np.float64).T @ G  # (B, K)
        self.scale *= 1.0 - gamma
        if self.scale < _MIN_SCALE:
            self._chat *= self._chat.dtype.type(self.scale)
            self.scale = 1.0
        self._chat[:, sl] += (-gamma / self.scale * coef.T).astype(self._chat.dtype)

    def coefficients(self) -> np.ndarray:
        """True coefficients ``alpha`` (K, n_features), compute dtype."""
        F = self.n_features
        return (self._chat[:, :F] * self._chat.dtype.type(self.scale)).copy()

    def release(self) -> None:
        """Drop the feature cache (the model is regenerated from its seed).

        A fresh empty array, not ``self._W[..., :0]``: that view kept the
        whole cache alive (1.2 GB after one SGD pass at d = 47 000) while the
        estimator went on to predict its training points."""
        self._W = np.empty(self._W.shape[:-1] + (0,), dtype=self._W.dtype)
        self._buf = None


def expansion_state(est) -> tuple[dict, dict]:
    """The seed-based part of a random-feature model file: the feature spec
    (kernel, seed, block layout), the block count and the coefficients -- never
    the features themselves."""
    meta = {
        "spec": est.spec_.to_dict(),
        "n_blocks": est.n_blocks_,
        "n_iter": est.n_iter_,
    }
    arrays = {"coef": est.coef_}
    if isinstance(est.spec_, NystromSpec):
        arrays["landmarks"] = est.spec_.landmarks
    return meta, arrays


def set_expansion_state(est, meta: dict, arrays: dict) -> None:
    """Inverse of :func:`expansion_state`; checks the layout is consistent."""
    from weakkernels._artifact import ModelFormatError

    try:
        est.spec_ = spec_from_state(meta["spec"], arrays)
    except (KeyError, ValueError, np.linalg.LinAlgError) as exc:
        raise ModelFormatError(f"model file: feature spec: {exc}") from exc
    est.sigma_ = float(est.spec_.sigma)  # the width the spec was drawn for
    est.n_blocks_ = int(meta["n_blocks"])
    est.n_iter_ = int(meta["n_iter"])
    est.coef_ = arrays["coef"]
    est.n_features_model_ = est.coef_.shape[1]
    if est.coef_.shape[1] != est.n_blocks_ * est.spec_.block_size:
        raise ModelFormatError("model file: coefficient count does not match layout")


def step_size(schedule: int, eta0: float, t: int, n_iter: int) -> float:
    """Step size ``gamma_t``.

    * ``0`` ("constant"): ``eta0 / T^(3/4)``, the constant step of paper 000's
      Theorem 1 for a horizon of ``T`` iterations;
    * ``1`` ("decay"): ``eta0 / (eta0 + t)``, i.e. ``~ eta0 / t`` (Dai et al.
      2014; paper 003's ``theta / t``) but never above 1, so ``(1 - gamma)``
      stays in [0, 1);
    * ``2`` ("fixed"): ``eta0`` at every step -- paper 000 Sec. 6's constant
      step ``gamma = 1/eta`` (searched over ``0 <= log10 eta <= 3``) as printed.
    """
    if schedule == 0:
        return eta0 / n_iter**0.75
    if schedule == 2:
        return eta0
    return eta0 / (eta0 + t)


SCHEDULES = {"constant": 0, "decay": 1, "fixed": 2}


# ---------------------------------------------------------------------------
# The one training loop of the random-feature solvers
# ---------------------------------------------------------------------------
# solver="lbfgs" reads every row of every point set. It solves the objective
# first on a seeded sample of at most PRIMAL_START_ROWS rows per set (where the
# annealing of C* runs), then on nested samples PRIMAL_GROWTH times larger,
# each warm-started from the previous one, the last holding every row: the
# costly full passes start close to the optimum. The losses are written with
# each set's full size, so every level is an unbiased estimate of the same
# objective. (An annealed fit whose features are held has one level, every
# row: PRIMAL_ANNEAL_EVERY_ROW.)
PRIMAL_START_ROWS = 4096
PRIMAL_GROWTH = 4
# A sampled level holding more than this fraction of the next level's rows is
# not solved: the next level starts from the previous one (or from zero, with
# the annealing of C* on it). Solving nearly the same objective twice costs
# more than the warm start saves: TSGS3VM on ijcnn1 / cod-rna / MNIST at 5 000
# to 20 000 unlabeled rows, lower test error in 13 of 16 cells for 0-32 % less
# CPU; QSG-S2AUC the same AUC in 0.54-0.86x (BENCHMARKS.md, "Convergence and
# defaults", section 10).
PRIMAL_MERGE_FRACTION = 0.5
# An annealed fit (TSGS3VM's C* > 0, raised from 0) whose every row's
# features fit HELD_FEATURE_BYTES has one level: the annealing runs on every
# row, not on a 4 096-row sample that the later levels only refine at full
# C*. The sample's path ends further from the supervised machine where the
# unlabeled rows do not help: ijcnn1, 1 000 labels, 20 000 / 47 990
# unlabeled rows, 7.74 / 7.74 % against 7.98 / 8.04 % (C* = 0: 7.79 /
# 7.80 %; 5 seeds); 2 000 labels 6.38 against 6.83 %; MNIST U = 60 000 5.76
# against 5.81 %; at 0.74-1.20x the CPU. It loses on ijcnn1 with 20 000
# labels, 3.21 against 3.12 % (5 seeds), where the held-out choice of C*
# decides each seed (BENCHMARKS.md, "Convergence and defaults",
# section 11). Past the bound the sample levels stay: there every pass
# streams its features.
PRIMAL_ANNEAL_EVERY_ROW = True
# Rows per chunk of the chunked objective: fixed, not a function of the thread
# count, so the chunks' partial sums are added in the same order for any
# number of threads (bit-identical models).
PRIMAL_CHUNK_ROWS = 2048
# The n x D feature matrix of a level is held in memory when it fits this
# fraction of the memory available at fit time and PRIMAL_CACHE_MAX_BYTES;
# beyond, every product regenerates the features chunk by chunk from the
# seeded frequencies (O(chunk x D) memory, twice the arithmetic per pass).
PRIMAL_CACHE_FRACTION = 0.25
# 2 GiB, the HELD_FEATURE_BYTES bound of the default feature counts: MNIST's
# 61 000 rows x 5 920 Nystroem landmarks (1.4 GB) are held -- streamed, every
# pass regenerates k(X, Z) at m d per row, a minute per iteration.
# A 10^7-row fit (1 024 features) holds the same levels as at 1 GiB (its
# 262 144-row level is 1 GiB, the next 4 GiB: at 4 GiB it held that one and
# peaked at 4.4 GB RSS)
PRIMAL_CACHE_MAX_BYTES = 1 << 31
# L-BFGS iterations on a level past level 0 whose feature matrix exceeds
# HELD_FEATURE_BYTES (in float32; a constant, not the machine's memory, so
# the model does not depend on where it is fitted). Such a level is usually
# streamed, two feature passes per iteration; the warm start from the
# previous, four times smaller level is close, and this bounds the passes a
# fit too large to hold makes (about 2.2 x 4 per level). 10^6 synthetic
# HEPMASS-shaped rows, 2 048 streamed Nyström landmarks: 8.60 % test error
# in 232 s CPU at 4, 8.57 % in 374 s at 12 (15 of 50 000 test rows apart).
PRIMAL_LARGE_LEVEL_MAX_ITER = 4
# A level between level 0 and the last one estimates the full objective only
# up to its sampling error: its gradient at a fixed point is off by noise
# whose variance scales as sum over sets of (n - m) / (n m) (m of a set's n
# rows). Solving it further than that noise moves the point along the noise.
# Such a level stops when its gradient falls to this fraction of its
# estimated noise (:func:`level_gtol`); 0 solves every level to the final
# tolerance (the schedule before this rule). Non-convex primal, passes to
# the tolerance / to a 1e-3 gap (BENCHMARKS.md, "Convergence and defaults",
# section 9): ijcnn1 791 / 395 before, 499 / 239 at 0.5 (every row: 688 /
# 284); 10^6 rows 294 / 124 before, 227 / 49 at 0.5 and 0.25, 386 / 46 at 1
# (too loose: the last level starts farther away). Not the last held level
# before streamed ones: those stop at PRIMAL_LARGE_LEVEL_MAX_ITER, so it is
# the last level solved and keeps the final tolerance (_fit_primal).
PRIMAL_LEVEL_NOISE_FRACTION = 0.5
# Nyström levels within the held bound stream whitened rows (phi = k(X, Z)
# L^-T, a GEMM of 2 r m^2 flops once per level), not k(X, Z) with the
# whitening folded into the coefficients per evaluation, which levels from
# PRIMAL_FOLD_MIN_ROWS rows on would do (None: never, the default). Folding
# is faster on large held levels (438f952 folded from 20 000 rows: MNIST U =
# 60 000 460 s fit CPU against 568 s, synthetic 10^5 rows 95 s) but not as
# accurate in float32: f = k(X, Z) (T v) cancels terms ~3.5e4 times larger
# than f on ijcnn1 (5 344 landmarks in 22 dimensions), an error of ~1e-3 in
# every evaluation's outputs and gradient, and ijcnn1 L = 20 000 seed 2 ended
# at 3.64 % test error against 3.235 % whitened (BENCHMARKS.md, "Within the
# bars"). Whitened rows perturb a fixed basis once, so the objective and its
# gradient stay consistent.
PRIMAL_FOLD_MIN_ROWS = None


def primal_cache_bytes() -> int:
    """Bytes the L-BFGS solver may hold as cached features."""
    return int(min(PRIMAL_CACHE_MAX_BYTES,
                   PRIMAL_CACHE_FRACTION * available_memory()))


# A loss with a concave part (Problem.majorize) is minimised by the
# concave-convex procedure: each stage alternates re-linearising the concave
# part at the current outputs and an L-BFGS solve of the convex majorant, from
# the previous solution, until at most CCCP_TOL of the slopes move (paper
# 004's "until the linearisation does not change", with a tolerance because
# smoothed hinges give continuous slopes) or CCCP_MAX_STEPS solves.
CCCP_TOL = 1e-3
CCCP_MAX_STEPS = 20

# solver="lbfgs" with annealing solves these C*-fractions in turn, each from the
# previous solution (the unlabeled loss is non-convex: a small C* first lets the
# labeled points place the boundary, as S3VMlight, nabla-TSVM and QN-S3VM do).
# Three stages gave the same test errors as six (0, .01, .03, .1, .3, 1) on
# cod-rna and g50c at C = 1 and 10 in about 60 % of the time (BENCHMARKS.md,
# "Convergence").
ANNEAL_STAGES = (0.0, 0.1, 1.0)
# With a held-out choice of C* (Problem.select) the annealing path goes on to
# 3 and 10 times the given C*, and every stage is a candidate: where the
# unlabeled rows pay, the best multiple of paper 004's rule grows with their
# count (synthetic_hepmass_gap, 1 000 labels: 1-3x chosen by CV on 1.6 x 10^4
# rows, 10x on 10^5). Scored on the largest held level, 10 000 labels of
# that set, 10^5 rows: 3-10x kept, 2.50 % test error against the rule's
# 2.80 %; on the uniform set C* = 0 is still kept (BENCHMARKS.md, "C* chosen
# where it is used").
SELECT_STAGES = (0.0, 0.1, 1.0, 3.0, 10.0)
SOLVERS = ("lbfgs", "sgd")
# solver="lbfgs": L-BFGS iterations per annealing stage when max_iter is None.
# The stages stop on the gradient tolerance long before this on the default
# data sets (BENCHMARKS.md, "Convergence"); it bounds the worst case.
LBFGS_MAX_ITER = 500


def iteration_budget(solver: str, max_iter, n_passes: float, n_rows: int,
                     batch_size: int, min_iter: int = 1) -> int:
    """``T`` for :func:`fit_expansion`: L-BFGS iterations per annealing stage
    (``max_iter`` or :data:`LBFGS_MAX_ITER`), or SGD steps -- ``max_iter`` if
    given, else ``n_passes`` passes of ``batch_size`` over ``n_rows`` rows, at
    least ``min_iter``."""
    if solver != "sgd":
        return int(max_iter or LBFGS_MAX_ITER)
    if max_iter is not None:
        return int(max_iter)
    return max(int(min_iter), math.ceil(n_passes * n_rows / batch_size))
# solver="lbfgs": random features of the fixed expansion when the estimator's
# feature budget is None: as many as keep the feature matrix near 2^22 entries
# (16 MB in float32, so an L-BFGS iteration costs about the same on every data
# set), at least LBFGS_FEATURES and at most LBFGS_MAX_FEATURES. On g50c (d =
# 50, 550 rows) 1024 features leave the test error ~1 pp above 4096's; on
# cod-rna (d = 8) more than 1024 buy nothing (BENCHMARKS.md, "Convergence").
LBFGS_FEATURES = 1024
LBFGS_MAX_FEATURES = 4096
LBFGS_LARGE_FEATURES = 8192
# Features of either basis where the n x D matrix outgrows HELD_FEATURE_BYTES
# (past ~262 k rows): streamed, D d per row and pass (NYSTROEM_STREAMED below
# is the same count of landmarks)
STREAMED_FEATURES = 2048
HELD_FEATURE_BYTES = 1 << 31
_PRIMAL_BUDGET = 1 << 22
_FREQUENCY_BUDGET = 1 << 24

# Parameters of every estimator trained by fit_expansion (TSGS3VM, FRS3VM,
# TSGSU, QSGS2AUC), validated by name: each merges this into its own
# ``_parameter_constraints``. ``sigma`` may be "scale" (resolve_sigma).
DSG_CONSTRAINTS = {
    **RANDOM_FEATURE_CONSTRAINTS,
    "sigma": SIGMA_OR_SCALE,
    "solver": [StrOptions(set(SOLVERS))],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "eta0": [Interval(Real, 0, None, closed="neither")],
    "callback": [callable, None],
    "callback_every": [Interval(Integral, 1, None, closed="left")],
}
# The feature budget of the expansions grown block by block (default_blocks);
# FRS3VM sizes its fixed expansion by n_components instead.
EXPANSION_CONSTRAINTS = {
    "block_size": [Interval(Integral, 1, None, closed="left")],
    "max_features": [Interval(Integral, 1, None, closed="left"), None],
}


def default_blocks(solver: str, set_sizes, max_features, block_size: int,
                   n_features_in: int = 1) -> int:
    """Blocks of an estimator's expansion: ``max_features`` if given, else
    unbounded for ``solver="sgd"`` (new blocks every step, as the papers) and
    :func:`primal_features` of all the training rows for ``"lbfgs"``."""
    rows = sum(int(n) for n in set_sizes)
    default = (None if solver == "sgd"
               else primal_features(rows, block_size, n_features_in))
    return feature_layout(max_features, block_size, default)


def primal_features(n_rows: int, block_size: int, n_features_in: int = 1) -> int:
    """Default size ``D`` of the fixed expansion for ``n_rows`` training rows
    of ``n_features_in`` columns, a multiple of ``block_size``.

    * Small sets (cost rule): as many features as keep the feature matrix
      near ``2^22`` entries, between :data:`LBFGS_FEATURES` and
      :data:`LBFGS_MAX_FEATURES` (g50c, 550 rows: 4096; 4 296 rows: 1024).
    * Capacity that grows with the data: at least ``16 sqrt(n_rows)``
      features (random-feature learning needs ``D ~ sqrt(n) log n`` for the
      kernel machine's rate, Rudi & Rosasco 2017), up to
      :data:`LBFGS_LARGE_FEATURES` and to as many as keep the n x D feature
      matrix within 2 GiB in float32 (a constant, not the memory of the
      machine: the default model must not depend on where it is fitted): ijcnn1
      (50 k rows) gets 3 552, MNIST (61 k) 3 936, the peak is ~5 100 near
      100 k rows. Beyond, the 2 GiB bound caps the arithmetic of one pass
      (n x D entries), so D falls to :data:`STREAMED_FEATURES` (2 048) by
      262 k rows and stays there: the features are streamed, a pass costs
      ``D d`` per row, as Nyström's streamed landmarks do (set
      ``max_features`` to buy more). Before this floor it fell on to 1024
      by 524 k rows: at 10^6 synthetic rows 2 048 give 10.0 % test error
      in 433 s of fit CPU against 11.1 % in 343 s (BENCHMARKS.md, "Cost").
    * Memory of the frequencies: ``n_features_in x D <= 2^24`` entries above
      1024 features (a 100 x 20 000 problem gets 1024, not 4096).
    """
    n = max(int(n_rows), 1)
    D = max(LBFGS_FEATURES, min(LBFGS_MAX_FEATURES, _PRIMAL_BUDGET // n))
    held = HELD_FEATURE_BYTES // (4 * n)
    D = max(D, min(int(16 * math.sqrt(n)), LBFGS_LARGE_FEATURES, held))
    if held < STREAMED_FEATURES:  # streamed rather than held
        D = max(D, STREAMED_FEATURES)
    D = max(LBFGS_FEATURES, min(D, _FREQUENCY_BUDGET // max(n_features_in, 1)))
    return max(block_size, D // block_size * block_size)


# ---------------------------------------------------------------------------
# The basis of the fixed expansion: seeded Fourier features or Nyström
# ---------------------------------------------------------------------------
# features="nystroem" holds every training row as a landmark up to this many
NYSTROEM_ALL_ROWS = 4096
# beyond, ~24 sqrt(n) landmarks (see nystroem_size): 5 920 at MNIST's 61 000
# rows, where 4 096 left paper 004's Table 1.5 bar (6.0 %) missed on two of
# three seeds (BENCHMARKS.md, "Multiclass defaults")
NYSTROEM_SQRT_FACTOR = 24
# features="auto" uses Nyström up to this many landmark entries (m x d)
_NYSTROEM_MAX_ENTRIES = 1 << 26
# Landmarks where the n x m matrix outgrows the 2 GiB held bound (past ~262 k
# rows): streamed, at m d per row and pass (NystromSpec.stream_features).
# Synthetic HEPMASS-shaped rows (d = 28, 10 000 labels, C = 10), test error /
# fit CPU: 10^5 rows 8.75 % / 50 s with 2 048 against 8.79 % / 201 s with
# the 5 344 held ones; 10^6 rows 8.60 % / 226 s, against 11.09 % / 86 s for
# the 1 024 Fourier features that were the default there, and 9.40 % / 410 s
# for 4 096 Fourier features (BENCHMARKS.md, "Cost").
NYSTROEM_STREAMED = STREAMED_FEATURES
# The ``features`` parameter of every estimator with a fixed expansion.
BASIS_CONSTRAINTS = {"features": [StrOptions({"auto", "fourier", "nystroem"})]}


def nystroem_size(n_rows: int, n_features_in: int) -> int:
    """Default landmark count of ``features="nystroem"``: every row up to
    :data:`NYSTROEM_ALL_ROWS` (the Nyström machine is then the exact kernel
    machine, up to the jitter), else ~``NYSTROEM_SQRT_FACTOR sqrt(n)``
    (Falkon's O(sqrt(n)) landmarks, Rudi et al. 2017; a multiple of 32, as a
    ``max_features`` budget is) and never fewer than that floor, the Fourier
    default (:func:`primal_features`, ~16 sqrt(n)) or
    :data:`NYSTROEM_STREAMED`.

    The growth stops where the n x m feature matrix outgrows 2 GiB (held, a
    constant, not the machine's memory: the model must not depend on where
    it is fitted); past ~131 k rows that bound lowers the 4096 floor too,
    down to :data:`NYSTROEM_STREAMED` streamed landmarks, whose fit costs
    m d per row and pass -- linear in n from there on (rows of d <= 32 768,
    :func:`_streams`). The m x d landmarks stay within 2^26 entries (else
    ``features="auto"`` is Fourier). The
    factor is 1.5x the Fourier one because a landmark is worth more than a
    random frequency (MNIST: 1 376 of each, 7.30 against 10.02 %)."""
    n = max(int(n_rows), 1)
    held = HELD_FEATURE_BYTES // (4 * n)  # the Fourier rule's 2 GiB bound
    wide = _NYSTROEM_MAX_ENTRIES // max(int(n_features_in), 1)
    grow = min(int(NYSTROEM_SQRT_FACTOR * math.sqrt(n)), held, wide) // 32 * 32
    streamed = NYSTROEM_STREAMED if _streams(n_features_in) else 0
    return min(n, max(min(NYSTROEM_ALL_ROWS, held), grow, streamed,
                      primal_features(n, 32, n_features_in)))


def _streams(n_features_in: int) -> bool:
    """Rows narrow enough for :data:`NYSTROEM_STREAMED` landmarks within the
    2^26 landmark entries (d <= 32 768)."""
    return NYSTROEM_STREAMED * max(int(n_features_in), 1) <= _NYSTROEM_MAX_ENTRIES


def _set_rows(rows_and_index):
    """``(X, idx)`` -> the row count of the set (``idx`` None: every row)."""
    X, idx = rows_and_index
    return X.shape[0] if idx is None else idx.size


def nystroem_landmarks(first, rest, m: int, seed: int) -> np.ndarray:
    """``m`` landmarks for ``features="nystroem"`` (float64, dense) from two
    point sets, each ``(X, idx)`` (rows ``X[idx]``; ``idx`` None: all of X):
    every row of ``first`` while they are at most half of ``m`` (else a
    seeded sample of ``m / 2``), the rest a seeded uniform sample of
    ``rest``. ``first`` holds the rows with labels -- labeled rows (S3VM),
    positives and negatives (AUC), similar-pair rows (SU) -- ``rest`` the
    unlabeled ones. With the labeled rows among the landmarks, the
    supervised kernel machine on them (an SVC's expansion) lies in the span,
    so the capacity never falls below the SVC's."""
    parts = []
    taken = 0
    for (X, idx), want, stream in ((first, max(1, m // 2), 11), (rest, None, 12)):
        n = _set_rows((X, idx))
        pick = seeded_sample(n, max(1, m - taken) if want is None else want,
                             seed, stream=stream)
        taken += pick.size
        p = X[pick if idx is None else idx[pick]]
        parts.append(p.toarray() if hasattr(p, "toarray") else np.asarray(p))
    return np.vstack(parts).astype(np.float64)


def resolve_basis(features: str, solver: str, kernel: str, n_rows: int,
                  n_features_in: int, m: int) -> str:
    """``features`` resolved for an expansion of ``m`` features on ``n_rows``
    rows of ``n_features_in`` columns: ``"auto"`` is Nyström where it applies
    -- a fixed expansion (L-BFGS, or TSGSU's direct solve), the RBF kernel,
    ``m x d`` landmark entries within 2^26 (256 MB in float32), and an n x m
    feature matrix within 2 GiB or rows narrow enough to stream
    :data:`NYSTROEM_STREAMED` landmarks (a streamed row costs ``m d``, as a
    Fourier one) -- else Fourier (the papers' SGD, the other kernels, very
    wide rows such as text: there the dense landmarks cost more than the
    seeded frequencies; large wide sets were not measured with Nyström). The
    rule reads shapes only: dense and sparse storage of the same rows get the
    same basis and the same model."""
    if features == "nystroem" and solver == "sgd":
        raise ValueError('features="nystroem" needs solver="lbfgs" (the '
                         "papers' SGD draws fresh Fourier blocks).")
    if features != "auto":
        return features
    fits = (m * n_features_in <= _NYSTROEM_MAX_ENTRIES
            and (4 * m * n_rows <= HELD_FEATURE_BYTES
                 or _streams(n_features_in)))
    if solver != "sgd" and kernel == "rbf" and fits:
        return "nystroem"
    return "fourier"


def expansion_basis(features: str, *, solver: str, kernel: str, sigma: float,
                    degree, coef0, first, rest, m, block_size: int,
                    max_blocks: int, dtype, seed: int):
    """The basis of a fixed expansion: ``(spec, block_size, max_blocks,
    kind)``. Where ``features`` resolve to Nyström (:func:`resolve_basis`)
    the :class:`NystromSpec` on :func:`nystroem_landmarks` of ``first`` /
    ``rest`` (one block of all its features), else the seeded Fourier
    :class:`FeatureSpec` of ``max_blocks`` blocks of ``block_size``. ``m``:
    the feature budget, None for the default :func:`nystroem_size` of all
    the rows."""
    n = _set_rows(first) + _set_rows(rest)
    d = first[0].shape[1]
    m = nystroem_size(n, d) if m is None else int(m)
    if resolve_basis(features, solver, kernel, n, d, m) != "nystroem":
        return (FeatureSpec(kernel, sigma, degree, coef0, d, block_size, seed,
                            dtype), block_size, max_blocks, "fourier")
    spec = NystromSpec(kernel, sigma, nystroem_landmarks(first, rest, m, seed),
                       dtype, seed)
    return spec, spec.block_size, 1, "nystroem"


# rows per partial sum of resolve_sigma: the same grid in memory and on Dask
MOMENT_CELL_ROWS = 1 << 16


def cell_moments(cell) -> tuple[float, float]:
    """(sum, sum of squares) of the stored values of one cell of rows (dense:
    every entry; CSR: the stored values, duplicates summed first -- a
    duplicate (i, k) is one entry). The one arithmetic of
    :func:`resolve_sigma`, in memory and on Dask workers alike."""
    if sp.issparse(cell):
        cell = sp.csr_matrix(cell)
        if not cell.has_canonical_format:
            cell = cell.copy()
            cell.sum_duplicates()
        cell = cell.data
    cell = np.asarray(cell, dtype=np.float64)
    return float(cell.sum()), float(np.square(cell).sum())


def resolve_sigma(sigma, X) -> float:
    """Kernel width: a number, or ``"scale"`` for ``1 / (d Var X)`` over the
    training rows -- scikit-learn's ``gamma="scale"`` of ``SVC`` (the variance
    of all n d entries, zeros included). Summed per cell of
    :data:`MOMENT_CELL_ROWS` rows, in order, so a memory-mapped X is never
    copied whole and rows on Dask workers give the same bits
    (``DaskRows.moments``); for scipy.sparse X from the stored values alone
    (the implicit zeros add nothing to either sum)."""
    if not isinstance(sigma, str):
        return float(sigma)
    n, d = X.shape
    total = total_sq = 0.0
    if hasattr(X, "moments"):  # rows on Dask workers: summed where they are
        total, total_sq = X.moments(MOMENT_CELL_ROWS)
    else:
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        for r0 in range(0, n, MOMENT_CELL_ROWS):
            s, q = cell_moments(X[r0 : r0 + MOMENT_CELL_ROWS])
            total += s
            total_sq += q
    count = float(n * d)
    var = max(total_sq / count - (total / count) ** 2, 0.0)
    if not np.isfinite(var):
        # sigma_ would be 0: a constant kernel, and a model file that
        # refuses to load; say so at fit time instead
        raise ValueError(
            'sigma="scale": the variance of X overflows float64 (entries '
            "near 1e150 or above); rescale the features or pass a number.")
    width = 1.0 / (d * var) if var > 0 else 1.0
    if not np.isfinite(width):
        # Var X subnormal (entries near 1e-160): the width overflows, and
        # Nystroem's Cholesky would meet inf -- named here instead
        raise ValueError(
            f'sigma="scale": 1 / (d Var X) overflows float64 (Var X = {var:.3g}, '
            "entries near 1e-155 or below); rescale the features (e.g. "
            "params.yaml prepare.scale: minmax) or pass a number.")
    return width


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
        ends when that fraction is at most :data:`CCCP_TOL`, or after
        :data:`CCCP_MAX_STEPS` solves.
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
    """

    def __init__(self, sets, n_outputs, loss, *, lam=1.0, intercept="none",
                 balance=None, balance_set=1, balance_target=None, uses=None,
                 pointwise=None, outputs_on=None, majorize=None, select=None,
                 moments=None):
        if moments is not None and (int(n_outputs) != 1 or pointwise is not None
                                    or uses is not None):
            raise ValueError("a loss of the outputs' moments has one output, "
                             "reads every set and has no pointwise form")
        self.moments = moments
        self.sets = sets
        self.select = select
        self.majorize = majorize
        self.outputs_on = outputs_on
        self.uses = uses
        self.pointwise = pointwise
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
    own memory, not the input file. Measured before this, a 10^7-row fit
    (1.1 GB float32 file) peaked at 2.53 GiB RSS, 1.19 GiB of it pages of the
    mapped input (BENCHMARKS.md, "Cost"). Only whole pages inside the rows'
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


def callback_monitor(est, set_state):
    """The ``monitor`` every random-feature estimator hands to
    :func:`fit_expansion`: keeps ``est.n_iter_`` current and, when the user gave
    ``est.callback``, exposes the current model (``set_state(model,
    intercept)``), records ``est.fit_time_curve_`` (iterations, seconds) and
    calls ``est.callback(est, n_iter)`` (Optuna pruning, learning curves)."""
    est.n_iter_ = 0
    est.fit_time_curve_ = []
    t_start = time.perf_counter()

    def monitor(n_iter, model, intercept):
        est.n_iter_ = n_iter
        if est.callback is None:
            return
        set_state(model, intercept)
        est.fit_time_curve_.append((n_iter, time.perf_counter() - t_start))
        est.callback(est, n_iter)

    return monitor


class Expansion:
    """Result of :func:`fit_expansion`: the trained model, its bias and the
    optimizer's record."""

    def __init__(self, model, intercept, n_iter, objective_curve,
                 balance_outputs=None, weight=1.0, stage_errors=None,
                 start_loss=None, stage_scores=None):
        self.model = model
        self.intercept = intercept
        self.n_iter = n_iter
        self.objective_curve = objective_curve
        # solver="lbfgs": f + b on every row of the balance set (None: SGD)
        self.balance_outputs = balance_outputs
        # the annealing weight of the returned machine, and with
        # Problem.select each stage's (weight, error on the held-out rows)
        self.weight = weight
        self.stage_errors = stage_errors
        # ... and each stage's per-row errors there (weight, (m,) array): a
        # cross-validated choice pools them over the folds
        self.stage_scores = stage_scores
        # solver="sgd": the loss of the starting iterate at full annealing
        # weight (the bar of check_sgd_curve)
        self.start_loss = start_loss


def one_se_better(wrong, wrong_ref) -> tuple[bool, float, float]:
    """Whether a candidate beats a reference by more than one standard error
    of the paired difference of their per-point errors on the same validation
    points; returns ``(better, mean difference, standard error)``.

    The one-standard-error rule of Hastie, Tibshirani & Friedman (ESL 2nd
    ed., Sec. 7.10), read as "keep the simpler model unless the evidence is
    one SE strong"; paired, because both are scored on the same points, so
    the noise they share (the hard points) cancels. A tie keeps the
    reference -- and one point of difference is always a tie: with a single
    nonzero d_i the mean and the SE are both 1/n, so the comparison carries a
    relative margin instead of leaving it to the last bit of rounding."""
    d = np.asarray(wrong, float) - np.asarray(wrong_ref, float)
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    return bool(-d.mean() > se * (1 + 1e-9)), float(d.mean()), se


def one_se_stage(errors, ref: int = 0) -> int:
    """The annealing stage to keep from per-row errors on held-out rows.

    ``errors[j]`` (m,) are stage ``j``'s 0/1 errors on the same rows, stage
    ``ref`` the reference: by default stage 0, the supervised machine
    (C* = 0). Another stage is kept only if it beats the reference by more
    than one standard error of the paired difference (:func:`one_se_better`),
    and among those the one with the fewest errors (the first on ties).
    Paper 004 chooses C* on a labeled validation set; the rule keeps the
    supervised machine unless the unlabeled term's gain is resolved, because
    on data without cluster structure that term only costs (BENCHMARKS.md,
    "C* on held-out labels"). A cross-validated choice on a few labels keeps
    paper 004's rule instead (``ref`` its stage): 50 labels do not resolve
    the 3 pp the unlabeled term gains on g50c, and they do resolve the rule
    falling to chance on g241n.
    """
    best, best_err = ref, np.inf
    if np.size(errors[ref]) < 2:
        return ref  # no standard error: nothing is resolved
    for j in range(len(errors)):
        err = float(np.mean(errors[j]))
        if j != ref and one_se_better(errors[j], errors[ref])[0] and err < best_err:
            best, best_err = j, err
    return best


def feature_layout(max_features, block_size: int, default=None) -> int:
    """Blocks in a feature budget of ``max_features`` (None: ``default``
    features, or unbounded when that is None too)."""
    B = int(block_size)
    if max_features is None:
        return 2**62 if default is None else max(1, int(default) // B)
    if max_features < B:
        raise ValueError(
            f"max_features={max_features} is smaller than one block "
            f"(block_size={B})."
        )
    return int(max_features) // B


# solver="sgd": the most steps a fit takes, whatever n_passes, max_iter or
# min_iter ask (a ConvergenceWarning says when it binds): 2^22 steps of batch
# 256 are a billion rows, 10 passes over 100 M.
SGD_MAX_STEPS = 1 << 22


def check_feature_memory(spec: FeatureSpec, n_features: int) -> None:
    """Refuse, before allocating, an expansion whose frequencies (``d x D``,
    ``degree x d x D`` for the polynomial kernel) do not fit in the memory
    available now; the message names the parameters that set ``D``."""
    fourier_like = spec.is_fourier or isinstance(spec, NystromSpec)
    per = spec.d * (1 if fourier_like else spec.degree) * spec.dtype.itemsize
    need = per * int(n_features)
    avail = available_memory()
    if need > avail:
        raise ValueError(
            f"{n_features} random features of {spec.d} inputs need "
            f"{need / 2**30:.3g} GiB for their frequencies, more than the "
            f"{avail / 2**30:.3g} GiB available: lower max_features / "
            "n_components / block_size.")


def seeded_sample(n: int, m: int, seed: int, stream: int = 1) -> np.ndarray:
    """Sorted indices of a seeded uniform sample of ``min(n, m)`` of ``n`` rows
    (calibration, thresholds and balancing use the same rows at every call)."""
    rng = np.random.Generator(np.random.Philox(key=seed + stream))
    return np.sort(rng.choice(n, size=min(n, m), replace=False))


def fit_expansion(problem: Problem, spec: FeatureSpec, *, solver: str,
                  max_blocks: int, n_iter: int, batch_size, step=None,
                  anneal: float = 0.0, tol: float = 1e-5, seed: int = 0,
                  monitor=None, monitor_every: int = 10) -> Expansion:
    """Train ``f`` for ``problem`` on the seeded features of ``spec``.

    ``solver="sgd"``: the doubly stochastic functional gradient of the papers
    (paper 000 Algorithm 1 / Eq. (7), paper 002 Eq. (22), paper 003 Eq.
    (14)-(16)): ``n_iter`` steps, each on minibatches of ``batch_size`` (an int,
    or one per set) and a fresh feature block (cyclically revisited once
    ``max_blocks`` are in), with ``eta_t = step(t, n_iter)`` and
    ``f <- (1 - eta lam) f - eta grad``; the annealing weight rises linearly
    over the first ``anneal`` fraction of the steps.

    ``solver="lbfgs"``: the same objective on the fixed expansion of the first
    ``max_blocks`` seeded blocks, solved in its primal by L-BFGS (at most
    ``n_iter`` iterations per annealing stage, stopping when the projected
    gradient is below ``tol`` times its initial size). Every row counts: the
    stages run on growing nested samples up to all rows (:func:`primal_levels`),
    the objective evaluated chunk by chunk (:class:`_PrimalSet`).

    ``monitor(n_iter, model, intercept)`` is called every ``monitor_every``
    SGD steps, or after each L-BFGS stage.
    """
    # pages of a memory-mapped input read before the solve (validation, sigma)
    # or by it leave the resident set (:func:`release_mapped_rows`)
    for source, _ in problem.sets:
        release_mapped_rows(source)
    try:
        return _fit(problem, spec, solver, max_blocks, n_iter, batch_size, step,
                    anneal, tol, seed, monitor, monitor_every)
    finally:
        for source, _ in problem.sets:
            release_mapped_rows(source)


def _fit(problem, spec, solver, max_blocks, n_iter, batch_size, step, anneal, tol,
         seed, monitor, monitor_every):
    if solver == "lbfgs":
        check_feature_memory(spec, max_blocks * spec.block_size)
        return _fit_primal(problem, spec, max_blocks, n_iter, anneal, tol, seed,
                           monitor)
    if n_iter > SGD_MAX_STEPS:
        warnings.warn(
            f"solver='sgd': {n_iter} steps asked (n_passes / max_iter / "
            f"min_iter); stopping at the ceiling of {SGD_MAX_STEPS} "
            "(weakkernels._dsg.SGD_MAX_STEPS).", ConvergenceWarning, stacklevel=3)
        n_iter = SGD_MAX_STEPS
    # T steps add at most T blocks
    check_feature_memory(spec, min(max_blocks, max(int(n_iter), 1)) * spec.block_size)
    return _fit_sgd(problem, spec, max_blocks, n_iter, batch_size, step, anneal,
                    seed, monitor, monitor_every)


def _fit_sgd(problem, spec, max_blocks, T, batch_size, step, anneal, seed,
             monitor, every):
    K, lam, dtype = problem.K, problem.lam, spec.dtype
    # T steps add at most T blocks: a tighter bound than an unbounded budget
    # lets the model allocate its final size once (the cyclic revisit starts
    # only once max_blocks blocks are in, so the result is unchanged)
    model = FunctionalModel(spec, K, min(max_blocks, max(int(T), 1)))
    sizes = problem.sizes()
    bs = batch_size
    if not isinstance(bs, (list, tuple)):
        bs = [bs] * len(sizes)
    m = [min(int(b), n) for b, n in zip(bs, sizes, strict=True)]
    cuts = np.cumsum([0] + m)
    # Minibatches come from their own stream (Philox keyed by the seed),
    # independent of the counter-based feature blocks.
    rng = np.random.Generator(np.random.Philox(key=seed))
    b = np.zeros(K)
    curve, start = [], None
    with one_blas_thread():
        for t in range(T):
            # sorted: sequential reads when a set lives on disk
            idx = [np.sort(rng.integers(0, n, size=k))
                   for n, k in zip(sizes, m, strict=True)]
            parts = [problem.rows(s, i, dtype) for s, i in enumerate(idx)]
            Xb = (sp.vstack(parts, format="csr") if sp.issparse(parts[0])
                  else np.concatenate(parts))
            g = model.evaluate(Xb)
            check_divergence(g, "eta0 (step size)")
            fs = [g[cuts[s]:cuts[s + 1]] for s in range(len(sizes))]
            if problem.intercept == "balance":
                b = problem.balance(fs[problem.balance_set])
            w = min(1.0, (t + 1) / (anneal * T)) if anneal > 0 else 1.0
            value, grads = problem.loss([f + b for f in fs], idx, sizes, w)
            curve.append(float(value))
            if t == 0:  # the model is still empty: these are the start's outputs
                # (an annealed problem's loss is called once more, at full
                # weight; TSGS3VM's, the only one annealed, has no side effect)
                start = (float(value) if w == 1.0 else float(problem.loss(
                    [f + b for f in fs], idx, sizes, 1.0)[0]))
            G = np.concatenate(grads)
            eta = step(t, T)
            model.step(Xb, G / lam, eta * lam, t)
            if problem.intercept == "free":
                # d loss / d b; b is not in the RKHS norm, so it is not shrunk
                b = b - eta * G.sum(axis=0)
            if monitor is not None and (t + 1) % every == 0:
                monitor(t + 1, model, b)
    return Expansion(model, b, T, curve, start_loss=start)


# Ten times the start's loss: the minibatch noise of a mean over the last
# tenth of the steps stays well below it near a minimiser, and a diverging
# iterate passes it within a few steps.
SGD_DIVERGED_FACTOR = 10.0


def sgd_tail(n_steps: int) -> int:
    """How many of the last SGD steps estimate the final iterate's loss."""
    return max(1, n_steps // 10)


def check_sgd_curve(est, result: Expansion, end: float | None = None) -> None:
    """Warn when an SGD run ends far worse than it started.

    Every objective of the papers is ``J(f) = R(f) + lam/2 ||f||_H^2`` with
    the iterate starting at ``f = 0`` (paper 000 Eq. (1), paper 002 Eq. (9),
    paper 003 Eq. (9)), so a minimiser has ``R(f*) <= J(f*) <= J(0) = R(0)``
    (with a balancing intercept the start is ``f = 0`` plus the bias that
    balances it, a point of the constraint set: the same bound). ``end``,
    the final iterate's ``R``, is by default the mean minibatch loss of the
    last :func:`sgd_tail` steps (an estimator whose minibatch loss is biased
    passes its own); above :data:`SGD_DIVERGED_FACTOR` times the start's loss
    the iterate diverged (or was never near a minimiser) while its values
    stayed finite -- ``check_divergence`` only stops non-finite ones.
    Nothing is checked when the start's loss is not positive (no scale); a
    loss that can go negative (TSGSU's unbiased risk) and runs off downwards
    is not seen."""
    curve, start = result.objective_curve, result.start_loss
    if start is None or not curve or not start > 0.0:
        return
    if end is None:
        end = float(np.mean(curve[-sgd_tail(len(curve)):]))
    if end > SGD_DIVERGED_FACTOR * start:
        warnings.warn(
            f"{type(est).__name__}(solver='sgd') ended with a loss of "
            f"{end:.3g} (from the minibatches of its last steps), "
            f"{end / start:.3g} times the loss of its starting point f = 0 "
            f"({start:.3g}), which every "
            "minimiser of its objective beats: the SGD iterate diverged or is "
            "far from converged. Lower eta0 or raise max_iter.",
            ConvergenceWarning, stacklevel=3)


def solve_quadratic(spec, n_blocks: int, sets, q, lin, lam: float,
                    intercept: bool):
    """Exact minimizer of a loss that is quadratic in the outputs,
    ``sum_s mean_{x in s} (q_s f(x)^2 / 2 + l_s f(x)) + lam/2 ||v||^2`` with
    ``f = psi v (+ b)`` on the first ``n_blocks`` blocks of ``spec``
    (``psi = features / sqrt(n_blocks)`` as the L-BFGS primal): the normal
    equations ``(lam I + sum_s q_s/n_s P_s'P_s) v + c b = -sum_s l_s/n_s
    P_s'1`` (and ``c'v + (sum q_s) b = -sum l_s`` for the bias, ``c =
    sum_s q_s/n_s P_s'1``), accumulated in float64 chunk by chunk over the
    rows of every set ``(X, idx)`` (``idx`` None: all rows), solved by
    Cholesky. One pass over the rows, ``O(n D^2)`` work and ``D x D``
    memory, against L-BFGS's ``O(n D)`` per iteration. Returns ``(model,
    b)``."""
    from scipy.linalg import cho_factor, cho_solve, solve

    dtype = spec.dtype
    model = FunctionalModel(spec, 1, n_blocks)
    with one_blas_thread():
        W, second = spec.blocks(0, n_blocks)
        norm = dtype.type(1.0 / np.sqrt(n_blocks))
        D = W.shape[-1]
        white = Whitening(spec)
        # the streamed products, whitened once at the end (H = T'(P'P)T)
        H = lam * np.eye(D) if white.T is None else np.zeros((D, D))
        rhs, c = np.zeros(D), np.zeros(D)
        for (X, idx), qs, ls in zip(sets, q, lin, strict=True):
            n = X.shape[0] if idx is None else idx.size
            for r0 in range(0, n, PRIMAL_CHUNK_ROWS):
                rows = (slice(r0, min(n, r0 + PRIMAL_CHUNK_ROWS)) if idx is None
                        else idx[r0:r0 + PRIMAL_CHUNK_ROWS])
                P = primal_chunk(X[rows], spec, W, second, norm).astype(np.float64)
                total = P.sum(axis=0)
                if qs:
                    H += (qs / n) * (P.T @ P)
                rhs -= (ls / n) * total
                c += (qs / n) * total
        if white.T is not None:
            H = white.lower(white.lower(H).T)  # T' H T (H symmetric)
            H[np.diag_indices_from(H)] += lam
            rhs, c = white.lower(rhs), white.lower(c)
        if intercept:
            A = np.block([[H, c[:, None]], [c[None, :], np.array([[sum(q)]])]])
            z = solve(A, np.append(rhs, -sum(lin)), assume_a="sym")
            v, b = z[:-1], z[-1]
        else:
            v, b = cho_solve(cho_factor(H), rhs), 0.0
    _set_primal(model, v[:, None], n_blocks, norm, W, second)
    return model, np.array([b])


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


# Bytes of a chunk's features per block of fused_chunk. The forward and the
# backward product of a block read the same rows: at most this many, the
# second read finds them in the cache instead of memory. A 2 048-row chunk of
# MNIST's 5 920 float32 landmarks is 48 MB, past a 32 MB L3; in blocks of 256
# or 512 rows (6-12 MB; this bound gives 354) the fused pass took 24 ms
# against 34 ms (K = 10; BENCHMARKS.md "Within the bars"). A constant: the
# blocks, so the sums, are the same on every machine.
FUSED_BLOCK_BYTES = 1 << 23


def _block_rows(P) -> int:
    """Rows of ``P`` per block of :data:`FUSED_BLOCK_BYTES`."""
    return max(1, FUSED_BLOCK_BYTES // max(P.shape[1] * P.itemsize, 1))


def chunk_forward(P, v32) -> np.ndarray:
    """``P v`` (n, K) in float64 from float32 products, in row blocks of
    :data:`FUSED_BLOCK_BYTES` (one 48 MB product ran at 19 ms, two halves
    at 12 ms: the blocked GEMM re-reads a block it keeps in cache)."""
    step = _block_rows(P)
    if P.shape[0] <= step:
        return (P @ v32).astype(np.float64)
    return np.concatenate([(P[r0:r0 + step] @ v32).astype(np.float64)
                           for r0 in range(0, P.shape[0], step)])


def chunk_backward(P, g) -> np.ndarray:
    """``P^T g`` (D, K) in float64 from float32 products, computed as ``(g^T
    P)^T``: the layout in which BLAS reads ``P`` (row-major, n x D) once in
    order -- half the time of ``P.T @ g`` at 2 048 x 5 920 with K = 10."""
    return (g.astype(P.dtype, copy=False).T @ P).T.astype(np.float64)


def fused_chunk(P, v32, shift, fn, rows):
    """One chunk of a row-separable loss: ``f = P v + shift``, ``(value, g) =
    fn(rows, f)``; returns ``(value, P^T g, sum g)`` in float64, the rows
    taken in blocks of :data:`FUSED_BLOCK_BYTES` (row-separable: the loss of
    a block needs only its own outputs). ``value`` is a float, or an array
    of ``fn.n_sums`` sums (:func:`moment_terms`)."""
    step = _block_rows(P)
    value, back, gsum = fused_zeros(v32, fn)
    for r0 in range(0, P.shape[0], step):
        Pb = P[r0:r0 + step]
        f = chunk_forward(Pb, v32) + shift  # one block: one product
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
    set ``s``, in chunks of :data:`PRIMAL_CHUNK_ROWS` rows. The chunks are
    held when the level's n x D matrix fits the memory budget
    (:func:`primal_cache_bytes`), else regenerated from the seeded
    frequencies at every product, so memory stays O(chunk x D) whatever n is.
    Chunk boundaries do not depend on the thread count and partial sums are
    added in chunk order: the products are bit-identical for any number of
    threads.
    """

    def __init__(self, problem, s, idx, spec, W, second, norm, cache, pool):
        self.problem, self.s, self.idx = problem, s, idx
        self.spec, self.W, self.second, self.norm = spec, W, second, norm
        self.m = problem.sizes()[s] if idx is None else idx.size
        self.pool = pool
        self.starts = list(range(0, self.m, PRIMAL_CHUNK_ROWS)) or [0]
        self.chunks = self._map(self._features) if cache else None

    def _features(self, c: int) -> np.ndarray:
        r0 = self.starts[c]
        r1 = min(self.m, r0 + PRIMAL_CHUNK_ROWS)
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
        parts = self._map(lambda c: chunk_forward(self._chunk(c), v32))
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
            return fused_chunk(P, v32, shift, fn, rows)

        return add_in_order(self._map(part))

    def mean(self) -> np.ndarray:
        """Column means of ``psi`` (D,) in float64 (the balance centre)."""
        total = self._sum(lambda c: self._chunk(c).sum(axis=0, dtype=np.float64))
        return total / max(self.m, 1)


def primal_levels(sizes, seed: int, held_rows: int | None = None) -> list:
    """The growing seeded samples of ``solver="lbfgs"``: a list of levels,
    each a list of per-set sorted row indices (None: all rows of the set).

    Level 0 holds at most :data:`PRIMAL_START_ROWS` rows of each set, every
    next level :data:`PRIMAL_GROWTH` times more, the last one every row. The
    samples are nested (prefixes of one seeded permutation per set), so each
    level refines the previous level's estimate of the same objective.

    The first sampled level of more than ``held_rows`` rows in all (None: no
    bound) is the last sampled one: the next holds every row. Past the held
    bound every evaluation streams its features and costs its row count, so
    the levels between would add a third of the final level's passes
    (``sum 4^-k``) to a start that the first of them already brings within
    the sampling noise. 10^7 synthetic rows, 2 048 streamed landmarks
    (BENCHMARKS.md, "Streamed Nyström"): 8.57 % test error in 2 604 s CPU
    through the 1 M and 4 M levels, 8.67 % in 1 619 s without them.

    A sampled level of more than :data:`PRIMAL_MERGE_FRACTION` of the next
    level's rows is dropped (200 labeled and 4 800 unlabeled rows: level 0
    would hold 4 296 of the 5 000, so the fit has one level, every row).
    """
    perms = [None if n <= PRIMAL_START_ROWS else np.random.Generator(
        np.random.Philox(key=seed + 3 + s)).permutation(n)
        for s, n in enumerate(sizes)]
    levels, m = [], PRIMAL_START_ROWS
    while True:
        level = [None if p is None or m >= n else np.sort(p[:m])
                 for p, n in zip(perms, sizes, strict=True)]
        levels.append(level)
        if all(i is None for i in level):
            break
        if held_rows is not None and level_rows(sizes, level) > held_rows:
            levels.append([None] * len(sizes))
            break
        m *= PRIMAL_GROWTH
    rows = [level_rows(sizes, level) for level in levels]
    return [level for k, level in enumerate(levels)
            if k + 1 == len(levels)
            or rows[k] <= PRIMAL_MERGE_FRACTION * rows[k + 1]]


def level_rows(sizes, level) -> int:
    """Rows of a :func:`primal_levels` level over all sets."""
    return sum(n if i is None else i.size for n, i in zip(sizes, level, strict=True))


def _set_variances(sizes, level) -> list:
    """Per set, ``(n - m) / (n m)``: the variance of the scaled-to-full sample
    sum of :func:`primal_levels`' ``level`` (without replacement, in units of
    the set's per-row variance; 0 for a whole set)."""
    return [0.0 if i is None else (n - i.size) / (n * i.size)
            for n, i in zip(sizes, level, strict=True)]


def level_gtol(gtol: float, g_start: float, sizes, coarse, fine,
               fraction: float) -> float:
    """The gradient tolerance of level ``fine`` warm-started from the solution
    of the nested level ``coarse`` (:func:`primal_levels`).

    ``g_start`` is the max-norm of ``fine``'s gradient at that start. The
    start is (nearly) stationary on ``coarse``, so ``g_start`` measures the
    difference of the two samples' gradients: per set, variance ``s^2 (V_c
    - V_f)`` for nested samples, where ``fine``'s own sampling noise is
    ``s^2 V_f`` (``V`` from :func:`_set_variances`, ``s`` the set's unknown
    per-row spread). Summed over the sets, the noise is at least ``g_start
    sqrt(min_s V_f / (V_c - V_f))`` -- exactly that when one set is sampled
    (MNIST's and ijcnn1's unlabeled rows) -- and the level stops at
    ``fraction`` of it, never below ``gtol``. A set that is sampled on
    ``coarse`` and whole on ``fine`` (ratio 0: its share of ``g_start`` was
    all sampling error, none left), the last level (every row) and
    ``fraction = 0`` keep ``gtol``.
    """
    ratios = [vf / (vc - vf) for vc, vf in zip(_set_variances(sizes, coarse),
                                               _set_variances(sizes, fine),
                                               strict=True) if vc > vf]
    if fraction <= 0 or not ratios or min(ratios) <= 0:
        return gtol
    return max(gtol, fraction * g_start * float(np.sqrt(min(ratios))))


def _fit_primal(problem, spec, n_blocks, max_iter, anneal, tol, seed, monitor):
    from scipy.optimize import minimize

    K, lam, dtype = problem.K, problem.lam, spec.dtype
    sizes = problem.sizes()
    model = FunctionalModel(spec, K, n_blocks)
    with one_blas_thread():
        W, second = spec.blocks(0, n_blocks)
    # psi = features / sqrt(n_blocks): psi psi' approximates the kernel, so
    # ||v||^2 is the RKHS norm of f = psi v in the random-feature space.
    norm = dtype.type(1.0 / np.sqrt(n_blocks))
    D = W.shape[-1]
    # (the rows whose features fit the held bound, as enter() decides it)
    held_rows = HELD_FEATURE_BYTES // (4 * D)
    levels = primal_levels(sizes, seed, held_rows)
    # an annealed part: a term the weight switches on (TSGS3VM's unlabeled
    # loss at C* > 0; with C* = 0 the stages are one convex problem)
    annealed = (anneal > 0 and problem.uses is not None
                and problem.uses(1.0) != problem.uses(0.0))
    if annealed and PRIMAL_ANNEAL_EVERY_ROW and sum(sizes) <= held_rows:
        levels = levels[-1:]  # every row: the annealing runs where it is used
    budget = primal_cache_bytes()
    balance = problem.intercept == "balance"
    # an anchored balance (see Problem) starts from the supervised machine:
    # the first stage (C* = 0) runs with a free bias, the later ones hold
    # mean_B f at the target computed from the outputs they start from.
    anchored = balance and callable(problem.balance_target)
    # centred features psi - mu hold mean_B f = b for every v; mu enters the
    # products (f = psi v - mu.v + b), the features are never shifted
    state = {"center": balance and not anchored,
             "free": problem.intercept == "free" or anchored,
             "mu": np.zeros(D), "b": np.zeros(K)}
    if state["center"]:
        state["b"] = np.asarray(problem.balance_target, dtype=np.float64)
    stages = ANNEAL_STAGES if anneal > 0 else ((0.0, 1.0) if anchored else (1.0,))
    select = problem.select
    if select is not None:
        # the supervised machine is always a candidate
        stages = SELECT_STAGES if anneal > 0 else (0.0, *(w for w in stages if w))
    def large(k):
        """Whether level ``k``'s features exceed the held bound (a constant:
        the same arithmetic on every machine)."""
        return level_rows(sizes, levels[k]) * D * 4 > HELD_FEATURE_BYTES

    # the largest level whose features are held (0 if none is): a held-out
    # choice carries every candidate to it and scores them there
    pick_level = max((k for k in range(len(levels)) if not large(k)), default=0)
    # plan: (level, weight, chain it starts from, chain it writes). The
    # annealing stages on level 0, each from the previous one, then w = 1 on
    # every larger sample; with select, every stage is a chain of its own,
    # warm-started level by level up to pick_level and scored there.
    if select is None:
        plan = [(0, w, 0, 0) for w in stages] + [
            (k, 1.0, 0, 0) for k in range(1, len(levels))]
    else:
        plan = [(0, w, max(j - 1, 0), j) for j, w in enumerate(stages)] + [
            (k, w, j, j) for k in range(1, pick_level + 1)
            for j, w in enumerate(stages)]
    chains, scores = {}, {}
    # the Maclaurin kernel is numba-parallel only: its chunks run in order
    threads = (numba.get_num_threads()
               if spec.is_fourier or isinstance(spec, NystromSpec) else 1)
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    cur = {"level": -1}

    def get(s):
        if cur["sets"][s] is None:
            # rows held elsewhere (Dask workers) bring their own point set
            source, index = problem.sets[s]
            make = getattr(source, "primal_set", None)
            cur["sets"][s] = (
                make(index, cur["idx"][s], cur["spec"], W, second, norm,
                     cur["cache"], pool)
                if make
                else _PrimalSet(problem, s, cur["idx"][s], cur["spec"], W,
                                second, norm, cur["cache"], pool))
        return cur["sets"][s]

    def enter(k):
        """Make level ``k`` current (features cached when they fit)."""
        idx = levels[k]
        rows = level_rows(sizes, idx)
        # a level past the held bound streams k(X, Z) and whitens the
        # coefficients per evaluation; a smaller one streams whitened rows,
        # built once if held (PRIMAL_FOLD_MIN_ROWS: why, and the measured
        # alternative)
        fold = large(k) or (PRIMAL_FOLD_MIN_ROWS is not None
                            and rows >= PRIMAL_FOLD_MIN_ROWS)
        lspec = spec if fold else spec.row_whitened()
        cur.pop("mu", None)
        cur.pop("psi_sums", None)
        cur.update(level=k, idx=idx, sets=[None] * len(sizes), rows=rows,
                   cache=rows * D * dtype.itemsize <= budget, spec=lspec,
                   white=Whitening(lspec))
        recentre()

    def recentre():
        """Centre a constrained chain's features on this level's sample of B."""
        if not state["free"] and (state["center"] or anchored):
            if "mu" not in cur:
                cur["mu"] = cur["white"].lower(get(problem.balance_set).mean())
            state["mu"] = cur["mu"]

    def last_solved(k):
        """Whether level ``k`` is the last one solved to the tolerance: the
        levels after it exceed the held bound and stop at
        PRIMAL_LARGE_LEVEL_MAX_ITER iterations, so nothing after it converges
        and its sampling-noise loosening (level_gtol) would stay in the model.
        10^6 rows of synthetic_hepmass_gap, 1 000 labels, C* 3x paper 004's
        rule (BENCHMARKS.md, "Unlabeled rows that pay"): with its 65 536-row
        level solved only to the noise, 5.79 % test error; solved to the
        tolerance, 5.24 % at the same CPU (170 s; the streamed levels dwarf
        the held one's extra iterations)."""
        return k + 1 < len(levels) and large(k + 1) and not large(k)

    def used_sets(w):
        """Which sets the loss reads at weight ``w`` (None: all)."""
        return (problem.uses(w) if problem.uses is not None
                else [True] * len(sizes))

    def unpack(z):
        v = z[: D * K].reshape(D, K)
        b = z[D * K:] if state["free"] else state["b"]
        return v, b

    def outputs(s, v, b):
        """``f + b`` on set ``s`` of the current level."""
        return (get(s).forward(cur["white"].lift(v).astype(dtype))
                - state["mu"] @ v + b)

    def returned_intercept(v, b):
        """The bias of the machine returned at ``(v, b)``: an anchored
        constraint holds on its own outputs (a no-op for "supervised";
        "clipped" re-balances the final outputs)."""
        intercept = b - state["mu"] @ v
        if anchored:
            fB = outputs(problem.balance_set, v, b)
            intercept = intercept + problem.balance_target(fB) - fB.mean(axis=0)
        return intercept

    def objective_pointwise(z, w):
        """The objective of a row-separable loss, one fused pass per set."""
        v, b = unpack(z)
        used = used_sets(w)
        white = cur["white"]
        v32, shift = white.lift(v).astype(dtype), b - state["mu"] @ v
        value, back, gsum = 0.0, np.zeros((D, K)), np.zeros(K)
        for s, u in enumerate(used):
            if not u:  # an unused set's loss is zero at this weight
                continue
            ps = get(s)
            val, back_s, gs = ps.fused(v32, shift,
                                       RowLoss(problem.pointwise, s, ps.m, w))
            value += val
            back += back_s
            gsum += gs
        # one whitening product per evaluation, on the sum over the sets
        gv = lam * v + white.lower(back) - np.outer(state["mu"], gsum)
        grad = gv.ravel()
        if state["free"]:
            grad = np.concatenate([grad, gsum])
        return value + 0.5 * lam * float(np.sum(v * v)), grad

    def objective_moments(z, w):
        """The objective of a loss of the outputs' moments, one fused pass
        per set: its ``(sum f, sum f^2)``, ``psi^T f`` and ``sum f``; with
        ``(c1, c2)`` from ``problem.moments`` the set's part of ``psi^T g``
        is ``c1 sum psi + 2 c2 psi^T f`` (``sum psi`` once per level)."""
        v, b = unpack(z)
        white = cur["white"]
        v32, shift = white.lift(v).astype(dtype), b - state["mu"] @ v
        ms = [get(s).m for s in range(len(sizes))]  # every set is read
        parts = [get(s).fused(v32, shift, RowLoss(moment_terms, s, ms[s], w, 2))
                 for s in range(len(sizes))]
        value, coefs = problem.moments([p[0] for p in parts], ms, w)
        sums = cur.setdefault("psi_sums", {})
        back, gsum = np.zeros((D, 1)), np.zeros(1)
        for s, ((_, back_f, sum_f), (c1, c2)) in enumerate(
                zip(parts, coefs, strict=True)):
            if c1 != 0.0:
                if s not in sums:
                    sums[s] = get(s).mean()[:, None] * ms[s]
                back += c1 * sums[s]
            back += 2.0 * c2 * back_f
            gsum += c1 * ms[s] + 2.0 * c2 * sum_f
        gv = lam * v + white.lower(back) - np.outer(state["mu"], gsum)
        grad = gv.ravel()
        if state["free"]:
            grad = np.concatenate([grad, gsum])
        return value + 0.5 * lam * float(np.sum(v * v)), grad

    def objective(z, w):
        if problem.pointwise is not None:
            return objective_pointwise(z, w)
        if problem.moments is not None and not cur["cache"]:
            # streamed features: one pass instead of two. Over held ones the
            # fused blocks of K = 1 are no faster than the two products
            # (whole fits at 10^5 rows 0.96-1.46x; BENCHMARKS.md, "one pass
            # over the rows per evaluation"): held levels keep their bits
            return objective_moments(z, w)
        v, b = unpack(z)
        used = used_sets(w)
        idx = cur["idx"]
        # an unused set's outputs are not read: zeros of the right shape
        fs = [outputs(s, v, b) if u else np.zeros(
            (sizes[s] if idx[s] is None else idx[s].size, K))
            for s, u in enumerate(used)]
        value, grads = problem.loss(fs, idx, sizes, w)
        back, gsum = np.zeros((D, K)), np.zeros(K)
        for s, (gr, u) in enumerate(zip(grads, used, strict=True)):
            if u:
                back += get(s).backward(gr)
                gsum += gr.sum(axis=0)
        gv = lam * v + cur["white"].lower(back) - np.outer(state["mu"], gsum)
        grad = gv.ravel()
        if state["free"]:
            grad = np.concatenate([grad, sum(gr.sum(axis=0) for gr in grads)])
        return value + 0.5 * lam * float(np.sum(v * v)), grad

    z = np.zeros(D * K + (K if state["free"] else 0))
    curve, n_iter, gtol, last = [], 0, None, None
    try:
        with one_blas_thread():
            for i, (k, w, src, dst) in enumerate(plan):
                if k != cur["level"]:
                    enter(k)
                if src in chains and src != last:
                    # switch to another candidate's chain (its stored copy is
                    # not touched again: state's arrays are replaced, never
                    # changed in place)
                    z, kept, gtol = chains[src]
                    state.update(kept)
                    recentre()
                if anchored and w > 0:
                    # (re-)anchor the constraint on the current outputs on B:
                    # mean_B f = balance_target(f_B). The first time, switch
                    # from the free bias to centred features: f = (psi - mu) v
                    # + target is the current f shifted by target - mean_B f.
                    v, b = unpack(z)
                    fB = outputs(problem.balance_set, v, b)
                    if state["free"]:
                        state["free"] = False
                        recentre()
                        z = z[: D * K].copy()
                    state["b"] = np.asarray(problem.balance_target(fB),
                                            dtype=np.float64)
                # the objective at the start, computed once: it sets the
                # tolerance and is L-BFGS's first evaluation
                start = objective(z, w)
                level_tol = gtol
                if k == 0:
                    # level 0: each stage's tolerance is relative to its own
                    # starting gradient (as when the problem fits at once)
                    gtol = level_tol = tol * max(np.abs(start[1]).max(), 1e-12)
                else:
                    # larger levels keep the last level-0 tolerance: the loss
                    # is written with each set's full size, so the gradients
                    # are on one scale at every level, and a warm start's own
                    # gradient is already small (relative to it, far more
                    # iterations) -- loosened on the intermediate levels to
                    # their sampling noise
                    level_tol = level_gtol(gtol, np.abs(start[1]).max(), sizes,
                                           levels[k - 1], levels[k],
                                           PRIMAL_LEVEL_NOISE_FRACTION
                                           if not last_solved(k) else 0.0)
                iters = int(max_iter)
                if k > 0 and large(k):
                    iters = min(iters, PRIMAL_LARGE_LEVEL_MAX_ITER)
                mm = problem.majorize is not None and w > 0
                if mm:
                    # a majorised loss re-linearises before every solve: the
                    # start's gradient mixes the level's sampling error with
                    # the majorant's move (the rule was not measured there),
                    # so its levels keep the final tolerance
                    level_tol = gtol
                for step in range(CCCP_MAX_STEPS if mm else 1):
                    if mm:
                        s_mm = problem.outputs_on
                        v, b = unpack(z)
                        moved = problem.majorize(outputs(s_mm, v, b),
                                                 cur["idx"][s_mm])
                        if step > 0 and moved <= CCCP_TOL:
                            break
                    res = minimize(
                        # a re-linearised objective is not the start's
                        objective if mm else _first_known(objective, z, start),
                        z, args=(w,), jac=True, method="L-BFGS-B",
                        options={"maxiter": iters, "gtol": level_tol,
                                 "ftol": 1e-12},
                    )
                    z = res.x
                    n_iter += int(res.nit)
                # (a majorised loss records its last majorant: the objective
                # up to a constant of the linearisation)
                curve.append(float(res.fun))
                v, b = unpack(z)
                check_divergence(v, "C (the problem is too badly scaled)")
                if select is not None:  # a chain is only reloaded by a choice
                    chains[dst] = (z, _copy_state(state), gtol)
                last = dst
                if select is not None and k == pick_level:
                    # a candidate, scored as it would be returned
                    s_held, score = select
                    f_held = (get(s_held).forward(cur["white"].lift(v).astype(dtype))
                              + returned_intercept(v, b))
                    scores[dst] = score(f_held, cur["idx"][s_held])
                    if i + 1 == len(plan):
                        dst = one_se_stage([scores[j] for j in range(len(stages))])
                        z, kept, gtol = chains[dst]
                        state.update(kept)
                        w = stages[dst]
                        v, b = unpack(z)
                _set_primal(model, v, n_blocks, norm, W, second)
                intercept = (returned_intercept(v, b) if i + 1 == len(plan)
                             else b - state["mu"] @ v)
                if monitor is not None:
                    monitor(n_iter, model, intercept)
            # the returned machine on every row of the set the caller reads
            # (the last level holds them all): one forward pass, only if asked
            v, _ = unpack(z)
            fB = (None if problem.outputs_on is None or select is not None else
                  get(problem.outputs_on).forward(
                      cur["white"].lift(v).astype(dtype)) + intercept)
    finally:
        if pool is not None:
            pool.shutdown()
    return Expansion(model, intercept, n_iter, curve, balance_outputs=fB,
                     weight=w if select is not None else 1.0,
                     stage_errors=[(stages[j], float(np.mean(scores[j])))
                                   for j in sorted(scores)] or None,
                     stage_scores=[(stages[j], scores[j])
                                   for j in sorted(scores)] or None)


def _copy_state(state: dict) -> dict:
    """A copy of the L-BFGS loop's constraint state (arrays copied)."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}


def _first_known(fn, z0: np.ndarray, value):
    """``fn`` that returns the already computed ``value`` (of ``fn(z0, ...)``)
    when first called at ``z0`` (the optimiser's first evaluation), then
    calls ``fn``: the start is evaluated once, the model bit for bit the same."""
    pending = [value]

    def call(z, *args):
        if pending and np.array_equal(z, z0):
            val, grad = pending.pop()
            return val, grad.copy()
        pending.clear()
        return fn(z, *args)

    return call


def _set_primal(model: FunctionalModel, v: np.ndarray, n_blocks: int, norm,
                W, second) -> None:
    """Load primal weights ``v`` (D, K) of ``psi = features * norm`` into the
    expansion (whose features are the unscaled ``features``); ``W, second``
    are the ``n_blocks`` blocks the solver already generated."""
    B = model.spec.block_size
    if model.n_blocks == 0:
        # the expansion is exactly these blocks: use them, not a copy (at
        # d = 47 000 and D = 1024 a copy is another 192 MB)
        model._W, model._second = W, second
        model._chat = np.zeros((model.K, n_blocks * B), dtype=model._chat.dtype)
        model.n_blocks = n_blocks
    model.scale = 1.0
    model._chat[:, : n_blocks * B] = (v.T * float(norm)).astype(model._chat.dtype)
