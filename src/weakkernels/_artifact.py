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

Files may come from untrusted places, so :func:`loads` reads sizes and shapes
before data and checks them against each other (as skops.io does): the member
count, every member's uncompressed size and their total are bounded before
anything is inflated (``max_bytes``; a zip bomb is refused from its header, and
reading stops at the bound should the header lie); member names, compression
methods, ``.npy`` headers (dtype, shape, byte count) and ``meta.json``'s
structure are validated; after the estimator restores its state, the fitted
attributes that compiled code reads (coefficients, intercepts, support vectors,
the random-feature spec) are checked for shape, dtype, finiteness and agreement
with ``n_features_in_`` and ``classes_``. Anything unexpected raises
:class:`ModelFormatError` naming the member. Feature names seen in ``fit``
(``feature_names_in_``) are stored and restored, so prediction checks them as
scikit-learn does.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os

import numpy as np
import scipy.sparse as sp

from weakkernels._model_file import (
    MAX_BLOCK_ELEMS,
    MAX_DEGREE,
    _corrupt,
    read_model_file,
    save_bytes,
)

# the format's names, public here as before the split
from weakkernels._model_file import MAX_BYTES as MAX_BYTES
from weakkernels._model_file import ModelFormatError as ModelFormatError
from weakkernels._model_file import _jsonable as _jsonable
from weakkernels._model_file import check_replaceable as check_replaceable
from weakkernels._model_file import dumps as dumps
from weakkernels._model_file import loads as loads
from weakkernels._model_file import max_file_bytes as max_file_bytes
from weakkernels._model_file import stored_sigma as stored_sigma
from weakkernels._model_file import temp_file_beside as temp_file_beside
from weakkernels._options import SolverOptions
from weakkernels._version import __version__

_REGISTRY: dict[str, type] = {}

def register(cls: type) -> type:
    """Class decorator: make ``cls`` loadable by :func:`load` under its name.

    A model file names its class by ``__name__`` alone, so two classes of one
    name (in two modules) would load each other's files: refused."""
    prev = _REGISTRY.get(cls.__name__)
    if prev is not None and prev.__module__ != cls.__module__:
        raise TypeError(f"{cls.__name__} of {cls.__module__} has the name of the "
                        f"registered estimator of {prev.__module__}")
    _REGISTRY[cls.__name__] = cls
    return cls


def load(path: str | os.PathLike, *, max_bytes: int = MAX_BYTES):
    """Load any weakkernels estimator saved with ``est.save(path)``.

    The file is a zip of ``meta.json`` and ``.npy`` arrays, read without
    pickle: its sizes and shapes are checked against each other and against
    the estimator's parameter constraints before the estimator is built.

    Parameters
    ----------
    path : str or os.PathLike
        A model file written by ``save``.
    max_bytes : int, default=MAX_BYTES
        The largest uncompressed size read, per member and in total.

    Returns
    -------
    estimator
        The fitted estimator, predicting bit for bit as the saved one.

    Raises
    ------
    ModelFormatError
        The file is not a model file this version can read, or is corrupt.

    See Also
    --------
    ModelFormatError : the one error type of a refused file.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from weakkernels import CCCPTSVM, load
    >>> X = np.random.default_rng(0).normal(size=(60, 2))
    >>> y = np.where(np.arange(60) < 10, (X[:, 0] > 0).astype(int), -1)
    >>> clf = CCCPTSVM().fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.wk")
    >>> clf.save(path)
    >>> bool((load(path).decision_function(X) == clf.decision_function(X)).all())
    True
    """
    return load_bytes(read_model_file(path, max_bytes=max_bytes),
                      max_bytes=max_bytes)


def load_bytes(payload: bytes, *, max_bytes: int = MAX_BYTES):
    """Load any weakkernels estimator from the bytes of a model file."""
    meta, arrays = loads(payload, max_bytes=max_bytes)
    name = meta.get("estimator")
    # Estimator modules register themselves on import; ``import weakkernels``
    # imports every public module of the package (its ``__init__.py``).
    if name not in _REGISTRY:
        raise ModelFormatError(f"unknown estimator {name!r} in model file")
    return _REGISTRY[name]._from_artifact(meta, arrays)


