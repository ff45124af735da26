"""Stage ``download``: fetch every dataset of ``data.datasets`` into ``data/raw``.

Order per file: the offline mirror (``download.mirror``, relative to the
repository), then the pinned source URL, then the upstream page; every copy is
checked against the MANIFEST sha256 and ``<out>/provenance.json`` records the
origin of each file (:func:`weakkernels.pipeline.datasets.download`).
Usage: ``python pipelines/download.py --out data/raw``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from weakkernels.pipeline.datasets import download_section
from weakkernels.pipeline.params_schema import load_params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/raw")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    records = download_section(params["data"]["datasets"], args.out,
                               params["download"], Path(args.params).resolve().parent,
                               progress=sys.stderr.isatty())
    for name in params["data"]["datasets"]:
        for r in records.get(name, []):
            print(f"{name}: {r['file']} <- {r['origin']} (verified={r['verified']})")
        if name not in records:
            print(f"{name}: data.local, read by the stage local@{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
