"""Stage ``report``: PNG plots and a markdown summary of the evaluated runs.

The plots and tables are :mod:`weakkernels.pipeline.reporting`.  DVC outputs
(reproducible: no timings, no run ids): ``plots/error_boxplot.png``,
``plots/val_curves.png`` and ``reports/summary.md``.  From the undeclared
``results/timings/`` it also writes ``plots/timings/`` and
``reports/timings.md`` (gitignored), and logs everything into the MLflow train
run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.reporting import report, timings_report_from
from weakkernels.pipeline.storage import repo_root
from weakkernels.pipeline.tracking import setup_mlflow


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-seed", default="results/evaluate/per_seed.json")
    ap.add_argument("--summary-json", default="results/evaluate/summary.json")
    ap.add_argument("--runs", default="results/train/runs.json")
    ap.add_argument("--predictions", default="results/predictions")
    ap.add_argument("--plots", default="plots")
    ap.add_argument("--summary", default="reports/summary.md")
    ap.add_argument("--timings", default="results/timings",
                    help="evaluate's records with timings and run ids (undeclared)")
    ap.add_argument("--timings-plots", default="plots/timings")
    ap.add_argument("--timings-report", default="reports/timings.md")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    runs = json.loads(Path(args.runs).read_text())["runs"]
    paths = report(json.loads(Path(args.per_seed).read_text()),
                   json.loads(Path(args.summary_json).read_text()), runs,
                   args.predictions, args.plots, args.summary)
    more, parent = timings_report_from(args.timings, runs, args.predictions,
                                       args.timings_plots, args.timings_report)
    if parent:
        import mlflow

        params = load_params(args.params)
        setup_mlflow(params["mlflow"]["experiment"],
                     repo_root(Path(args.params).resolve().parent))
        with mlflow.start_run(run_id=parent):
            for p in [*paths, Path(args.summary), *more]:
                mlflow.log_artifact(str(p), artifact_path="report")
    # one line: the report itself is in the file (evaluate printed the table)
    print(f"report: {args.summary}, " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
