"""The parent MLflow run of a benchmark script.

The store of :mod:`weakkernels.pipeline.tracking`, the provenance tags every
pipeline run carries (stage ``benchmark_<script>``), and the command that ran,
so a run in the MLflow UI says how to repeat it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_parent_run(experiment: str, script: str, params, argv, run_name: str):
    """Start (and return) the active parent run of ``script`` (its ``__file__``)
    in ``experiment``; ``params`` are hashed into the provenance tags, ``argv``
    are the script's arguments. The caller ends the run."""
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    name = Path(script).name
    setup_mlflow(experiment, ROOT)
    run = mlflow.start_run(run_name=run_name)
    mlflow.set_tags({**provenance_tags(ROOT, f"benchmark_{Path(script).stem}", params),
                     "command": " ".join(["python", f"benchmarks/{name}", *argv])})
    return run
