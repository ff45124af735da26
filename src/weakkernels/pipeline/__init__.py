"""Shared code of the reproducible pipeline (``dvc.yaml`` stages in ``pipelines/``).

* :mod:`weakkernels.pipeline.storage` -- atomic writes, hashing, ``params.yaml``;
* :mod:`weakkernels.pipeline.datasets` -- dataset registry, download, parsers;
* :mod:`weakkernels.pipeline.splits` -- labeled / unlabeled / SU / test splits;
* :mod:`weakkernels.pipeline.models` -- model registry (factory + search space);
* :mod:`weakkernels.pipeline.tracking` -- MLflow helpers and the pyfunc wrapper.

The pipeline extras (pandas, mlflow, optuna, ...) are imported lazily by the
modules that need them, so ``import weakkernels`` never pulls them in.
"""
