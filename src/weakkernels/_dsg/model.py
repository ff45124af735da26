"""The random-feature expansion a solver trains and a fitted estimator holds.

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

import time

import numpy as np

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
# and the new copy at once.
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
        whole cache alive while the estimator went on to predict its training
        points."""
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


def seeded_sample(n: int, m: int, seed: int, stream: int = 1) -> np.ndarray:
    """Sorted indices of a seeded uniform sample of ``min(n, m)`` of ``n`` rows
    (calibration, thresholds and balancing use the same rows at every call)."""
    rng = np.random.Generator(np.random.Philox(key=seed + stream))
    return np.sort(rng.choice(n, size=min(n, m), replace=False))
