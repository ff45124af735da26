"""MLproject entry point ``main``: ``dvc repro <target>`` under the project run.

``mlflow run . -e main`` opens a run before this script starts; the stages nest
their runs under it (``MLFLOW_RUN_ID``), and when ``dvc repro`` is done this
script records in it what the pipeline produced -- provenance tags, the headline
test metrics, the report -- so the project run is never empty, also when every
stage was up to date.  Run it with ``--experiment-name`` (README, "MLflow"): a
project run without one lands in MLflow's "Default" experiment.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from weakkernels.pipeline.evaluation import headline_metrics
from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.storage import repo_root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="report")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    root = repo_root(Path(args.params).resolve().parent)
    rc = subprocess.run([sys.executable, "-m", "weakkernels.pipeline.dvc_repro",
                         args.target], cwd=root).returncode
    if rc:
        return rc
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    setup_mlflow(params["mlflow"]["experiment"], root)
    # Inside `mlflow run`, start_run() resumes the project run (MLFLOW_RUN_ID).
    with mlflow.start_run(run_name=None if os.environ.get("MLFLOW_RUN_ID")
                          else f"repro {args.target}") as run:
        mlflow.set_tags(provenance_tags(root, "repro", params))
        mlflow.set_tag("dvc.target", args.target)
        head = root / "metrics" / "test.json"
        if head.exists():  # the names the train parent run carries
            mlflow.log_metrics(headline_metrics(json.loads(head.read_text())))
        for name in ("summary.md", "timings.md"):  # timings.md: not a DVC output
            if (root / "reports" / name).exists():
                mlflow.log_artifact(str(root / "reports" / name),
                                    artifact_path="report")
        if run.info.experiment_id == "0":
            print("note: this run is in MLflow's 'Default' experiment; pass "
                  f"--experiment-name {params['mlflow']['experiment']} to mlflow run",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
