"""scikit-learn's common checks over the model catalogue.

As scikit-learn's own ``sklearn/tests/test_common.py`` runs
``parametrize_with_checks`` over ``all_estimators()``, ``tests/test_common_*.py``
run it over the entries of ``weakkernels.pipeline.registry.MODELS`` that name
an estimator class (``cls``; the scikit-learn baselines name none): one
instance per ``check_params`` of an entry, with the entry's
``expected_failed_checks`` (check -> reason) as expected failures.
The entries are split into two files by their test-data layout so that
``pytest -n 2 --dist loadfile`` can run them on both workers.
"""

from __future__ import annotations

from weakkernels.pipeline import registry


def check_instances(kinds: set[str]):
    """The instances under the common checks for the catalogue entries whose
    ``data_kind`` is in ``kinds``, and the ``expected_failed_checks`` callable
    for ``parametrize_with_checks`` (it is given back the same instances)."""
    instances, expected = [], {}
    for spec in registry.MODELS.values():
        if spec.cls is None or spec.data_kind not in kinds:
            continue
        for params in spec.check_params:
            est = spec.cls(**params)
            instances.append(est)
            expected[id(est)] = dict(spec.expected_failed_checks)
    return instances, lambda est: expected[id(est)]
