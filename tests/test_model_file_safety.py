"""Model files from untrusted places (RELIABILITY.md,
section "Numerics"). Every malformed file raises ModelFormatError naming the member;
nothing is inflated or allocated beyond bounds checked from the headers; the
feature names seen in fit survive save and load."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import weakkernels as wk
from weakkernels._artifact import ModelFormatError, load_bytes, loads

_FUZZ = Path(__file__).with_name("_model_fuzz.py")


def _tiny():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3))
    y = (X[:, 0] > 0).astype(int)
    y_semi = y.copy()
    y_semi[8:] = -1
    y_semi[:2] = [0, 1]
    return X, y, y_semi


def _members(payload):
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _zip(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


def _ramp_bytes():
    X, y, _ = _tiny()
    return X, wk.RampSVM(max_cccp_iter=3).fit(X, y).to_bytes()


def _poly_tsgs3vm_bytes():
    X, _, y_semi = _tiny()
    est = wk.TSGS3VM(kernel="poly", degree=2, max_iter=5, batch_size=4,
                     block_size=4, max_features=8, random_state=0)
    return X, est.fit(X, y_semi).to_bytes()


# ------------------------------------------------------------- item 8: zip bombs


def test_zip_bomb_is_refused_from_its_header_before_inflating():
    X, payload = _ramp_bytes()
    m = _members(payload)
    # 256 MiB of zeros deflates to ~256 KB; a valid .npy header announces it.
    n = 2**25
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (n,)}
    )
    m["bomb.npy"] = header.getvalue() + bytes(8 * n)
    bomb = _zip(m, compression=zipfile.ZIP_DEFLATED)
    del m
    assert len(bomb) < 2**20
    tracemalloc.start()
    with pytest.raises(ModelFormatError, match="'bomb.npy'.*exceeds the limit"):
        loads(bomb, max_bytes=2**24)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**23  # nothing near the 256 MiB was inflated


def test_total_uncompressed_size_is_bounded_too():
    _, payload = _ramp_bytes()
    m = _members(payload)
    big = max(len(v) for v in m.values())
    total = sum(len(v) for v in m.values())
    with pytest.raises(ModelFormatError, match="exceeds the limit"):
        loads(payload, max_bytes=max(big, total - 1))
    loads(payload, max_bytes=total)  # exactly the size: accepted


def _patch_sizes(payload: bytes, member: str, size: int) -> bytes:
    """Rewrite ``member``'s uncompressed size in the central directory."""
    b = bytearray(payload)
    name = member.encode()
    i = b.find(b"PK\x01\x02")
    while i >= 0:
        n_len = struct.unpack_from("<H", b, i + 28)[0]
        if bytes(b[i + 46 : i + 46 + n_len]) == name:
            struct.pack_into("<I", b, i + 24, size)
        i = b.find(b"PK\x01\x02", i + 4)
    return bytes(b)


def test_a_header_that_lies_about_the_size_is_refused():
    _, payload = _ramp_bytes()
    # announces 4 GiB - 1: refused by the default limit before reading
    with pytest.raises(ModelFormatError, match="'dual_coef.npy'.*exceeds"):
        loads(_patch_sizes(payload, "dual_coef.npy", 2**32 - 1))
    # announces fewer bytes than stored: reading stops at the announced size
    with pytest.raises(ModelFormatError, match="'dual_coef.npy'"):
        loads(_patch_sizes(payload, "dual_coef.npy", 10))


# ------------------------------------------------- item 9: malformed members


def _npy_claiming(shape, descr="<f8", payload=b"\0" * 64):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return header.getvalue() + payload


