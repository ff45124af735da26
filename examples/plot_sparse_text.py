"""
Sparse text: documents as CSR rows
==================================

The SSL-book's "Text" set (Chapelle, Schölkopf & Zien 2006, set 9): 1 500
newsgroup documents as tf-idf rows over 11 960 terms, 0.44 % nonzero, with
its official splits of 100 labeled and 1 400 unlabeled documents. The
estimators take the ``scipy.sparse`` CSR matrix as it is and never densify
it. The data set is read through the project's checksummed registry
(:mod:`weakkernels.pipeline.datasets`) from the mirror beside the clone
(``../shared/data/raw``, or ``$WEAKKERNELS_DATA``). The error is on the
unlabeled documents (transduction), on the first split; C* is paper 004's
rule ``C n_l / n_u`` for both semi-supervised machines.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.svm import SVC

from weakkernels import CCCPTSVM, TSGS3VM
from weakkernels.pipeline.datasets import load_raw

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
mirror = Path(os.environ.get("WEAKKERNELS_DATA", here.parents[1] / "shared/data/raw"))
raw = load_raw("sslbook_text", mirror)
X = sp.csr_matrix(raw.X)
y = (np.asarray(raw.y) > 0).astype(int)
print(f"{X.shape[0]} documents x {X.shape[1]} terms, "
      f"{X.nnz / np.prod(X.shape):.2%} nonzero")

errors = {"SVC": [], "TSGS3VM": [], "CCCP-TSVM": []}
for split in (0,):
    lab = np.asarray(raw.split_labeled[split])
    unl = np.asarray(raw.split_unlabeled[split])
    rows = np.concatenate([lab, unl])
    y_semi = np.r_[y[lab], np.full(unl.size, -1)]
    Xs = X[rows]
    errors["SVC"].append(1 - SVC(C=10).fit(X[lab], y[lab]).score(X[unl], y[unl]))
    errors["TSGS3VM"].append(1 - TSGS3VM(C=10, selection=None,
                                          random_state=0).fit(
        Xs, y_semi).score(X[unl], y[unl]))
    errors["CCCP-TSVM"].append(1 - CCCPTSVM(C=10).fit(Xs, y_semi).score(
        X[unl], y[unl]))

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.6))
names = list(errors)
ax.bar(names, [np.mean(errors[k]) for k in names], color=["0.6", "C0", "C1"])
ax.set_ylabel("error on the unlabeled documents\n(split 0)")
ax.set_title("SSL-book Text: 100 labels, 1 400 unlabeled documents", fontsize=9)
fig.tight_layout()
plt.show()
