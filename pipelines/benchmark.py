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
import json
import sys
from pathlib import Path

import mlflow

from weakkernels.pipeline.benchmarking import benchmark
from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.storage import repo_root
from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in str(text).replace(" ", "").split(",") if x]


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
