"""Platt scaling for ``predict_proba``.

Platt (1999), "Probabilistic outputs for support vector machines", with the
target smoothing and the Newton method with backtracking of Lin, Lin & Weng (2007).
It is fitted on the decision values of the labeled training points, the only
points with known labels in the semi-supervised setting.
"""

from __future__ import annotations

import numpy as np


def fit_platt(
    f: np.ndarray, y01: np.ndarray, max_iter: int = 100
) -> tuple[float, float]:
    """Fit ``P(y=1|f) = 1 / (1 + exp(A f + B))``; returns ``(A, B)``."""
    f = np.asarray(f, dtype=np.float64)
    y01 = np.asarray(y01, dtype=np.float64)
    n_pos = y01.sum()
    n_neg = y01.size - n_pos
    # Smoothed targets keep the fit finite when the labeled set is separable.
    t = np.where(y01 > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))

    def objective(a, b):
        z = a * f + b
        # log(1 + exp(z)) - (1 - t) z, written stably for both signs of z
        return float(np.sum(np.logaddexp(0.0, z) - (1.0 - t) * z))

    obj = objective(A, B)
    for _ in range(max_iter):
        z = A * f + B
        p = 1.0 / (1.0 + np.exp(-z))  # = P(y = 0) in Platt's parameterization
        d = (1.0 - t) - p  # negative gradient wrt z
        w = p * (1.0 - p) + 1e-12
        g_a, g_b = -np.dot(f, d), -d.sum()
        h_aa, h_ab, h_bb = np.dot(w, f * f), np.dot(w, f), w.sum()
        det = h_aa * h_bb - h_ab * h_ab
        if abs(g_a) < 1e-9 and abs(g_b) < 1e-9:
            break
        if det <= 1e-15:
            break
        step_a = -(h_bb * g_a - h_ab * g_b) / det
        step_b = -(-h_ab * g_a + h_aa * g_b) / det
        lr = 1.0
        while lr > 1e-10:
            new = objective(A + lr * step_a, B + lr * step_b)
            if new < obj + 1e-4 * lr * (g_a * step_a + g_b * step_b):
                A, B, obj = A + lr * step_a, B + lr * step_b, new
                break
            lr *= 0.5
        else:
            break
    return float(A), float(B)


def platt_proba(f: np.ndarray, A: float, B: float) -> np.ndarray:
    """``P(y = positive | f)`` for the fitted sigmoid."""
    z = A * np.asarray(f, dtype=np.float64) + B
    return np.exp(-np.logaddexp(0.0, z))
