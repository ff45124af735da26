"""Kernel definitions shared by the exact-kernel (CCCP) and random-feature solvers.

Parameterization follows the papers: the Gaussian RBF kernel is
``k(x, x') = exp(-sigma * ||x - x'||^2)`` (paper 000 Sec. 6), i.e. ``sigma`` here is
scikit-learn's ``gamma``. The others:

* ``"laplacian"``: ``exp(-sigma * ||x - x'||_1)``
* ``"poly"``: ``(sigma * <x, x'> + coef0) ** degree``
* ``"linear"``: ``<x, x'>`` (exact-kernel solvers only)

String names become integer codes before they reach a numba kernel.
"""

from __future__ import annotations

import numpy as np

KERNEL_CODES = {"rbf": 0, "laplacian": 1, "poly": 2, "linear": 3}
RANDOM_FEATURE_KERNELS = ("rbf", "laplacian", "poly")


def kernel_matrix(
    X: np.ndarray,
    Y: np.ndarray,
    kernel: str = "rbf",
    sigma: float = 1.0,
    degree: int = 2,
    coef0: float = 1.0,
) -> np.ndarray:
    """Exact kernel matrix ``K[i, j] = k(X[i], Y[j])`` in NumPy (the reference)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if kernel == "rbf":
        sq = (
            np.sum(X * X, axis=1)[:, None]
            + np.sum(Y * Y, axis=1)[None, :]
            - 2.0 * X @ Y.T
        )
        return np.exp(-sigma * np.maximum(sq, 0.0))
    if kernel == "laplacian":
        return np.exp(-sigma * np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=2))
    if kernel == "poly":
        return (sigma * (X @ Y.T) + coef0) ** degree
    if kernel == "linear":
        return X @ Y.T
    raise ValueError(f"unknown kernel {kernel!r}; expected one of {list(KERNEL_CODES)}")
