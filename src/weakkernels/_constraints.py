"""Parameter constraints shared by the estimators, declared once.

scikit-learn validates ``_parameter_constraints`` (``sklearn.utils.
_param_validation``) by parameter name, so an estimator composes these dicts
into its own (``{**KERNEL_CONSTRAINTS, ...}``) and its messages still name the
parameter. A constraint that differs for one estimator is overridden there,
after the merge, with a comment saying why.

The parameters of the doubly stochastic training loop (``solver``, ``tol``,
``batch_size``, ...) are declared beside that loop, in
:data:`weakkernels._dsg.DSG_CONSTRAINTS`.
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels.kernels import KERNEL_CODES, RANDOM_FEATURE_KERNELS

# Kernel width: exp(-sigma ||x - x'||^2) for RBF (scikit-learn's gamma).
SIGMA = [Interval(Real, 0, None, closed="neither")]
# ... or "scale", 1 / (d Var X) over the training rows (weakkernels._dsg.
# resolve_sigma), for the estimators that resolve it at fit time.
SIGMA_OR_SCALE = [*SIGMA, StrOptions({"scale"})]

# Exact kernels (weakkernels.kernels.kernel_matrix): every kernel code.
KERNEL_CONSTRAINTS = {
    "kernel": [StrOptions(set(KERNEL_CODES))],
    "sigma": SIGMA,
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, 0, None, closed="left")],
}

# Kernels with random features (weakkernels.random_features.FeatureSpec).
RANDOM_FEATURE_KERNEL_CONSTRAINTS = {
    **KERNEL_CONSTRAINTS,
    "kernel": [StrOptions(set(RANDOM_FEATURE_KERNELS))],
}

# Seeds and feature dtype of every seeded random-feature model.
RANDOM_FEATURE_CONSTRAINTS = {
    **RANDOM_FEATURE_KERNEL_CONSTRAINTS,
    "dtype": [StrOptions({"float32", "float64"})],
    "random_state": ["random_state"],
}

# Threads (scikit-learn's n_jobs: None is one, -1 every core, -2 all but one);
# 0 means nothing and is refused.
N_JOBS = [
    None,
    Interval(Integral, None, -1, closed="right"),
    Interval(Integral, 1, None, closed="left"),
]