@pytest.mark.parametrize(
    "member_bytes, match",
    [
        (_npy_claiming((10**12, 10)), r"shape \(1000000000000, 10\)"),
        (_npy_claiming((2, 4), descr="|V8"), "dtype"),
        (_npy_claiming((2,), descr=[("a", "<f8")], payload=b"\0" * 16), "dtype"),
        (_npy_claiming((1, 1, 1, 1, 1, 8)), "shape"),
        (b"\x93NUMPY\x09\x00" + b"\0" * 32, "version"),
        (b"not an npy file", "member 'support_vectors.npy'"),
    ],
)
def test_malformed_npy_member_is_refused_naming_it(member_bytes, match):
    # Before: the shape 10**12 header raised MemoryError.
    _, payload = _ramp_bytes()
    m = _members(payload)
    m["support_vectors.npy"] = member_bytes
    with pytest.raises(ModelFormatError, match=match) as info:
        load_bytes(_zip(m))
    assert "support_vectors.npy" in str(info.value)


def _edit_meta(payload, edit):
    m = _members(payload)
    meta = json.loads(m["meta.json"])
    meta = edit(meta)
    m["meta.json"] = (meta if isinstance(meta, bytes) else json.dumps(meta).encode())
    return _zip(m)


def _set(path, value):
    def edit(meta):
        node = meta
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return meta
    return edit


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda meta: [meta], "meta.json.*not a JSON object"),  # was AttributeError
        (lambda meta: b"[" * 100_000 + b"]" * 100_000, "meta.json"),  # RecursionError
        (_set(["state"], "x"), "meta.json.*'state' must be a JSON dict"),
        (_set(["params"], [1]), "meta.json.*'params' must be a JSON dict"),
        (_set(["params", "kernel"], "gauss"), "meta.json.*params.*kernel"),
        (_set(["params", "degree"], 10**9), "meta.json.*params.*degree"),
        (_set(["params", "no_such_param"], 1), "meta.json.*params"),
        (_set(["state", "n_features_in"], "three"), "meta.json"),
        (_set(["state", "n_curves"], 10**6), "missing state|meta.json"),
        (_set(["feature_names_in"], [1, 2, 3]), "meta.json.*feature_names_in"),
        (_set(["feature_names_in"], ["a", "b"]), "meta.json.*2 feature names"),
    ],
)
def test_malformed_meta_json_is_refused_naming_it(edit, match):
    _, payload = _ramp_bytes()
    with pytest.raises(ModelFormatError, match=match):
        load_bytes(_edit_meta(payload, edit))


@pytest.mark.parametrize("where", [["state", "n_features_in"],
                                   ["state", "spec", "n_features_in"]])
def test_tampered_n_features_in_is_refused_before_predict(where):
    # Before: TSGS3VM(kernel="poly") loaded the file and predict read past the
    # weight array in compiled code (SIGSEGV in some runs).
    X, payload = _poly_tsgs3vm_bytes()
    bad = _edit_meta(payload, _set(where, 40))
    with pytest.raises(ModelFormatError, match="n_features_in"):
        load_bytes(bad)


@pytest.mark.parametrize(
    "path, value, match",
    [
        (["state", "spec", "degree"], 10**9, "spec: degree"),
        (["state", "spec", "dtype"], "float16", "spec: dtype"),
        (["state", "spec", "block_size"], 2**40, "weights|coef"),
        (["state", "spec", "seed"], -1, "spec: seed"),
        (["state", "n_blocks"], 3, "coef_ shape|coefficient count"),
    ],
)
def test_tampered_random_feature_spec_is_refused(path, value, match):
    _, payload = _poly_tsgs3vm_bytes()
    with pytest.raises(ModelFormatError, match=match):
        load_bytes(_edit_meta(payload, _set(path, value)))


def _nystroem_tsgs3vm_bytes():
    X, _, y_semi = _tiny()
    est = wk.TSGS3VM(features="nystroem", max_iter=5, selection=None,
                     random_state=0)
    return X, est.fit(X, y_semi).to_bytes()


