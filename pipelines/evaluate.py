"""Stage ``evaluate``: test error / accuracy / AUC per model x dataset x seed.

The metrics, the reload check and the degenerate flags are
:mod:`weakkernels.pipeline.evaluation`.  Writes ``<out>/per_seed.json``,
``<out>/summary.json`` and the headline ``--metrics`` (DVC outputs, no
timings); the same records with timings and MLflow run ids go to the
undeclared ``results/timings/``, and the test metrics into the train runs; each
dataset's champion goes to the model registry (``weakkernels-<dataset>``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from weakkernels.pipeline.evaluation import (
    champions,
    check_reloads,
    evaluate,
    headline,
    log_to_mlflow,
    register_champions,
    summary_lines,
)
from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.storage import atomic_write_json, repo_root
from weakkernels.pipeline.timings import TIMINGS_DIR, merge_runs, strip
from weakkernels.pipeline.tracking import (
    kill_dead_runs,
    setup_mlflow,
    tracking_uri,
    ui_path,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="results/train/runs.json")
    ap.add_argument("--predictions", default="results/predictions")
    ap.add_argument("--prepared", default="data/prepared")
    ap.add_argument("--out", default="results/evaluate")
    ap.add_argument("--metrics", default="metrics/test.json")
    ap.add_argument("--timings", default=None,
                    help="undeclared directory of timings and run ids "
                    "(default: the timings directory beside <out>)")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    timings = Path(args.timings or Path(args.out).parent / TIMINGS_DIR.name)
    params = load_params(args.params)
    runs = json.loads(Path(args.runs).read_text())["runs"]
    side_path = timings / "train.json"
    side = json.loads(side_path.read_text()) if side_path.exists() else {}
    runs = merge_runs(runs, side)
    per_seed, summary = evaluate(
        runs, args.predictions, args.prepared,
        check_reload=bool(params["evaluate"]["check_reload"]))
    check_reloads(per_seed)
    atomic_write_json(Path(args.out) / "per_seed.json", strip(per_seed))
    atomic_write_json(Path(args.out) / "summary.json", strip(summary))
    atomic_write_json(timings / "per_seed.json", per_seed)
    atomic_write_json(timings / "summary.json", summary)
    atomic_write_json(args.metrics, headline(summary, per_seed))
    if any(r.get("run_id") for r in per_seed):
        root = repo_root(Path(args.params).resolve().parent)
        exp_id = setup_mlflow(params["mlflow"]["experiment"], root)
        kill_dead_runs()  # runs a killed train left RUNNING
        log_to_mlflow(per_seed, summary, side.get("parent_run_id"))
        for ds, reg in register_champions(champions(runs, per_seed), runs,
                                          args.predictions, args.prepared).items():
            print(f"{ds}: models:/{reg['name']} version {reg['version']} is "
                  f"{reg['alias'] or 'the champion (unchanged)'}")
        uri = tracking_uri(root)
        if uri.startswith(("http://", "https://")):
            print(f"compare the runs: open {uri.rstrip('/')}{ui_path(exp_id)}")
        else:
            print(f"compare the runs: mlflow ui --host 127.0.0.1 --port 5000 "
                  f"--backend-store-uri {uri}, then open "
                  f"http://127.0.0.1:5000{ui_path(exp_id)}")
    print("\n".join(summary_lines(summary)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
