"""Stage ``split``: index files ``data/splits/<dataset>/<kind>_seed<k>.npz``.

``ssl`` splits for every dataset (the shipped ones for ``split.official``) and
``su`` splits for ``split.su.datasets``; seed ``k`` of ``split.seeds`` gives
split ``k`` (:mod:`weakkernels.pipeline.splitting`).
"""

from __future__ import annotations

import argparse
import sys

from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.splitting import make_splits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prepared", default="data/prepared")
    ap.add_argument("--out", default="data/splits")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    index = make_splits(params["data"]["datasets"], args.prepared, args.out,
                        params["split"])
    for name, files in index.items():
        print(f"{name}: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
