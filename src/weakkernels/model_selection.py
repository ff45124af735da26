"""Cross-validation of semi-supervised estimators with scikit-learn's tools.

Paper 004 (Collobert et al., Sec. 1.5) chooses C* on labeled validation data.
scikit-learn's splitters fold every row, so on a semi-supervised ``y``
(``y == -1`` unlabeled) they drop a fold of the *unlabeled* rows from every
training set and test on folds that are mostly unlabeled (``score`` ignores
them). :class:`LabeledKFold` folds the labeled rows only: every training set
holds every unlabeled row, every test fold only labeled rows, so::

    GridSearchCV(TSGS3VM(), {"C_star": [0.0, 0.01, 0.1]},
                 cv=LabeledKFold(5, random_state=0)).fit(X, y)

scores each C* on all the labels (five fits each), with the estimator's
``score`` (accuracy on the labeled rows).

TSGSU's data (paper 002) have no class labels: similar pairs (``y == 1``, two
consecutive rows each) and unlabeled rows (``y == -1``). :class:`PairedKFold`
folds the pairs whole and the unlabeled rows beside them, and
:func:`su_accuracy` scores a held-out fold from those data alone (one minus
paper 002's Eq. (7) risk with the zero-one loss, an unbiased estimate of the
accuracy), so::

    GridSearchCV(TSGSU(), {"lam": [1e-3, 1e-2], "sigma": [0.1, 1.0]},
                 cv=PairedKFold(5, random_state=0), scoring=su_accuracy).fit(X, y)

chooses hyperparameters without a single class label, on k folds where
``benchmarks/tsgsu_protocol.py`` scores one held-out SU split the same way.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.model_selection._split import BaseCrossValidator
from sklearn.utils.validation import _num_samples

from weakkernels._validation import UNLABELED
from weakkernels.tsgsu import split_su, su_zero_one_risk

__all__ = ["LabeledKFold", "PairedKFold", "su_accuracy"]


def _check_rows(X, y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    if X is not None and _num_samples(X) != y.shape[0]:
        raise ValueError(f"X has {_num_samples(X)} rows, y has {y.shape[0]}.")
    return y


class _SeededKFold(BaseCrossValidator):
    """``n_splits``, ``shuffle`` and ``random_state`` of the splitters below
    (scikit-learn's ``KFold`` parameters)."""

    def __init__(self, n_splits=5, *, shuffle=True, random_state=None):
        if not isinstance(n_splits, numbers.Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}.")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits

    def _iter_test_indices(self, X=None, y=None, groups=None):
        # BaseCrossValidator's abstract hook; split() does not use it
        for _, test in self.split(X, y, groups):
            yield test


class LabeledKFold(_SeededKFold):
    """Stratified K-fold over the labeled rows of a semi-supervised ``y``.

    Fold ``j`` tests on the ``j``-th stratified part of the rows with
    ``y != -1`` and trains on every other row: the other labeled rows and all
    the unlabeled ones. The folds of the labeled rows are those of
    :class:`sklearn.model_selection.StratifiedKFold` with the same
    ``shuffle`` and ``random_state`` on ``y[y != -1]`` (so the pipeline's
    tuning, :func:`weakkernels.pipeline.splits.stratified_folds`, scores on
    the same folds).

    For estimators whose labeled rows stand alone (S3VMs, the AUC
    estimators, CCCP-TSVM). Not for :class:`~weakkernels.TSGSU`: its
    labeled rows come in similar pairs, which a fold would split
    (:class:`PairedKFold` is its splitter).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2; at most the smallest class count.
    shuffle : bool, default=True
        Shuffle each class's labeled rows before folding.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle (``shuffle=True`` only).
    """

    def split(self, X, y, groups=None):
        """Yield ``(train, test)`` row indices; ``X`` is only counted."""
        y = _check_rows(X, y)
        labeled = np.flatnonzero(y != UNLABELED)
        unlabeled = np.flatnonzero(y == UNLABELED)
        folds = StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                                random_state=self.random_state if self.shuffle
                                else None)
        for tr, te in folds.split(np.zeros((labeled.size, 1)), y[labeled]):
            yield np.sort(np.concatenate([labeled[tr], unlabeled])), labeled[te]


class PairedKFold(_SeededKFold):
    """K-fold over similar-unlabeled data (TSGSU's layout), pairs kept whole.

    ``y == 1`` marks similar-pair rows, two consecutive rows per pair, and
    ``y == -1`` unlabeled rows (:func:`weakkernels.tsgsu.split_su` checks the
    layout). Fold ``j`` tests on the ``j``-th part of the pairs (both rows of
    each) and the ``j``-th part of the unlabeled rows, and trains on the
    rest: the two parts of paper 002's Eq. (7) risk are both held out, so
    :func:`su_accuracy` can score the fold. The parts are those of
    :class:`sklearn.model_selection.KFold` with the same ``shuffle`` and
    ``random_state``, over the pairs and over the unlabeled rows. Row
    indices come sorted, so every pair stays two consecutive rows of
    ``X[train]`` and ``X[test]``.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2; at most the number of pairs and of
        unlabeled rows.
    shuffle : bool, default=True
        Shuffle the pairs and the unlabeled rows before folding.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle (``shuffle=True`` only).
    """

    def split(self, X, y, groups=None):
        """Yield ``(train, test)`` row indices; ``X`` is only counted."""
        sim, unl = split_su(_check_rows(X, y))
        first = np.flatnonzero(sim)[::2]  # each pair's first row (even runs)
        unlabeled = np.flatnonzero(unl)
        for part in (first, unlabeled):
            if part.size < self.n_splits:
                raise ValueError(
                    f"n_splits={self.n_splits} needs at least as many pairs and "
                    f"unlabeled rows; got {first.size} pairs and "
                    f"{unlabeled.size} unlabeled rows.")
        folds = KFold(self.n_splits, shuffle=self.shuffle,
                      random_state=self.random_state if self.shuffle else None)
        for (_, p_te), (_, u_te) in zip(folds.split(first), folds.split(unlabeled),
                                        strict=True):
            in_test = np.zeros(sim.size, dtype=bool)
            in_test[first[p_te]] = in_test[first[p_te] + 1] = True
            in_test[unlabeled[u_te]] = True
            yield np.flatnonzero(~in_test), np.flatnonzero(in_test)


def su_accuracy(estimator, X, y) -> float:
    """Accuracy estimated from similar-unlabeled data alone: one minus paper
    002's Eq. (7) risk with the zero-one loss
    (:func:`weakkernels.tsgsu.su_zero_one_risk`, unbiased for the
    misclassification rate, Bao et al. 2018 Theorem 1), at the fitted
    estimator's class prior ``prior_`` and its decision values on the pair
    rows and the unlabeled rows of ``(X, y)`` (TSGSU's layout). A scorer for
    ``GridSearchCV(..., scoring=su_accuracy)`` and ``cross_val_score``; being
    an estimate, it can leave [0, 1] on a small fold."""
    sim, unl = split_su(_check_rows(X, y))
    f = np.asarray(estimator.decision_function(X), dtype=np.float64)
    return 1.0 - su_zero_one_risk(f[sim], f[unl], float(estimator.prior_))
