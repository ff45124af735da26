"""weakkernels: scalable kernel machines for weak supervision.

Estimators (all scikit-learn compatible; ``y == -1`` marks unlabeled samples):

* :class:`TSGS3VM`, :class:`FRS3VM` -- semi-supervised SVM by triply stochastic
  functional gradients / on fixed random features (Geng et al., IJCAI 2019);
* :class:`TSGSU` -- similar-unlabeled classification (Shi et al., MLJ 2021);
* :class:`QSGS2AUC` -- semi-supervised AUC optimization (Shi et al., IJCAI 2019);
* :class:`CCCPTSVM`, :class:`RampSVM` -- exact-kernel transductive / ramp-loss SVM
  by the concave-convex procedure (Collobert et al., JMLR 2006).

Every estimator saves to and loads from a pickle-free, seed-based model file:
``est.save(path)`` and ``weakkernels.load(path)``.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Lazy attribute access keeps ``import weakkernels`` cheap (numba compiles on
# first use of a module, not at package import) and lets each paper live in its
# own module.
_EXPORTS = {
    "TSGS3VM": "weakkernels.tsgs3vm",
    "FRS3VM": "weakkernels.tsgs3vm",
    "TSGSU": "weakkernels.tsgsu",
    "QSGS2AUC": "weakkernels.qsg_s2auc",
    "CCCPTSVM": "weakkernels.cccp_tsvm",
    "RampSVM": "weakkernels.cccp_tsvm",
    "RandomFeatures": "weakkernels.random_features",
    "load": "weakkernels._artifact",
    "ModelFormatError": "weakkernels._artifact",
}
# The papers' baselines: reachable here so that ``load`` finds the module that
# registers them, but not in ``__all__`` -- import them from
# ``weakkernels.baselines``.
_BASELINES = {
    "SUSL": "weakkernels.baselines.su",
    "CUU": "weakkernels.baselines.su",
    "PNUAUC": "weakkernels.baselines.auc",
    "SupervisedKernelAUC": "weakkernels.baselines.auc",
    "ExactS2AUC": "weakkernels.baselines.auc",
}
_EXPORTS.update(_BASELINES)

__all__ = sorted(set(_EXPORTS) - set(_BASELINES)) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'weakkernels' has no attribute {name!r}")


def __dir__():
    return __all__
