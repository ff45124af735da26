"""The reproducible pipeline's logic; ``pipelines/`` holds one thin script per
``dvc.yaml`` stage that calls it.

Stages (one module each; they never import each other):

* :mod:`~weakkernels.pipeline.datasets` -- ``download`` (and the dataset manifest,
  parsers);
* :mod:`~weakkernels.pipeline.preparation` -- ``prepare``;
* :mod:`~weakkernels.pipeline.splitting` -- ``split``;
* :mod:`~weakkernels.pipeline.search` -- ``tune`` (Optuna studies);
* :mod:`~weakkernels.pipeline.fitting` -- ``train``;
* :mod:`~weakkernels.pipeline.evaluation` -- ``evaluate``;
* :mod:`~weakkernels.pipeline.reporting` -- ``report``;
* :mod:`~weakkernels.pipeline.benchmarking` -- all of them for one model and
  dataset (``pipelines/benchmark.py``).

Below them: :mod:`~weakkernels.pipeline.params_schema` (``params.yaml``: every
default, :func:`~weakkernels.pipeline.params_schema.load_params`),
:mod:`~weakkernels.pipeline.registry` (the compared models, explicit),
:mod:`~weakkernels.pipeline.tuning` (Optuna storage), ``tracking`` (MLflow),
``splits``, ``common``, ``storage`` (atomic writes, hashing), ``timings``.  The
layers are the ``[tool.importlinter]`` contracts of ``pyproject.toml``.

The pipeline extras (pandas, mlflow, optuna, ...) are imported by the modules
that need them: ``import weakkernels`` never pulls them in.
"""
