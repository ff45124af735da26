"""A table of the user's own (``data.local`` of ``params.yaml``): checked,
read and stored for the ``prepare`` stage as a shipped set's files are.

An entry ``data.local.<name>: {path, format, label}`` names a file (a path
relative to the repository, or absolute), its format and its label column;
``<name>`` then goes into ``data.datasets`` like a shipped set.  Formats:

* ``csv`` -- a header line of column names, comma-separated;
* ``parquet`` -- any Parquet file pandas reads (pyarrow);
* ``libsvm`` -- ``label index:value ...`` lines; the label is each line's
  first field, so ``label`` must be null;
* ``npz`` -- a NumPy archive with the feature matrix ``X`` (n x d) and the
  label vector under the name ``label`` (no pickles).

In the label column a missing value (an empty CSV field, NaN, null) or ``-1``
marks an unlabeled row, as ``y == -1`` does for the estimators; every other
value is a class (numbers only), so a class must not be called ``-1``.

Checks: :func:`entry_problems` the cheap ones, when ``params.yaml`` is loaded
(keys, format, the file exists); :func:`read_local` the content, when the
``local@<name>`` stage reads the file (the label column is there, every
feature column is numeric and complete, at least two classes among the labeled
rows, at least one unlabeled row).  Each error names the key path and the file.

The ``local@<name>`` stage (:func:`import_local`) writes ``data/local/<name>/``:
``data.npz`` (``X`` float64, ``y`` float64 with NaN on the unlabeled rows;
``X`` in ``X.npz`` as CSR for a LIBSVM file) and ``source.json`` (the file's
sha256, its columns and row counts).  DVC records the file itself as that
stage's dependency in ``dvc.lock``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from weakkernels.pipeline.storage import (
    atomic_write_json,
    load_npz,
    load_sparse_npz,
    save_npz,
    save_sparse_npz,
    sha256_file,
)

__all__ = ["LOCAL_FORMATS", "LocalDataError", "entry_problems", "import_local",
           "load_local", "read_local", "resolve_path"]

LOCAL_FORMATS = ("csv", "parquet", "libsvm", "npz")
ENTRY_KEYS = ("path", "format", "label")
UNLABELED = -1  # the label value (besides a missing one) of an unlabeled row
# A data set's name becomes a folder, a file name, a DVC stage and parameter
# key (local@<name>, data.local.<name>: no '.') and part of a registered
# model's name (weakkernels-<name>): letters, digits, '_', '-'.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class LocalDataError(ValueError):
    """A ``data.local`` file that cannot be read as a semi-supervised set."""


def resolve_path(path: str, root: str | os.PathLike) -> Path:
    """``path`` as given (absolute), or relative to the repository ``root``."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(root) / p


def entry_problems(name: Any, entry: Any, root: str | os.PathLike) -> list[str]:
    """The checks that cost nothing: the entry's keys and types, a known
    format, a label column named (null for LIBSVM), a file that exists.
    Returns one message per problem, each naming its key path."""
    where = f"data.local.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        return [f"{where}: a data set name is letters, digits, '_' and '-' (it "
                f"names folders, DVC stages and models), got {name!r}"]
    if not isinstance(entry, Mapping):
        return [f"{where}: expected a map {{path, format, label}}, got "
                f"{type(entry).__name__} {entry!r}"]
    out = [f"{where}.{k}: required key missing" for k in ENTRY_KEYS
           if k not in entry]
    out += [f"{where}.{k}: unknown key; an entry has {list(ENTRY_KEYS)}"
            for k in entry if k not in ENTRY_KEYS]
    fmt, path, label = entry.get("format"), entry.get("path"), entry.get("label")
    if "format" in entry and fmt not in LOCAL_FORMATS:
        out.append(f"{where}.format: {fmt!r} is not a known format; one of "
                   f"{list(LOCAL_FORMATS)}")
    if fmt == "libsvm":
        if label is not None:
            out.append(f"{where}.label: a LIBSVM file's label is each line's first "
                       f"field; set label: null, got {label!r}")
    elif "label" in entry and (not isinstance(label, str) or not label):
        out.append(f"{where}.label: expected the name of the label column, got "
                   f"{label!r}")
    if "path" in entry:
        if not isinstance(path, str) or not path:
            out.append(f"{where}.path: expected a file path, got {path!r}")
        elif not resolve_path(path, root).is_file():
            out.append(f"{where}.path: no such file {path!r} (a relative path is "
                       f"relative to the repository, {Path(root).resolve()})")
    return out


def _numeric_frame(df, where: str, path: str, label: str):
    """``(X, y)`` of a pandas table: every column but ``label`` a feature."""
    import pandas as pd

    if label not in df.columns:
        raise LocalDataError(f"{where}.label: {path}: no column {label!r}; columns: "
                             f"{[str(c) for c in df.columns]}")
    features = [c for c in df.columns if c != label]
    if not features:
        raise LocalDataError(f"{where}: {path}: no feature column beside the label "
                             f"column {label!r}")
    bad = [str(c) for c in features if not (pd.api.types.is_numeric_dtype(df[c])
                                             or pd.api.types.is_bool_dtype(df[c]))]
    if bad:
        raise LocalDataError(f"{where}: {path}: the features must be numeric; "
                             f"non-numeric column(s): {bad} (encode them as numbers "
                             "or drop them)")
    y_col = df[label]
    if not (pd.api.types.is_numeric_dtype(y_col) or y_col.isna().all()):
        raise LocalDataError(f"{where}.label: {path}: column {label!r} must hold "
                             "numbers (class codes; empty or -1 = unlabeled), got "
                             f"dtype {y_col.dtype}")
    X = df[features].to_numpy(dtype=np.float64, na_value=np.nan)
    y = y_col.to_numpy(dtype=np.float64, na_value=np.nan)
    return X, y, [str(c) for c in features]


