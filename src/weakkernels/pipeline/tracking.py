"""MLflow helpers: tracking URI, experiment, provenance tags, the pyfunc wrapper.

The default tracking store is ``sqlite:///<repo>/mlflow.db`` with an *absolute*
path and an explicit artifact location ``<repo>/mlartifacts``: ``dvc exp run
--queue`` executes stages in temporary copies under ``<repo>/.dvc/tmp/exps/``,
where a relative URI would silently create a second, throw-away store.  Those
copies are detected and mapped back to the main repository.  ``MLFLOW_TRACKING_URI``
(for example a tracking server) always wins.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import platform
import re
import socket
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from weakkernels.pipeline.storage import (
    atomic_write_text,
    canonical_hash,
    repo_root,
)

__all__ = [
    "EXPERIMENT_KIND",
    "EXPERIMENT_KIND_TAG",
    "REACHABLE_TIMEOUT_S",
    "TrackingUnreachable",
    "check_reachable",
    "COMPARE_VIEW",
    "COMPARE_VIEW_KEY",
    "dataset_digest",
    "log_dataset_input",
    "log_pyfunc",
    "log_resolved_params",
    "kill_dead_runs",
    "main_repo_root",
    "nested_run",
    "process_tag",
    "provenance_tags",
    "quiet_mlflow",
    "without_registry_lines",
    "resolved_params",
    "setup_mlflow",
    "split_counts",
    "stage_run",
    "tracking_uri",
    "ui_path",
]

_TELEMETRY_OFF = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}

# MLflow's experiment-kind tag (read by its UI, which opens an experiment on the
# view of its kind): without it MLflow 3 guesses, and opens a fresh experiment on
# the GenAI overview (traces, token usage) instead of the runs table.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
# An MLflow UI "shared view" (experiment tag mlflow.sharedViewState.<key>): the
# train stage's model x dataset x size runs, flat, best mean test error first.
COMPARE_VIEW_KEY = "compare"
COMPARE_VIEW = {
    "searchFilter": "tags.level = 'group'",
    "orderByKey": "metrics.`test_error_mean`", "orderByAsc": True,
    "startTime": "ALL", "lifecycleFilter": "Active", "datasetsFilter": [],
    "modelVersionFilter": "All Runs", "runsHiddenMode": "SHOW_ALL",
    "selectedColumns": ["attributes.`Dataset`", "params.`n_unlabeled`",
                        "metrics.`test_error_mean`", "metrics.`test_auc_mean`",
                        "metrics.`test_error_std`", "attributes.`Models`"],
}


def main_repo_root(root: str | os.PathLike) -> Path:
    """``root`` itself, or the repository a DVC experiment temp copy belongs to."""
    root = Path(root).resolve()
    parts = root.parts
    for i in range(len(parts) - 3):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return root


def tracking_uri(root: str | os.PathLike) -> str:
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{main_repo_root(root) / 'mlflow.db'}"


# Seconds a tracking server (or database server) gets to answer before a stage
# gives up: MLflow's own client retries a dead server with back-off for minutes
# and prints nothing meanwhile.
REACHABLE_TIMEOUT_S = 5.0

# The same holds for a server that stops while a stage runs: MLflow's defaults
# (7 retries, back-off factor 2, 120 s per request) make every later logging
# call wait about 4 minutes, and a stage's closing calls (end of the seed, group
# and stage runs) add up to a quarter of an hour of silence.  With these, a
# refused connection fails after about 7 s (back-off 0, 2, 4 s) and names the
# server; a value set in the environment wins.
HTTP_RETRY_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
                       "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                       "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


class TrackingUnreachable(ConnectionError):
    """The tracking store named by ``MLFLOW_TRACKING_URI`` does not answer."""


def _masked(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def check_reachable(uri: str, timeout: float = REACHABLE_TIMEOUT_S) -> None:
    """Raise :class:`TrackingUnreachable`, naming ``uri``, unless the tracking
    store answers within ``timeout`` seconds.

    An ``http(s)://`` server must answer ``GET /health`` (any HTTP status
    counts: a proxy asking for credentials is reachable); a database URI with
    a host (``postgresql://``, ``mysql://``) must accept a TCP connection.
    Local stores (``sqlite:///``, ``file:``, a path) are not checked."""
    import socket
    import urllib.error
    import urllib.request

    parts = urlsplit(uri)
    where = (f"MLflow tracking store {_masked(uri)} (MLFLOW_TRACKING_URI) did not "
             f"answer within {timeout:g} s")
    hint = "; start the server or unset MLFLOW_TRACKING_URI to log to the local store"
    try:
        if parts.scheme in ("http", "https"):
            try:
                with urllib.request.urlopen(uri.rstrip("/") + "/health",
                                            timeout=timeout):
                    pass
            except urllib.error.HTTPError:
                pass  # the server answered
        elif parts.hostname and parts.scheme not in ("file", "sqlite"):
            port = parts.port or {"postgresql": 5432, "mysql": 3306,
                                  "mssql": 1433}.get(parts.scheme.split("+")[0])
            if port is not None:
                socket.create_connection((parts.hostname, port),
                                         timeout=timeout).close()
    except (OSError, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingUnreachable(f"{where}: {reason}{hint}") from None


def setup_mlflow(experiment: str, root: str | os.PathLike) -> str:
    """Point MLflow at the store and return the experiment id (created if needed).

    A store named by ``MLFLOW_TRACKING_URI`` is checked first
    (:func:`check_reachable`): a dead server is an error naming it after at
    most :data:`REACHABLE_TIMEOUT_S` seconds, not a silent hang."""
    for k, v in {**_TELEMETRY_OFF, **HTTP_RETRY_DEFAULTS}.items():
        os.environ.setdefault(k, v)
    # One progress bar per logged model is noise in a stage's log.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    # MLflow's SQLAlchemy store configures its mappers with a loader strategy
    # SQLAlchemy 2 deprecates; it is MLflow's code, not ours, and fires once per
    # process.  Only this one message is silenced.
    warnings.filterwarnings("ignore", message=r"The ``noload`` loader strategy")
    import mlflow

    quiet_mlflow()

    uri = tracking_uri(root)
    check_reachable(uri)
    mlflow.set_tracking_uri(uri)
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if run_id:
        # Inside `mlflow run`: the project run (in the experiment chosen on the
        # command line) becomes the parent of everything this process logs.
        exp_id = mlflow.get_run(run_id).info.experiment_id
        _declare_kind(exp_id)
        return exp_id
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        artifacts = (main_repo_root(root) / "mlartifacts" / experiment).as_uri()
        if mlflow.get_tracking_uri().startswith(("http://", "https://")):
            # A tracking server picks (and proxies) its artifact store; a local
            # path here would leave the artifacts on this machine only.
            artifacts = None
        try:
            exp_id = mlflow.create_experiment(experiment, artifact_location=artifacts)
        except Exception:  # created concurrently by another stage/process
            exp_id = mlflow.get_experiment_by_name(experiment).experiment_id
    else:
        exp_id = exp.experiment_id
    _declare_kind(exp_id)
    mlflow.set_experiment(experiment_id=exp_id)
    return exp_id


def quiet_mlflow() -> None:
    """MLflow's INFO lines (one "Validating input example against model
    signature" per logged model, the store's table creation) to WARNING: a
    stage prints its own one line per fit. ``MLFLOW_LOGGING_LEVEL`` set by the
    user wins."""
    import logging

    if not os.environ.get("MLFLOW_LOGGING_LEVEL"):
        for name in ("mlflow", "alembic"):
            logging.getLogger(name).setLevel(logging.WARNING)


# The lines mlflow.register_model prints for every version (MLflow's
# ``eprint`` to stderr, which the logger levels of quiet_mlflow do not reach);
# evaluate prints its own line per registered model.
_REGISTRY_LINES = re.compile(
    r"(Successfully registered model |Registered model .* already exists\. "
    r"Creating a new version|Created version ')")


@contextlib.contextmanager
def without_registry_lines():
    """Drop MLflow's "Successfully registered model" / "Created version"
    lines written to stderr inside the block; anything else written there (a
    warning) is passed on after it."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stderr(buf):
            yield
    finally:
        sys.stderr.write("".join(
            line for line in buf.getvalue().splitlines(keepends=True)
            if not _REGISTRY_LINES.match(line)))


def _declare_kind(exp_id: str) -> None:
    """Tag the experiment as model training and store the comparison view
    (once each), so the UI opens on the runs compared (:func:`ui_path`)."""
    from mlflow import MlflowClient

    client = MlflowClient()
    tags = client.get_experiment(exp_id).tags
    view = json.dumps(COMPARE_VIEW, sort_keys=True)
    for key, value in ((EXPERIMENT_KIND_TAG, EXPERIMENT_KIND),
                       (f"mlflow.sharedViewState.{COMPARE_VIEW_KEY}", view)):
        if tags.get(key) != value:
            client.set_experiment_tag(exp_id, key, value)


def ui_path(exp_id: str) -> str:
    """The MLflow UI page of the comparison (append it to the server's URL):
    the experiment's runs in the model-training view (MLflow 3.17's UI takes
    the view from its GenAI / Model training switch, default GenAI, and not
    from the experiment's kind tag), one row per model x dataset x unlabeled
    size, sorted by mean test error, with the dataset and test metrics as
    columns (:data:`COMPARE_VIEW`, an MLflow shared view stored on the
    experiment)."""
    return (f"/#/experiments/{exp_id}/runs?workflowType=machine_learning"
            f"&viewStateShareKey={COMPARE_VIEW_KEY}")


def _git(root: Path, *args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def provenance_tags(root: str | os.PathLike, stage: str, params: Any) -> dict[str, str]:
    """Tags every run carries: git commit, dvc.lock hash, params hash, versions."""
    root = Path(root)
    lock = root / "dvc.lock"
    tags = {
        "pipeline.stage": stage,
        "git.commit": _git(root, "rev-parse", "HEAD") or "unknown",
        "git.dirty": str(
            bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
        ),
        "dvc.lock.sha256": (
            hashlib.sha256(lock.read_bytes()).hexdigest() if lock.exists() else "none"
        ),
        "params.hash": canonical_hash(params),
        "python.version": platform.python_version(),
    }
    for dist in ("weakkernels", "numpy", "scipy", "scikit-learn", "numba", "mlflow",
                 "optuna", "dvc", "pandas"):
        tags[f"version.{dist}"] = _version(dist)
    exp_name = os.environ.get("DVC_EXP_NAME")
    if exp_name:
        tags["dvc.exp_name"] = exp_name
    return tags


@contextlib.contextmanager
def stage_run(params: dict, params_path: str | os.PathLike, stage: str,
              sections: tuple[str, ...]):
    """The parent MLflow run of one stage, tagged with its provenance and the
    hash of the ``params.yaml`` sections it reads; yields the active run."""
    import mlflow

    root = repo_root(Path(params_path).resolve().parent)
    setup_mlflow(params["mlflow"]["experiment"], root)
    with nested_run(stage, nested=False) as run:
        mlflow.set_tags({**provenance_tags(root, stage, {k: params[k]
                                                         for k in sections}),
                         PROCESS_TAG: process_tag()})
        kill_dead_runs()  # what a killed stage (any stage) left RUNNING
        yield run


PROCESS_TAG = "wk.process"


def process_tag() -> str:
    """``host:pid`` of this process, recorded on every stage and study run."""
    return f"{socket.gethostname()}:{os.getpid()}"


def dead_here(tag: str | None) -> bool:
    """True if ``tag`` (:func:`process_tag`) names a process of this host that
    no longer exists."""
    if not tag or ":" not in tag:
        return False
    host, _, pid = tag.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by someone else
        return False
    return False


def mark_killed(client, run_id: str, by: str) -> None:
    client.set_terminated(run_id, status="KILLED")
    client.set_tag(run_id, "killed_by", by)


def kill_dead_runs() -> list[str]:
    """Mark KILLED every RUNNING run whose ``wk.process`` names a dead process
    of this host, with its RUNNING descendants (a stage run's model, seed and
    trial runs): ``kill -9`` ends a process without ``mlflow.end_run``.
    Returns the ids marked."""
    from mlflow import MlflowClient

    client = MlflowClient()
    exp_ids = [e.experiment_id for e in client.search_experiments()]
    if not exp_ids:
        return []
    running = client.search_runs(exp_ids, filter_string="attributes.status = "
                                 "'RUNNING'", max_results=5000)
    children: dict[str, list[str]] = {}
    for r in running:
        parent = r.data.tags.get("mlflow.parentRunId")
        if parent:
            children.setdefault(parent, []).append(r.info.run_id)
    todo = [r.info.run_id for r in running if dead_here(r.data.tags.get(PROCESS_TAG))]
    marked: list[str] = []
    while todo:
        run_id = todo.pop()
        if run_id not in marked:
            mark_killed(client, run_id, "kill_dead_runs (its process is gone)")
            marked.append(run_id)
            todo.extend(children.get(run_id, []))
    return marked


@contextlib.contextmanager
def nested_run(name: str, *, enabled: bool = True, nested: bool = True):
    """``mlflow.start_run(run_name=name, nested=nested)`` that ends FINISHED
    only when its block completes: FAILED on an exception, KILLED on an
    interrupt (Ctrl-C, SystemExit). Yields the run, or None when not
    ``enabled`` (MLflow off)."""
    if not enabled:
        yield None
        return
    import mlflow

    run = mlflow.start_run(run_name=name, nested=nested)
    status = "FAILED"
    try:
        yield run
        status = "FINISHED"
    except (KeyboardInterrupt, SystemExit):
        status = "KILLED"
        raise
    finally:
        mlflow.end_run(status=status)


def dataset_digest(spec: Any) -> tuple[str, str]:
    """``(source, sha256)`` of a data set: its path inside the data mirror and the
    sha256 of that file (``shared/data/MANIFEST.md``'s hash).

    ``spec`` is a :class:`~weakkernels.pipeline.datasets.DatasetSpec`.  A set of
    several files (``ijcnn1``'s train and test files, an SSL-book set and its
    split files) names them all, comma-separated, and its hash is the sha256 of
    their hashes joined by newlines; a generated set hashes its generator
    settings.
    """
    if not spec.files:
        return spec.dir, canonical_hash({"generated": spec.parser, **spec.extra},
                                        length=64)
    source = ",".join(f"{spec.dir}/{f.name}" for f in spec.files)
    if len(spec.files) == 1:
        return source, spec.files[0].sha256
    joined = "\n".join(f.sha256 for f in spec.files).encode()
    return source, hashlib.sha256(joined).hexdigest()


def _array_sha256(X) -> str:
    """sha256 of a dense or CSR matrix's values and structure."""
    h = hashlib.sha256(repr((X.shape, str(X.dtype))).encode())
    parts = ((X.data, X.indices, X.indptr) if hasattr(X, "indptr")
             else (np.ascontiguousarray(X),))
    for a in parts:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# The store keeps at most 36 characters of a dataset digest (MLflow's schema).
_DIGEST_CHARS = 36


def split_counts(split: dict) -> dict[str, int]:
    """Rows per role of a resolved split (labeled or paired, unlabeled,
    validation, test)."""
    out = {}
    if "pairs" in split:
        out["n_pairs"] = int(len(split["pairs"]))
    if "labeled" in split:
        out["n_labeled"] = int(len(split["labeled"]))
    for key in ("unlabeled", "val", "test"):
        if key in split:
            out[f"n_{key}"] = int(len(split[key]))
    return out


@functools.cache
def _source_dataset():
    from mlflow.data.meta_dataset import MetaDataset

    class SourceDataset(MetaDataset):
        """An MLflow dataset known by its source file: name, digest, and a
        profile (rows, features, the full sha256)."""

        def __init__(self, source, name: str, digest: str, profile: dict):
            self._profile = profile
            super().__init__(source, name=name, digest=digest)

        @property
        def profile(self) -> dict:
            return self._profile

        def to_dict(self) -> dict[str, str]:
            return {**super().to_dict(), "profile": json.dumps(self._profile)}

    return SourceDataset


def log_dataset_input(spec: Any, X, split: dict | None = None, *,
                      context: str, split_name: str = "", name: str = "") -> None:
    """Log data set ``spec`` as an input of the active run (MLflow's Dataset
    column and dataset filter).

    The MLflow dataset is the source: name = the data set's name, digest = the
    sha256 of its source file (the first 36 hex digits, all the store keeps;
    the full hash is in the profile), source = its path inside the data mirror
    (:func:`dataset_digest`), profile = rows and features of the prepared
    matrix.  How this run used it goes into the input's tags: ``context``
    (``mlflow.data.context``: ``training``, ``tuning``), the split's name and
    its row counts (:func:`split_counts`).  A run holds one input per data set.

    ``spec`` None (a prepared set that is not in the registry, named
    ``name``): the source is ``prepared/<name>`` and the digest the sha256 of
    the prepared matrix's bytes.
    """
    import mlflow
    from mlflow.data.sources import LocalArtifactDatasetSource

    if spec is None:
        source, sha = f"prepared/{name}", _array_sha256(X)
    else:
        source, sha = dataset_digest(spec)
        name = spec.name
    profile = {"num_rows": int(X.shape[0]), "num_features": int(X.shape[1]),
               "source_sha256": sha}
    ds = _source_dataset()(LocalArtifactDatasetSource(source), name=name,
                           digest=sha[:_DIGEST_CHARS], profile=profile)
    tags = {"source_sha256": sha}
    if split is not None:
        tags.update({k: str(v) for k, v in split_counts(split).items()})
    if split_name:
        tags["split"] = split_name
    mlflow.log_input(ds, context=context, tags=tags)


# Fitted attributes that hold a setting as the estimator resolved it ("scale"
# -> a width, the C* rule -> a number); logged beside get_params().
_RESOLVED = ("sigma_", "C_star_")


def resolved_params(est) -> dict[str, Any]:
    """The values a fitted estimator used: ``get_params()`` (nested estimators'
    scalar settings too, as ``step__param``; callables and estimator objects
    left out) plus the resolved ones -- ``sigma_`` (the kernel width actually
    used, e.g. ``sigma="scale"`` resolved), ``C_star_`` (the C* rule's value),
    and ``n_features_model_`` (the random-feature count; ``n_blocks_ *
    block_size`` where only those are set)."""
    out: dict[str, Any] = {}
    for key, value in est.get_params(deep=True).items():
        if value is None or isinstance(value, bool | int | float | str | np.generic):
            out[key] = value.item() if isinstance(value, np.generic) else value
    for attr in _RESOLVED:
        if hasattr(est, attr):
            out[attr] = float(getattr(est, attr))
    n_model = getattr(est, "n_features_model_", None)
    if n_model is None and hasattr(est, "n_blocks_") and hasattr(est, "block_size"):
        n_model = est.n_blocks_ * est.block_size
    if n_model is not None:
        out["n_features_model_"] = int(n_model)
    return out


def log_resolved_params(est, prefix: str = "est.") -> dict[str, Any]:
    """Log :func:`resolved_params` of ``est`` into the active run, once, as
    ``est.<name>`` params (beside the search coordinates such as
    ``sigma_rel``); returns what was logged."""
    import mlflow

    values = resolved_params(est)
    mlflow.log_params({f"{prefix}{k}": str(v)[:6000] for k, v in values.items()})
    return values


def log_params_flat(params: dict, prefix: str = "") -> None:
    """Log (possibly nested) params; MLflow values are strings up to 6000 chars."""
    import mlflow

    flat: dict[str, Any] = {}

    def walk(d, pre):
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v, f"{pre}{k}.")
            else:
                flat[f"{pre}{k}"] = v

    walk(params, prefix)
    if flat:
        mlflow.log_params({k: str(v)[:6000] for k, v in flat.items()})


def log_pyfunc(model_file: str | os.PathLike, X_example, name="model",
               scaler: tuple[np.ndarray, np.ndarray] | None = None,
               scale_kind: str = "minmax"):
    """Log ``model_file`` as an MLflow pyfunc model with signature and example.

    ``scaler = (lo, span)``: the ``prepare`` stage's scaling (``scale_kind``
    ``minmax``, or ``maxabs`` for a sparse set); it is stored beside the model
    and applied by the served model, which then takes raw rows (``X_example``
    holds *scaled* rows and is logged unscaled).
    The model is logged from code (:mod:`weakkernels.pipeline.pyfunc_model`),
    so no pickle is written, and the signature is declared, not inferred.

    A sparse ``X_example`` (a CSR set, possibly ~47k columns) is never
    densified: the signature is one float64 tensor ``(-1, d)`` -- MLflow then
    accepts a DataFrame, an array or a CSR/CSC matrix -- and the example is the
    sparse rows themselves, which MLflow stores in its sparse JSON form.  A
    dense example keeps one named column per feature.
    """
    import tempfile

    import mlflow
    import pandas as pd
    import scipy.sparse as sp
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    from weakkernels.pipeline import pyfunc_model

    sparse = sp.issparse(X_example)
    X_example = sp.csr_matrix(X_example, dtype=np.float64) if sparse \
        else np.asarray(X_example, dtype=np.float64)
    n_features = X_example.shape[1]
    cols = [f"x{i}" for i in range(n_features)]
    artifacts = {"model_file": str(model_file)}
    with tempfile.TemporaryDirectory() as tmp:
        if scaler is not None:
            lo, span = (np.asarray(a, dtype=np.float64) for a in scaler)
            if sparse:  # maxabs: lo = 0, only the stored entries move
                X_example = X_example.copy()
                X_example.data = X_example.data * span[X_example.indices]
            else:
                X_example = X_example * span + lo  # back to raw feature values
            path = Path(tmp) / "scaler.json"
            atomic_write_text(path, json.dumps({"lo": lo.tolist(),
                                                "span": span.tolist(),
                                                "kind": scale_kind}))
            artifacts["scaler"] = str(path)
        if sparse:
            example = X_example
            inputs = Schema([TensorSpec(np.dtype(np.float64), (-1, n_features))])
        else:
            example = pd.DataFrame(X_example, columns=cols)
            inputs = Schema([ColSpec("double", c) for c in cols])
        signature = ModelSignature(
            inputs=inputs,
            outputs=Schema([ColSpec("long", "label"), ColSpec("double", "score")]))
        reqs = [f"{d}=={_version(d)}" for d in ("numpy", "scipy", "scikit-learn",
                                                 "numba", "pandas")]
        with warnings.catch_warnings():
            # MLflow's own input-example check compares `df.columns == range(..)`,
            # which pandas >= 3 deprecates (Pandas4Warning); nothing we pass can
            # avoid it.
            warnings.filterwarnings("ignore", message="Operation with range is "
                                    "deprecated", module="mlflow")
            return mlflow.pyfunc.log_model(
                name=name,
                python_model=pyfunc_model.__file__,
                artifacts=artifacts,
                signature=signature,
                input_example=example,
                pip_requirements=reqs,
            )


def main(argv: list[str] | None = None) -> int:
    """``python -m weakkernels.pipeline.tracking NAME...``: create experiments in
    the pipeline's store with their artifacts under ``<repo>/mlartifacts/NAME``.

    ``mlflow run --experiment-name NAME`` creates a missing experiment itself,
    with MLflow's default artifact root (``./mlruns``); creating it here first
    keeps the artifacts of every entry point under ``mlartifacts/``.
    """
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--root", default=".")
    args = ap.parse_args(argv)
    for name in args.names:
        exp_id = setup_mlflow(name, args.root)
        print(f"{name}: experiment {exp_id} in {tracking_uri(args.root)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
