"""Does starting every Optuna study from the model's defaults search better?

``tune.start_with_defaults`` (README, "Tuning protocol") queues the defaults
(sigma = 1/(d Var X), C* = C n_l / n_u, constructor defaults) as trial 0.
This runs the tune stage's own ``tune()`` on the prepared cod-rna split of the
default pipeline (run ``make repro`` first) with the option off and on, for
three sampler seeds, and records each study's best validation error.

    .venv/bin/python benchmarks/tune_start_trial.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from weakkernels.pipeline.params_schema import load_params  # noqa: E402
from weakkernels.pipeline.search import tune  # noqa: E402

MODELS = ("svc", "tsgs3vm", "frs3vm", "cccp_tsvm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="cod-rna")
    ap.add_argument("--seeds", default="20190810,1,2")
    ap.add_argument("--out",
                    default=str(ROOT / "benchmarks/results/tune_start_trial.json"))
    args = ap.parse_args()
    params = load_params(ROOT / "params.yaml")
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for start in (False, True):
            with tempfile.TemporaryDirectory() as d:
                cfg = {**params["tune"], "start_with_defaults": start,
                       "sampler_seed": seed, "storage": f"sqlite:///{d}/optuna.db"}
                best = tune([(m, args.dataset) for m in MODELS],
                            ROOT / "data/prepared", ROOT / "data/splits", cfg,
                            params["models"], root=d, log_mlflow=False)
            for m in MODELS:
                b = best[f"{m}/{args.dataset}"]
                rows.append({"model": m, "sampler_seed": seed, "start": start,
                             "val_loss": b["val_loss"], "params": b["params"]})
                print(rows[-1], flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    for m in MODELS:
        pairs = [(r["val_loss"], s["val_loss"]) for r in rows for s in rows
                 if r["model"] == s["model"] == m
                 and r["sampler_seed"] == s["sampler_seed"]
                 and not r["start"] and s["start"]]
        print(f"{m}: best validation error off -> on: "
              + ", ".join(f"{a:.4f} -> {b:.4f}" for a, b in pairs))


if __name__ == "__main__":
    main()
