"""Validation of ``params.yaml``: a misspelled key or a value of the wrong type
stops the stage with one error that names every problem, before any work.

Rules
-----
* every key the stages read has a declared type and range (below) and is
  required: ``params.yaml`` is the one place defaults live (the stages index
  their sections, never ``.get(key, default)``), so a missing key is an error
  naming its path, never a silently different experiment;
* a value of another type or outside its range is an error naming the key, the
  expected type and the value found (list elements too: a negative
  ``split.ssl.n_unlabeled`` is refused);
* a model setting both fixed (``models.fixed``) and searched by ``tune`` is an
  error (the searched value would silently win);
* an unknown key *close to* a known one (``n_trails``) is an error with a
  "did you mean" hint -- it would otherwise be silently ignored and the default
  used;
* an unknown key that resembles no known key only warns, so a stage added by
  another change does not break the pipeline before this schema learns it;
* ``data.datasets`` names must be in the dataset manifest or ``data.local``
  and ``models.names`` in the model registry (the nearest valid name is
  suggested); a ``data.local`` entry names a file that exists, a known format
  and its label column, under a name that is no shipped set's, and is in
  neither ``split.official`` nor ``split.su.datasets``;
* numbers are finite (NaN and infinity pass every range comparison);
* lists of seeds, sizes and names are non-empty and repeat nothing;
* cross-key rules: ``tune.split_seed`` is one of ``split.seeds``,
  ``train.seeds`` are among them and never the tuning split, the unlabeled
  sizes of ``tune`` / ``train`` are sizes of the splits, ``tune.cv_folds`` is
  0 or at least 2, ``tune.storage`` is a storage URL, ``mlflow.experiment``
  is not empty; names under ``models.fixed``, ``fixed_by_dataset`` and
  ``tune.space`` are models of the registry (of ``models.names`` for
  ``tune.space``) and data sets of ``data.datasets``;
* every fixed setting and every ``tune.space`` value (each end of a range,
  each choice) is built into its estimator and checked by the estimator's
  own parameter constraints: an unknown parameter or a value out of range
  names its key here instead of failing every trial of ``tune``;
* no password in a storage URL: credentials come from the environment
  (``$WK_OPTUNA_STORAGE``, ``PGPASSWORD`` or ``~/.pgpass``), never from a file
  that DVC hashes and MLflow logs.
"""

from __future__ import annotations

import difflib
import inspect
import math
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from weakkernels.pipeline.datasets import DATASETS
from weakkernels.pipeline.local_data import entry_problems
from weakkernels.pipeline.registry import (
    MODELS,
    FitContext,
    build,
    check_fixed_vs_searched,
    is_choices,
)

__all__ = ["ParamsError", "SCHEMA", "load_params", "validate_params"]


class ParamsError(ValueError):
    """``params.yaml`` holds a misspelled key, a wrong type or a forbidden value."""


@dataclass(frozen=True)
class T:
    """A leaf type: ``kind`` in int/float/bool/str/any/map, ``list_of`` for lists."""

    kind: str
    nullable: bool = False
    list_of: bool = False
    min: float | None = None
    choices: tuple | None = None

    def describe(self) -> str:
        base = {"int": "an integer", "float": "a finite number", "bool": "true/false",
                "str": "a string", "map": "a mapping", "any": "a value"}[self.kind]
        if self.list_of:
            base = f"a list of {base.split(' ', 1)[1]}s"
        if self.choices:
            base = f"one of {list(self.choices)}"
        if self.min is not None:
            base += f" >= {self.min:g}"
        return base + (" or null" if self.nullable else "")


def _ok_scalar(t: T, v: Any) -> bool:
    if t.kind == "any":
        return True
    if t.kind == "bool":
        return isinstance(v, bool)
    if isinstance(v, bool):  # YAML true/false is not a number
        return False
    if t.kind == "int":
        ok = isinstance(v, int)
    elif t.kind == "float":  # NaN and infinity pass every comparison: refused
        ok = isinstance(v, int | float) and math.isfinite(v)
    elif t.kind == "str":
        ok = isinstance(v, str)
    elif t.kind == "map":
        return isinstance(v, Mapping)
    else:  # pragma: no cover - schema typo
        raise AssertionError(t.kind)
    if ok and t.choices is not None and v not in t.choices:
        return False
    if ok and t.min is not None and v < t.min:
        return False
    return ok


