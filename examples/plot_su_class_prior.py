"""
Similar-unlabeled learning with an estimated class prior
========================================================

:class:`~weakkernels.TSGSU` learns a binary classifier from pairs of rows known
to share a class (which class is never given) and from unlabeled rows. The
classes are told apart only by their prior: ``prior="auto"`` estimates it from
the pairs and the unlabeled rows
(:func:`~weakkernels.class_prior.estimate_class_prior`), and the class predicted
as 1 is then the majority class. In ``fit(X, y)``, ``y == 1`` marks the rows of
similar pairs (two consecutive rows per pair) and ``y == -1`` the unlabeled
rows.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs

from weakkernels import TSGSU
from weakkernels.class_prior import estimate_class_prior

prior = 0.7                       # the majority class (1) holds 70 % of the rows
rng = np.random.default_rng(0)


def sample(n):
    """Rows of two Gaussian blobs, class 1 with probability ``prior``."""
    c = (rng.random(n) < prior).astype(int)
    X, blob = make_blobs(n_samples=2 * n, centers=[[-2, 0], [2, 0]],
                         cluster_std=0.8, random_state=int(rng.integers(1 << 31)))
    rows = np.concatenate([np.flatnonzero(blob == k)[: (c == k).sum()]
                           for k in (0, 1)])
    return X[rows], np.repeat([0, 1], [(c == 0).sum(), (c == 1).sum()])


# similar pairs: a pair's class is 1 with probability prior^2 / pi_S
pi_s = prior**2 + (1 - prior) ** 2
n_pairs = 500
pair_class = (rng.random(n_pairs) < prior**2 / pi_s).astype(int)
X0, y0 = sample(4000)
pools = {k: list(np.flatnonzero(y0 == k)) for k in (0, 1)}
pair_rows = np.array([[pools[k].pop(), pools[k].pop()] for k in pair_class]).ravel()
XS = X0[pair_rows]
XU, yU = sample(1500)
X = np.vstack([XS, XU])
y = np.r_[np.ones(len(XS), dtype=int), -np.ones(len(XU), dtype=int)]

clf = TSGSU(prior="auto", random_state=0).fit(X, y)
est = estimate_class_prior(XS, XU, sigma=clf.sigma_, random_state=0)
Xt, yt = sample(2000)
print(f"true prior {prior}; estimated {est['prior']:.3f}; "
      f"TSGSU's prior_ {clf.prior_:.3f}; test accuracy {clf.score(Xt, yt):.3f}")

# %%
xx, yy = np.meshgrid(np.linspace(-5, 5, 200), np.linspace(-4, 4, 160))
f = clf.decision_function(np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
fig, ax = plt.subplots(figsize=(6, 4))
ax.contourf(xx, yy, f > 0, alpha=0.2, cmap="coolwarm")
ax.contour(xx, yy, f, levels=[0], colors="k", linewidths=1)
ax.scatter(XU[:, 0], XU[:, 1], c="0.6", s=3, label="unlabeled")
for a, b in XS[:80].reshape(-1, 2, 2):
    ax.plot([a[0], b[0]], [a[1], b[1]], c="tab:green", lw=0.8)
ax.plot([], [], c="tab:green", label="similar pairs (80 of 500)")
ax.set_title(f"TSGSU, prior estimated: {clf.prior_:.2f} (true {prior})")
ax.legend(loc="lower left")
fig.tight_layout()
plt.show()
