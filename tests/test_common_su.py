"""scikit-learn's common checks for the catalogue's similar-unlabeled
estimators: ``fit(X, y)`` with ``y`` in {1 (similar pairs, consecutive rows),
-1 (unlabeled)} (see ``tests/_checks.py``)."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks
from tests._checks import check_instances

ESTIMATORS, EXPECTED = check_instances({"su"})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=EXPECTED,
                         xfail_strict=True)
def test_sklearn_compatible(estimator, check):
    check(estimator)
