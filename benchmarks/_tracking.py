"""The parent MLflow run of a benchmark script.

The store of :mod:`weakkernels.pipeline.tracking`, the provenance tags every
pipeline run carries (stage ``benchmark_<script>``), and the command that ran,
so a run in the MLflow UI says how to repeat it.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def parent_run(experiment: str, script: str, params, argv, run_name: str, *,
               enabled: bool = True, artifacts=()):
    """The parent run of ``script`` (its ``__file__``) in ``experiment``, active
    inside the ``with`` block; ``params`` are hashed into the provenance tags,
    ``argv`` are the script's arguments. Yields the run (None when not
    ``enabled``: ``--no-mlflow``). On exit, an error included (a killed
    benchmark's partial result files still reach the UI), logs the files of
    ``artifacts`` that exist and ends the run: FINISHED, or FAILED when the
    block raised (Ctrl-C included)."""
    if not enabled:
        yield None
        return
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    name = Path(script).name
    setup_mlflow(experiment, ROOT)
    run = mlflow.start_run(run_name=run_name)
    status = "FINISHED"
    try:
        mlflow.set_tags({
            **provenance_tags(ROOT, f"benchmark_{Path(script).stem}", params),
            "command": " ".join(["python", f"benchmarks/{name}", *argv])})
        yield run
    except BaseException:
        status = "FAILED"
        raise
    finally:
        for f in artifacts:
            if Path(f).exists():
                mlflow.log_artifact(str(f))
        mlflow.end_run(status)
