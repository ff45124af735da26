"""Atomic file output, hashing and ``params.yaml`` access for the pipeline stages.

Every stage output goes through a temporary file in the destination directory
followed by :func:`os.replace`, so an interrupted stage never leaves a partial
file behind that a later stage (or DVC) could mistake for a finished one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from weakkernels._artifact import _jsonable, check_replaceable, temp_file_beside

__all__ = [
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "canonical_hash",
    "load_npz",
    "load_sparse_npz",
    "repo_root",
    "save_npz",
    "save_sparse_npz",
    "sha256_file",
]


def repo_root(start: str | os.PathLike | None = None) -> Path:
    """The directory holding ``params.yaml`` (searched upwards from ``start``/cwd)."""
    here = Path(start or os.getcwd()).resolve()
    for cand in (here, *here.parents):
        if (cand / "params.yaml").exists() or (cand / ".git").exists():
            return cand
    return here


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` and rename the result over ``path``.

    The temporary file lives in the same directory (same file system), so the
    final :func:`os.replace` is atomic; on any error the temporary is removed.
    The file gets the user's umask (0644 under 022); an existing ``path``
    that is not a regular file (a device, a FIFO) is refused, not replaced.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_replaceable(path)  # never rename over a device, FIFO or directory
    fd, tmp = temp_file_beside(path)  # mode 0o666 & ~umask, not mkstemp's 0600
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
    except BaseException as exc:
        tmp_path.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # name the output, e.g. on a full disk
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(payload))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=False)
    return atomic_write_text(path, text + "\n")


def save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    """Atomically write an uncompressed ``.npz`` (object arrays are refused)."""
    for name, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise TypeError(f"array {name!r} has object dtype")
    # np.savez stamps every member with the current time: write the zip here
    # with a fixed date, so equal arrays give byte-identical files (DVC hashes).
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    return atomic_write_bytes(path, buf.getvalue())


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_sparse_npz(path: str | os.PathLike, X) -> Path:
    """Atomically write a CSR matrix in ``scipy.sparse.save_npz``'s layout.

    The members are scipy's (``data``, ``indices``, ``indptr``, ``format``,
    ``shape``), so :func:`scipy.sparse.load_npz` reads the file. It goes
    through this module's atomic ``.npz`` writer, not scipy's, whose zip
    members carry the current time: DVC would see a new file on every run.
    """
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()  # canonical form: sorted indices, no duplicates
    return save_npz(path, indices=X.indices, indptr=X.indptr,
                    format=np.array(b"csr"), shape=np.array(X.shape),
                    data=X.data)


def load_sparse_npz(path: str | os.PathLike):
    """Read a :func:`save_sparse_npz` file as a CSR matrix (``scipy.sparse``;
    no pickles: scipy loads it with ``allow_pickle=False``)."""
    return sp.load_npz(path).tocsr()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def canonical_hash(obj: Any, length: int = 12) -> str:
    """Short sha256 of the canonical JSON form of ``obj`` (sorted keys)."""
    text = json.dumps(_jsonable(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]
