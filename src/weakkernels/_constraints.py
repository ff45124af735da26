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

# Parameters several estimators take with the same meaning and range, each
# declared once: an estimator names them in its ``_parameter_constraints``
# (tests/test_parameter_constraints.py checks that no two estimators hold two
# copies of one constraint).
RANDOM_STATE = RANDOM_FEATURE_CONSTRAINTS["random_state"]
C = [Interval(Real, 0, None, closed="neither")]  # the labeled term's weight
C_STAR = [Interval(Real, 0, None, closed="left"), None]  # None: C L / U
TOL = [Interval(Real, 0, None, closed="neither")]  # a stopping tolerance
RAMP_S = [Interval(Real, None, 1, closed="neither")]  # ramp loss R_s = H_1 - H_s
LAM = [Interval(Real, 0, None, closed="neither")]  # lam/2 ||f||_H^2
CLASS_PRIOR = [Interval(Real, 0, 1, closed="neither"), None]  # None: estimated
AUC_GAMMA = [Interval(Real, 0, 1, closed="both")]  # S2AUC's PU/NU mixing weight
BATCH_SIZE = [Interval(Integral, 1, None, closed="left")]
BLOCK_SIZE = [Interval(Integral, 1, None, closed="left")]  # features per block
ETA0 = [Interval(Real, 0, None, closed="neither")]  # the first step size
N_CENTERS = [Interval(Integral, 1, None, closed="left"), None]  # kernel centres

# Threads (scikit-learn's n_jobs: None is one, -1 every core, -2 all but one);
# 0 means nothing and is refused.
N_JOBS = [
    None,
    Interval(Integral, None, -1, closed="right"),
    Interval(Integral, 1, None, closed="left"),
]
