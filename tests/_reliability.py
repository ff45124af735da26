"""The bad-input catalogue shared by ``tests/test_reliability_inputs.py`` and
``tests/reliability_report.py`` (which writes the table of RELIABILITY.md).

Every :class:`Case` is one bad input fed to one estimator (or to a pipeline
function) with the exception type and the message text the user must see.
"""

from __future__ import annotations

import errno
import functools
import io
import json
import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import weakkernels as wk
from weakkernels import ModelFormatError

# ------------------------------------------------------------------ data


def semi_data(seed=0, n=120, d=4):
    """Two Gaussian classes 0/1, 30 labeled rows, the rest ``y == -1``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 1.5 * y[:, None]
    ys = y.copy()
    ys[rng.permutation(n)[: n - 30]] = -1
    return X, ys


def su_data(seed=0, n=120, d=4):
    """SU layout: rows 0..29 are 15 similar pairs (``y == 1``), the rest ``-1``."""
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.7
    X = rng.normal(size=(n, d)) + 1.5 * z[:, None]
    y = -np.ones(n, dtype=np.int64)
    X[:30] = X[np.flatnonzero(z)[:30]]
    y[:30] = 1
    return X, y


def sup_data(seed=0, n=120, d=4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return rng.normal(size=(n, d)) + 1.5 * y[:, None], y


@dataclass(frozen=True)
class EstSpec:
    make: Callable[..., object]
    data: Callable
    kind: str  # "semi" (y == -1 unlabeled), "su" (pairs), "supervised"
    weight: str  # the loss-weight parameter: C or lam
    stochastic: bool


DATA = {"semi": semi_data, "su": su_data, "supervised": sup_data}


def _make(cls, fast, **kw):
    return cls(**{**fast, **kw})


def catalogue_estimators(*, peers: bool = False) -> dict[str, EstSpec]:
    """One :class:`EstSpec` per estimator class of the model catalogue
    (``weakkernels.pipeline.registry.MODELS``), made with the ``fast`` settings
    of the first entry naming the class, on the data of its ``data_kind``.

    The bad-input catalogue covers the papers' solvers; the exact peers built
    for the comparisons (``peer`` entries: SUSL, CUU, PNU-AUC, the exact
    S2AUC) only with ``peers=True`` (the model-file round trips)."""
    from weakkernels.pipeline import registry

    out: dict[str, EstSpec] = {}
    for spec in registry.MODELS.values():
        if spec.cls is None or (spec.peer and not peers) \
                or spec.cls.__name__ in out:
            continue
        params = spec.cls().get_params()
        out[spec.cls.__name__] = EstSpec(
            functools.partial(_make, spec.cls, dict(spec.fast)),
            DATA[spec.data_kind], spec.data_kind,
            "C" if "C" in params else "lam", "batch_size" in params)
    return out


ESTIMATORS: dict[str, EstSpec] = catalogue_estimators()


def available_estimators() -> list[str]:
    """The estimators of ``weakkernels`` importable right now (others land later)."""
    out = []
    for name in ESTIMATORS:
        try:
            getattr(wk, name)
        except (ImportError, AttributeError):
            continue
        out.append(name)
    return out


# ------------------------------------------------------------------ cases


@dataclass
class Case:
    """One bad input: ``run(tmp_path)`` must raise ``exc`` matching ``match``."""

    id: str
    target: str  # estimator name, "model file" or "pipeline"
    what: str  # the bad input, in words
    run: Callable[[Path], object]
    exc: type | tuple
    match: str
    xfail: str | None = None  # reason, for a known bug left in others' code
    extra: dict = field(default_factory=dict)


def _fit(name, X, y, **params):
    return lambda tmp: ESTIMATORS[name].make(**params).fit(X, y)


@functools.cache
def _fitted(name):
    """A fitted estimator and its X (cached: the cases only read it)."""
    spec = ESTIMATORS[name]
    X, y = spec.data()
    return spec.make().fit(X, y), X


def estimator_cases(name: str) -> list[Case]:
    spec = ESTIMATORS[name]
    X, y = spec.data()
    n, d = X.shape
    cases: list[Case] = []

    def add(cid, what, run, exc, match, xfail=None):
        cases.append(Case(cid, name, what, run, exc, match, xfail))

    Xn = X.copy()
    Xn[3, 1] = np.nan
    add("x_nan", "NaN in X", _fit(name, Xn, y), ValueError, "Input X contains NaN")
    Xi = X.copy()
    Xi[5, 0] = np.inf
    add("x_inf", "inf in X", _fit(name, Xi, y), ValueError, "infinity")
    add("x_empty", "empty X (0 rows)", _fit(name, np.empty((0, d)),
                                            np.empty(0, np.int64)),
        ValueError, "0 sample")
    add("x_1d", "1-D X", _fit(name, X[:, 0], y), ValueError, "Expected 2D array")
    # sparse X is bad input only for an estimator that does not declare it
    # (the six solvers take CSR/CSC/COO; tests/test_sparse_*.py)
    sparse_ok = spec.make().__sklearn_tags__().input_tags.sparse
    if not sparse_ok:
        add("x_sparse", "sparse X (CSR)", _fit(name, sp.csr_matrix(X), y),
            TypeError, "Sparse data was passed")
    add("x_strings", "string features",
        _fit(name, np.array([["a"] * d] * n), y), ValueError,
        "could not convert string to float")
    add("x_complex", "complex features", _fit(name, X.astype(complex), y),
        ValueError, "Complex data not supported")
    add("x_no_features", "X with 0 columns", _fit(name, X[:, :0], y), ValueError,
        "0 feature")
    add("x_huge", "finite X whose squared distances overflow (|x| = 1e300)",
        _fit(name, X * 1e300, y), ValueError, "squared distances overflow float")
    if "dtype" in spec.make().get_params():
        add("x_float32_range", "X beyond the float32 range of dtype='float32' "
            "(|x| = 1e30)", _fit(name, X * 1e30, y), ValueError,
            "squared distances overflow float32")
    add("y_length", "y shorter than X", _fit(name, X, y[:-1]), ValueError,
        "inconsistent numbers of samples")
    yn = y.astype(float)
    yn[0] = np.nan
    add("y_nan", "NaN in y", _fit(name, X, yn), ValueError, "y contains NaN")
    yc = np.where(y != -1, y + 0.5, -1.0)
    add("y_continuous", "continuous y (0.5, 1.5)", _fit(name, X, yc), ValueError,
        "Unknown label type")

    if spec.kind == "semi":
        y1 = np.where(y != -1, 1, -1)
        add("y_one_class", "a single labeled class", _fit(name, X, y1), ValueError,
            "Only one class among the labeled samples")
        y0 = np.where(y == -1, 0, y)
        add("y_no_unlabeled", "no unlabeled points (no y == -1)",
            _fit(name, X, y0), ValueError, "No unlabeled samples")
        add("y_no_labeled", "no labeled points (every y == -1)",
            _fit(name, X, -np.ones_like(y)), ValueError, "No labeled samples")
    elif spec.kind == "su":
        y0 = np.where(y == -1, 1, y)
        add("y_no_unlabeled", "no unlabeled points (every row a pair row)",
            _fit(name, X, y0), ValueError, "No unlabeled points")
        add("y_no_labeled", "no similar pairs (every y == -1)",
            _fit(name, X, -np.ones_like(y)), ValueError, "No similar pairs")
        y2 = y.copy()
        y2[40] = 2
        add("y_outside", "label 2 (only 1 = pair row, -1 = unlabeled exist)",
            _fit(name, X, y2), ValueError, "malformed pairs")
        yodd = y.copy()
        yodd[30] = 1  # a run of 31 pair rows
        add("pairs_odd", "similar pairs of the wrong shape (odd run of pair rows)",
            _fit(name, X, yodd), ValueError, "malformed pairs.*consecutive pairs")
        ysplit = y.copy()
        ysplit[29] = -1  # the last pair loses its second row
        add("pairs_split", "a pair split by an unlabeled row",
            _fit(name, X, ysplit), ValueError, "malformed pairs")
        for prior, match in ((0.0, "'prior' parameter"), (1.0, "'prior' parameter"),
                             (-0.2, "'prior' parameter"),
                             (0.5, "prior=0.5 makes the SU risk undefined")):
            add(f"prior_{prior:g}", f"class prior {prior:g}",
                _fit(name, X, y, prior=prior), ValueError, match)
    else:  # supervised
        add("y_one_class", "a single class", _fit(name, X, np.ones_like(y)),
            ValueError, "Only one class")

    if name == "QSGS2AUC":
        yP = np.where(y == 1, -1, y)
        add("p_empty", "P set empty (no labeled positive)", _fit(name, X, yP),
            ValueError, "Only one class among the labeled samples")
        yN = np.where(y == 0, -1, y)
        add("n_empty", "N set empty (no labeled negative)", _fit(name, X, yN),
            ValueError, "Only one class among the labeled samples")
        y3 = y.copy()
        y3[np.flatnonzero(y == 1)[:3]] = 2
        add("y_three_classes", "three labeled classes for a two-class ranker",
            _fit(name, X, y3), ValueError, "ranks two classes")
        for prior in (0.0, 1.0):
            add(f"prior_{prior:g}", f"class prior {prior:g}",
                _fit(name, X, y, prior=prior), ValueError, "'prior' parameter")

        def score_unknown(tmp):
            est, _ = _fitted(name)
            return est.score(X[:10], np.r_[np.zeros(5, int), 7 * np.ones(5, int)])

        add("score_outside", "score() with a label outside classes_",
            score_unknown, ValueError, r"labels \[7\] not in classes_")

    add("sigma_0", "sigma = 0", _fit(name, X, y, sigma=0.0), ValueError,
        "'sigma' parameter")
    add("sigma_neg", "sigma < 0", _fit(name, X, y, sigma=-1.0), ValueError,
        "'sigma' parameter")
    w = spec.weight
    add(f"{w}_0", f"{w} = 0", _fit(name, X, y, **{w: 0.0}), ValueError,
        f"'{w}' parameter")
    add(f"{w}_neg", f"{w} < 0", _fit(name, X, y, **{w: -1.0}), ValueError,
        f"'{w}' parameter")
    add("kernel_unknown", "unknown kernel name", _fit(name, X, y, kernel="gauss"),
        ValueError, "'kernel' parameter")
    if spec.stochastic:
        add("batch_0", "batch size 0", _fit(name, X, y, batch_size=0), ValueError,
            "'batch_size' parameter")
        if name != "FRS3VM":
            add("max_features_lt_block", "max_features smaller than a block",
                _fit(name, X, y, max_features=4), ValueError,
                "smaller than one block")
    if name == "TSGS3VM":
        add("eta0_flip", "constant step eta0/T^(3/4) >= 1",
            _fit(name, X, y, solver="sgd", learning_rate="constant", eta0=1e5),
            ValueError,
            "Lower eta0")
    if name == "TSGSU":
        add("eta0_flip", "eta0 * lam >= 1 (first step zeroes the model)",
            _fit(name, X, y, solver="sgd", eta0=1e5), ValueError, "Lower eta0")
    if name == "QSGS2AUC":
        add("eta0_flip", "eta0 = 1e5 with lam = 1e-3 (shrink factor below -1)",
            _fit(name, X, y, solver="sgd", eta0=1e5, lam=1e-3),
            (ValueError, FloatingPointError),
            "Lower eta0|reduce eta0")

    # prediction
    def predict_with(Xp):
        def run(tmp):
            est, _ = _fitted(name)
            return est.predict(Xp)
        return run

    add("predict_features", "wrong feature count at predict",
        predict_with(X[:, :-1]), ValueError, f"has {d - 1} features, but .* "
        f"expecting {d} features")
    add("predict_nan", "NaN in X at predict", predict_with(Xn), ValueError,
        "Input X contains NaN")
    add("predict_empty", "empty X at predict", predict_with(np.empty((0, d))),
        ValueError, "0 sample")
    add("predict_huge", "X at predict whose squared distances overflow",
        predict_with(X * 1e300), ValueError, "squared distances overflow")
    if not sparse_ok:
        add("predict_sparse", "sparse X at predict",
            predict_with(sp.csr_matrix(X)), TypeError, "Sparse data was passed")
    add("predict_unfitted", "predict before fit",
        lambda tmp: ESTIMATORS[name].make().predict(X), NotFittedError,
        "is not fitted yet")
    return cases


# ----------------------------------------------------------- model files


def _zip_with(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


def _members(payload: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def model_file_cases(name: str) -> list[Case]:
    """Truncated, corrupt, wrong-version, pickled and mismatched model files."""
    cls = getattr(wk, name)
    cases: list[Case] = []

    def write_then_load(make_bytes, loader=None):
        def run(tmp):
            est, _ = _fitted(name)
            path = tmp / f"{name}.wkm"
            path.write_bytes(make_bytes(est))
            return (loader or wk.load)(path)
        return run

    def add(cid, what, make_bytes, match, loader=None):
        cases.append(Case(f"file_{cid}", name, what,
                          write_then_load(make_bytes, loader), ModelFormatError,
                          match))

    add("truncated", "model file truncated to half its bytes",
        lambda e: (b := e.to_bytes())[: len(b) // 2], "corrupt or truncated")
    add("empty", "empty model file", lambda e: b"", "corrupt or truncated")
    add("garbage", "random bytes as model file",
        lambda e: np.random.default_rng(0).bytes(4096), "corrupt or truncated")

    def bump_version(e):
        m = _members(e.to_bytes())
        meta = json.loads(m["meta.json"])
        meta["format_version"] = 99
        m["meta.json"] = json.dumps(meta).encode()
        return _zip_with(m)

    add("version", "model file of a future format_version", bump_version,
        "format_version 99 is not supported")
    add("pickle", "a pickled estimator instead of a model file",
        lambda e: pickle.dumps(e), "corrupt or truncated")

    def pickled_member(e):
        m = _members(e.to_bytes())
        buf = io.BytesIO()
        np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
        first = sorted(k for k in m if k.endswith(".npy"))[0]
        m[first] = buf.getvalue()
        return _zip_with(m)

    add("pickle_member", "an object-dtype (pickled) array inside the file",
        pickled_member, "corrupt or truncated.*pickle")

    def no_meta(e):
        m = _members(e.to_bytes())
        del m["meta.json"]
        return _zip_with(m)

    add("no_meta", "model file without meta.json", no_meta, "no meta.json")

    def bad_json(e):
        m = _members(e.to_bytes())
        m["meta.json"] = b"{not json"
        return _zip_with(m)

    add("bad_json", "meta.json that is not JSON", bad_json, "corrupt or truncated")

    def drop_array(e):
        m = _members(e.to_bytes())
        del m[sorted(k for k in m if k.endswith(".npy"))[0]]
        return _zip_with(m)

    add("missing_array", "model file missing an array", drop_array,
        "missing state|inconsistent")

    other = "RampSVM" if name != "RampSVM" else "TSGS3VM"
    add("wrong_class", f"{cls.__name__}.load of a file holding another estimator",
        lambda e: _fitted(other)[0].to_bytes(), f"not a {name}", loader=cls.load)
    return cases


# ---------------------------------------------------------------- pipeline


def _enospc_write(self, data):
    """``Path.write_bytes`` that writes half, then hits a full disk."""
    with open(self, "wb") as fh:
        fh.write(data[: len(data) // 2])
    raise OSError(errno.ENOSPC, "No space left on device")


def _enospc_write_text(self, text, encoding=None, errors=None, newline=None):
    return _enospc_write(self, text.encode(encoding or "utf-8"))


def pipeline_cases() -> list[Case]:
    import yaml

    from weakkernels.pipeline import datasets as ds
    from weakkernels.pipeline.params_schema import ParamsError, load_params

    base = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml")
                          .read_text())
    cases: list[Case] = []

    def params_case(cid, what, mutate, match):
        def run(tmp):
            p = json.loads(json.dumps(base))
            mutate(p)
            path = tmp / "params.yaml"
            path.write_text(yaml.safe_dump(p))
            return load_params(path)
        cases.append(Case(cid, "pipeline", what, run, ParamsError, match))

    params_case("params_misspelled", "params.yaml key misspelled (tune.n_trails)",
                lambda p: p["tune"].update(n_trails=p["tune"].pop("n_trials")),
                r"tune\.n_trails: unknown key \(did you mean 'tune\.n_trials'")
    params_case("params_wrong_type", "params.yaml value of the wrong type "
                "(tune.n_trials: 'ten')",
                lambda p: p["tune"].update(n_trials="ten"),
                r"tune\.n_trials: expected an integer >= 1, got str 'ten'")
    params_case("params_bool_as_int", "params.yaml bool where an integer belongs",
                lambda p: p["download"].update(retries=True),
                r"download\.retries: expected an integer")
    params_case("params_section_type", "params.yaml section that is not a mapping",
                lambda p: p.update(train=[1, 2]), r"train: expected a mapping")
    params_case("params_bad_choice", "params.yaml value outside its choices",
                lambda p: p["prepare"].update(scale="zscore"),
                r"prepare\.scale: expected one of \['minmax', 'maxabs', 'none'\]")
    params_case("params_dataset", "a dataset name not in the manifest (g50)",
                lambda p: p["data"].update(datasets=["g50"]),
                r"'g50' is not in the dataset manifest \(did you mean 'g50c'\?\)")
    params_case("params_password", "a password in tune.storage",
                lambda p: p["tune"].update(storage="postgresql://bob:s3cret@db/x"),
                "holds a password")

    def download_unknown(tmp):
        return ds.download(["no-such-set"], tmp / "raw", mirror=None, retries=1,
                           timeout=1.0, use_network=False, allow_unverified=False)

    cases.append(Case("download_unknown", "pipeline",
                      "download() of a dataset not in the manifest",
                      download_unknown, KeyError, "unknown dataset"))

    spec = ds.FileSpec("toy.bin", "0" * 64, None,
                       sources=("https://example.invalid/toy.bin",))

    def checksum_mirror(tmp):
        (tmp / "mirror" / "toy").mkdir(parents=True)
        (tmp / "mirror" / "toy" / "toy.bin").write_bytes(b"tampered")
        return ds.download_file(spec, "toy", tmp / "out", tmp / "mirror",
                                use_network=False, progress=False)

    cases.append(Case("checksum_mirror", "pipeline",
                      "mirror file whose sha256 does not match the manifest",
                      checksum_mirror, ds.DownloadError, r"sha256 [0-9a-f]{64} != "
                      "expected 0000"))

    def checksum_url(tmp):
        return ds.download_file(spec, "toy", tmp / "out", None, retries=1,
                                backoff=0.0, progress=False,
                                fetch=lambda url, t, p: b"tampered")

    cases.append(Case("checksum_download", "pipeline",
                      "downloaded bytes whose sha256 does not match",
                      checksum_url, ds.DownloadError, "matches no recorded hash"))

    def mirror_missing(tmp):
        return ds.download_file(spec, "toy", tmp / "out", tmp / "no-such-dir",
                                use_network=False, progress=False)

    cases.append(Case("mirror_missing", "pipeline", "a mirror path that does not "
                      "exist (network off)", mirror_missing, ds.DownloadError,
                      r"no-such-dir/toy/toy\.bin \(missing\)"))

    def enospc(kind):
        def run(tmp):
            import pytest

            import weakkernels._artifact as art
            from weakkernels.pipeline import storage

            out = {"json": tmp / "m.json", "npz": tmp / "a.npz",
                   "model": tmp / "m.wkm"}[kind]
            est = _fitted(available_estimators()[0])[0] if kind == "model" else None
            out.write_bytes(b"previous good version")
            real_fdopen = art.os.fdopen
            try:
                with pytest.MonkeyPatch.context() as mp:
                    if kind == "model":
                        mp.setattr(art.os, "fdopen",
                                   lambda fd, mode: _FullDisk(real_fdopen(fd, mode)))
                        est.save(out)
                    else:
                        mp.setattr(Path, "write_bytes", _enospc_write)
                        mp.setattr(Path, "write_text", _enospc_write_text)
                        if kind == "json":
                            storage.atomic_write_json(out, {"a": 1})
                        else:
                            storage.save_npz(out, a=np.arange(1000))
            finally:
                _check_no_partial(tmp, out)
        return run

    for kind, what in (("json", "stage JSON output (metrics, best params)"),
                       ("npz", "stage array output (prepared data, splits)"),
                       ("model", "model file (est.save)")):
        cases.append(Case(f"disk_full_{kind}", "pipeline",
                          f"disk full while writing a {what}", enospc(kind),
                          OSError, r"No space left on device: '.*(m\.json|a\.npz|"
                          r"m\.wkm)'"))
    return cases


class _FullDisk:
    """A file object whose ``write`` writes half its data, then hits a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    def write(self, data):
        self.fh.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        self.fh.flush()

    def fileno(self):
        return self.fh.fileno()


def _check_no_partial(tmp: Path, out: Path) -> None:
    """The destination keeps its old bytes and no temporary file is left."""
    assert out.read_bytes() == b"previous good version", "output was clobbered"
    leftovers = [p.name for p in tmp.iterdir() if p != out]
    assert not leftovers, f"partial files left behind: {leftovers}"


def all_cases() -> list[Case]:
    cases = []
    for name in available_estimators():
        cases += estimator_cases(name)
        cases += model_file_cases(name)
    return cases + pipeline_cases()
