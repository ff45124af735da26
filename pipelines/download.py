"""Stage ``download``: fetch every dataset of ``data.datasets`` into ``data/raw``.

Order per file: the offline mirror (``download.mirror``, default
``../shared/data/raw``), then the pinned source URL, then the upstream page
(LIBSVM / UCI).  Every copy is checked against the MANIFEST sha256 and written
atomically; the stage also writes ``<out>/provenance.json`` (origin + hash of
every file; a mirror copy is recorded as ``mirror:<path inside the mirror>``,
never as an absolute path, so the file is the same in every clone).
Usage: ``python pipelines/download.py --out data/raw``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from weakkernels.pipeline.datasets import DATASETS, download_dataset
from weakkernels.pipeline.storage import atomic_write_json, load_params
from weakkernels.pipeline.tracking import main_repo_root


def download(
    datasets: list[str],
    out_dir: str | Path,
    *,
    mirror: str | Path | None,
    retries: int = 3,
    timeout: float = 60.0,
    use_network: bool = True,
    allow_unverified: bool = False,
    progress: bool = True,
) -> dict[str, list[dict]]:
    """Obtain the files of ``datasets``; return their provenance records."""
    unknown = [d for d in datasets if d not in DATASETS]
    if unknown:
        raise KeyError(f"unknown dataset(s) {unknown}; known: {sorted(DATASETS)}")
    records = {
        name: download_dataset(
            name, out_dir, mirror, retries=retries, timeout=timeout,
            use_network=use_network, allow_unverified=allow_unverified,
            progress=progress,
        )
        for name in datasets
    }
    if mirror is not None:
        # The mirror's location depends on where the repository is cloned; the
        # record keeps the path inside the mirror only, so data/raw (and its DVC
        # hash) is the same in every clone.
        root = Path(mirror).resolve()
        for recs in records.values():
            for r in recs:
                try:
                    rel = Path(r["origin"]).resolve().relative_to(root)
                except (ValueError, OSError):
                    continue
                r["origin"] = f"mirror:{rel.as_posix()}"
    atomic_write_json(Path(out_dir) / "provenance.json", records)
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/raw")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    cfg = params["download"]
    mirror = cfg["mirror"]
    if mirror and not Path(mirror).is_absolute():
        # Relative to the main repository, also from a `dvc exp run` temp copy.
        mirror = main_repo_root(Path(args.params).resolve().parent) / mirror
    records = download(
        params["data"]["datasets"], args.out, mirror=mirror,
        retries=int(cfg["retries"]), timeout=float(cfg["timeout"]),
        use_network=bool(cfg["use_network"]),
        allow_unverified=bool(cfg["allow_unverified"]),
        progress=sys.stderr.isatty(),
    )
    for name, recs in records.items():
        for r in recs:
            print(f"{name}: {r['file']} <- {r['origin']} (verified={r['verified']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
