"""Fuzz the model-file loader: run as a script so a crash is a dead process.

``python tests/_model_fuzz.py N SEED`` mutates the files of tiny fitted models
``N`` times per estimator class (split evenly between a class's files) and
prints one JSON object: how many mutated files loaded (and then predicted), how
many were refused with ``ModelFormatError``, per class, and every other outcome
(any other exception, at load or at predict). The test
(``test_model_file_safety.py``) runs it in a subprocess, so a segmentation
fault or an abort shows up as a non-zero exit code, not as a dead test runner.

Mutations: raw byte flips anywhere in the file, truncations, and -- since the
ZIP CRC catches most raw flips before any parsing -- flips, truncations and
value edits inside one member, written back into a valid ZIP so that the
``.npy`` and JSON parsers and the state checks see them.
"""

from __future__ import annotations

import copy
import functools
import io
import json
import sys
import warnings
import zipfile

import numpy as np

import weakkernels as wk
from weakkernels._artifact import ModelFormatError, load_bytes


def tiny_models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3))
    y = (X[:, 0] > 0).astype(int)
    y_semi = y.copy()
    y_semi[8:] = -1
    y_semi[:2] = [0, 1]
    models = [
        wk.RampSVM(max_cccp_iter=3).fit(X, y),
        wk.CCCPTSVM(max_cccp_iter=3).fit(X, y_semi),
        wk.TSGS3VM(max_iter=5, batch_size=4, block_size=4, max_features=8,
                   random_state=0).fit(X, y_semi),
        wk.TSGS3VM(kernel="poly", degree=2, max_iter=5, batch_size=4, block_size=4,
                   max_features=8, random_state=0).fit(X, y_semi),
        wk.QSGS2AUC(max_iter=5, batch_size=4, block_size=4, max_features=8,
                    random_state=0).fit(X, y_semi),
    ]
    return X, models


@functools.lru_cache(maxsize=16)
def _parsed(payload: bytes) -> tuple:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return tuple((n, zf.read(n)) for n in zf.namelist())


def _members(payload):
    return dict(_parsed(payload))  # parsed once per model, copied per mutation


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in members.items():
            zf.writestr(zipfile.ZipInfo(k, date_time=(1980, 1, 1, 0, 0, 0)), v)
    return buf.getvalue()


def _flip(b: bytes, rng, k=None) -> bytes:
    b = bytearray(b)
    if not b:
        return bytes(b)
    for _ in range(k or int(rng.integers(1, 9))):
        b[int(rng.integers(len(b)))] = int(rng.integers(256))
    return bytes(b)


_JSON_VALUES = [0, -1, 1, 2**40, 10**12, -(2**63), 1.5, 1e308, "x", "", None, True,
                [], {}, [1, 2], {"a": 1}, "float16", "poly", "rbf"]


def _odd_value(rng):
    # a copy: inserting the shared [] / {} twice, then editing one, would make
    # the tree circular
    return copy.deepcopy(_JSON_VALUES[int(rng.integers(len(_JSON_VALUES)))])


def _edit_json(obj, rng):
    """Replace one value somewhere in the JSON tree by an odd one."""
    if isinstance(obj, dict) and obj:
        keys = sorted(obj)
        k = keys[int(rng.integers(len(keys)))]
        if rng.random() < 0.15:
            del obj[k]
        elif isinstance(obj[k], dict | list) and obj[k] and rng.random() < 0.7:
            _edit_json(obj[k], rng)
        else:
            obj[k] = _odd_value(rng)
    elif isinstance(obj, list) and obj:
        i = int(rng.integers(len(obj)))
        if isinstance(obj[i], dict | list) and obj[i] and rng.random() < 0.7:
            _edit_json(obj[i], rng)
        else:
            obj[i] = _odd_value(rng)


def mutate(payload: bytes, rng) -> tuple[str, bytes]:
    mode = int(rng.integers(6))
    if mode == 0:
        return "raw flip", _flip(payload, rng)
    if mode == 1:
        return "raw truncation", payload[: int(rng.integers(len(payload)))]
    m = _members(payload)
    names = sorted(m)
    name = names[int(rng.integers(len(names)))]
    if mode == 2:  # flips inside one member (header or data), valid ZIP around
        b = m[name]
        if rng.random() < 0.5 and name.endswith(".npy"):
            head = min(len(b), 128)  # the .npy header
            b = _flip(b[:head], rng) + b[head:]
        else:
            b = _flip(b, rng)
        m[name] = b
        return f"member flip {name}", _zip(m)
    if mode == 3:
        m[name] = m[name][: int(rng.integers(len(m[name]) + 1))]
        return f"member truncation {name}", _zip(m)
    if mode == 4:  # an edited value of meta.json (types, ranges, shapes)
        meta = json.loads(m["meta.json"])
        for _ in range(int(rng.integers(1, 4))):
            _edit_json(meta, rng)
        m["meta.json"] = json.dumps(meta).encode()
        return "meta edit", _zip(m)
    # mode 5: swap in another member's bytes, or a reshaped array
    other = names[int(rng.integers(len(names)))]
    if name.endswith(".npy") and other.endswith(".npy") and rng.random() < 0.5:
        arr = np.load(io.BytesIO(m[other]), allow_pickle=False)
        buf = io.BytesIO()
        np.save(buf, arr.reshape(-1)[: max(0, arr.size - 1)], allow_pickle=False)
        m[name] = buf.getvalue()
    else:
        m[name] = m[other]
    return f"member swap {name}<-{other}", _zip(m)


def main(n: int, seed: int) -> dict:
    """``n`` mutations per estimator class (its files take turns)."""
    X, models = tiny_models()
    by_class: dict[str, list[bytes]] = {}
    for est in models:
        by_class.setdefault(type(est).__name__, []).append(est.to_bytes())
    rng = np.random.default_rng(seed)
    loaded = refused = 0
    per_class = {}
    other: list[str] = []
    for cls, payloads in sorted(by_class.items()):
        per_class[cls] = n
        for i in range(n):
            how, bad = mutate(payloads[i % len(payloads)], rng)
            try:
                est = load_bytes(bad)
            except ModelFormatError:
                refused += 1
                continue
            except BaseException as exc:  # noqa: BLE001 - report, do not hide
                other.append(f"load {cls} [{how}]: {type(exc).__name__}: {exc}"[:300])
                continue
            loaded += 1
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.predict(X)
            except BaseException as exc:  # noqa: BLE001
                other.append(f"predict {cls} [{how}]: {type(exc).__name__}: "
                             f"{exc}"[:300])
    return {"n": n * len(by_class), "per_class": per_class, "loaded": loaded,
            "refused": refused, "other": other}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
