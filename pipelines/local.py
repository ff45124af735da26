"""Stage ``local@<name>``: check the user's table ``data.local.<name>`` and
store it in ``data/local/<name>/`` for the prepare stage.

The file (``path``, relative to the repository or absolute) is this stage's
DVC dependency, so ``dvc.lock`` records its hash and an edited file reruns the
stages after it; ``<out>/source.json`` records its sha256 and row counts
(:func:`weakkernels.pipeline.local_data.import_local`).
Usage: ``python pipelines/local.py --name NAME --out data/local/NAME``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from weakkernels.pipeline.local_data import import_local
from weakkernels.pipeline.params_schema import load_params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    rec = import_local(args.name, params["data"]["local"][args.name],
                       Path(args.params).resolve().parent, args.out)
    print(f"{args.name}: {rec['path']} ({rec['format']}, sha256 {rec['sha256'][:12]}) "
          f"n={rec['n_rows']} d={rec['n_features']} labeled={rec['n_labeled']} "
          f"unlabeled={rec['n_unlabeled']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
