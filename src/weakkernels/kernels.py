"""Kernel definitions shared by the exact-kernel (CCCP) and random-feature solvers.

Parameterization follows the papers: the Gaussian RBF kernel is
``k(x, x') = exp(-sigma * ||x - x'||^2)`` (paper 000 Sec. 6), i.e. ``sigma`` here is
scikit-learn's ``gamma``. The others:

* ``"laplacian"``: ``exp(-sigma * ||x - x'||_1)``
* ``"poly"``: ``(sigma * <x, x'> + coef0) ** degree``
* ``"linear"``: ``<x, x'>`` (exact-kernel solvers only)

String names become integer codes before they reach a numba kernel.
:func:`resolve_sigma` resolves ``sigma="scale"`` for every estimator, exact or
random-feature.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

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
