"""What is served moves only on purpose: champion and challengers in MLflow's
model registry.

Each dataset's served classifier is the version of ``weakkernels-<dataset>``
that the alias ``champion`` points at (``models:/weakkernels-<dataset>@champion``).
The ``evaluate`` stage hands its chosen model to :func:`register` (the one
with the lowest validation loss, :func:`weakkernels.pipeline.evaluation.champions`),
which registers it as a version, once per model file (its sha256), and then
decides which alias it gets, following MLflow's registry conventions (aliases
instead of stages; a version is promoted on purpose, with its evidence in
tags):

* **In a DVC experiment** (``dvc exp run``, in the workspace, ``--temp`` or
  queued: DVC sets ``DVC_EXP_NAME`` for its stages, :func:`experiment_name`),
  the version gets the alias ``challenger`` and the tags ``dvc.exp_name`` /
  ``dvc.exp_baseline``; ``champion`` never moves, as ``dvc exp run`` changes
  nothing outside the experiment until ``dvc exp apply`` / ``dvc exp branch``.
* **On the main line** (``dvc repro``), the first version of a model becomes
  the champion.  Later, the new model is compared with the current champion on
  the same test rows: for every seed of the new model's runs, both are scored
  on that seed's test split (the champion through its served pyfunc, on the
  raw rows), and ``champion`` moves only when the mean paired difference of
  their errors is below zero by more than two standard errors, the larger
  of the spread over seeds and over test points (:func:`compare`; fewer than
  two seeds resolve nothing).  Otherwise the version gets ``challenger``.  Either
  way the comparison -- both mean test errors, the paired difference, its SE,
  the per-seed differences, the champion's version and the commit -- goes
  into the version's tags (``compare.*``).
* **By hand**: :func:`promote` (``make promote MODEL=weakkernels-cod-rna
  VERSION=3``, which runs ``python -m weakkernels.pipeline.promotion``) points
  ``champion`` at any version and tags it ``promoted.by = hand``.

The champion may have been trained on rows that are test rows of another seed
now (its own split's labeled and unlabeled rows); that favours the champion,
so the rule errs towards keeping what is served.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from weakkernels.pipeline.storage import repo_root, sha256_file
from weakkernels.pipeline.tracking import (
    main_repo_root,
    provenance_tags,
    tracking_uri,
    without_registry_lines,
)

__all__ = ["CHALLENGER", "CHAMPION", "MODEL_SHA_TAG", "REGISTERED_PREFIX",
           "RESOLVED_SE",
           "compare", "experiment_name", "promote", "register"]

REGISTERED_PREFIX = "weakkernels-"
CHAMPION = "champion"
CHALLENGER = "challenger"
# Tag of a registered version: the sha256 of its model file, which is
# byte-identical for the same code, params and data (README, "Every DVC output
# is reproducible"), so an unchanged rerun registers nothing new.
MODEL_SHA_TAG = "model_file.sha256"

# Standard errors of the paired difference a win must clear: the noise rule of
# the benchmark pages ("within noise" = a change of at most 2 SE of the paired
# per-seed differences; docs/benchmarks/design_notes.md, "The pipeline").
RESOLVED_SE = 2.0

# (raw test rows, test labels) of one seed's test split
TestRows = Callable[[int], tuple[object, np.ndarray]]


def experiment_name(env: dict | None = None, cwd: str | None = None) -> str | None:
    """The DVC experiment this process runs in, or None on the main line.

    DVC 3 sets ``DVC_EXP_NAME`` for the stages of every ``dvc exp run``
    (workspace, ``--temp`` and queued); a stage running in a temporary copy
    under ``.dvc/tmp/exps/`` without it is an experiment too."""
    env = os.environ if env is None else env
    if env.get("DVC_EXP_NAME"):
        return env["DVC_EXP_NAME"]
    here = Path(cwd or os.getcwd()).resolve()
    return "unnamed" if main_repo_root(here) != here else None


def _se(d: np.ndarray) -> float:
    return float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0


def compare(new_wrong: dict[int, np.ndarray],
            champion_wrong: dict[int, np.ndarray]) -> dict:
    """The main line's rule on the same seeds' test points: ``*_wrong[seed]``
    are the 0/1 errors of the new model and of the champion on that seed's
    test split.  The new model wins when the mean paired difference of their
    errors is below zero by more than :data:`RESOLVED_SE` standard errors,
    the larger of the spread over seeds (the per-seed differences' SE) and
    over the test points (the per-point differences' SE: two seeds that
    differ by the same few points have no spread over seeds).  Fewer than two
    seeds resolve nothing."""
    seeds = sorted(set(new_wrong) & set(champion_wrong))
    if not seeds:
        return {"wins": False, "new_test_error": float("nan"),
                "champion_test_error": float("nan"), "paired_diff": float("nan"),
                "paired_se": float("nan"), "seeds": [], "per_seed_diff": []}
    new = np.concatenate([np.asarray(new_wrong[s], float) for s in seeds])
    old = np.concatenate([np.asarray(champion_wrong[s], float) for s in seeds])
    per_seed = np.array([np.mean(new_wrong[s]) - np.mean(champion_wrong[s])
                         for s in seeds])
    diff, se = float(np.mean(new - old)), max(_se(new - old), _se(per_seed))
    return {"wins": bool(len(seeds) >= 2 and -diff > RESOLVED_SE * se),
            "new_test_error": float(new.mean()),
            "champion_test_error": float(old.mean()),
            "paired_diff": diff, "paired_se": se, "seeds": seeds,
            "per_seed_diff": [float(d) for d in per_seed]}


def _champion_wrong(name: str, seeds, test_rows: TestRows) -> dict:
    """The current champion's 0/1 errors on each seed's test rows, scored as
    it is served (raw rows in, ``label`` out)."""
    import mlflow

    served = mlflow.pyfunc.load_model(f"models:/{name}@{CHAMPION}")
    out = {}
    for seed in seeds:
        X_raw, y = test_rows(seed)
        labels = served.predict(X_raw)["label"].to_numpy()
        out[seed] = labels != np.asarray(y)
    return out


def _version_by(client, name: str, alias: str):
    from mlflow.exceptions import MlflowException

    try:
        return client.get_model_version_by_alias(name, alias)
    except MlflowException:  # no such model or alias yet
        return None


def _same_file(client, name: str, sha: str):
    """The registered version of ``name`` holding the model file ``sha``."""
    from mlflow.exceptions import MlflowException

    try:
        versions = client.search_model_versions(f"name='{name}'")
    except MlflowException:
        return None
    same = [v for v in versions if v.tags.get(MODEL_SHA_TAG) == sha]
    return min(same, key=lambda v: int(v.version)) if same else None


def _commit(experiment: str | None) -> str:
    baseline = os.environ.get("DVC_EXP_BASELINE_REV") if experiment else None
    root = repo_root()
    return baseline or provenance_tags(root, "evaluate", {})["git.commit"]


def _version_tags(rec: dict, dataset: str, sha: str) -> dict[str, str]:
    tags = {MODEL_SHA_TAG: sha, "model": rec["model"], "dataset": dataset,
            "n_unlabeled": str(rec["n_unlabeled"]), "seed": str(rec["seed"]),
            "val_loss": repr(float(rec["val_loss"]))}
    if rec.get("run_id"):
        tags["train_run_id"] = rec["run_id"]
    return tags


def _evidence(verdict: dict, against: str, commit: str) -> dict[str, str]:
    return {"compare.decision": "champion" if verdict["wins"] else CHALLENGER,
            "compare.against_version": against,
            "compare.new_test_error": repr(verdict["new_test_error"]),
            "compare.champion_test_error": repr(verdict["champion_test_error"]),
            "compare.paired_diff": repr(verdict["paired_diff"]),
            "compare.paired_se": repr(verdict["paired_se"]),
            "compare.seeds": ",".join(map(str, verdict["seeds"])),
            "compare.per_seed_diff": ",".join(f"{d:.6g}"
                                              for d in verdict["per_seed_diff"]),
            "compare.rule": f"mean paired test error difference < -{RESOLVED_SE:g} "
                            "SE (the larger of the seeds' and the points' SE), "
                            ">= 2 seeds",
            "compare.commit": commit}


def _decide(name: str, current, new_wrong: dict, test_rows: TestRows | None,
            experiment: str | None) -> tuple[str, dict[str, str]]:
    """``(alias, tags)`` of a new model: the rules of the module docstring,
    ``current`` the champion's version (None if there is none yet)."""
    from mlflow.exceptions import MlflowException

    commit = _commit(experiment)
    if experiment:
        return CHALLENGER, {"dvc.exp_name": experiment, "dvc.exp_baseline": commit}
    if current is None:
        return CHAMPION, {"compare.decision": "first champion",
                          "compare.commit": commit}
    tags = {}
    try:
        verdict = compare(new_wrong, _champion_wrong(name, new_wrong, test_rows))
    except (MlflowException, OSError, ValueError) as err:
        # a champion that cannot score these rows (its artifacts gone, another
        # feature count) is not beaten: it stays until promoted by hand
        verdict = compare({}, {})
        tags["compare.error"] = f"{type(err).__name__}: {err}"[:5000]
    tags.update(_evidence(verdict, str(current.version), commit))
    return (CHAMPION if verdict["wins"] else CHALLENGER), tags


def register(dataset: str, rec: dict, new_wrong: dict[int, np.ndarray],
             test_rows: TestRows | None, *, experiment: str | None = None) -> dict:
    """Register ``rec`` (a train record with ``model_file`` and ``pyfunc_uri``)
    as a version of ``weakkernels-<dataset>`` and give it an alias by the
    rules of the module docstring; ``new_wrong[seed]`` are its model x size's
    0/1 test errors on seed ``seed``'s test split, ``test_rows(seed)`` that
    split's raw test rows and labels.

    Returns ``{name, version, alias, moved}``: ``alias`` is ``champion``,
    ``challenger`` or None (the version already is the champion)."""
    import mlflow
    from mlflow import MlflowClient

    client = MlflowClient()
    name = f"{REGISTERED_PREFIX}{dataset}"
    sha = sha256_file(rec["model_file"])
    current = _version_by(client, name, CHAMPION)
    if current is not None and current.tags.get(MODEL_SHA_TAG) == sha:
        return {"name": name, "version": str(current.version), "alias": None,
                "moved": False}
    alias, tags = _decide(name, current, new_wrong, test_rows, experiment)
    tags = {**_version_tags(rec, dataset, sha), **tags}
    mv = _same_file(client, name, sha)
    if mv is None:
        with without_registry_lines():  # evaluate prints its own line
            mv = mlflow.register_model(rec["pyfunc_uri"], name, tags=tags)
    else:  # registered before: an experiment's or a lost comparison's model
        for k, v in tags.items():
            client.set_model_version_tag(name, mv.version, k, v)
    client.set_registered_model_alias(name, alias, mv.version)
    client.update_registered_model(
        name, description=f"The served weakkernels classifier for {dataset}: raw "
        f"feature rows in, label and score out. The alias '{CHAMPION}' moves on "
        f"a resolved win on the test splits (tags compare.*) or by hand "
        f"(make promote); experiments and lost comparisons get '{CHALLENGER}'.")
    return {"name": name, "version": str(mv.version), "alias": alias,
            "moved": alias == CHAMPION}


def promote(name: str, version: str | int) -> str | None:
    """Point ``name``'s ``champion`` alias at ``version`` by hand; returns the
    version it pointed at before (None if none).  The version is tagged
    ``promoted.by = hand`` and ``promoted.from_version``; a ``challenger``
    alias on it is removed."""
    from mlflow import MlflowClient

    client = MlflowClient()
    mv = client.get_model_version(name, str(version))  # raises if unknown
    before = _version_by(client, name, CHAMPION)
    previous = None if before is None else str(before.version)
    client.set_model_version_tag(name, mv.version, "promoted.by", "hand")
    client.set_model_version_tag(name, mv.version, "promoted.from_version",
                                 previous or "none")
    client.set_registered_model_alias(name, CHAMPION, mv.version)
    challenger = _version_by(client, name, CHALLENGER)
    if challenger is not None and str(challenger.version) == str(mv.version):
        client.delete_registered_model_alias(name, CHALLENGER)
    return previous


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Point a registered model's 'champion' alias at a version "
        "(the project's store, or MLFLOW_TRACKING_URI).")
    ap.add_argument("model", help="registered model, e.g. weakkernels-cod-rna")
    ap.add_argument("version", help="the version to serve, e.g. 3")
    args = ap.parse_args(argv)
    import mlflow
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(tracking_uri(repo_root()))
    try:
        previous = promote(args.model, args.version)
    except MlflowException as err:
        raise SystemExit(f"MODEL={args.model} VERSION={args.version}: no such "
                         f"registered model version ({err.message})") from err
    print(f"models:/{args.model}@{CHAMPION} = version {args.version} "
          f"(was {previous or 'unset'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
