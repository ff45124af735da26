"""``make ui``: the MLflow UI on the project's tracking store, at the runs view.

Starts ``mlflow ui --host 127.0.0.1 --backend-store-uri <the stages' store>`` and
prints (and opens, where a browser is available) the experiment's runs table in
the model-training view (``tracking.ui_path``), not MLflow's GenAI home.
``--dry-run`` prints the command and the address only.
"""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from pathlib import Path

from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.storage import repo_root
from weakkernels.pipeline.tracking import setup_mlflow, tracking_uri, ui_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    root = repo_root(Path(args.params).resolve().parent)
    exp_id = setup_mlflow(params["mlflow"]["experiment"], root)
    uri = tracking_uri(root)
    address = f"http://127.0.0.1:{args.port}{ui_path(exp_id)}"
    cmd = [sys.executable, "-m", "mlflow", "ui", "--host", "127.0.0.1",
           "--backend-store-uri", uri, "--port", str(args.port)]
    print(f"mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port {args.port}")
    print(f"the runs: {address}", flush=True)
    if args.dry_run:
        return 0
    webbrowser.open(address)  # returns at once; nothing happens without a browser
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
