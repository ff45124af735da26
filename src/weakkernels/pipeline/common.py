"""Small helpers shared by the stage scripts: which (model, dataset) pairs run,
where each stage's files live, and loading prepared data and splits."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from weakkernels.kernels import resolve_sigma
from weakkernels.pipeline.registry import MODELS
from weakkernels.pipeline.splits import fit_arrays, resolve
from weakkernels.pipeline.storage import load_npz, load_sparse_npz

__all__ = [
    "fixed_params",
    "fit_data",
    "load_prepared",
    "load_split",
    "model_dataset_pairs",
    "split_kind",
    "split_path",
]


def split_kind(model: str) -> str:
    """Which split file a model reads: ``su`` for SU learners, else ``ssl``."""
    return "su" if MODELS[model].task == "su" else "ssl"


def model_dataset_pairs(
    models: list[str], datasets: list[str], su_datasets: list[str]
) -> list[tuple[str, str]]:
    """Every compatible pair: SU models only run on the datasets with SU splits."""
    out = []
    for ds in datasets:
        for m in models:
            if split_kind(m) == "su" and ds not in su_datasets:
                continue
            out.append((m, ds))
    return out


def prepared_path(prepared_dir: str | os.PathLike, dataset: str) -> Path:
    return Path(prepared_dir) / f"{dataset}.npz"


def split_path(splits_dir: str | os.PathLike, dataset: str, kind: str, seed: int):
    return Path(splits_dir) / dataset / f"{kind}_seed{seed}.npz"


def load_prepared(prepared_dir, dataset: str) -> dict[str, np.ndarray]:
    """The ``prepare`` stage's arrays; ``X`` is CSR for a sparse set (its
    ``<dataset>.X.npz``, see :mod:`weakkernels.pipeline.preparation`)."""
    data = load_npz(prepared_path(prepared_dir, dataset))
    csr = Path(prepared_dir) / f"{dataset}.X.npz"
    if "X" not in data and csr.exists():
        data["X"] = load_sparse_npz(csr)
    return data


def load_split(splits_dir, dataset: str, kind: str, seed: int) -> dict[str, np.ndarray]:
    return load_npz(split_path(splits_dir, dataset, kind, seed))


def n_unlabeled_list(split: dict[str, np.ndarray]) -> list[int]:
    return [int(n) for n in split["n_unlabeled"]]


def fit_data(model: str, X, y, split, n_unlabeled: int):
    """Training rows for ``model`` (baselines marked labeled-only drop y == -1).

    Returns ``(split, X_fit, y_fit, n_labeled, prior, sigma_scale)``;
    ``prior`` is the SU split's class prior, else the class-1 fraction of the
    labeled rows; ``sigma_scale`` is ``resolve_sigma("scale", X_fit)``, the
    estimators' own ``sigma="scale"`` (1 / (d Var X) over all training rows).
    """
    sp = resolve(split, n_unlabeled)
    X_fit, y_fit = fit_arrays(X, y, sp)
    sigma_scale = resolve_sigma("scale", X_fit)  # the estimators' own "scale"
    if MODELS[model].labeled_only:
        keep = y_fit != -1
        X_fit, y_fit = X_fit[keep], y_fit[keep]
    n_l = int(np.sum(y_fit != -1)) if "pairs" not in sp else 0
    if "prior" in split:  # SU: the class prior the split was drawn with
        prior = float(split["prior"])
    else:
        # The labeled points are a stratified sample, so their class-1 fraction
        # is the dataset's class prior up to rounding; estimators that take a
        # `prior` get it explicitly (their own default is the same fraction,
        # with a warning that it is an estimate).
        y_lab = y_fit[y_fit != -1]
        prior = float(np.mean(y_lab == 1)) if len(y_lab) else None
    return sp, X_fit, y_fit, n_l, prior, sigma_scale


def fixed_params(models_cfg: dict, model: str, dataset: str) -> dict:
    """``models.fixed[model]``, updated by ``models.fixed_by_dataset[dataset]``."""
    base = dict((models_cfg.get("fixed") or {}).get(model) or {})
    per_ds = ((models_cfg.get("fixed_by_dataset") or {}).get(dataset) or {})
    base.update(per_ds.get(model) or {})
    return base
