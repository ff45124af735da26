"""Optuna plumbing for the tune stage: storage URLs, resumable studies.

A study is identified by a fingerprint of everything that determines its trial
results (model, dataset, split file hash, fixed settings, search space, sampler
seed, pruner), so an interrupted ``dvc repro`` resumes the same study while a
changed configuration starts a fresh one.  Resuming never repeats or loses a
finished trial:

* only ``n_trials`` minus the already COMPLETE/PRUNED trials are run;
* trials left RUNNING by a killed process are marked FAIL (they never finished);
* the TPE seed is ``sampler_seed + len(study.trials)``, so the resumed sampler
  does not replay the random start-up proposals of the first session.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from weakkernels.pipeline.tracking import main_repo_root

__all__ = ["mask_url", "open_study", "resolve_storage"]

STORAGE_ENV = "WK_OPTUNA_STORAGE"


def resolve_storage(configured: str | None, root: str | os.PathLike) -> str:
    """``$WK_OPTUNA_STORAGE`` > ``tune.storage`` > ``sqlite:///<repo>/optuna/optuna.db``.

    Any SQLAlchemy URL works (``postgresql+psycopg2://user@host/db``; libpq takes
    the password from ``PGPASSWORD`` / ``~/.pgpass``, so it never sits in
    ``params.yaml``).  ``journal:<path>`` selects Optuna's journal file storage.
    """
    url = os.environ.get(STORAGE_ENV) or configured
    if not url:
        path = main_repo_root(root) / "optuna" / "optuna.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        # Relative sqlite paths are resolved against the main repository, for the
        # same reason as the MLflow store (``dvc exp run`` temp copies).
        rel = url[len("sqlite:///"):]
        path = main_repo_root(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    return url


def mask_url(url: str) -> str:
    """Hide a password embedded in a storage URL before it is printed or logged."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def _storage_object(url: str):
    if url.startswith("journal:"):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        path = Path(url[len("journal:"):])
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    return url


def open_study(
    name: str,
    storage: str,
    *,
    sampler_seed: int,
    n_startup_trials: int = 4,
    pruner_cfg: dict | None = None,
    fail_stale_running: bool = True,
):
    """Create or load study ``name``; returns ``(study, n_finished)``."""
    import optuna
    from optuna.trial import TrialState

    pruner_cfg = pruner_cfg or {}
    pruner = optuna.pruners.MedianPruner(
        n_startup_trials=int(pruner_cfg.get("n_startup_trials", 3)),
        n_warmup_steps=int(pruner_cfg.get("n_warmup_steps", 0)),
    )
    study = optuna.create_study(
        study_name=name, storage=_storage_object(storage), direction="minimize",
        pruner=pruner, load_if_exists=True,
    )
    if fail_stale_running:
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    n_existing = len(study.get_trials(deepcopy=False))
    study.sampler = optuna.samplers.TPESampler(
        seed=int(sampler_seed) + n_existing, n_startup_trials=int(n_startup_trials)
    )
    finished = study.get_trials(
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)
    )
    return study, len(finished)
