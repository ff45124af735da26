"""The ``prepare`` stage: parse the raw files into one ``.npz`` per dataset.

``data/prepared/<name>.npz`` holds ``X`` (float64, scaled per ``prepare.scale``:
``minmax`` maps every feature to [0, 1] as in paper 003's protocol; ``none``
keeps the raw values), ``scale_lo`` / ``scale_span`` (that scaling,
``clip((x - lo) / span, 0, 1)``, which the served MLflow model applies to raw
rows), ``y`` (int64 in ``0..K-1``; ``-1`` stays reserved for
"unlabeled"), ``classes`` (the upstream label of each code, sorted) and, where
shipped, the official splits.  ``<out>/summary.json`` records shapes and counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from weakkernels.pipeline.datasets import load_raw
from weakkernels.pipeline.storage import atomic_write_json, save_npz

__all__ = ["encode_labels", "fit_scaler", "prepare", "scale_features"]


def fit_scaler(X: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, span)`` of the scaling ``clip((X - lo) / span, 0, 1)``.

    ``minmax``: each column to [0, 1] (constant columns become 0); ``none``:
    the identity (``lo = 0``, ``span = 1``, no clipping applies to it).
    """
    if how == "none":
        return np.zeros(X.shape[1]), np.ones(X.shape[1])
    if how != "minmax":
        raise ValueError(f"unknown scaling {how!r} (minmax | none)")
    lo, hi = X.min(axis=0), X.max(axis=0)
    return lo, np.where(hi > lo, hi - lo, 1.0)


def scale_features(X: np.ndarray, how: str) -> np.ndarray:
    """``minmax``: each column to [0, 1] (constant columns become 0)."""
    if how == "none":
        return X
    lo, span = fit_scaler(X, how)
    return np.clip((X - lo) / span, 0.0, 1.0)


def encode_labels(y_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map upstream labels (sorted) to ``0..K-1``: -1/+1 -> 0/1, 1/2 -> 0/1."""
    classes, codes = np.unique(y_raw, return_inverse=True)
    return codes.astype(np.int64), classes


def prepare(datasets: list[str], raw_dir, out_dir, *, scale: str) -> dict:
    """Write ``<out_dir>/<name>.npz`` per dataset; ``scale`` is ``prepare.scale``."""
    summary = {}
    for name in datasets:
        raw = load_raw(name, raw_dir)
        X_raw = np.asarray(raw.X, dtype=np.float64)
        lo, span = fit_scaler(X_raw, scale)
        X = scale_features(X_raw, scale)
        y, classes = encode_labels(raw.y)
        # The scaler goes with the data: the served model applies it to raw rows.
        arrays = {"X": X, "y": y, "classes": classes.astype(np.float64),
                  "scale_lo": lo, "scale_span": span}
        if raw.split_labeled is not None:
            arrays["split_labeled"] = raw.split_labeled
            arrays["split_unlabeled"] = raw.split_unlabeled
        save_npz(Path(out_dir) / f"{name}.npz", **arrays)
        summary[name] = {
            "n": int(X.shape[0]),
            "d": int(X.shape[1]),
            "classes": classes.tolist(),
            "class_counts": np.bincount(y).tolist(),
            "official_splits": int(len(raw.split_labeled))
            if raw.split_labeled is not None else 0,
            "scale": scale,
        }
    atomic_write_json(Path(out_dir) / "summary.json", summary)
    return summary
