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

# Every public module of the package, imported explicitly (what a reader and a
# type checker see). Importing a module registers its classes with the model
# file loader; tests/test_catalogue.py checks that no public module and no
# registered class is missing here.
from weakkernels import baselines as baselines
from weakkernels import cccp_tsvm as cccp_tsvm
from weakkernels import class_prior as class_prior
from weakkernels import kernels as kernels
from weakkernels import model_selection as model_selection
from weakkernels import qsg_s2auc as qsg_s2auc
from weakkernels import random_features as random_features
from weakkernels import tsgs3vm as tsgs3vm
from weakkernels import tsgsu as tsgsu
from weakkernels._artifact import ModelFormatError, load
from weakkernels._options import SolverOptions
from weakkernels._version import __version__

# The papers' baselines resolve as ``weakkernels.CUU`` etc.; they are
# documented and imported from ``weakkernels.baselines``.
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

__all__ = [
    "CCCPTSVM",
    "FRS3VM",
    "QSGS2AUC",
    "TSGS3VM",
    "TSGSU",
    "ModelFormatError",
    "RampSVM",
    "RandomFeatures",
    "SolverOptions",
    "__version__",
    "load",
]
