"""LabeledKFold: folds of the labeled rows only, with scikit-learn's tools."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from _data import two_gaussians
from weakkernels import TSGS3VM
from weakkernels.model_selection import LabeledKFold
from weakkernels.pipeline.splits import stratified_folds


def _semi(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    y[rng.random(n) < 0.6] = -1  # unlabeled rows among the labeled ones
    return y


def test_test_folds_partition_the_labels_and_train_keeps_every_unlabeled_row():
    y = _semi()
    lab, unl = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
    seen = []
    for train, test in LabeledKFold(4, random_state=1).split(np.zeros((y.size, 2)), y):
        assert np.all(y[test] != -1)
        assert np.isin(unl, train).all()
        assert np.intersect1d(train, test).size == 0
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(y.size))
        # stratified: each class's share of the fold within one row of its share
        for c in range(3):
            expect = np.sum(y[lab] == c) * test.size / lab.size
            assert abs(np.sum(y[test] == c) - expect) <= 1
        seen.append(test)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), lab)


def test_folds_are_stratified_k_fold_of_the_labeled_rows():
    y = _semi(seed=2)
    lab = np.flatnonzero(y != -1)
    ref = StratifiedKFold(3, shuffle=True, random_state=7).split(
        np.zeros((lab.size, 1)), y[lab])
    got = LabeledKFold(3, random_state=7).split(None, y)
    for (_, te_ref), (_, te) in zip(ref, got, strict=True):
        np.testing.assert_array_equal(lab[te_ref], te)
    # and the pipeline's tuning scores on them (one source of the folds)
    for (tr_ref, te_ref), (tr, te) in zip(
            StratifiedKFold(3, shuffle=True, random_state=7).split(
                np.zeros((lab.size, 1)), y[lab]),
            stratified_folds(y[lab], 3, 7), strict=True):
        np.testing.assert_array_equal(tr_ref, tr)
        np.testing.assert_array_equal(te_ref, te)


def test_sparse_x_and_argument_checks():
    y = _semi(seed=3)
    X = sp.random(y.size, 5, density=0.3, format="csr", random_state=0)
    dense = list(LabeledKFold(3, random_state=0).split(X.toarray(), y))
    for (a, b), (c, d) in zip(LabeledKFold(3, random_state=0).split(X, y), dense,
                              strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert LabeledKFold(3).get_n_splits() == 3
    with pytest.raises(ValueError, match="n_splits"):
        LabeledKFold(1)
    with pytest.raises(ValueError, match="rows"):
        next(LabeledKFold(3).split(np.zeros((5, 2)), y))


def test_grid_search_scores_each_candidate_on_the_labels():
    X, y_semi, _ = two_gaussians(n=300, d=5, n_labeled=60, sep=1.5, seed=4)
    est = TSGS3VM(sigma=0.2, C=10.0, max_features=64, random_state=0)
    cv = LabeledKFold(3, random_state=0)
    grid = {"C_star": [0.0, 0.5]}
    search = GridSearchCV(est, grid, cv=cv).fit(X, y_semi)
    # the naive reference: each candidate fitted fold by fold on the training
    # rows (with every unlabeled row) and scored on the held-out labels
    for i, c_star in enumerate(grid["C_star"]):
        ref = []
        for train, test in cv.split(X, y_semi):
            m = clone(est).set_params(C_star=c_star).fit(X[train], y_semi[train])
            ref.append(np.mean(m.predict(X[test]) == y_semi[test]))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(ref))
    # cross_val_score takes the same splitter: the second candidate's folds
    per_fold = [search.cv_results_[f"split{j}_test_score"][1] for j in range(3)]
    np.testing.assert_array_equal(
        cross_val_score(clone(est).set_params(C_star=0.5), X, y_semi, cv=cv),
        per_fold)
