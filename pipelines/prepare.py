"""Stage ``prepare``: parse the raw files into one ``.npz`` per dataset.

``data/prepared/<name>.npz`` holds ``X`` (scaled per ``prepare.scale``), the
scaling ``scale_lo`` / ``scale_span``, ``y`` (int64 in ``0..K-1``), ``classes``
and, where shipped, the official splits; ``<out>/summary.json`` records shapes
and counts.  A sparse LIBSVM set (``prepare.sparse``) keeps its CSR ``X`` in
``<name>.X.npz``, scaled by max |x| (:mod:`weakkernels.pipeline.preparation`);
a ``data.local`` table comes from ``--local`` (its unlabeled rows: ``y == -1``).
"""

from __future__ import annotations

import argparse
import sys

from weakkernels.pipeline.params_schema import load_params
from weakkernels.pipeline.preparation import prepare


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", default="data/raw")
    ap.add_argument("--local", default="data/local")
    ap.add_argument("--out", default="data/prepared")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    summary = prepare(params["data"]["datasets"], args.raw, args.out,
                      local_dir=args.local, **params["prepare"])
    for name, s in summary.items():
        print(f"{name}: n={s['n']} d={s['d']} counts={s['class_counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
