"""
Two moons: the semi-supervised boundary against SVC
===================================================

Six labeled points and 594 unlabeled ones on scikit-learn's two moons.
:class:`~weakkernels.TSGS3VM` (``y == -1`` marks the unlabeled rows) puts its
boundary through the low-density gap between the moons; ``SVC`` on the six
labels alone cannot see the gap.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.svm import SVC

from weakkernels import TSGS3VM

X, y = make_moons(n_samples=600, noise=0.1, random_state=0)
rng = np.random.default_rng(0)
labeled = np.concatenate([rng.choice(np.flatnonzero(y == c), 3, replace=False)
                          for c in (0, 1)])
y_semi = np.full(len(X), -1)
y_semi[labeled] = y[labeled]
unl = y_semi == -1

s3vm = TSGS3VM(C=10, random_state=0).fit(X, y_semi)
svc = SVC(C=10, gamma="scale").fit(X[labeled], y[labeled])

# %%
# The decision functions on a grid, with the accuracy on the unlabeled rows.
xx, yy = np.meshgrid(np.linspace(-1.5, 2.5, 200), np.linspace(-1.0, 1.5, 200))
grid = np.c_[xx.ravel(), yy.ravel()]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
for ax, est, name in zip(axes, (s3vm, svc), ("TSGS3VM", "SVC on the labels"),
                         strict=True):
    f = est.decision_function(grid).reshape(xx.shape)
    ax.contourf(xx, yy, f > 0, alpha=0.25, cmap="coolwarm")
    ax.contour(xx, yy, f, levels=[0], colors="k", linewidths=1)
    ax.scatter(X[unl, 0], X[unl, 1], c="0.6", s=4)
    ax.scatter(X[labeled, 0], X[labeled, 1], c=y[labeled], cmap="coolwarm",
               edgecolors="k", s=60)
    ax.set_title(f"{name}: accuracy {est.score(X[unl], y[unl]):.3f}")
fig.tight_layout()
plt.show()