def _restoring_state(fit):
    """Wrap ``fit`` so that a fit that raises leaves the estimator as it was.

    scikit-learn's ``validate_data(reset=True)`` sets ``n_features_in_`` before
    our own checks can refuse the labels, so a failed refit (new width, no
    labeled point) used to leave the new width next to the old coefficients --
    and compiled prediction code then read past its arrays (RELIABILITY.md,
    section "Numerics"). Fits assign new objects to their attributes (never mutate old
    ones in place), so a shallow copy of ``__dict__`` is the whole state.
    """

    @functools.wraps(fit)
    def fit_or_restore(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    fit_or_restore._restores_state = True
    return fit_or_restore


class ArtifactMixin:
    """``save``/``load``/``to_bytes`` for estimators, and fits that restore the
    previous fitted state when they fail (:func:`_restoring_state`, applied to
    every ``fit`` a subclass defines).

    Subclasses implement ``_artifact_state() -> (meta, arrays)`` returning their
    fitted state, and ``_set_artifact_state(meta, arrays)`` restoring it.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_restores_state", False):
            cls.fit = _restoring_state(fit)

    def to_bytes(self) -> bytes:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        # A callback (progress, pruning) belongs to the fitting session, not to
        # the model: it is stored as None (and could not be stored without pickle).
        # Solver options are stored as their fields (plain JSON).
        params = {
            k: (None if callable(v) else v.to_dict() if isinstance(v, SolverOptions)
                else v)
            for k, v in self.get_params(deep=False).items()
        }
        meta, arrays = self._artifact_state()
        meta = {
            "estimator": type(self).__name__,
            "library_version": __version__,
            "params": params,
            "state": meta,
        }
        names = getattr(self, "feature_names_in_", None)
        if names is not None:  # fitted on a DataFrame with string column names
            meta["feature_names_in"] = [str(n) for n in names]
        digest = spec_digest(getattr(self, "spec_", None))
        if digest is not None:
            meta["spec_digest"] = digest
        return dumps(meta, arrays)

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` atomically (see module docstring).

        Parameters
        ----------
        path : str or os.PathLike
            The model file to write (replaced atomically if it exists).

        See Also
        --------
        weakkernels.load : reads the file back, without pickle.
        """
        save_bytes(path, self.to_bytes())

    @classmethod
    def from_bytes(cls, payload: bytes, *, max_bytes: int = MAX_BYTES):
        meta, arrays = loads(payload, max_bytes=max_bytes)
        if meta.get("estimator") != cls.__name__:
            raise ModelFormatError(
                f"file holds a {meta.get('estimator')!r}, not a {cls.__name__}"
            )
        return cls._from_artifact(meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int = MAX_BYTES):
        """Read a model written by :meth:`save` (no pickle involved)."""
        return cls.from_bytes(read_model_file(path, max_bytes=max_bytes),
                              max_bytes=max_bytes)

    @classmethod
    def _from_artifact(cls, meta: dict, arrays: dict):
        if "params" not in meta or "state" not in meta:
            raise ModelFormatError(
                "model file is missing state: meta.json needs 'params' and 'state'"
            )
        params = dict(meta["params"])
        try:
            if isinstance(params.get("solver_options"), dict):
                params["solver_options"] = SolverOptions.from_dict(
                    params["solver_options"])
            est = cls(**params)
        except (TypeError, ValueError) as exc:
            raise _corrupt("meta.json", f"params: {exc}") from exc
        try:
            est._validate_params()
            _check_params(meta["params"])
        except Exception as exc:
            raise _corrupt("meta.json", f"params: {exc}") from exc
        _check_spec(meta["state"], arrays)
        try:
            est._set_artifact_state(meta["state"], arrays)
        except ModelFormatError:
            raise
        except KeyError as exc:
            raise ModelFormatError(f"model file is missing state: {exc}") from exc
        except Exception as exc:  # a value of the wrong type or range
            raise _corrupt(
                "meta.json or an .npy member",
                f"state rejected by {cls.__name__}: {type(exc).__name__}: {exc}",
            ) from exc
        check_loaded_state(est)
        _check_spec_digest(est, meta)
        names = meta.get("feature_names_in")
        if names is not None:
            if len(names) != est.n_features_in_:
                raise _corrupt(
                    "meta.json",
                    f"{len(names)} feature names for n_features_in="
                    f"{est.n_features_in_}",
                )
            est.feature_names_in_ = np.asarray(names, dtype=object)
        return est


# ----------------------------------------------------------------------------
# checks of a loaded model, generic over the estimators
# ----------------------------------------------------------------------------

# A seeded spec is digested only where its first block's rows are cheap to
# draw: Fourier rows are drawn singly (``cols``); a Maclaurin block whole,
# up to this many weights.
_DIGEST_MAX_ELEMS = 1 << 22


def spec_digest(spec) -> str | None:
    """sha256 of what a seed-only random-feature spec draws: the first and
    last input rows (and up to 8 more) of its first frequency block and the
    block's phases (Fourier), or its first block (polynomial). A model file
    stores no frequencies, so this is what ``meta.json``'s spec (seed,
    ``n_features_in``, sigma, kernel, degree, dtype) is checked against when
    the file is loaded -- a consistent edit of ``n_features_in`` in both
    places used to load as another model. None for no spec, a Nystroem spec
    (its landmarks are a member of the file) or a block too large to draw
    at load."""
    if spec is None or hasattr(spec, "landmarks"):
        return None
    d = int(spec.d)
    if spec.is_fourier:
        cols = np.unique(np.r_[np.arange(min(d, 8)), d - 1]).astype(np.int64)
        W, second = spec.block(0, cols)
    elif spec.degree * d * spec.block_size <= _DIGEST_MAX_ELEMS:
        W, second = spec.block(0)
    else:
        return None
    h = hashlib.sha256()
    for a in (W, second):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _check_spec_digest(est, meta: dict) -> None:
    """``meta["spec_digest"]`` (files written since it exists) against the
    loaded spec's own :func:`spec_digest`."""
    stored = meta.get("spec_digest")
    if stored is None:
        return
    if not isinstance(stored, str) or spec_digest(getattr(est, "spec_", None)) != (
            stored):
        raise _corrupt(
            "meta.json", "state.spec does not draw the features this model was "
            "fitted with (spec_digest differs): its seed, n_features_in, sigma, "
            "kernel, degree or dtype was edited")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _check_params(params: dict) -> None:
    degree = params.get("degree")
    if degree is not None and (not _is_int(degree) or degree > MAX_DEGREE):
        raise ValueError(f"degree={degree!r} (at most {MAX_DEGREE})")


# The bases a feature spec may name: Fourier / Maclaurin specs store no
# "kind" (their seeds regenerate them), a Nystroem spec stores "nystroem" and
# its landmarks array. Anything else was not written by this library.
SPEC_KINDS = (None, "nystroem")


def _check_spec(state: dict, arrays: dict) -> None:
    """The random-feature spec in ``meta.json``, before FeatureSpec sees it,
    and the members it describes (a Nystroem spec's landmarks; the spec's
    seed is the model's)."""
    if "spec" not in state:
        return
    spec = state["spec"]

    def bad(why):
        return _corrupt("meta.json", f"state.spec: {why}")

    if not isinstance(spec, dict):
        raise bad("not a JSON object")
    kind = spec.get("kind")
    if kind not in SPEC_KINDS:
        raise bad(f"kind={kind!r} is not a feature basis of this library "
                  "(none for Fourier features, 'nystroem')")
    if (kind == "nystroem") != ("landmarks" in arrays):
        raise bad(f"kind={kind!r} but the file {'lacks' if kind else 'holds'} "
                  "a landmarks.npy member")
    if "seed" in state and state["seed"] != spec.get("seed"):
        raise bad(f"seed={spec.get('seed')!r} but state.seed={state['seed']!r} "
                  "(the features are drawn from the model's seed)")
    types = {"kernel": str, "dtype": str}
    for key in ("degree", "n_features_in", "block_size", "seed"):
        types[key] = "int"
    for key in ("sigma", "coef0"):
        types[key] = "real"
    for key, kind in types.items():
        v = spec.get(key)
        ok = (
            _is_int(v) if kind == "int"
            else _is_real(v) if kind == "real"
            else isinstance(v, kind)
        )
        if not ok:
            raise bad(f"{key}={v!r} is missing or of the wrong type")
    if spec["dtype"] not in ("float32", "float64"):
        raise bad(f"dtype={spec['dtype']!r}")
    if not (1 <= spec["degree"] <= MAX_DEGREE):
        raise bad(f"degree={spec['degree']} outside [1, {MAX_DEGREE}]")
    if spec["n_features_in"] < 1 or spec["block_size"] < 1:
        raise bad("n_features_in and block_size must be >= 1")
    if not (0 <= spec["seed"] < 2**63):
        raise bad(f"seed={spec['seed']} outside [0, 2**63)")
    if spec["sigma"] <= 0:
        raise bad(f"sigma={spec['sigma']} must be > 0")
    per_block = spec["n_features_in"] * spec["block_size"]
    if spec["kernel"] == "poly":
        per_block *= spec["degree"]
    if per_block > MAX_BLOCK_ELEMS:
        raise bad(f"one feature block would hold {per_block} weights")


def _float_array(est, attr: str, member: str, ndim: tuple[int, ...]):
    arr = getattr(est, attr)
    if 0 in ndim and isinstance(arr, float | np.floating):
        arr = np.asarray(arr)  # a scalar intercept_ (a float in meta.json)
    if (
        not isinstance(arr, np.ndarray)
        or arr.dtype.kind != "f"
        or arr.ndim not in ndim
        or not np.all(np.isfinite(arr))
    ):
        raise _corrupt(
            member,
            f"{attr} must be a finite float array of {' or '.join(map(str, ndim))} "
            "dimension(s)",
        )
    return arr


def _check_expansion(est, points: str, coefs: str, d: int, *, coef_ndim: int = 1,
                     shape: tuple | None = None) -> np.ndarray:
    """A kernel expansion ``f(x) = sum_j c_j k(x, p_j)`` over stored points:
    attribute ``points`` (m x ``d`` finite floats; ``shape`` given for sparse
    points, which the caller checks) and ``coefs``, finite floats of
    ``coef_ndim`` dimensions whose last axis has the m points. Returns the
    coefficients."""
    member = f"{points[:-1]}.npy"
    if shape is None:
        shape = _float_array(est, points, member, (2,)).shape
    coef = _float_array(est, coefs, f"{coefs[:-1]}.npy", (coef_ndim,))
    if shape[1] != d or coef.shape[-1] != shape[0]:
        raise _corrupt(member, f"{points} {shape} / {coefs} {coef.shape} do not "
                       f"match n_features_in={d}")
    return coef


def check_loaded_state(est) -> None:
    """Check the fitted attributes compiled code will read, against each other.

    Generic over the estimators (each restores its own state in
    ``_set_artifact_state``): whatever of ``n_features_in_``, ``classes_``,
    ``spec_``/``n_blocks_``/``coef_`` (random features), ``support_vectors_``/
    ``dual_coef_`` (exact kernels), ``X_fit_``/``coef_`` (exact AUC) and
    ``intercept_`` the estimator has must agree, be finite and have the
    dtypes the kernels take. Raises ModelFormatError naming the member.
    """
    d = getattr(est, "n_features_in_", None)
    if not _is_int(d) or not 1 <= d <= 2**31:
        raise _corrupt("meta.json", f"n_features_in={d!r}")
    classes = getattr(est, "classes_", None)
    if classes is not None:
        if (
            not isinstance(classes, np.ndarray)
            or classes.ndim != 1
            or classes.size < 2
            or np.unique(classes).size != classes.size
        ):
            raise _corrupt("classes.npy", "classes_ must hold >= 2 distinct labels")
    n_out = None  # decision columns, from the coefficients
    spec = getattr(est, "spec_", None)
    if spec is not None:
        if spec.d != d:
            raise _corrupt(
                "meta.json",
                f"state.spec.n_features_in={spec.d} but n_features_in={d}",
            )
        n_blocks = getattr(est, "n_blocks_", None)
        coef = _float_array(est, "coef_", "coef.npy", (2,))
        if not _is_int(n_blocks) or n_blocks < 1 or (
            coef.shape[1] != n_blocks * spec.block_size
        ):
            raise _corrupt(
                "coef.npy",
                f"coef_ shape {coef.shape} does not match n_blocks={n_blocks} x "
                f"block_size={spec.block_size}",
            )
        n_out = coef.shape[0]
    sv = getattr(est, "support_vectors_", None)
    if sv is not None:  # one row of dual coefficients per decision column
        shape = None  # dense: checked as a float array
        if sp.issparse(sv):  # CSR support vectors (sparse fit)
            if sv.ndim != 2 or sv.data.dtype.kind != "f" or not np.all(
                np.isfinite(sv.data)
            ):
                raise _corrupt("support_vectors_data.npy", "support_vectors_ "
                               "must be a finite float sparse matrix")
            shape = sv.shape
        n_out = _check_expansion(est, "support_vectors_", "dual_coef_", d,
                                 coef_ndim=2, shape=shape).shape[0]
    if getattr(est, "X_fit_", None) is not None:  # exact AUC models
        _check_expansion(est, "X_fit_", "coef_", d)
    if getattr(est, "centers_", None) is not None:  # kernel-basis models (SUSL, ...)
        _check_expansion(est, "centers_", "alpha_", d)
    for attr in ("platt_", "probA_", "probB_", "calibration_"):
        value = getattr(est, attr, None)
        if isinstance(value, np.ndarray) and not (
            value.dtype.kind == "f" and np.all(np.isfinite(value))
        ):
            raise _corrupt(f"{attr[:-1]}.npy", f"{attr} must be finite floats")
    if getattr(est, "intercept_", None) is not None:
        b = _float_array(est, "intercept_", "intercept.npy", (0, 1))
        if n_out is not None and b.size not in (1, n_out):
            raise _corrupt(
                "intercept.npy", f"{b.size} intercepts for {n_out} decision columns"
            )
    if classes is not None and n_out is not None:
        expected = 1 if classes.size == 2 else classes.size
        if n_out != expected:
            raise _corrupt(
                "classes.npy",
                f"{classes.size} classes need {expected} decision column(s); the "
                f"coefficients have {n_out}",
            )
