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
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection._split import BaseCrossValidator
from sklearn.utils.validation import _num_samples

from weakkernels._validation import UNLABELED

__all__ = ["LabeledKFold"]


class LabeledKFold(BaseCrossValidator):
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
    labeled rows come in similar pairs, which a fold would split.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2; at most the smallest class count.
    shuffle : bool, default=True
        Shuffle each class's labeled rows before folding.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle (``shuffle=True`` only).
    """

    def __init__(self, n_splits=5, *, shuffle=True, random_state=None):
        if not isinstance(n_splits, numbers.Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits!r}.")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.n_splits

    def split(self, X, y, groups=None):
        """Yield ``(train, test)`` row indices; ``X`` is only counted."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        if X is not None and _num_samples(X) != y.shape[0]:
            raise ValueError(f"X has {_num_samples(X)} rows, y has {y.shape[0]}.")
        labeled = np.flatnonzero(y != UNLABELED)
        unlabeled = np.flatnonzero(y == UNLABELED)
        folds = StratifiedKFold(self.n_splits, shuffle=self.shuffle,
                                random_state=self.random_state if self.shuffle
                                else None)
        for tr, te in folds.split(np.zeros((labeled.size, 1)), y[labeled]):
            yield np.sort(np.concatenate([labeled[tr], unlabeled])), labeled[te]

    def _iter_test_indices(self, X=None, y=None, groups=None):
        # BaseCrossValidator's abstract hook; split() above does not use it
        for _, test in self.split(X, y, groups):
            yield test
