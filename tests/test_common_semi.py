"""scikit-learn's common checks for the catalogue's estimators that take
labeled + unlabeled rows (``y == -1``; the S3VMs and the AUC learners) or
labeled rows only (see ``tests/_checks.py``)."""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from tests._checks import check_instances

ESTIMATORS, EXPECTED = check_instances({"semi", "supervised"})


# The AUC estimators warn when prior=None leaves the class prior to be
# estimated from few labels, as the checks' data does.
@pytest.mark.filterwarnings("ignore:prior=None")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=EXPECTED,
                         xfail_strict=True)
def test_sklearn_compatible(estimator, check):
    check(estimator)
