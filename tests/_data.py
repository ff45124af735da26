"""Small synthetic problems shared by the tests."""

import numpy as np


def two_gaussians(n=300, d=10, n_labeled=20, sep=2.5, seed=0, n_classes=2):
    """g50c-like data: Gaussian classes, ``n_labeled`` labeled, rest ``y == -1``.

    Returns ``(X, y_semi, y_true)``; labels are 0..n_classes-1.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    means = rng.normal(size=(n_classes, d))
    means *= sep / np.linalg.norm(means[0] - means[-1])
    X = rng.normal(size=(n, d)) + means[y]
    y_semi = np.full(n, -1)
    # labeled set holds every class
    per_class = max(1, n_labeled // n_classes)
    lab = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(n_classes)])
    y_semi[lab] = y[lab]
    return X, y_semi, y
