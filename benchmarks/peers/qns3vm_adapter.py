"""Adapter: QN-S3VM (Gieseke et al. 2012/2014) from the PyPI package
``semisupervised`` behind ``fit(X, y)`` with ``y == -1`` unlabeled.

Runs inside ``benchmarks/.peer-venvs/qns3vm`` (the package needs numpy < 2).
Only the package's public ``QN_S3VM`` class is called; nothing is copied.

Parameter mapping (checked numerically by ``tests/test_peer_mappings.py``)
-------------------------------------------------------------------------
The rows QN-S3VM is compared with (SVC, CCCP-TSVM, TSGS3VM, FRS3VM) put ``C``
on the *sum* of the labeled losses, scikit-learn's convention::

    ours(f) = 1/2 ||f||_H^2 + C sum_{i in L} l(y_i f(x_i)) + C* sum_{j in U} u(f(x_j))

QN-S3VM (``semisupervised/qns3vm.py``, ``QN_S3VM_Dense.__getFitness``, with
``f = K c + b`` on the kernel centred at the unlabeled mean, its balancing
constraint) minimizes *means*::

    peer(f) = 1/L sum_{i in L} l_gamma(y_i f(x_i))
              + lamU/U sum_{j in U} exp(-s f(x_j)^2) + lam ||f||_H^2

with ``l_gamma(t) = log(1 + exp(gamma (1 - t))) / gamma`` (gamma = 20) and
``s = 3``. Dividing ``peer`` by ``2 lam``::

    peer / (2 lam) = 1/2 ||f||^2 + 1/(2 lam L) sum_L l + lamU/(2 lam U) sum_U u

so the two objectives have the same minimizers (up to the loss shapes, which
are each method's own) exactly when::

    C  = 1 / (2 lam L)            ->  lam  = 1 / (2 C L)
    C* = lamU / (2 lam U)         ->  lamU = 2 lam U C* = C* U / (C L)

With paper 004's ``C* = C L / U`` (the rows' ``$cstar_LU``) this gives
``lamU = 1``, the package's default. Before the peers were re-measured with C
on the sum, the adapter used ``lam = 1 / (2 C)`` -- the mapping for ``C`` on the
*mean* labeled loss -- so
QN-S3VM was regularised ``L`` times more strongly than the rows beside it
(g50c-like set, 50 labeled, C = 10: 15.6 % error against 6.0 % with
``lam = 1 / (2 C L)``). The package anneals ``lamU`` through
``[0, 1e-6, 1e-4, 1e-2, 0.1, 0.5, 1] x lamU``; the last stage is the objective
above.

Its RBF kernel is ``exp(-||x - x'||^2 / (2 width^2))``, so
``width = 1 / sqrt(2 sigma)`` for our ``exp(-sigma ||x - x'||^2)``. ``numR``
is its subset-of-regressors ("sparse") mode: the expansion uses ``numR``
random basis points.

``QN_S3VM_Dense.parameters`` is a *class* attribute that every construction
updates in place, so a value passed once stays for later models in the same
process; the adapter therefore passes ``lam``, ``lamU``, ``sigma``,
``kernel_type`` and ``numR`` on every fit.
"""

from __future__ import annotations

import contextlib
import io
import math
import random

import numpy as np


def qns3vm_parameters(C: float, C_star: float | None, n_labeled: int,
                      n_unlabeled: int, sigma: float) -> dict:
    """QN-S3VM's ``lam``, ``lamU`` and RBF ``sigma`` (its width) for our ``C``
    on the sum of the labeled losses, ``C_star`` on the sum of the unlabeled
    ones (None: ``C n_labeled / n_unlabeled``) and RBF ``exp(-sigma d^2)``.
    Derivation in the module docstring."""
    lam = 1.0 / (2.0 * C * n_labeled)
    lamU = 1.0 if C_star is None else 2.0 * lam * n_unlabeled * C_star
    return {"lam": lam, "lamU": lamU, "sigma": 1.0 / math.sqrt(2.0 * sigma)}


class QNS3VMAdapter:
    """``C`` and ``C_star`` on sums (as SVC and CCCP-TSVM); ``C_star=None`` is
    ``C n_l / n_u`` (QN-S3VM's ``lamU = 1``)."""

    def __init__(self, *, C, sigma, C_star=None, numR=None, seed=0):
        self.C, self.sigma, self.C_star, self.numR = C, sigma, C_star, numR
        self.seed = seed

    def fit(self, X, y):
        with contextlib.redirect_stdout(io.StringIO()):  # package prints on import
            from semisupervised import QN_S3VM
        lab = y != -1
        self.classes_ = np.unique(y[lab])
        yl = np.where(y[lab] == self.classes_[1], 1, -1)
        self.params_ = qns3vm_parameters(self.C, self.C_star, int(lab.sum()),
                                         int((~lab).sum()), self.sigma)
        self.model_ = QN_S3VM(
            np.asarray(X[lab]), yl, np.asarray(X[~lab]),
            random.Random(self.seed), kernel_type="RBF", numR=self.numR,
            **self.params_)
        self.model_.train()
        return self

    def decision_function(self, X):
        return np.asarray(self.model_.mygetPreds(np.asarray(X).tolist(),
                                                 real_valued=True), dtype=float).ravel()

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
