"""Adapter: QN-S3VM (Gieseke et al. 2012/2014) from the PyPI package
``semisupervised`` behind ``fit(X, y)`` with ``y == -1`` unlabeled.

Runs inside ``benchmarks/.peer-venvs/qns3vm`` (the package needs numpy < 2).
Only the package's public ``QN_S3VM`` class is called; nothing is copied.

Parameter mapping to our SVM objective ``1/2 ||f||^2 + C mean_L hinge + C*
mean_U u`` (divided by ``C``): QN-S3VM minimizes ``mean_L l + lamU mean_U
exp(-s f^2) + lam ||f||^2``, so ``lam = 1 / (2 C)``; ``lamU`` (default 1, the
package's own annealing runs lamU through [0, 1e-6, ..., 1] x lamU).  Its RBF
kernel is ``exp(-||x - x'||^2 / (2 width^2))``, so ``width = 1 / sqrt(2 sigma)``
for our ``exp(-sigma ||x - x'||^2)``.  ``numR`` is its subset-of-regressors
("sparse") mode: the expansion uses ``numR`` random basis points.
"""

from __future__ import annotations

import contextlib
import io
import math
import random

import numpy as np


class QNS3VMAdapter:
    def __init__(self, *, C, sigma, lamU=1.0, numR=None, seed=0):
        self.C, self.sigma, self.lamU, self.numR = C, sigma, lamU, numR
        self.seed = seed

    def fit(self, X, y):
        with contextlib.redirect_stdout(io.StringIO()):  # package prints on import
            from semisupervised import QN_S3VM
        lab = y != -1
        self.classes_ = np.unique(y[lab])
        yl = np.where(y[lab] == self.classes_[1], 1, -1)
        self.model_ = QN_S3VM(
            np.asarray(X[lab]), yl, np.asarray(X[~lab]),
            random.Random(self.seed), lam=1.0 / (2.0 * self.C), lamU=self.lamU,
            sigma=1.0 / math.sqrt(2.0 * self.sigma), kernel_type="RBF",
            numR=self.numR)
        self.model_.train()
        return self

    def decision_function(self, X):
        return np.asarray(self.model_.mygetPreds(np.asarray(X).tolist(),
                                                 real_valued=True), dtype=float).ravel()

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
