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

# Every estimator module is imported here, explicitly: each registers its
# classes with the model file loader on import, so ``weakkernels.load`` reads
# every model file the package writes (the baselines' too) in a fresh process.
from weakkernels._artifact import ModelFormatError, load
from weakkernels._version import __version__
from weakkernels.baselines.auc import PNUAUC as PNUAUC
from weakkernels.baselines.auc import ExactS2AUC as ExactS2AUC
from weakkernels.baselines.auc import SupervisedKernelAUC as SupervisedKernelAUC
from weakkernels.baselines.su import CUU as CUU
from weakkernels.baselines.su import SUSL as SUSL
from weakkernels.cccp_tsvm import CCCPTSVM, RampSVM
from weakkernels.qsg_s2auc import QSGS2AUC
from weakkernels.random_features import RandomFeatures
from weakkernels.tsgs3vm import FRS3VM, TSGS3VM
from weakkernels.tsgsu import TSGSU

# The papers' baselines (``weakkernels.CUU`` etc. still resolve) are documented
# and imported from ``weakkernels.baselines``.
__all__ = [
    "CCCPTSVM",
    "FRS3VM",
    "QSGS2AUC",
    "TSGS3VM",
    "TSGSU",
    "ModelFormatError",
    "RampSVM",
    "RandomFeatures",
    "__version__",
    "load",
]
