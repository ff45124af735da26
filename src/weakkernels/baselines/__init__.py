"""Baselines the papers compare against, each loadable like every model.

* :mod:`weakkernels.baselines.su` -- SUSL, CUU (paper 002, SU classification);
* :mod:`weakkernels.baselines.auc` -- PNUAUC, SupervisedKernelAUC, ExactS2AUC
  (paper 003, semi-supervised AUC).

The paper modules never import from here; the baselines import the risk
functions and shared estimator plumbing of their paper's module.
"""