def read_local(entry: Mapping, root: str | os.PathLike, *, name: str) -> dict:
    """Read and check the file of ``data.local.<name>``.

    Returns ``{"X", "y", "features"}``: ``X`` float64 (CSR for LIBSVM), ``y``
    float64 with NaN on every unlabeled row (missing or ``-1``), the feature
    names.  Raises :class:`LocalDataError` naming the key path and the file.
    """
    where = f"data.local.{name}"
    problems = entry_problems(name, entry, root)
    if problems:
        raise LocalDataError("; ".join(problems))
    path, fmt, label = entry["path"], entry["format"], entry["label"]
    file = resolve_path(path, root)
    try:
        if fmt == "csv":
            import pandas as pd

            X, y, features = _numeric_frame(pd.read_csv(file), where, path, label)
        elif fmt == "parquet":
            import pandas as pd

            X, y, features = _numeric_frame(pd.read_parquet(file), where, path,
                                            label)
        elif fmt == "libsvm":
            from sklearn.datasets import load_svmlight_file

            X, y = load_svmlight_file(str(file), dtype=np.float64)
            X, y = X.tocsr(), np.asarray(y, dtype=np.float64)
            features = [f"x{j}" for j in range(X.shape[1])]
        else:  # npz
            with np.load(file, allow_pickle=False) as z:
                missing = [k for k in ("X", label) if k not in z.files]
                if missing:
                    raise LocalDataError(f"{where}: {path}: no array(s) {missing}; "
                                         f"arrays: {sorted(z.files)}")
                X, y = z["X"], z[label]
            if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
                raise LocalDataError(f"{where}: {path}: X must be (n, d) and "
                                     f"{label!r} (n,); got {X.shape} and {y.shape}")
            if X.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
                raise LocalDataError(f"{where}: {path}: X and {label!r} must be "
                                     f"numeric, got {X.dtype} and {y.dtype}")
            X, y = X.astype(np.float64), y.astype(np.float64)
            features = [f"x{j}" for j in range(X.shape[1])]
    except LocalDataError:
        raise
    except (OSError, ValueError, ImportError) as exc:  # the parser's own refusal
        raise LocalDataError(f"{where}: {path}: cannot be read as {fmt}: "
                             f"{type(exc).__name__}: {exc}") from exc
    values = X.data if sp.issparse(X) else X
    if not np.isfinite(values).all():
        cols = np.flatnonzero(~np.isfinite(X).all(axis=0)) if not sp.issparse(X) \
            else np.unique(X.indices[~np.isfinite(X.data)])
        raise LocalDataError(f"{where}: {path}: missing or non-finite feature "
                             f"values in column(s) "
                             f"{[features[j] for j in cols[:10]]}; only the label "
                             "column may be empty")
    minus_one = y == UNLABELED
    y = np.where(minus_one, np.nan, y)
    if np.isinf(y).any():
        raise LocalDataError(f"{where}.label: {path}: infinite label values")
    labeled = ~np.isnan(y)
    classes = np.unique(y[labeled])
    if len(classes) < 2:
        hint = (f" ({int(minus_one.sum())} rows labeled {UNLABELED} count as "
                f"unlabeled: recode a class called {UNLABELED}, e.g. -1/+1 as "
                "0/1)" if minus_one.any() else "")
        raise LocalDataError(f"{where}: {path}: the labeled rows need at least two "
                             f"classes; found {classes.tolist()} in "
                             f"{int(labeled.sum())} labeled row(s){hint}")
    if labeled.all():
        raise LocalDataError(f"{where}: {path}: no unlabeled row; mark unlabeled "
                             f"rows with an empty label or {UNLABELED}")
    return {"X": X, "y": y, "features": features}


def import_local(name: str, entry: Mapping, root: str | os.PathLike,
                 out_dir: str | os.PathLike) -> dict:
    """The ``local@<name>`` stage: check the file and write ``out_dir``
    (``data.npz`` / ``X.npz``, ``source.json``); returns the source record."""
    data = read_local(entry, root, name=name)
    out = Path(out_dir)
    X, y = data["X"], data["y"]
    if sp.issparse(X):
        save_sparse_npz(out / "X.npz", X)
        save_npz(out / "data.npz", y=y)
    else:
        (out / "X.npz").unlink(missing_ok=True)
        save_npz(out / "data.npz", X=X, y=y)
    labeled = ~np.isnan(y)
    classes, counts = np.unique(y[labeled], return_counts=True)
    record = {
        "name": name, "path": str(entry["path"]), "format": entry["format"],
        "label": entry["label"],
        "sha256": sha256_file(resolve_path(entry["path"], root)),
        "n_rows": int(X.shape[0]), "n_features": int(X.shape[1]),
        "features": data["features"], "n_labeled": int(labeled.sum()),
        "n_unlabeled": int((~labeled).sum()),
        "classes": {f"{c:g}": int(k) for c, k in zip(classes, counts, strict=True)},
    }
    atomic_write_json(out / "source.json", record)
    return record


def load_local(local_dir: str | os.PathLike, name: str) -> tuple[Any, np.ndarray]:
    """``(X, y)`` as :func:`import_local` stored them (``y``: NaN = unlabeled)."""
    base = Path(local_dir) / name
    if not (base / "data.npz").exists():
        raise FileNotFoundError(
            f"{base / 'data.npz'}: {name!r} is not a shipped data set and its "
            f"data.local stage has not run (is data.local.{name} in params.yaml? "
            f"`dvc repro local@{name}`)")
    arrays = load_npz(base / "data.npz")
    X = load_sparse_npz(base / "X.npz") if "X" not in arrays else arrays["X"]
    return X, arrays["y"]
