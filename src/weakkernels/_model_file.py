"""The model file format: a ZIP of ``meta.json`` and ``.npy`` members, written
deterministically and read safely (bounded sizes, validated headers, no
pickle). See :mod:`weakkernels._artifact` for the format and the estimator
side (registration, ``save`` / ``load``, the checks of a restored state).
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import secrets
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_NAME = "weakkernels-model"
FORMAT_VERSION = 1
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)

# Bounds on what a model file may make the loader allocate. A model stores
# O(features) floats (random features) or its support vectors (exact kernels);
# MAX_BYTES is far beyond the models this library fits on one machine, and
# callers with larger models pass ``max_bytes``.
MAX_BYTES = 2**31
MAX_META_BYTES = 16 * 2**20  # meta.json holds parameters and scalar state
MAX_MEMBERS = 4096
_READ_CHUNK = 2**20
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_]{1,128}\.npy")
# dtype kinds an array member may have: bool, integers, floats, unicode text
# (string class labels). Never object, bytes, structured or datetime.
_ARRAY_KINDS = "biufU"
# Poly kernels loop ``degree`` times per kernel value and random Maclaurin
# features draw ``degree x d x block`` weights per block; a tampered degree must
# not make predict run for hours or allocate terabytes.
MAX_DEGREE = 10_000
MAX_BLOCK_ELEMS = 2**28


class ModelFormatError(ValueError):
    """Raised when a model file is truncated, corrupt, or of an unknown version."""


def stored_sigma(meta, sigma) -> float:
    """``sigma_`` of a kernel baseline's model file: the stored width, or --
    in files written before it was stored, when ``sigma`` could only be a
    number -- the ``sigma`` parameter."""
    value = meta.get("sigma", sigma)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
        math.isfinite(value) and value > 0
    ):
        raise ModelFormatError(
            f"model file: kernel width sigma={value!r} (stored sigma_ missing "
            "or not a finite number > 0)"
        )
    return float(value)


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


def check_replaceable(path: Path) -> None:
    """Refuse to rename a new file over anything but a regular file (or link).

    ``os.replace`` swaps directory entries: run as root, ``save("/dev/full")``
    replaced the device node itself with a model file (RELIABILITY.md, round
    three). A symbolic link is replaced as a link; its target is untouched.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise FileExistsError(
            errno.EEXIST,
            f"{_file_kind(st.st_mode)} exists at this path; refusing to replace "
            "it (only a regular file is overwritten)",
            str(path),
        )


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character "
                       "device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a non-regular file"


