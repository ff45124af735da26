"""The ``split`` stage: index files ``data/splits/<dataset>/<kind>_seed<k>.npz``.

* ``ssl`` splits for every dataset: the shipped split ``k`` for datasets listed in
  ``split.official`` (g50c, SSL book; test = the unlabeled points), else a random
  split with ``split.ssl`` sizes (``split.ssl.transductive``: the unlabeled
  pool starts with the test points); a ``data.local`` table's own unlabeled
  rows are its unlabeled pool, its labeled rows give the labeled, validation
  and test points (:func:`~weakkernels.pipeline.splits.pool_split`).  The AUC
  model reads the same file (P/N/U).
* ``su`` splits (similar pairs, unlabeled, test = n_U/3; paper 002 §6) for the
  datasets in ``split.su.datasets``.

Seed ``k`` of ``split.seeds`` gives split ``k``; ``tune.split_seed`` picks the one
used for tuning, the train stage reports the others.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from weakkernels.pipeline.common import load_prepared, split_path
from weakkernels.pipeline.splits import (
    official_split,
    pool_split,
    ssl_split,
    su_split,
)
from weakkernels.pipeline.storage import atomic_write_json, save_npz

__all__ = ["make_splits"]


def make_splits(
    datasets: list[str], prepared_dir, out_dir, cfg: dict
) -> dict[str, dict]:
    """Write every split file; return an index of their sizes."""
    seeds = [int(s) for s in cfg["seeds"]]
    official = set(cfg["official"])
    ssl_cfg, su_cfg = cfg["ssl"], cfg["su"]
    index: dict[str, dict] = {}
    for name in datasets:
        data = load_prepared(prepared_dir, name)
        y = data["y"]
        index[name] = {}
        for seed in seeds:
            if name in official:
                if "split_labeled" not in data:
                    raise ValueError(f"{name} ships no official splits")
                sp = official_split(data["split_labeled"], data["split_unlabeled"],
                                    seed, n_val=int(ssl_cfg["n_val"]), seed=seed)
            else:
                # a set with its own unlabeled rows (data.local) keeps them
                # as the unlabeled pool
                own = bool((y == -1).any())
                try:
                    sp = (pool_split if own else ssl_split)(
                        y, n_labeled=int(ssl_cfg["n_labeled"]),
                        n_unlabeled=[int(n) for n in ssl_cfg["n_unlabeled"]],
                        n_val=int(ssl_cfg["n_val"]), n_test=int(ssl_cfg["n_test"]),
                        seed=seed, transductive=bool(ssl_cfg["transductive"]),
                    )
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from exc
            save_npz(split_path(out_dir, name, "ssl", seed), **sp)
            index[name][f"ssl_seed{seed}"] = {k: int(np.size(v)) for k, v in sp.items()}
            if name in su_cfg["datasets"]:
                positive = su_cfg["positive"]
                if positive == "majority":
                    positive = int(np.argmax(np.bincount(y)))
                su = su_split(
                    y, positive=int(positive), n_pairs=int(su_cfg["n_pairs"]),
                    n_unlabeled=[int(n) for n in su_cfg["n_unlabeled"]],
                    n_val=int(su_cfg["n_val"]), seed=seed,
                )
                save_npz(split_path(out_dir, name, "su", seed), **su)
                index[name][f"su_seed{seed}"] = {
                    "pairs": int(len(su["pairs"])),
                    "unlabeled": int(len(su["unlabeled"])),
                    "test": int(len(su["test"])),
                    "prior": float(su["prior"]),
                    "positive": int(su["positive"]),
                }
    atomic_write_json(Path(out_dir) / "index.json", index)
    return index
