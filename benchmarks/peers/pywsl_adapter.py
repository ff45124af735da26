"""Adapter: PNU classification (Sakai et al., ICML 2017) from the PyPI package
``pywsl`` (``pywsl.ssl.pnu_mr.PNU_SL``) behind ``fit(X, y)`` with ``y == -1``
unlabeled.  Runs inside ``benchmarks/.peer-venvs/pywsl``; only the package's
public class is called.

``PNU_SL`` wants labels +1 / -1 / 0 (0 = unlabeled), the class prior, and a
Gaussian basis ``exp(-||x - c||^2 / (2 width^2))`` on ``n_basis`` unlabeled
centers; ``width = 1 / sqrt(2 sigma)`` for our ``exp(-sigma ||x - x'||^2)``.
It draws its centers with NumPy's global generator, which we seed.

What ``lam`` means (checked by ``tests/test_peer_mappings.py``)
--------------------------------------------------------------
``PNU_SL.fit`` solves ``((1 - eta) H_PN + eta H_U + lam I) theta = (1 - eta)
h_PN + eta h_PU`` (``eta >= 0``); this is the minimizer of::

    J(theta) = (1 - eta) R_PN + eta R_PU + lam ||theta||^2,
    R_PN = pi mean_P l(g) + (1 - pi) mean_N l(-g),
    R_PU = pi mean_P [l(g) - l(-g)] + mean_U l(-g),   l(z) = (1 - z)^2,

with ``g = K theta`` on the basis (the gradient ``2 (A + lam I) theta - 2 b``
vanishes at the package's solution). There is **no exact mapping** from the
``C`` of the rows beside it (``1/2 ||f||_H^2 + C sum_L hinge``): the penalty
is the Euclidean norm of the basis coefficients, not the RKHS norm
``theta' K_cc theta``, and the risks are class-prior-weighted *means*. The
analogy ``J / (2 lam) = 1/2 ||theta||^2 + (1 - eta) / (2 lam) R_PN + ...``
with ``R_PN`` about ``1/L`` per labeled point gives ``C ~ (1 - eta) / (2 lam
L)``: the rows' fixed ``lam = 1e-2`` (inside the package's own
``PNU_SL_FastCV`` grid ``logspace(-3, 1)``) with ``eta = 0.5`` and ``L = 200``
is ``C ~ 0.125`` in that reading, far below the ``C = 10`` of the SVC rows --
so this peer's ``lam`` is its own hyper-parameter, left at the value the rows
name (not mapped from ``C``); a fair comparison tunes it over the package's
grid.
"""

from __future__ import annotations

import math

import numpy as np


def pywsl_width(sigma: float) -> float:
    """pywsl's Gaussian width for our RBF ``exp(-sigma ||x - x'||^2)``."""
    return 1.0 / math.sqrt(2.0 * sigma)


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
                             sigma=pywsl_width(self.sigma), lam=self.lam,
                             n_basis=self.n_basis).fit(X, t)
        return self

    def decision_function(self, X):
        return np.ravel(self.model_._ker(np.asarray(X)).dot(self.model_.coef_))

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
