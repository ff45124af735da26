"""Small synthetic problems shared by the tests."""

import numpy as np


def two_gaussians(n=300, d=10, n_labeled=20, sep=2.5, seed=0, n_classes=2):
    """g50c-like data: Gaussian classes, ``n_labeled`` labeled, rest ``y == -1``.

    Returns ``(X, y_semi, y_true)``; labels are 0..n_classes-1.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    means = rng.normal(size=(n_classes, d))
    means *= sep / np.linalg.norm(means[0] - means[-1])
    X = rng.normal(size=(n, d)) + means[y]
    y_semi = np.full(n, -1)
    # labeled set holds every class
    per_class = max(1, n_labeled // n_classes)
    lab = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(n_classes)])
    y_semi[lab] = y[lab]
    return X, y_semi, y


# scikit-learn common checks that fit a classifier on fully labeled y (or on
# data whose y has no -1): every semi-supervised estimator here refuses that
# with "No unlabeled samples", so each test file lists them as expected failures.
FITS_FULLY_LABELED_CHECKS = (
    "check_fit_score_takes_y",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_estimators_dtypes",
    "check_dtype_object",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_classifier_data_not_an_array",
    "check_classifiers_train",
    "check_supervised_y_2d",
    "check_non_transformer_estimators_n_iter",
    "check_decision_proba_consistency",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_fit2d_1feature",
    "check_dict_unchanged",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit2d_predict1d",
)
