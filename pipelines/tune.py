"""Stage ``tune``: one Optuna study per model x dataset on the tuning split.

The protocol (cross-validation or validation split, pruning, the study's
fingerprint) is :mod:`weakkernels.pipeline.search`.  Writes
``<out>/best_params.json`` and the best validation loss per model x dataset
(``--metrics``; ``results/tune/val_loss.json`` in ``dvc.yaml``); MLflow run ids
go to the undeclared ``results/timings/tune.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from weakkernels.pipeline.common import model_dataset_pairs
from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.registry import check_models
from weakkernels.pipeline.search import tune, val_loss_metrics
from weakkernels.pipeline.storage import atomic_write_json, repo_root
from weakkernels.pipeline.timings import TIMINGS_DIR, strip, volatile
from weakkernels.pipeline.tracking import stage_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prepared", default="data/prepared")
    ap.add_argument("--splits", default="data/splits")
    ap.add_argument("--out", default="results/tune")
    ap.add_argument("--metrics", default="metrics/tune.json")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--timings", default=None,
                    help="undeclared directory for MLflow run ids "
                    "(default: the timings directory beside <out>)")
    ap.add_argument("--n-trials", default=None, help="override tune.n_trials")
    args = ap.parse_args(argv)
    timings = args.timings or Path(args.out).parent / TIMINGS_DIR.name
    params = load_params(args.params)
    if args.n_trials is not None:
        params["tune"]["n_trials"] = int(float(args.n_trials))
    check_models(params["models"]["names"])
    pairs = model_dataset_pairs(params["models"]["names"], params["data"]["datasets"],
                                params["split"]["su"]["datasets"])
    with stage_run(params, args.params, "tune", ("tune", "models", "data")):
        best = tune(pairs, args.prepared, args.splits, params["tune"],
                    params["models"],
                    root=repo_root(Path(args.params).resolve().parent))
    # MLflow run ids are new on every run: the sidecar, not the DVC output.
    atomic_write_json(Path(args.out) / "best_params.json", strip(best))
    atomic_write_json(Path(timings) / "tune.json",
                      {key: volatile(rec) for key, rec in best.items()})
    atomic_write_json(args.metrics, val_loss_metrics(best))
    return 0


if __name__ == "__main__":
    sys.exit(main())