def _ok(t: T, v: Any) -> bool:
    if v is None:
        return t.nullable
    if t.list_of:
        return isinstance(v, list) and all(_ok_scalar(t, x) for x in v)
    return _ok_scalar(t, v)


INT0, INT1 = T("int", min=0), T("int", min=1)
SIZES = T("int", list_of=True, min=1)  # unlabeled sizes: positive integers
SCHEMA: dict[str, Any] = {
    # data.local: {<name>: {path, format, label}}, checked by
    # local_data.entry_problems (a map of the user's names, not fixed keys)
    # (a map, never null: dvc.yaml's foreach stage iterates over it)
    "data": {"datasets": T("str", list_of=True), "local": T("map")},
    "download": {
        "mirror": T("str", nullable=True),
        "use_network": T("bool"),
        "retries": INT0,
        "timeout": T("float", min=0),
        "allow_unverified": T("bool"),
    },
    # scale: minmax (dense sets; a sparse set gets maxabs instead, which keeps
    # zeros zero), maxabs or none.  sparse: auto keeps a LIBSVM set CSR when
    # its stored density nnz / (n d) is below sparse_density; always / never.
    "prepare": {"scale": T("str", choices=("minmax", "maxabs", "none")),
                "sparse": T("str", choices=("auto", "always", "never")),
                "sparse_density": T("float", min=0)},
    "split": {
        "seeds": T("int", list_of=True, min=0),
        "official": T("str", list_of=True),
        "ssl": {"n_labeled": INT1, "n_unlabeled": SIZES,
                "n_val": INT0, "n_test": INT1, "transductive": T("bool")},
        "su": {"datasets": T("str", list_of=True), "positive": T("any"),
               "n_pairs": INT1, "n_unlabeled": SIZES,
               "n_val": INT0},
    },
    "models": {"names": T("str", list_of=True), "fixed": T("map", nullable=True),
               "fixed_by_dataset": T("map", nullable=True)},
    "tune": {
        "n_trials": INT1,
        "n_startup_trials": INT0,
        "start_with_defaults": T("bool"),
        "sampler_seed": INT0,
        "split_seed": INT0,
        "n_unlabeled": T("int", nullable=True, min=1),
        "callback_every": INT1,
        "cv_folds": INT0,
        "cv_max_labeled": INT0,
        "pruner": {"n_startup_trials": INT0, "n_warmup_steps": INT0},
        "storage": T("str", nullable=True),
        "fail_stale_running": T("bool"),
        "timeout_per_study": T("float", nullable=True, min=0),
        "space": T("map", nullable=True),
        "c_star_fallback": T("str", choices=("one_se", "none")),
    },
    "train": {
        "seeds": T("int", list_of=True, min=0),
        "n_unlabeled": T("int", nullable=True, list_of=True, min=1),
        "callback_every": INT1,
        "log_curves": T("bool"),
        "log_pyfunc": T("bool"),
    },
    "evaluate": {"check_reload": T("bool")},
    "mlflow": {"experiment": T("str")},
    "compute": {"scheduler": T("str", choices=("local", "dask")),
                "address": T("str", nullable=True)},
}

# ``scheme://user:password@host``: a password in a URL.
_PASSWORD_IN_URL = re.compile(r"://[^/:@\s]+:[^@/\s]+@")


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _misspelling_of(key: str, known: list[str]) -> list[str]:
    """Known keys at most two edits away (``n_trails`` -> ``n_trials``): a typo,
    not a new setting such as ``timeout_per_trial`` beside ``timeout_per_study``."""
    if len(key) < 4:
        return []
    dist = sorted((_edit_distance(key, k), k) for k in known)
    return [k for d, k in dist[:1] if d <= 2]


def _walk(schema: dict, node: Any, prefix: str, errors: list, unknown: list) -> None:
    if not isinstance(node, Mapping):
        errors.append(f"{prefix.rstrip('.') or 'params.yaml'}: expected a mapping, "
                      f"got {type(node).__name__} {node!r}")
        return
    for key in schema:
        if key not in node:
            errors.append(f"{prefix}{key}: required key missing")
    for key, value in node.items():
        name = f"{prefix}{key}"
        if key not in schema:
            close = _misspelling_of(str(key), list(schema))
            if close:
                errors.append(f"{name}: unknown key (did you mean "
                              f"'{prefix}{close[0]}'?)")
            else:
                unknown.append(name)
            continue
        spec = schema[key]
        if isinstance(spec, dict):
            _walk(spec, value, f"{name}.", errors, unknown)
        elif not _ok(spec, value):
            errors.append(f"{name}: expected {spec.describe()}, got "
                          f"{type(value).__name__} {value!r}")


