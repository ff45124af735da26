"""Seed-based model artifacts: a small, pickle-free, deterministic file format.

A model file is a ZIP archive (stored, not compressed) holding

* ``meta.json`` -- UTF-8 JSON: ``format`` (always ``"weakkernels-model"``),
  ``format_version``, ``library_version``, ``estimator`` (class name), ``params``
  (the estimator's ``get_params()``), and estimator-specific scalar state
  (kernel spec, seeds, block layout, bias, classes, ...);
* one ``<name>.npy`` member per array (NumPy ``.npy`` format, never object dtype).

Random-feature models store seeds and coefficients, never the feature matrix, so
a file is O(number of features) floats. Exact-kernel models store their support
vectors. Every ZIP entry carries a fixed timestamp and the members are written in
sorted order, so fitting twice with one seed gives byte-identical files.
Loading never unpickles: arrays are read with ``allow_pickle=False``.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_NAME = "weakkernels-model"
FORMAT_VERSION = 1
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)

_REGISTRY: dict[str, type] = {}


class ModelFormatError(ValueError):
    """Raised when a model file is truncated, corrupt, or of an unknown version."""


def register(cls: type) -> type:
    """Class decorator: make ``cls`` loadable by :func:`load` under its name."""
    _REGISTRY[cls.__name__] = cls
    return cls


def _jsonable(value: Any) -> Any:
    """Plain JSON types from NumPy scalars/arrays and nested containers."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    # RandomState instances and other objects cannot be stored without pickle.
    raise TypeError(f"cannot store {type(value).__name__} in a model file")


def _atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write via a temporary file in the same directory and rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # name the model file, e.g. on a full disk
        raise


def dumps(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """Serialize ``meta`` and ``arrays`` to the bytes of a model file."""
    full_meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        **_jsonable(meta),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        info = zipfile.ZipInfo("meta.json", date_time=_FIXED_DATE)
        zf.writestr(info, json.dumps(full_meta, sort_keys=True, indent=1))
        for name in sorted(arrays):
            arr = np.ascontiguousarray(arrays[name])
            if arr.dtype == object:
                raise TypeError(f"array {name!r} has object dtype")
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_FIXED_DATE)
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


def loads(payload: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """Parse model-file bytes into ``(meta, arrays)``; raise ModelFormatError."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(payload))
        names = zf.namelist()
        if "meta.json" not in names:
            raise ModelFormatError("not a weakkernels model file: no meta.json")
        meta = json.loads(zf.read("meta.json").decode("utf-8"))
        arrays = {}
        for name in names:
            if name.endswith(".npy"):
                arrays[name[:-4]] = np.lib.format.read_array(
                    io.BytesIO(zf.read(name)), allow_pickle=False
                )
    except ModelFormatError:
        raise
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, OSError) as exc:
        raise ModelFormatError(f"corrupt or truncated model file: {exc}") from exc
    if meta.get("format") != FORMAT_NAME:
        raise ModelFormatError("not a weakkernels model file (format field)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"model file format_version {meta.get('format_version')!r} is not "
            f"supported by this library (expects {FORMAT_VERSION})"
        )
    return meta, arrays


def save_bytes(path: str | os.PathLike, payload: bytes) -> None:
    _atomic_write_bytes(Path(path), payload)


def load(path: str | os.PathLike):
    """Load any weakkernels estimator saved with ``est.save(path)``."""
    payload = Path(path).read_bytes()
    meta, arrays = loads(payload)
    name = meta.get("estimator")
    if name not in _REGISTRY:
        # Estimator modules register themselves on import; weakkernels imports
        # them lazily, so a fresh process may not have imported this one yet.
        import weakkernels

        if name in getattr(weakkernels, "_EXPORTS", {}):
            getattr(weakkernels, name)
    if name not in _REGISTRY:
        raise ModelFormatError(f"unknown estimator {name!r} in model file")
    return _REGISTRY[name]._from_artifact(meta, arrays)


class ArtifactMixin:
    """``save``/``load``/``to_bytes`` for estimators.

    Subclasses implement ``_artifact_state() -> (meta, arrays)`` returning their
    fitted state, and ``_set_artifact_state(meta, arrays)`` restoring it.
    """

    def to_bytes(self) -> bytes:
        from sklearn.utils.validation import check_is_fitted

        from weakkernels import __version__

        check_is_fitted(self)
        # A callback (progress, pruning) belongs to the fitting session, not to
        # the model: it is stored as None (and could not be stored without pickle).
        params = {
            k: (None if callable(v) else v)
            for k, v in self.get_params(deep=False).items()
        }
        meta, arrays = self._artifact_state()
        meta = {
            "estimator": type(self).__name__,
            "library_version": __version__,
            "params": params,
            "state": meta,
        }
        return dumps(meta, arrays)

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` atomically (see module docstring)."""
        save_bytes(path, self.to_bytes())

    @classmethod
    def from_bytes(cls, payload: bytes):
        meta, arrays = loads(payload)
        if meta.get("estimator") != cls.__name__:
            raise ModelFormatError(
                f"file holds a {meta.get('estimator')!r}, not a {cls.__name__}"
            )
        return cls._from_artifact(meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a model written by :meth:`save` (no pickle involved)."""
        return cls.from_bytes(Path(path).read_bytes())

    @classmethod
    def _from_artifact(cls, meta: dict, arrays: dict):
        try:
            est = cls(**meta["params"])
            est._set_artifact_state(meta["state"], arrays)
        except (KeyError, TypeError) as exc:
            raise ModelFormatError(f"model file is missing state: {exc}") from exc
        return est
