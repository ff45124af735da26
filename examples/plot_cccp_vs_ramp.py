"""
CCCP-TSVM against the ramp-loss SVM
===================================

Both estimators of paper 004 run the concave-convex procedure on the exact
kernel. :class:`~weakkernels.RampSVM` is supervised: the ramp loss caps the
loss of a point far on the wrong side, so such points stop being support
vectors. :class:`~weakkernels.CCCPTSVM` adds the unlabeled rows (``y == -1``)
with the symmetric ramp loss, which pushes the boundary out of dense regions.
On a g50c-like problem (two 50-dimensional Gaussians, 5 % Bayes error) with
10 % of the labels flipped, the test error of each, against the number of
labels.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm
from sklearn.svm import SVC

from weakkernels import CCCPTSVM, RampSVM

rng = np.random.default_rng(0)
d, n = 50, 1500
mu = -norm.ppf(0.05) / np.sqrt(d)
y = rng.integers(0, 2, size=n)
X = rng.normal(size=(n, d)) + np.outer(2 * y - 1, np.full(d, mu))
X_test, y_test, X, y = X[1000:], y[1000:], X[:1000], y[:1000]
noisy = y.copy()
flip = rng.random(n - 500) < 0.1
noisy[flip] = 1 - noisy[flip]

n_labels = [20, 50, 100]
errors = {"SVC": [], "RampSVM": [], "CCCP-TSVM": []}
for n_l in n_labels:
    errors["SVC"].append(1 - SVC(C=10).fit(X[:n_l], noisy[:n_l]).score(X_test, y_test))
    errors["RampSVM"].append(
        1 - RampSVM(C=10).fit(X[:n_l], noisy[:n_l]).score(X_test, y_test))
    y_semi = np.full(len(y), -1)
    y_semi[:n_l] = noisy[:n_l]
    errors["CCCP-TSVM"].append(
        1 - CCCPTSVM(C=10).fit(X, y_semi).score(X_test, y_test))

# %%
fig, ax = plt.subplots(figsize=(6, 3.8))
width = 0.25
for i, (name, errs) in enumerate(errors.items()):
    ax.bar(np.arange(len(n_labels)) + (i - 1) * width, errs, width, label=name)
ax.set_xticks(np.arange(len(n_labels)), [f"{k} labels" for k in n_labels])
ax.set_ylabel("test error")
ax.set_title("10 % of the labels flipped; CCCP-TSVM also sees 1000 unlabeled rows",
             fontsize=9)
ax.legend()
fig.tight_layout()
plt.show()
