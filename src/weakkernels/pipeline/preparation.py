"""The ``prepare`` stage: parse the raw files into one ``.npz`` per dataset.

``data/prepared/<name>.npz`` holds ``X`` (float64, scaled per ``prepare.scale``:
``minmax`` maps every feature to [0, 1] as in paper 003's protocol; ``none``
keeps the raw values), ``scale_lo`` / ``scale_span`` (that scaling,
``clip((x - lo) / span, 0, 1)``, which the served MLflow model applies to raw
rows), ``y`` (int64 in ``0..K-1``; ``-1`` marks the unlabeled rows a
``data.local`` table brings, never a class), ``classes`` (the upstream label
of each code, sorted) and, where shipped, the official splits.
``<out>/summary.json`` records shapes and counts.

Sparse sets (``prepare.sparse``, see :func:`keep_sparse`): a LIBSVM-format set
whose stored density is below ``prepare.sparse_density`` stays CSR.  Its ``X``
then goes to ``<name>.X.npz`` (``scipy.sparse.load_npz`` reads it; the main
file has no ``X``), and min-max scaling, which would turn every zero into
``-lo / span``, is replaced by ``maxabs``: each column divided by its largest
``|x|`` (``lo = 0``, ``span = max|x|``), so zeros stay zero and values lie in
[-1, 1]; the main file then records ``scale_kind = "maxabs"`` (absent means
the min-max form above).  Dense sets are written exactly as before.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from weakkernels.pipeline.datasets import load_raw
from weakkernels.pipeline.storage import (
    atomic_write_json,
    save_npz,
    save_sparse_npz,
)

__all__ = ["encode_labels", "fit_scaler", "keep_sparse", "prepare",
           "scale_features", "sparse_path"]


def sparse_path(out_dir, name: str) -> Path:
    """Where a sparse set's CSR ``X`` lives, beside ``<name>.npz``."""
    return Path(out_dir) / f"{name}.X.npz"


def keep_sparse(X, mode: str, threshold: float) -> bool:
    """Whether ``X`` is stored as CSR: ``prepare.sparse`` and ``sparse_density``.

    ``auto``: when ``X`` was parsed sparse (LIBSVM format) and its stored
    density ``nnz / (n d)`` is below ``threshold`` -- above it CSR costs more
    memory than the dense array (12 bytes per entry against 8) and buys no
    speed; ``always``: every set; ``never``: none (every set dense).
    """
    if mode == "never":
        return False
    if mode == "always":
        return True
    if mode != "auto":
        raise ValueError(f"unknown prepare.sparse {mode!r} (auto | always | never)")
    if not sp.issparse(X):
        return False
    n, d = X.shape
    return n * d > 0 and X.nnz / (n * d) < threshold


def fit_scaler(X, how: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, span)`` of the scaling ``(X - lo) / span``.

    ``minmax``: each column to [0, 1] (constant columns become 0), clipped to
    [0, 1] on new rows; ``maxabs``: ``lo = 0``, ``span = max |x|`` per column
    (1 for all-zero columns), so zeros stay zero (sparse ``X`` allowed);
    ``none``: the identity (``lo = 0``, ``span = 1``).
    """
    if how == "none":
        return np.zeros(X.shape[1]), np.ones(X.shape[1])
    if how == "maxabs":
        top = abs(X).max(axis=0)
        top = np.asarray(top.toarray() if sp.issparse(top) else top,
                         dtype=np.float64).ravel()
        return np.zeros(X.shape[1]), np.where(top > 0, top, 1.0)
    if how != "minmax":
        raise ValueError(f"unknown scaling {how!r} (minmax | maxabs | none)")
    lo, hi = X.min(axis=0), X.max(axis=0)
    return lo, np.where(hi > lo, hi - lo, 1.0)


def scale_features(X, how: str):
    """``minmax``: each column to [0, 1] (constant columns become 0);
    ``maxabs``: each column divided by its max ``|x|`` (CSR in, CSR out)."""
    if how == "none":
        return X
    lo, span = fit_scaler(X, how)
    if how == "maxabs":
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            X.data /= span[X.indices]  # only the stored entries: zeros stay zero
            return X
        return X / span
    return np.clip((X - lo) / span, 0.0, 1.0)


def encode_labels(y_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map upstream labels (sorted) to ``0..K-1``: -1/+1 -> 0/1, 1/2 -> 0/1.

    A NaN label (an unlabeled row of a ``data.local`` table) gets ``-1``; the
    classes are those of the labeled rows."""
    unlabeled = np.isnan(y_raw) if np.asarray(y_raw).dtype.kind == "f" else None
    if unlabeled is None or not unlabeled.any():
        classes, codes = np.unique(y_raw, return_inverse=True)
        return codes.astype(np.int64), classes
    classes, codes = np.unique(y_raw[~unlabeled], return_inverse=True)
    out = np.full(len(y_raw), -1, dtype=np.int64)
    out[~unlabeled] = codes
    return out, classes


def prepare(datasets: list[str], raw_dir, out_dir, *, scale: str, sparse: str,
            sparse_density: float, local_dir=None) -> dict:
    """Write ``<out_dir>/<name>.npz`` per dataset (and ``<name>.X.npz`` for a
    sparse one); ``scale``, ``sparse``, ``sparse_density`` are ``prepare.*``;
    ``local_dir`` holds the ``data.local`` tables (``local@<name>`` stages).
    A table's unlabeled rows get ``y == -1`` (the estimators' convention)."""
    summary = {}
    for name in datasets:
        raw = load_raw(name, raw_dir, keep_sparse=sparse != "never",
                       local_dir=local_dir)
        is_sparse = keep_sparse(raw.X, sparse, sparse_density)
        if is_sparse:
            X_raw = sp.csr_matrix(raw.X, dtype=np.float64)
            how = "maxabs" if scale == "minmax" else scale
        else:
            X_raw = raw.X.toarray() if sp.issparse(raw.X) else raw.X
            X_raw, how = np.asarray(X_raw, dtype=np.float64), scale
        lo, span = fit_scaler(X_raw, how)
        X = scale_features(X_raw, how)
        y, classes = encode_labels(raw.y)
        # The scaler goes with the data: the served model applies it to raw rows.
        arrays = {"X": X, "y": y, "classes": classes.astype(np.float64),
                  "scale_lo": lo, "scale_span": span}
        if raw.split_labeled is not None:
            arrays["split_labeled"] = raw.split_labeled
            arrays["split_unlabeled"] = raw.split_unlabeled
        sparse_file = sparse_path(out_dir, name)
        if is_sparse:
            save_sparse_npz(sparse_file, arrays.pop("X"))
            arrays["scale_kind"] = np.array(how)
        else:
            sparse_file.unlink(missing_ok=True)  # a stale CSR would shadow X
        save_npz(Path(out_dir) / f"{name}.npz", **arrays)
        summary[name] = {
            "n": int(X.shape[0]),
            "d": int(X.shape[1]),
            "classes": classes.tolist(),
            "class_counts": np.bincount(y[y >= 0]).tolist(),
            "official_splits": int(len(raw.split_labeled))
            if raw.split_labeled is not None else 0,
            "scale": how,
        }
        if (y < 0).any():  # a data.local table's own unlabeled rows
            summary[name]["unlabeled"] = int((y < 0).sum())
        if is_sparse:  # dense entries stay as they were (byte-identical outputs)
            summary[name]["format"] = "csr"
            summary[name]["density"] = float(X.nnz / max(1, X.shape[0] * X.shape[1]))
    atomic_write_json(Path(out_dir) / "summary.json", summary)
    return summary