def _fixed_vs_searched(params: Mapping) -> list[str]:
    """``models.fixed[m]`` / ``fixed_by_dataset[d][m]`` keys that ``tune`` searches."""
    models = params.get("models")
    tune = params.get("tune")
    if not isinstance(models, Mapping) or not isinstance(tune, Mapping):
        return []
    space = tune.get("space") or {}
    if not isinstance(space, Mapping):
        return []
    places = [(f"models.fixed.{m}", m, v)
              for m, v in (models.get("fixed") or {}).items()]
    for ds, per in (models.get("fixed_by_dataset") or {}).items():
        if isinstance(per, Mapping):
            places += [(f"models.fixed_by_dataset.{ds}.{m}", m, v)
                       for m, v in per.items()]
    out = []
    for path, model, fixed in places:
        if model not in MODELS or not isinstance(fixed, Mapping):
            continue
        try:
            check_fixed_vs_searched(model, dict(fixed), space.get(model) or {})
        except ValueError as exc:
            out.append(f"{path}: {exc}")
    return out


_CHOICE_TYPES = (str, bool, int, float)  # what Optuna stores for a categorical
# constructor parameters every fit sets itself (registry.build / _ours): from
# the fit's context, or from a searched parameter
_FROM_CONTEXT = ("random_state", "callback", "callback_every")


def _set_by_fit(spec, key: str) -> str | None:
    """Where every fit takes constructor parameter ``key`` from, when it is
    not the tuned value: a searched parameter, or the fit's context."""
    if key in _FROM_CONTEXT:
        return "the fit's context"
    if key == "sigma" and "sigma_rel" in spec.space:
        return "sigma_rel"
    if key == "C_star" and spec.c_star:
        return "C and c_star_scale"
    return None


def _space_errors(params: Mapping) -> list[str]:
    """Shapes of ``tune.space.<model>.<param>``: a scalar (fixed), a range
    ``[low, high]`` / ``[low, high, log]`` of a parameter the model searches,
    or ``{choices: [...]}`` over a searched parameter or a constructor
    parameter of this package's estimators. Anything
    else used to be ignored without a word (a range of an unsearched
    parameter was never sampled)."""
    tune = params.get("tune")
    space = tune.get("space") if isinstance(tune, Mapping) else None
    if not isinstance(space, Mapping):
        return []
    out = []
    for model, per in space.items():
        if model not in MODELS or per is None:
            continue  # unknown models: reported with models.names' check
        if not isinstance(per, Mapping):
            out.append(f"tune.space.{model}: expected a map of parameters")
            continue
        spec = MODELS[model]
        # this package's factories pass every parameter to the constructor; a
        # baseline's factory reads only its searched ones
        takes = set(spec.space) | ({
            k for k in inspect.signature(spec.cls.__init__).parameters
            if k != "self"} if spec.ours else set())
        for key, ov in per.items():
            where = f"tune.space.{model}.{key}"
            if key not in takes:
                out.append(f"{where}: {model} has no parameter {key!r}; searched: "
                           f"{sorted(spec.space)}")
            elif src := _set_by_fit(spec, key):
                out.append(f"{where}: every fit sets it from {src}; search or fix "
                           "that instead")
            elif is_choices(ov):
                ch = ov["choices"]
                if (not isinstance(ch, list) or len(ch) < 2
                        or not all(isinstance(c, _CHOICE_TYPES) for c in ch)):
                    out.append(f"{where}.choices: expected a list of at least two "
                               f"strings / numbers / booleans, got {ch!r}")
            elif isinstance(ov, Mapping):
                out.append(f"{where}: a map must be {{choices: [...]}}, got {ov!r}")
            elif isinstance(ov, list):
                if key not in spec.space:
                    out.append(f"{where}: a range only for a searched parameter "
                               f"({sorted(spec.space)}); a categorical search "
                               "is {choices: [...]}")
                elif (len(ov) not in (2, 3)
                      or not all(isinstance(v, int | float) for v in ov[:2])
                      or ov[0] > ov[1]):
                    out.append(f"{where}: expected [low, high] or [low, high, log] "
                               f"with low <= high, got {ov!r}")
                elif not all(math.isfinite(v) for v in ov[:2]):
                    out.append(f"{where}: the range's ends must be finite, got "
                               f"{ov!r}")
                elif (bool(ov[2]) if len(ov) > 2 else spec.space[key][3]) \
                        and ov[0] <= 0:
                    out.append(f"{where}: a log range needs low > 0, got {ov!r}")
    return out


