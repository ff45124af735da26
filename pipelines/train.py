"""Stage ``train``: the tuned parameters x ``train.seeds`` x unlabeled sizes.

Fitting, timing and logging are :mod:`weakkernels.pipeline.fitting`.  Writes the
model files (``--models-dir``), the test scores (``--predictions``) and
``--out`` (what a rerun reproduces); timings and MLflow run ids go to the
undeclared ``results/timings/train.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from weakkernels.pipeline.common import model_dataset_pairs
from weakkernels.pipeline.fitting import train
from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.registry import check_models
from weakkernels.pipeline.storage import atomic_write_json
from weakkernels.pipeline.timings import TIMINGS_DIR, strip, volatile
from weakkernels.pipeline.tracking import stage_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prepared", default="data/prepared")
    ap.add_argument("--splits", default="data/splits")
    ap.add_argument("--best", default="results/tune/best_params.json")
    ap.add_argument("--models-dir", default="models")
    ap.add_argument("--predictions", default="results/predictions")
    ap.add_argument("--out", default="results/train/runs.json")
    ap.add_argument("--timings", default=None,
                    help="undeclared directory for timings and run ids "
                    "(default: the timings directory beside <out>)")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--seeds", default=None, help="override train.seeds (1,2,3)")
    args = ap.parse_args(argv)
    timings = args.timings or Path(args.out).parent.parent / TIMINGS_DIR.name
    params = load_params(args.params)
    if args.seeds is not None:
        params["train"]["seeds"] = [int(s) for s in args.seeds.split(",") if s]
    check_models(params["models"]["names"])
    pairs = model_dataset_pairs(params["models"]["names"], params["data"]["datasets"],
                                params["split"]["su"]["datasets"])
    best = json.loads(Path(args.best).read_text())
    with stage_run(params, args.params, "train", ("train", "models", "data")) as run:
        records = train(pairs, best, args.prepared, args.splits, args.models_dir,
                        args.predictions, params["train"], params["models"],
                        compute=params["compute"])
    atomic_write_json(args.out, {"runs": strip(records)})
    atomic_write_json(Path(timings) / "train.json",
                      {"parent_run_id": run.info.run_id,
                       "runs": {r["predictions"]: volatile(r) for r in records}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
