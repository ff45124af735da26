"""
Semi-supervised AUC optimization and its ROC curve
==================================================

:class:`~weakkernels.QSGS2AUC` ranks from positive, negative and unlabeled rows
(``y == -1``): it minimises paper 003's PNU AUC risk. Beside it, the
supervised kernel AUC machine on the labeled rows alone
(:class:`~weakkernels.baselines.auc.SupervisedKernelAUC`). The ROC curves are
on held-out rows.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score, roc_curve

from weakkernels import QSGS2AUC
from weakkernels.baselines.auc import SupervisedKernelAUC

X, y = make_classification(n_samples=4000, n_features=10, n_informative=5,
                           class_sep=0.8, flip_y=0.02, random_state=0)
X_train, y_train, X_test, y_test = X[:2000], y[:2000], X[2000:], y[2000:]
y_semi = np.full(len(y_train), -1)
y_semi[:40] = y_train[:40]                      # 40 labels, 1960 unlabeled rows

# ``prior`` only sets predict's threshold (the ranking is prior-free): the
# classes here are balanced
models = {"QSGS2AUC (P, N and U)":
          QSGS2AUC(prior=0.5, random_state=0).fit(X_train, y_semi),
          "SupervisedKernelAUC (P and N)":
          SupervisedKernelAUC(prior=0.5).fit(X_train, y_semi)}

# %%
fig, ax = plt.subplots(figsize=(5, 4.5))
for name, est in models.items():
    score = est.decision_function(X_test)
    fpr, tpr, _ = roc_curve(y_test, score)
    ax.plot(fpr, tpr, label=f"{name}: AUC {roc_auc_score(y_test, score):.3f}")
ax.plot([0, 1], [0, 1], c="0.7", ls="--")
ax.set_xlabel("false positive rate")
ax.set_ylabel("true positive rate")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()