def _unknown_names(where: str, names: Any, known: Mapping, what: str) -> list[str]:
    """Names in ``names`` missing from ``known``, each with the nearest valid
    one (difflib) -- an unknown model used to pass here and fail later with
    ``KeyError`` deep in a stage."""
    if not isinstance(names, list):
        return []
    out = []
    for name in names:
        if isinstance(name, str) and name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"{where}: {name!r} is not in {what}{hint}; known: "
                       f"{sorted(known)}")
    return out


def _section(params: Mapping, *path: str) -> Any:
    node: Any = params
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _list_rules(params: Mapping) -> list[str]:
    """Lists that must be non-empty and without repeats (a repeated seed is
    the same split twice; an empty list runs nothing)."""
    out = []
    for path in (("split", "seeds"), ("train", "seeds"),
                 ("split", "ssl", "n_unlabeled"), ("split", "su", "n_unlabeled"),
                 ("data", "datasets"), ("models", "names"), ("train", "n_unlabeled")):
        v = _section(params, *path)
        if not isinstance(v, list):
            continue
        where = ".".join(path)
        if not v and path != ("train", "n_unlabeled"):
            out.append(f"{where}: empty; list at least one")
        dup = sorted({repr(x) for x in v if v.count(x) > 1})
        if dup:
            out.append(f"{where}: {', '.join(dup)} listed more than once")
    return out


def _cross_rules(params: Mapping) -> list[str]:
    """Rules between keys: the tuning split is one of the splits, never a
    reported one; unlabeled sizes are split sizes; names are known."""
    out = []
    seeds = _section(params, "split", "seeds")
    split_seed = _section(params, "tune", "split_seed")
    train_seeds = _section(params, "train", "seeds")
    if isinstance(seeds, list) and isinstance(split_seed, int):
        if split_seed not in seeds:
            out.append(f"tune.split_seed: {split_seed} is not in split.seeds {seeds}")
    if isinstance(seeds, list) and isinstance(train_seeds, list):
        missing = [s for s in train_seeds if s not in seeds]
        if missing:
            out.append(f"train.seeds: {missing} not in split.seeds {seeds}")
        if split_seed in train_seeds:
            out.append(f"train.seeds: {split_seed} is tune.split_seed, the tuning "
                       "split; the reported splits must not be the one tuned on")
    sizes = [n for key in ("ssl", "su")
             for n in (_section(params, "split", key, "n_unlabeled") or [])]
    for where, value in (("tune.n_unlabeled", _section(params, "tune", "n_unlabeled")),
                         ("train.n_unlabeled", _section(params, "train",
                                                        "n_unlabeled"))):
        for n in value if isinstance(value, list) else [value]:
            if isinstance(n, int) and not isinstance(n, bool) and sizes \
                    and n not in sizes:
                out.append(f"{where}: {n} is not an unlabeled size of the splits "
                           f"(split.ssl.n_unlabeled / split.su.n_unlabeled: "
                           f"{sizes}); null takes the splits' own")
    folds = _section(params, "tune", "cv_folds")
    if folds == 1:
        out.append("tune.cv_folds: 1 is no cross-validation; 0 (the validation "
                   "split) or at least 2 folds")
    exp = _section(params, "mlflow", "experiment")
    if isinstance(exp, str) and not exp.strip():
        out.append("mlflow.experiment: empty; name the MLflow experiment")
    storage = _section(params, "tune", "storage")
    if isinstance(storage, str) and not _STORAGE_URL.match(storage):
        out.append(f"tune.storage: {storage!r} is not a storage URL: null, "
                   "sqlite:///<path>, journal:<path>, postgresql[+driver]://... "
                   "or mysql[+driver]://...")
    return out