@pytest.mark.parametrize("kind", ["weird", "fourier", 3, None])
def test_unknown_spec_kind_is_refused(kind):
    """Before: a Nystroem file whose spec kind was edited loaded silently as
    a Fourier model (scores changed by up to 2.54). Only the kinds this
    library writes load; a Nystroem kind without its landmarks (or landmarks
    under a Fourier spec) is a mismatch."""
    _, payload = _nystroem_tsgs3vm_bytes()
    bad = _edit_meta(payload, _set(["state", "spec", "kind"], kind))
    match = "landmarks.npy" if kind is None else f"kind={kind!r} is not a feature"
    with pytest.raises(ModelFormatError, match=match):
        load_bytes(bad)
    _, fourier = _poly_tsgs3vm_bytes()
    with pytest.raises(ModelFormatError, match="lacks a landmarks.npy"):
        load_bytes(_edit_meta(fourier, _set(["state", "spec", "kind"],
                                            "nystroem")))


def test_model_seed_and_spec_seed_must_agree():
    """The features are drawn from the model's seed: a file whose
    state.seed and state.spec.seed differ was edited."""
    _, payload = _poly_tsgs3vm_bytes()
    seed = json.loads(_members(payload)["meta.json"])["state"]["seed"]
    with pytest.raises(ModelFormatError, match="but state.seed"):
        load_bytes(_edit_meta(payload, _set(["state", "spec", "seed"], seed + 1)))


def _edit_both(*edits):
    def edit(meta):
        for path, fn in edits:
            node = meta
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = fn(node[path[-1]])
        return meta
    return edit


@pytest.mark.parametrize("edits", [
    [(["state", "n_features_in"], lambda v: v + 1),
     (["state", "spec", "n_features_in"], lambda v: v + 1)],
    [(["state", "seed"], lambda v: v + 1), (["state", "spec", "seed"],
                                            lambda v: v + 1)],
    [(["state", "spec", "sigma"], lambda v: v * 2)],
    [(["state", "spec", "kernel"], lambda v: "laplacian")],
], ids=["n_features_in", "seeds", "sigma", "kernel"])
@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_consistent_spec_edits_are_refused_by_the_spec_digest(edits, kernel):
    """A seed-only model file stores no frequencies: meta.json's spec is
    checked against a digest of what it draws (_artifact.spec_digest). Before,
    n_features_in edited in both places (or both seeds) loaded as another
    model."""
    X, _, y_semi = _tiny()
    est = wk.TSGS3VM(kernel=kernel, features="fourier", max_iter=5,
                     selection=None, random_state=0).fit(X, y_semi)
    payload = est.to_bytes()
    assert type(est).from_bytes(payload).to_bytes() == payload
    with pytest.raises(ModelFormatError, match="spec_digest differs"):
        load_bytes(_edit_meta(payload, _edit_both(*edits)))


