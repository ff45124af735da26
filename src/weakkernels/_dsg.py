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

import numpy as np

from weakkernels.random_features import FeatureSpec

# Renormalize when the running scale falls below this: keeps chat far from
# float32 overflow (1/scale grows as prod(1 - gamma)^-1).
_MIN_SCALE = 1e-6


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
        cap = min(self.max_blocks, 16)
        dt = spec.dtype
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
        :func:`weakkernels.random_features.blas_single_thread`)."""
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
        """Drop the feature cache (the model is regenerated from its seed)."""
        self._W = self._W[..., :0]
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
    return meta, {"coef": est.coef_}


def set_expansion_state(est, meta: dict, arrays: dict) -> None:
    """Inverse of :func:`expansion_state`; checks the layout is consistent."""
    from weakkernels._artifact import ModelFormatError

    est.spec_ = FeatureSpec.from_dict(meta["spec"])
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
      stays in [0, 1).
    """
    if schedule == 0:
        return eta0 / n_iter**0.75
    return eta0 / (eta0 + t)


SCHEDULES = {"constant": 0, "decay": 1}
