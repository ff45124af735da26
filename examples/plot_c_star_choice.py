"""
Choosing C*: cross-validation on the labels
===========================================

``C_star`` weighs the unlabeled losses. Paper 004's rule is
``C* = C n_l / n_u``; :class:`~weakkernels.model_selection.LabeledKFold` folds
only the labeled rows and keeps every unlabeled row in every training set, so
scikit-learn's ``GridSearchCV`` can score multiples of the rule on held-out
labels. The default (``selection="auto"``) makes the same kind of
choice itself; its pick is the fitted ``C_star_``.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import GridSearchCV

from weakkernels import TSGS3VM
from weakkernels.model_selection import LabeledKFold

X, y = make_moons(n_samples=500, noise=0.15, random_state=1)
rng = np.random.default_rng(1)
labeled = rng.choice(len(X), 30, replace=False)
y_semi = np.full(len(X), -1)
y_semi[labeled] = y[labeled]
unl = y_semi == -1

C = 10.0
rule = C * labeled.size / unl.sum()
multiples = [0.0, 0.1, 1.0, 3.0, 10.0]
search = GridSearchCV(
    TSGS3VM(C=C, selection=None, random_state=0),
    {"C_star": [m * rule for m in multiples]},
    cv=LabeledKFold(5, random_state=0)).fit(X, y_semi)
cv_error = 1 - search.cv_results_["mean_test_score"]
test_error = [1 - TSGS3VM(C=C, C_star=m * rule, selection=None,
                          random_state=0).fit(X, y_semi).score(X[unl], y[unl])
              for m in multiples]
default = TSGS3VM(C=C, random_state=0).fit(X, y_semi)
print(f"rule C* = {rule:.4f}; GridSearchCV picks {search.best_params_['C_star']:.4f};"
      f" the default's C_star_ = {default.C_star_:.4f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.8))
pos = np.arange(len(multiples))
ax.plot(pos, cv_error, marker="o", label="5-fold CV error on the labels")
ax.plot(pos, test_error, marker="s", label="error on the unlabeled rows")
ax.set_xticks(pos, [f"{m:g}x" for m in multiples])
ax.set_xlabel("C* as a multiple of the rule C n_l / n_u")
ax.set_ylabel("error")
ax.legend()
fig.tight_layout()
plt.show()
