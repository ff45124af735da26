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

# The papers' estimators, imported explicitly (what a reader and a type checker
# see). Importing a module registers its classes with the model file loader.
from weakkernels import baselines
from weakkernels._artifact import _REGISTRY, ModelFormatError, load
from weakkernels._options import SolverOptions
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
    "SolverOptions",
    "__version__",
    "load",
]


def _import_estimator_modules() -> None:
    """Import every public module of the package and of ``baselines``, the
    ones not named above included: a solver added as a new module
    (``src/weakkernels/<paper>.py``, its class ``register``-ed) is then read by
    ``weakkernels.load`` in a fresh process and exported as ``weakkernels.X``
    (in ``__all__`` if it is a paper module, not a baseline) without a line
    here. Only the package's own files are imported, named by its folders:
    never a module named by a model file, which is untrusted input. Private
    modules (``_dask``, ...) and subpackages (``pipeline``, above the
    estimators) are left out."""
    import importlib
    import pkgutil

    for package in (__name__, baselines.__name__):
        path = importlib.import_module(package).__path__
        for info in pkgutil.iter_modules(path, f"{package}."):
            if not info.ispkg and not info.name.rpartition(".")[2].startswith("_"):
                importlib.import_module(info.name)
    for name, cls in sorted(_REGISTRY.items()):
        if globals().setdefault(name, cls) is not cls:
            raise ImportError(f"weakkernels.{name} is {globals()[name]!r}, not "
                              f"the registered estimator {cls!r}")
        if cls.__module__.count(".") == 1 and name not in __all__:
            __all__.append(name)


_import_estimator_modules()
