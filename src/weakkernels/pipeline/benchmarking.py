"""Logic of ``pipelines/benchmark.py``: one reproducible benchmark run.

Runs the same stage functions as ``dvc repro`` (download, prepare, split, tune,
train, evaluate) for a single model and dataset in a work directory, all logged
under one MLflow parent run; the script's docstring gives the command line.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from weakkernels.pipeline.datasets import download_section
from weakkernels.pipeline.evaluation import evaluate, log_to_mlflow
from weakkernels.pipeline.fitting import train
from weakkernels.pipeline.preparation import prepare
from weakkernels.pipeline.registry import MODELS, check_models
from weakkernels.pipeline.search import tune
from weakkernels.pipeline.splitting import make_splits
from weakkernels.pipeline.storage import atomic_write_json

__all__ = ["benchmark"]


def benchmark(dataset: str, model: str, n_unlabeled: list[int], seeds: list[int], *,
              params: dict, workdir, n_trials: int, tune_seed: int = 0,
              root=".", log_mlflow: bool = True) -> dict:
    """Run the pipeline for one model/dataset; return the test summary."""
    check_models([model])
    work = Path(workdir)
    raw = Path(root) / "data" / "raw"
    download_section([dataset], raw, params["download"], root)
    prepare([dataset], raw, work / "prepared", **params["prepare"])
    split_cfg = copy.deepcopy(params["split"])
    split_cfg["seeds"] = sorted({tune_seed, *seeds})
    is_su = MODELS[model].task == "su"
    if is_su:
        split_cfg["su"]["datasets"] = [dataset]
        split_cfg["su"]["n_unlabeled"] = n_unlabeled
    else:
        split_cfg["su"]["datasets"] = []
        split_cfg["ssl"]["n_unlabeled"] = n_unlabeled
    make_splits([dataset], work / "prepared", work / "splits", split_cfg)
    pairs = [(model, dataset)]
    if n_trials > 0:
        tune_cfg = {**params["tune"], "n_trials": n_trials, "split_seed": tune_seed}
        best = tune(pairs, work / "prepared", work / "splits", tune_cfg,
                    params["models"], root=root, log_mlflow=log_mlflow)
    else:
        best = json.loads((Path(root) / "results/tune/best_params.json").read_text())
    train_cfg = {**params["train"], "seeds": seeds, "n_unlabeled": None}
    runs = train(pairs, best, work / "prepared", work / "splits", work / "models",
                 work / "predictions", train_cfg, params["models"],
                 log_mlflow=log_mlflow, compute=params["compute"])
    per_seed, summary = evaluate(runs, work / "predictions", work / "prepared")
    if log_mlflow:
        log_to_mlflow(per_seed, summary)
    atomic_write_json(work / "per_seed.json", per_seed)
    atomic_write_json(work / "metrics.json", summary)
    return summary