def _local_rules(params: Mapping, root) -> list[str]:
    """``data.local`` entries (:func:`~weakkernels.pipeline.local_data.
    entry_problems`: keys, format, the file exists), names apart from the
    shipped sets', and only the split kinds a table with its own unlabeled
    rows has (no official splits, no similar pairs)."""
    local = _section(params, "data", "local")
    if not isinstance(local, Mapping):
        return []
    out = []
    for name, entry in local.items():
        if name in DATASETS:
            out.append(f"data.local.{name}: {name!r} is a shipped data set; give "
                       "your table another name")
            continue
        out.extend(entry_problems(name, entry, root))
    for path, lacks in ((("split", "official"), "official splits"),
                        (("split", "su", "datasets"), "similar-pair (SU) splits "
                         "(they draw pairs and unlabeled rows from fully labeled "
                         "data)")):
        names = _section(params, *path)
        for name in names if isinstance(names, list) else []:
            if name in local:
                out.append(f"{'.'.join(path)}: {name!r} is a data.local table; "
                           f"it has no {lacks}")
    return out


_STORAGE_URL = re.compile(r"^(sqlite:///.+|journal:.+|(postgresql|mysql)"
                          r"(\+\w+)?://.+)$")


def _names_rules(params: Mapping) -> list[str]:
    """Model and data-set names under ``models.fixed``, ``fixed_by_dataset``
    and ``tune.space``: a typo there used to be silently ignored."""
    out = []
    names = _section(params, "models", "names")
    names = names if isinstance(names, list) else []
    datasets = _section(params, "data", "datasets")
    datasets = datasets if isinstance(datasets, list) else []
    fixed = _section(params, "models", "fixed")
    per_ds = _section(params, "models", "fixed_by_dataset")
    space = _section(params, "tune", "space")
    places = []
    if isinstance(fixed, Mapping):
        places += [("models.fixed", m) for m in fixed]
    if isinstance(space, Mapping):
        places += [("tune.space", m) for m in space]
    if isinstance(per_ds, Mapping):
        for ds, per in per_ds.items():
            if ds not in datasets:
                out.append(f"models.fixed_by_dataset.{ds}: {ds!r} is not in "
                           f"data.datasets {datasets}")
            if isinstance(per, Mapping):
                places += [(f"models.fixed_by_dataset.{ds}", m) for m in per]
            else:
                out.append(f"models.fixed_by_dataset.{ds}: expected a map of "
                           "models")
    for where, model in places:
        if model not in MODELS:
            out.extend(_unknown_names(where, [model], MODELS, "the model registry"))
        elif model not in names and where == "tune.space":
            out.append(f"tune.space.{model}: {model!r} is not in models.names")
    return out


# Any context: the check builds estimators, it fits none.
_CHECK_CONTEXT = FitContext(n_labeled=20, n_unlabeled=20, seed=0, prior=0.5)


def _points(spec, overrides: Mapping) -> list[tuple[str, dict]]:
    """Searched values to build the estimator with: each end of every range
    (``tune.space`` overrides included) and every choice, one at a time, with
    the other parameters at their ranges' low ends."""
    base, ends = {}, []
    for key, (_kind, low, high, _log) in spec.space.items():
        ov = overrides.get(key)
        if isinstance(ov, list | tuple) and len(ov) >= 2:
            low, high = ov[0], ov[1]
        elif ov is not None and not is_choices(ov) and not isinstance(ov, Mapping):
            low = high = ov
        base[key] = low
        ends.append((key, high))
    for key, ov in overrides.items():
        if is_choices(ov) and isinstance(ov["choices"], list) and ov["choices"]:
            base[key] = ov["choices"][0]
            ends += [(key, c) for c in ov["choices"][1:]]
    out = [("", base)]
    out += [(f".{k}", {**base, k: v}) for k, v in ends if base.get(k) != v]
    return out


