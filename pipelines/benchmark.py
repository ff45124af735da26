"""One reproducible benchmark run: dataset x model x unlabeled sizes x seeds.

Runs the same stage functions as ``dvc repro`` (download, prepare, split, tune,
train, evaluate) for a single model and dataset in a work directory, all logged
under one MLflow parent run (the project run under ``mlflow run . -e
benchmark``).  Hyper-parameters come from a fresh Optuna study of ``--n-trials``
trials on split ``--tune-seed`` (validation protocol of the tune stage); with
``--n-trials 0`` the pipeline's ``results/tune/best_params.json`` is used.

Example::

    python pipelines/benchmark.py --dataset cod-rna --model cccp_tsvm \\
        --n-unlabeled 1000,4000 --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

from download import download
from evaluate import evaluate, log_to_mlflow
from prepare import prepare
from split import make_splits
from train import train
from tune import tune
from weakkernels.pipeline.models import MODELS, check_models
from weakkernels.pipeline.storage import atomic_write_json, load_params, repo_root


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in str(text).replace(" ", "").split(",") if x]


def benchmark(dataset: str, model: str, n_unlabeled: list[int], seeds: list[int], *,
              params: dict, workdir, n_trials: int, tune_seed: int = 0,
              root=".", log_mlflow: bool = True) -> dict:
    """Run the pipeline for one model/dataset; return the test summary."""
    check_models([model])
    work = Path(workdir)
    raw = Path(root) / "data" / "raw"
    mirror = params["download"]["mirror"]
    if mirror and not Path(mirror).is_absolute():
        from weakkernels.pipeline.tracking import main_repo_root

        mirror = main_repo_root(root) / mirror
    dl = params["download"]
    download([dataset], raw, mirror=mirror, retries=int(dl["retries"]),
             timeout=float(dl["timeout"]), use_network=bool(dl["use_network"]),
             allow_unverified=bool(dl["allow_unverified"]), progress=False)
    prepare([dataset], raw, work / "prepared",
            scale=params["prepare"]["scale"])
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
                 log_mlflow=log_mlflow)
    per_seed, summary = evaluate(runs, work / "predictions", work / "prepared")
    if log_mlflow:
        log_to_mlflow(per_seed, summary)
    atomic_write_json(work / "per_seed.json", per_seed)
    atomic_write_json(work / "metrics.json", summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="g50c")
    ap.add_argument("--model", default="svc")
    ap.add_argument("--n-unlabeled", default="500",
                    help="comma-separated unlabeled sizes (official splits: 500)")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--n-trials", default="4")
    ap.add_argument("--tune-seed", default="0")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--experiment", default=None)
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    root = repo_root(Path(args.params).resolve().parent)
    workdir = args.workdir or root / "results" / "benchmark" / \
        f"{args.model}__{args.dataset}"
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    setup_mlflow(args.experiment or params["mlflow"]["experiment"] + "-benchmark",
                 root)
    cli = {"dataset": args.dataset, "model": args.model,
           "n_unlabeled": args.n_unlabeled, "seeds": args.seeds,
           "n_trials": args.n_trials, "tune_seed": args.tune_seed}
    with mlflow.start_run(run_name=f"benchmark {args.model} / {args.dataset}"):
        mlflow.set_tags(provenance_tags(root, "benchmark", {**params, **cli}))
        mlflow.log_params({f"benchmark.{k}": v for k, v in cli.items()})
        summary = benchmark(
            args.dataset, args.model, _ints(args.n_unlabeled), _ints(args.seeds),
            params=params, workdir=workdir, n_trials=_ints(args.n_trials)[0],
            tune_seed=_ints(args.tune_seed)[0], root=root,
        )
        for nu, e in summary[args.model][args.dataset].items():
            mlflow.log_metrics({f"{k}.{nu}": v for k, v in e.items()
                                if k.startswith("test_")})
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
