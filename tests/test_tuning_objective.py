"""The tune stage's validation loss: error rate with an AUC tie-breaker."""

import numpy as np
from sklearn.metrics import roc_auc_score

from weakkernels.pipeline.registry import objective


def test_tie_breaker_orders_equal_errors_by_auc_and_never_reorders_errors():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(25, int), np.ones(25, int)]
    losses = []
    for _ in range(200):
        s = y + rng.normal(scale=rng.uniform(0.2, 2.0), size=50)
        pred = (s > 0.5).astype(int)
        err = np.mean(pred != y)
        loss = objective("ssl", y, pred, s)
        np.testing.assert_allclose(loss - err,
                                   (1 - roc_auc_score(y, s)) / 100, rtol=1e-12)
        losses.append((err, loss))
    errs, objs = np.array(losses).T
    # sorting by the loss sorts by the error first
    assert np.all(np.diff(errs[np.argsort(objs, kind="stable")]) >= 0)


def test_plain_error_without_usable_scores_and_auc_task_unchanged():
    y = np.array([0, 1, 1, 0])
    pred = np.array([0, 1, 0, 0])
    assert objective("ssl", y, pred, np.array([np.nan] * 4)) == 0.25
    assert objective("ssl", np.ones(4, int), np.ones(4, int), np.arange(4.0)) == 0.0
    s = np.array([0.1, 0.9, 0.4, 0.2])
    assert objective("auc", y, pred, s) == 1 - roc_auc_score(y, s)