def _built_rules(params: Mapping) -> list[str]:
    """Every ``models.fixed`` / ``fixed_by_dataset`` setting and ``tune.space``
    value built into its estimator and checked by the estimator's own
    parameter constraints (scikit-learn's ``_validate_params``): an unknown
    parameter or a value out of its range is refused here, naming the key,
    instead of failing every trial (or raising a TypeError) in ``tune``."""
    names = _section(params, "models", "names")
    if not isinstance(names, list):
        return []
    fixed = _section(params, "models", "fixed") or {}
    per_ds = _section(params, "models", "fixed_by_dataset") or {}
    space = _section(params, "tune", "space") or {}
    if not all(isinstance(x, Mapping) for x in (fixed, per_ds, space)):
        return []
    out = []
    for model in names:
        if model not in MODELS:
            continue
        spec = MODELS[model]
        ov = space.get(model) or {}
        places = [(f"models.fixed.{model}", fixed.get(model) or {})]
        places += [(f"models.fixed_by_dataset.{ds}.{model}",
                    {**(fixed.get(model) or {}), **(per.get(model) or {})})
                   for ds, per in per_ds.items()
                   if isinstance(per, Mapping) and model in per]
        for where, settings in places:
            if not isinstance(settings, Mapping) or not isinstance(ov, Mapping):
                continue
            # the settings over the model's own search space first, then over
            # the tune.space overrides: the error names the key that broke it
            problem = _first_problem(model, _points(spec, {}), settings)
            if problem:
                out.append(f"{where}: {problem[1]}")
            elif ov and (problem := _first_problem(model, _points(spec, ov),
                                                   settings)):
                out.append(f"tune.space.{model}{problem[0]}: {problem[1]}")
    return out


def _first_problem(model, points, settings) -> tuple[str, str] | None:
    for suffix, point in points:
        problem = _build_problem(model, point, dict(settings))
        if problem:
            return suffix, problem
    return None


def _build_problem(model: str, point: dict, settings: dict) -> str | None:
    try:
        est = build(model, point, settings, _CHECK_CONTEXT)
        validate = getattr(est, "_validate_params", None)
        if validate is not None:
            validate()
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def validate_params(params: Any, *, source: str = "params.yaml",
                    root: str | os.PathLike | None = None) -> dict:
    """Check ``params`` against :data:`SCHEMA`; return it unchanged.

    ``root``: the repository, against which a relative ``data.local`` path is
    resolved (default: the directory of ``source``).  Raises
    :class:`ParamsError` listing every problem found; warns (UserWarning)
    about keys that resemble no known key.
    """
    errors: list[str] = []
    unknown: list[str] = []
    _walk(SCHEMA, params if params is not None else {}, "", errors, unknown)
    if isinstance(params, Mapping):
        local = _section(params, "data", "local")
        local = local if isinstance(local, Mapping) else {}
        errors.extend(_local_rules(params, Path(source).resolve().parent
                                   if root is None else root))
        for section, key, known, what in (
            ("data", "datasets", {**DATASETS, **local},
             "the dataset manifest"),
            ("models", "names", MODELS, "the model registry"),
        ):
            node = params.get(section)
            errors.extend(_unknown_names(
                f"{section}.{key}",
                node.get(key) if isinstance(node, Mapping) else None, known, what))
        errors.extend(_fixed_vs_searched(params))
        errors.extend(_space_errors(params))
        errors.extend(_list_rules(params))
        errors.extend(_cross_rules(params))
        errors.extend(_names_rules(params))
        if not errors:  # estimators are built from values of the right shapes
            errors.extend(_built_rules(params))
        storage = (params.get("tune") or {}).get("storage")
        if isinstance(storage, str) and _PASSWORD_IN_URL.search(storage):
            errors.append("tune.storage: the URL holds a password; put the URL in "
                          "$WK_OPTUNA_STORAGE or the password in PGPASSWORD / "
                          "~/.pgpass, never in params.yaml")
    if errors:
        raise ParamsError(f"{source}: {len(errors)} problem(s): " + "; ".join(errors))
    if unknown:
        warnings.warn(f"{source}: keys not known to the schema (ignored by the "
                      f"stages?): {unknown}", UserWarning, stacklevel=2)
    return params


def load_params(path: str | os.PathLike = "params.yaml") -> dict[str, Any]:
    """Read the whole ``params.yaml``, checked against :data:`SCHEMA`; stages
    pick their own sections."""
    with open(path, encoding="utf-8") as fh:
        return validate_params(yaml.safe_load(fh) or {}, source=str(path),
                               root=Path(path).resolve().parent)


def main(argv: list[str] | None = None) -> int:
    """``python -m weakkernels.pipeline.params_schema [params.yaml]``: check the
    file and print nothing, or every problem and exit 1.  ``make repro`` runs
    it before ``dvc repro``, whose own templating (``dvc.yaml``'s
    ``${item.path}`` of a ``data.local`` entry) would otherwise meet a broken
    entry first and name it less clearly."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    try:
        load_params(args[0] if args else "params.yaml")
    except ParamsError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