def temp_file_beside(path: Path) -> tuple[int, Path]:
    """Create and open an empty temporary file in ``path``'s directory.

    Created with mode ``0o666`` so the kernel applies the user's umask (0644
    under umask 022) -- ``tempfile.mkstemp`` always gives 0600, and a model
    file renamed from it was unreadable to a serving user.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def _atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write via a temporary file in the same directory and rename over ``path``
    (only if ``path`` is a regular file or absent; mode from the umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    check_replaceable(path)
    fd, tmp = temp_file_beside(path)
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


def _corrupt(member: str | None, why: str) -> ModelFormatError:
    where = f"member {member!r}: " if member else ""
    return ModelFormatError(f"corrupt or truncated model file: {where}{why}")


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """Inflate one member, never past the size its header announced."""
    chunks, total = [], 0
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(_READ_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > info.file_size:
                raise _corrupt(info.filename, "more data than its header announces")
            chunks.append(chunk)
    if total != info.file_size:
        raise _corrupt(info.filename, "fewer bytes than its header announces")
    return b"".join(chunks)


def _parse_npy(name: str, raw: bytes) -> np.ndarray:
    """A ``.npy`` member, its header checked against its byte count first."""
    fh = io.BytesIO(raw)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise _corrupt(name, f".npy format version {version} is not supported")
    if dtype.hasobject:
        raise _corrupt(name, "object arrays cannot be loaded (that would unpickle)")
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or dtype.subdtype:
        raise _corrupt(name, f"dtype {dtype.str} is not allowed in a model file")
    if any(not isinstance(n, int) or n < 0 for n in shape) or len(shape) > 4:
        raise _corrupt(name, f"invalid shape {shape}")
    offset = fh.tell()
    expected = math.prod(shape) * dtype.itemsize
    if expected != len(raw) - offset:
        raise _corrupt(
            name,
            f"header announces shape {shape} of {dtype.str} ({expected} bytes) "
            f"but the member holds {len(raw) - offset} bytes",
        )
    order = "F" if fortran else "C"
    arr = np.frombuffer(raw, dtype=dtype, offset=offset, count=math.prod(shape))
    arr = arr.reshape(shape, order=order)
    # A writable, native-byte-order, C-ordered copy: what read_array returned
    # before, so the compiled kernels see the array types they were compiled
    # (and cached) for; frombuffer alone would be read-only.
    return np.array(arr, dtype=dtype.newbyteorder("="), order="C", copy=True)


def _check_meta(meta: Any) -> dict:
    if not isinstance(meta, dict):
        raise _corrupt("meta.json", "not a JSON object")
    if meta.get("format") != FORMAT_NAME:
        raise ModelFormatError("not a weakkernels model file (format field)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"model file format_version {meta.get('format_version')!r} is not "
            f"supported by this library (expects {FORMAT_VERSION})"
        )
    for key, kind in (("estimator", str), ("params", dict), ("state", dict)):
        if key in meta and not isinstance(meta[key], kind):
            raise _corrupt("meta.json", f"{key!r} must be a JSON {kind.__name__}")
    names = meta.get("feature_names_in")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(n, str) for n in names)
    ):
        raise _corrupt("meta.json", "'feature_names_in' must be a list of strings")
    return meta


def loads(payload: bytes, *, max_bytes: int = MAX_BYTES
          ) -> tuple[dict, dict[str, np.ndarray]]:
    """Parse model-file bytes into ``(meta, arrays)``; raise ModelFormatError.

    ``max_bytes`` bounds every member's and the total uncompressed size; it is
    checked against the ZIP headers before anything is inflated.
    """
    member = None
    try:
        zf = zipfile.ZipFile(io.BytesIO(payload))
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise _corrupt(None, f"{len(infos)} members (at most {MAX_MEMBERS})")
        seen, total = set(), 0
        for info in infos:
            member = info.filename
            if member in seen:
                raise _corrupt(member, "duplicate member")
            seen.add(member)
            if member != "meta.json" and not _MEMBER_NAME.fullmatch(member):
                raise _corrupt(member, "unexpected member name")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise _corrupt(member, f"compression method {info.compress_type}")
            limit = MAX_META_BYTES if member == "meta.json" else max_bytes
            total += info.file_size
            if info.file_size > limit or total > max_bytes:
                raise _corrupt(
                    member,
                    f"uncompressed size {info.file_size} bytes (total {total}) "
                    f"exceeds the limit of {limit} per member and {max_bytes} in "
                    "all (a zip bomb?); pass max_bytes to load a larger model",
                )
        member = None
        if "meta.json" not in seen:
            raise ModelFormatError("not a weakkernels model file: no meta.json")
        member = "meta.json"
        meta = json.loads(_read_member(zf, zf.getinfo(member)).decode("utf-8"))
        meta = _check_meta(meta)
        arrays = {}
        for info in infos:
            member = info.filename
            if member.endswith(".npy"):
                arrays[member[:-4]] = _parse_npy(member, _read_member(zf, info))
    except ModelFormatError:
        raise
    except RecursionError as exc:
        raise _corrupt(member, "JSON nested too deeply") from exc
    except Exception as exc:  # untrusted bytes: one error type for any failure
        raise _corrupt(member, f"{type(exc).__name__}: {exc}") from exc
    return meta, arrays


def save_bytes(path: str | os.PathLike, payload: bytes) -> None:
    _atomic_write_bytes(Path(path), payload)


def max_file_bytes(max_bytes: int = MAX_BYTES) -> int:
    """The largest model file :func:`read_model_file` reads for ``max_bytes``:
    the members' bound plus meta.json and the ZIP records around them."""
    return max_bytes + MAX_META_BYTES + MAX_MEMBERS * 1024 + 2**16


def read_model_file(path: str | os.PathLike, *, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a model file, its type and size checked before reading.

    A FIFO would block ``load`` forever and ``/dev/zero`` or a huge file be
    read whole before any check: the file is opened without blocking, must be
    a regular file, and its size must be
    within :func:`max_file_bytes` -- else :class:`ModelFormatError`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelFormatError(
                f"{os.fspath(path)!r} is {_file_kind(st.st_mode)}, not a regular "
                "file: refusing to read it as a model file"
            )
        limit = max_file_bytes(max_bytes)
        if st.st_size > limit:
            raise ModelFormatError(
                f"{os.fspath(path)!r} is {st.st_size} bytes, beyond the {limit} a "
                f"model within max_bytes={max_bytes} can take; pass max_bytes to "
                "load a larger model"
            )
        payload = fh.read(limit + 1)  # the file may grow after fstat
    if len(payload) > limit:
        raise ModelFormatError(f"{os.fspath(path)!r} grew beyond {limit} bytes "
                               "while being read")
    return payload
