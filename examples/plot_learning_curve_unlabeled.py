"""
A learning curve over unlabeled rows
====================================

The same 20 labels of a g50c-like problem (two 50-dimensional Gaussians, 5 %
Bayes error, Chapelle & Zien 2005), and more and more unlabeled rows. The
test error of :class:`~weakkernels.TSGS3VM` and
:class:`~weakkernels.CCCPTSVM` against the number of unlabeled rows; ``SVC`` on
the labels is the flat line. Three draws of the data per size; C* is paper
004's rule ``C n_l / n_u`` for both (``selection=None``).
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm
from sklearn.svm import SVC

from weakkernels import CCCPTSVM, TSGS3VM


def gaussians(n, d=50, bayes_error=0.05, seed=0):
    rng = np.random.default_rng(seed)
    mu = -norm.ppf(bayes_error) / np.sqrt(d)
    y = rng.integers(0, 2, size=n)
    return rng.normal(size=(n, d)) + np.outer(2 * y - 1, np.full(d, mu)), y


sizes = [0, 50, 200, 800]
errors = {"SVC": [], "TSGS3VM": [], "CCCP-TSVM": []}
for n_u in sizes:
    per_seed = {k: [] for k in errors}
    for seed in range(3):
        X, y = gaussians(20 + n_u + 1000, seed=seed)
        Xt, yt = X[-1000:], y[-1000:]
        X, y = X[:-1000], y[:-1000]
        y_semi = np.full(len(y), -1)
        y_semi[:20] = y[:20]
        per_seed["SVC"].append(1 - SVC(C=10).fit(X[:20], y[:20]).score(Xt, yt))
        if n_u == 0:
            per_seed["TSGS3VM"].append(per_seed["SVC"][-1])
            per_seed["CCCP-TSVM"].append(per_seed["SVC"][-1])
            continue
        per_seed["TSGS3VM"].append(
            1 - TSGS3VM(C=10, selection=None,
                    random_state=seed).fit(X, y_semi).score(Xt, yt))
        per_seed["CCCP-TSVM"].append(1 - CCCPTSVM(C=10).fit(X, y_semi).score(Xt, yt))
    for k in errors:
        errors[k].append(np.mean(per_seed[k]))

# %%
fig, ax = plt.subplots(figsize=(6, 3.8))
for name, errs in errors.items():
    ax.plot(sizes, errs, marker="o", label=name)
ax.set_xlabel("unlabeled rows")
ax.set_ylabel("test error (mean of 3 draws)")
ax.set_xscale("symlog", linthresh=50)
ax.legend()
fig.tight_layout()
plt.show()