def _int_fields(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _int_fields(v, (*path, k))
    elif isinstance(node, int) and not isinstance(node, bool):
        yield path, node


# integer fields of meta.json that describe no array: the fit's iteration
# count, and the polynomial degree of an RBF spec (unused by its features).
# A consistent edit of both seeds is a different, valid model.
_NOT_ARRAY_FIELDS = {("state", "n_iter"), ("state", "spec", "degree")}


@pytest.mark.parametrize("make", [
    lambda: wk.TSGS3VM(max_iter=5, selection=None, random_state=0),
    lambda: wk.TSGS3VM(features="fourier", max_iter=5, selection=None,
                       random_state=0),
    lambda: wk.FRS3VM(max_iter=5, random_state=0),
    lambda: wk.QSGS2AUC(prior=0.5, max_iter=5, random_state=0),
    lambda: wk.TSGSU(prior=0.7, max_iter=5, random_state=0),
    lambda: wk.CCCPTSVM(max_cccp_iter=3),
], ids=["TSGS3VM-nystroem", "TSGS3VM-fourier", "FRS3VM", "QSGS2AUC", "TSGSU",
        "CCCPTSVM"])
def test_every_meta_field_describing_an_array_is_cross_checked(make):
    """Each integer of meta.json's state (n_features_in, block and layer
    sizes, counts, seeds) moved by one: ModelFormatError, unless the field
    describes no array (_NOT_ARRAY_FIELDS)."""
    X, y, y_semi = _tiny()
    est = make()
    if isinstance(est, wk.TSGSU):
        y_semi = np.r_[np.ones(8, int), -np.ones(8, int)]
    payload = est.fit(X, y_semi).to_bytes()
    meta = json.loads(_members(payload)["meta.json"])
    fields = list(_int_fields({"state": meta["state"]}))
    assert any(p[-1] == "n_features_in" for p, _ in fields)
    for path, value in fields:
        bad = _edit_meta(payload, _set(list(path), value + 1))
        if path in _NOT_ARRAY_FIELDS:
            type(est).from_bytes(bad)  # loads: nothing to check it against
            continue
        with pytest.raises(ModelFormatError):
            type(est).from_bytes(bad)


def test_swapped_arrays_are_refused_naming_the_member():
    # Before: classes.npy replaced by a 1-element array loaded, then predict
    # failed with IndexError.
    _, payload = _ramp_bytes()
    m = _members(payload)
    m["classes.npy"] = m["intercept.npy"]
    with pytest.raises(ModelFormatError, match="classes.npy"):
        load_bytes(_zip(m))
    m = _members(payload)
    m["dual_coef.npy"] = m["intercept.npy"]
    with pytest.raises(ModelFormatError, match=r"dual_coef|inconsistent"):
        load_bytes(_zip(m))


def test_fuzzed_model_files_raise_only_model_format_error():
    """2000 byte flips, truncations and member edits per estimator class
    (RampSVM, CCCPTSVM, TSGS3VM rbf + poly, QSGS2AUC), in a subprocess: no
    crash, no exception but ModelFormatError, and whatever loads also
    predicts."""
    proc = subprocess.run(
        [sys.executable, str(_FUZZ), "2000", "20261123"],
        capture_output=True, text=True, timeout=900,
        env={**__import__("os").environ, "NUMBA_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, f"fuzz process died ({proc.returncode}): {proc.stderr}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["per_class"] == {"CCCPTSVM": 2000, "QSGS2AUC": 2000,
                                   "RampSVM": 2000, "TSGS3VM": 2000}
    assert result["other"] == []
    assert result["loaded"] + result["refused"] == result["n"] == 8000
    assert result["refused"] > 4000  # the mutations do reach the checks


# ------------------------------------------------- item 7: feature names


@pytest.mark.parametrize("kind", ["RampSVM", "TSGS3VM"])
def test_feature_names_survive_save_and_load(kind, tmp_path):
    # Before: the loaded model had no feature_names_in_ and accepted a
    # DataFrame with its columns swapped, predicting nonsense.
    X, y, y_semi = _tiny()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    if kind == "RampSVM":
        est = wk.RampSVM(max_cccp_iter=3).fit(df, y)
    else:
        est = wk.TSGS3VM(max_iter=5, batch_size=4, block_size=4, max_features=8,
                         random_state=0).fit(df, y_semi)
    path = tmp_path / "m.wkm"
    est.save(path)
    loaded = wk.load(path)
    np.testing.assert_array_equal(loaded.feature_names_in_, ["a", "b", "c"])
    np.testing.assert_array_equal(loaded.decision_function(df),
                                  est.decision_function(df))
    swapped = df[["b", "a", "c"]]
    for model in (est, loaded):  # the loaded model behaves as the fitted one
        with pytest.raises(ValueError, match="feature names should match"):
            model.predict(swapped)
        with pytest.raises(ValueError, match="feature names should match"):
            model.predict(df.rename(columns={"c": "z"}))
        with pytest.warns(UserWarning, match="does not have valid feature names"):
            model.predict(X)
    # a model fitted on an array stores no names and warns for none
    plain = wk.RampSVM(max_cccp_iter=3).fit(X, y)
    plain_loaded = load_bytes(plain.to_bytes())
    assert not hasattr(plain_loaded, "feature_names_in_")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain_loaded.predict(X)
