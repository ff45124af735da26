"""Adapter: PNU classification (Sakai et al., ICML 2017) from the PyPI package
``pywsl`` (``pywsl.ssl.pnu_mr.PNU_SL``) behind ``fit(X, y)`` with ``y == -1``
unlabeled.  Runs inside ``benchmarks/.peer-venvs/pywsl``; only the package's
public class is called.

``PNU_SL`` wants labels +1 / -1 / 0 (0 = unlabeled), the class prior, and a
Gaussian basis ``exp(-||x - c||^2 / (2 width^2))`` on ``n_basis`` unlabeled
centers; ``width = 1 / sqrt(2 sigma)`` for our ``exp(-sigma ||x - x'||^2)``.
It draws its centers with NumPy's global generator, which we seed.
"""

from __future__ import annotations

import math

import numpy as np


class PNUAdapter:
    def __init__(self, *, prior, sigma, eta=0.5, lam=1e-2, n_basis=200, seed=0):
        self.prior, self.sigma, self.eta, self.lam = prior, sigma, eta, lam
        self.n_basis, self.seed = n_basis, seed

    def fit(self, X, y):
        from pywsl.ssl.pnu_mr import PNU_SL

        lab = y != -1
        self.classes_ = np.unique(y[lab])
        t = np.zeros(y.size, dtype=int)
        t[lab] = np.where(y[lab] == self.classes_[1], 1, -1)
        np.random.seed(self.seed)
        self.model_ = PNU_SL(prior=self.prior, eta=self.eta,
                             sigma=1.0 / math.sqrt(2.0 * self.sigma), lam=self.lam,
                             n_basis=self.n_basis).fit(X, t)
        return self

    def decision_function(self, X):
        return np.ravel(self.model_._ker(np.asarray(X)).dot(self.model_.coef_))

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
