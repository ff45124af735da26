"""LabeledKFold: folds of the labeled rows only; PairedKFold and su_accuracy:
TSGSU's similar-unlabeled data folded and scored without class labels; with
scikit-learn's tools."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from tests.test_tsgsu import su_problem

from _data import two_gaussians
from weakkernels import TSGS3VM, TSGSU
from weakkernels.model_selection import LabeledKFold, PairedKFold, su_accuracy
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


def _su_layout():
    """Pairs in runs of several lengths between unlabeled rows."""
    runs = [4, -3, 2, -1, 6, -5, 2, 2, -4, 8, -2]
    return np.concatenate([np.full(abs(r), 1 if r > 0 else -1) for r in runs])


def test_paired_folds_keep_pairs_whole_and_partition_pairs_and_unlabeled_rows():
    y = _su_layout()
    n_pairs = int(np.sum(y == 1)) // 2
    first = np.flatnonzero(y == 1)[::2]
    seen = []
    for train, test in PairedKFold(3, random_state=2).split(np.zeros((y.size, 1)), y):
        assert np.intersect1d(train, test).size == 0
        np.testing.assert_array_equal(np.union1d(train, test), np.arange(y.size))
        for part in (train, test):
            assert np.all(np.diff(part) > 0)
            # each pair has both rows on this side, consecutive in the subset
            rows = set(part.tolist())
            assert all((p in rows) == (p + 1 in rows) for p in first)
            sub = y[part]
            runs = np.diff(np.flatnonzero(np.diff(np.r_[0, sub == 1, 0])))[::2]
            assert np.all(runs % 2 == 0)
        held_pairs = np.intersect1d(first, test).size
        assert abs(held_pairs - n_pairs / 3) < 1
        assert abs(np.sum(y[test] == -1) - np.sum(y == -1) / 3) < 1
        seen.append(test)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(y.size))
    # seeded: the same folds again, other ones with another seed
    a = [t for _, t in PairedKFold(3, random_state=2).split(None, y)]
    b = [t for _, t in PairedKFold(3, random_state=5).split(None, y)]
    assert all(np.array_equal(u, v) for u, v in zip(a, seen, strict=True))
    assert not all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))


def test_paired_folds_check_the_layout_and_the_fold_count():
    y = _su_layout()
    assert PairedKFold(4).get_n_splits() == 4
    with pytest.raises(ValueError, match="n_splits"):
        PairedKFold(1)
    with pytest.raises(ValueError, match="malformed pairs"):
        next(PairedKFold(2).split(None, np.r_[1, 1, 1, -1, -1]))
    with pytest.raises(ValueError, match="12 pairs"):
        next(PairedKFold(13).split(None, y))
    with pytest.raises(ValueError, match="rows"):
        next(PairedKFold(2).split(np.zeros((3, 2)), y))


def test_su_accuracy_estimates_the_accuracy_from_su_data_alone():
    """On 20 000 fresh pairs and 20 000 unlabeled rows, one minus the
    zero-one Eq. (7) risk is the accuracy on 20 000 labeled rows to within
    0.02 (standard error of the estimate below 0.006 here)."""
    X, y, _, _ = su_problem(prior=0.7, n_pairs=300, n_u=600, seed=1)
    est = TSGSU(sigma=0.5, prior=0.7, random_state=0).fit(X, y)
    Xs, ys, Xt, yt = su_problem(prior=0.7, n_pairs=20_000, n_u=20_000,
                                n_test=20_000, seed=2)
    acc = np.mean(est.predict(Xt) == yt)
    assert 0.75 < acc < 0.99
    assert su_accuracy(est, Xs, ys) == pytest.approx(acc, abs=0.02)


def test_grid_search_on_su_data_matches_the_naive_loop_and_picks_a_good_width():
    X, y, Xt, yt = su_problem(prior=0.7, n_pairs=200, n_u=400, n_test=4000, seed=3)
    est = TSGSU(prior=0.7, random_state=0)
    cv = PairedKFold(3, random_state=0)
    grid = {"sigma": [2.0, 0.01]}  # 2: too narrow for 2-D classes this close
    search = GridSearchCV(est, grid, cv=cv, scoring=su_accuracy).fit(X, y)
    # the naive reference: Eq. (7) with the zero-one loss written out on
    # each held-out fold (pairs and unlabeled rows)
    prior = 0.7
    p_s = prior**2 + (1 - prior) ** 2
    for i, sigma in enumerate(grid["sigma"]):
        ref = []
        for train, test in cv.split(X, y):
            m = clone(est).set_params(sigma=sigma).fit(X[train], y[train])
            f = m.decision_function(X[test])
            fS, fU = f[y[test] == 1], f[y[test] == -1]
            risk = (p_s * (np.mean(fS <= 0) - np.mean(fS >= 0))
                    - (1 - prior) * np.mean(fU <= 0)
                    + prior * np.mean(fU >= 0)) / (2 * prior - 1)
            ref.append(1.0 - risk)
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(
            np.mean(ref), rel=1e-12)
    # chosen without a class label, the width that classifies better
    assert search.best_params_ == {"sigma": 0.01}
    accs = [np.mean(clone(est).set_params(sigma=s).fit(X, y).predict(Xt) == yt)
            for s in grid["sigma"]]
    assert accs[1] > accs[0] + 0.1
