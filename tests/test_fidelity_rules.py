"""The documented rules behind docs/fidelity.md, checked independently.

The S3VM step schedules, the TSGS3VM/FRS3VM default ``C_star`` and the two
``ceil(sqrt n)`` feature readings are checked in ``tests/test_protocol_labels.py``;
here are the rules of the other estimators:

* the step sequences the SGD loop actually applies -- spied on
  ``FunctionalModel.step`` during a fit, divided by ``lam`` (the loop passes
  ``eta_t lam``) -- against the schedules written out by hand: TSGSU's
  ``eta0 / sqrt(T)`` (paper 002 Theorem 1) and ``eta0 / sqrt(t + 1)``,
  QSG-S2AUC's ``theta / (t + t0)`` (paper 003 Lemma 2), TSGS3VM's three;
* CCCP-TSVM's default ``C* = C L / U`` (paper 004 Sec. 1.6.1.1) on the
  one-vs-rest path, where every binary problem shares L, U and C*;
* the feature counts of the fitted models: paper 002's 1 000 features = 10 per
  iteration x 100 iterations; a ``max_features`` cap; the L-BFGS default.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from weakkernels import _dsg


def _semi(n_l=30, n_u=170, d=4, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_l + n_u, d))
    if n_classes == 2:
        y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    else:
        y = np.digitize(X[:, 0], [-0.5, 0.5])
    y[n_l:] = -1
    y[:n_classes] = np.arange(n_classes)  # every class labeled
    return X, y


def _su(n_pairs=30, n_u=120, d=3, seed=0):
    """SU layout: two consecutive rows per similar pair (y = 1), unlabeled
    rows y = -1."""
    rng = np.random.default_rng(seed)
    c = np.where(rng.random(n_pairs) < 0.7, 1.0, -1.0)
    P = rng.normal(size=(2 * n_pairs, d)) + np.repeat(c, 2)[:, None]
    U = rng.normal(size=(n_u, d)) + np.where(rng.random(n_u) < 0.7, 1.0, -1.0)[:, None]
    X = np.vstack([P, U])
    y = np.r_[np.ones(2 * n_pairs, int), -np.ones(n_u, int)]
    return X, y


@pytest.fixture
def steps(monkeypatch):
    """The ``gamma`` of every ``FunctionalModel.step`` call of a fit."""
    seen: list[float] = []
    orig = _dsg.FunctionalModel.step

    def spy(self, X, G, gamma, t):
        seen.append(float(gamma))
        return orig(self, X, G, gamma, t)

    monkeypatch.setattr(_dsg.FunctionalModel, "step", spy)
    return seen


# ------------------------------------------------------------------ steps
@pytest.mark.parametrize("schedule", ["constant", "invscaling"])
def test_tsgsu_steps_are_the_documented_schedule(steps, schedule):
    from weakkernels import TSGSU

    X, y = _su()
    T, eta0, lam = 9, 2.0, 1e-2
    TSGSU(solver="sgd", prior=0.7, lam=lam, eta0=eta0, learning_rate=schedule,
          max_iter=T, batch_size=8, block_size=4, random_state=0).fit(X, y)
    if schedule == "constant":  # paper 002 Theorem 1: eta0 / sqrt(T)
        hand = [eta0 / 3.0] * T
    else:  # eta0 / sqrt(t + 1), t from 0
        hand = [eta0, eta0 / math.sqrt(2), eta0 / math.sqrt(3), eta0 / 2,
                eta0 / math.sqrt(5), eta0 / math.sqrt(6), eta0 / math.sqrt(7),
                eta0 / math.sqrt(8), eta0 / 3]
    np.testing.assert_allclose(np.array(steps) / lam, hand, rtol=1e-12)


@pytest.mark.parametrize("t0", [0.0, 50.0])
def test_qsg_steps_are_theta_over_t(steps, t0):
    """Paper 003 Lemma 2: eta_t = theta / t, t = 1, 2, ... (offset t0)."""
    from weakkernels import QSGS2AUC

    X, y = _semi(n_l=40, n_u=80, seed=2)
    theta, lam, T = 3.0, 0.1, 6
    QSGS2AUC(solver="sgd", lam=lam, eta0=theta, t0=t0, max_iter=T, min_iter=1,
             prior=0.5, batch_size=8, block_size=4, random_state=0).fit(X, y)
    hand = [theta / (t + t0) for t in range(1, T + 1)]
    np.testing.assert_allclose(np.array(steps) / lam, hand, rtol=1e-12)


@pytest.mark.parametrize("schedule,hand", [
    ("fixed", lambda eta0, t, T: eta0),  # paper 000 Sec. 6: gamma = 1/eta
    ("constant", lambda eta0, t, T: eta0 / T ** 0.75),  # Theorem 1
    ("decay", lambda eta0, t, T: eta0 / (eta0 + t)),
])
def test_tsgs3vm_steps_are_the_documented_schedule(steps, schedule, hand):
    from weakkernels import TSGS3VM

    X, y = _semi()
    T, eta0 = 8, 0.5
    est = TSGS3VM(solver="sgd", learning_rate=schedule, eta0=eta0, max_iter=T,
                  batch_size=16, random_state=0).fit(X, y)
    lam = 1.0  # the S3VM objective's ||f||^2 / 2 has weight 1
    assert est.n_iter_ == T
    np.testing.assert_allclose(np.array(steps) / lam,
                               [hand(eta0, t, T) for t in range(T)], rtol=1e-12)


# ------------------------------------------------------------ CCCP-TSVM C*
@pytest.mark.parametrize("n_classes", [2, 3])
def test_cccp_default_cstar_is_C_L_over_U(n_classes):
    """Paper 004 Sec. 1.6.1.1: U C* = L C, also on the one-vs-rest path."""
    from weakkernels import CCCPTSVM

    X, y = _semi(n_l=24, n_u=96, d=3, seed=1, n_classes=n_classes)
    est = CCCPTSVM(C=2.5, sigma=0.5, max_cccp_iter=3).fit(X, y)
    assert len(est.classes_) == n_classes
    assert est.C_star_ == pytest.approx(2.5 * 24 / 96, rel=1e-12)
    assert CCCPTSVM(C=2.5, C_star=0.7, sigma=0.5, max_cccp_iter=3).fit(
        X, y).C_star_ == 0.7


# ---------------------------------------------------------- feature counts
def test_tsgsu_paper_feature_count():
    """Paper 002: 1 000 random features = 10 per iteration x 100 iterations."""
    from weakkernels import TSGSU

    X, y = _su(n_pairs=20, n_u=60)
    est = TSGSU(solver="sgd", prior=0.7, block_size=10, max_iter=100,
                batch_size=8, random_state=0).fit(X, y)
    assert est.n_features_model_ == 1000
    capped = TSGSU(solver="sgd", prior=0.7, block_size=10, max_iter=100,
                   max_features=50, batch_size=8, random_state=0).fit(X, y)
    assert capped.n_features_model_ == 50


def test_qsg_feature_counts():
    from weakkernels import QSGS2AUC

    X, y = _semi(n_l=40, n_u=80, seed=2)
    est = QSGS2AUC(solver="sgd", block_size=4, max_iter=7, min_iter=1, prior=0.5,
                   batch_size=8, random_state=0).fit(X, y)
    assert est.n_features_model_ == 28
    lb = QSGS2AUC(block_size=8, max_features=64, prior=0.5,
                  random_state=0).fit(X, y)
    assert lb.n_features_model_ == 64
