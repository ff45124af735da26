"""Optuna plumbing for the tune stage: storage URLs, resumable studies.

A study is identified by a fingerprint of everything that determines its trial
results (model, dataset, split file hash, fixed settings, search space, sampler
seed, pruner), so an interrupted ``dvc repro`` resumes the same study while a
changed configuration starts a fresh one.  Resuming never repeats or loses a
finished trial:

* a trial is *done* when it is COMPLETE, PRUNED, or FAIL with the error its
  fit raised (user attribute ``error``, :func:`record_error`): only
  ``n_trials`` minus the done trials are run;
* trials left RUNNING by a killed process are marked FAIL without an error
  (they never finished) and run again;
* the sampler's random state is re-derived before every trial from the study
  seed and the number of trials done before it
  (:class:`DeterministicTPESampler`), so a resumed study proposes exactly what
  the uninterrupted study would have: the same finished trials, the same
  parameters, the same best trial (FAIL trials of the killed process are ignored
  by TPE and do not shift the seeds).  A trial that failed moves the seed on,
  so the next trial proposes another configuration (TPE ignores failed
  trials: with the same seed it would propose the same one again);
* :class:`FailureReport` prints each distinct error once and stops a study
  whose first :data:`ALL_FAIL_STOP` trials all failed;
* one process at a time may run a study on a local storage (SQLite file or
  journal file): :func:`study_lock` refuses a second ``tune`` with a message
  instead of letting both write the same trials.

Several workers (processes, machines) may share one study on a database server
(``postgresql+psycopg2://...``, ``mysql...``).  There, RUNNING trials may belong
to live peers, so instead of failing them all a worker fails only trials whose
heartbeat stopped (:data:`HEARTBEAT_S`, :data:`GRACE_S`); each worker's sampler
seed also mixes in its host and process id (otherwise two workers started
together would propose the same random start-up configurations); and
:func:`claim_trial` keeps the total at exactly ``n_trials``.  Multi-worker studies
are therefore not bit-reproducible (trial order depends on timing).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import zlib
from pathlib import Path

import optuna

from weakkernels.pipeline.tracking import main_repo_root

__all__ = [
    "ALL_FAIL_STOP",
    "BudgetExhausted",
    "DeterministicTPESampler",
    "FailureReport",
    "StudyLocked",
    "claim_trial",
    "done_trials",
    "enqueue_start",
    "is_server_storage",
    "mask_url",
    "open_study",
    "record_error",
    "resolve_storage",
    "study_lock",
]

STORAGE_ENV = "WK_OPTUNA_STORAGE"
HEARTBEAT_S = 10  # a running trial on a server storage refreshes this often
GRACE_S = 60  # ... and is considered dead (FAIL) this long after its last beat
# A study whose first this many trials all failed (none complete or pruned)
# stops: the failure is the configuration's, not the sampled values'.
ALL_FAIL_STOP = 3
ERROR_ATTR = "error"  # user attribute of a trial whose fit raised: the error


def record_error(trial, exc: BaseException) -> str:
    """Store ``exc`` on ``trial`` (user attribute ``error``); return the text.

    A trial carrying it failed by its own fit and counts as done
    (:func:`done_trials`); a trial a killed process left has none."""
    text = f"{type(exc).__name__}: {exc}"[:500]
    trial.set_user_attr(ERROR_ATTR, text)
    return text


def _is_done(t) -> bool:
    from optuna.trial import TrialState

    return t.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
        t.state == TrialState.FAIL and ERROR_ATTR in t.user_attrs)


def done_trials(study, before: int | None = None) -> list:
    """Trials COMPLETE, PRUNED or failed by their fit (numbered below ``before``)."""
    return [t for t in study.get_trials(deepcopy=False) if _is_done(t)
            and (before is None or t.number < before)]


def is_server_storage(url: str) -> bool:
    """A database server that many workers can share (not a local file)."""
    return url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "mysql")


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
    if is_server_storage(url):
        import time

        from optuna.storages import RDBStorage
        from sqlalchemy.exc import IntegrityError, ProgrammingError

        # Workers started together on an empty database race to create Optuna's
        # tables; the loser gets a unique-key error and simply tries again.
        for attempt in range(5):
            try:
                return RDBStorage(url, heartbeat_interval=HEARTBEAT_S,
                                  grace_period=GRACE_S)
            except (IntegrityError, ProgrammingError):
                if attempt == 4:
                    raise
                time.sleep(1.0 + attempt)
    return url


class BudgetExhausted(ValueError):
    """The study already has ``n_trials`` finished or running trials."""


def claim_trial(trial, n_trials: int) -> None:
    """Let ``trial`` run only if fewer than ``n_trials`` trials precede it.

    Trial numbers are assigned atomically by the storage, so counting the
    done (:func:`done_trials`) and RUNNING trials with a smaller number gives
    every worker the same answer: exactly ``n_trials`` trials run in total.
    A surplus trial (another worker took the last slot) stops this worker's
    loop and is recorded as FAIL with ``user_attrs["surplus"]``; it evaluated nothing.
    """
    from optuna.trial import TrialState

    running = [t for t in trial.study.get_trials(
        deepcopy=False, states=(TrialState.RUNNING,)) if t.number < trial.number]
    if len(running) + len(done_trials(trial.study, trial.number)) >= n_trials:
        trial.set_user_attr("surplus", True)
        trial.study.stop()
        raise BudgetExhausted(f"study budget of {n_trials} trials is taken")


def _trial_seed(seed: int, k: int) -> int:
    """A 32-bit seed for the ``k``-th finished-trial slot of a study seeded ``seed``."""
    return zlib.crc32(f"{int(seed)}:{int(k)}".encode())


class DeterministicTPESampler(optuna.samplers.TPESampler):
    """TPE whose random state before each trial depends only on the study seed
    and the number of trials done (:func:`done_trials`) before that trial.

    Plain ``TPESampler(seed=s)`` draws from one generator for the whole process,
    so a study resumed in a new process (re-seeded) proposes different
    configurations than the uninterrupted run.  Here every trial re-seeds both
    the TPE generator and the start-up random sampler, so the proposals are a
    function of (seed, finished history) alone: an interrupted and resumed study
    runs exactly the trials of an uninterrupted one.
    """

    def __init__(self, *, seed: int, **kwargs) -> None:
        super().__init__(seed=seed, **kwargs)
        self._base_seed = int(seed)

    def before_trial(self, study, trial) -> None:
        s = _trial_seed(self._base_seed, len(done_trials(study, trial.number)))
        self._rng.rng.seed(s)
        self._random_sampler._rng.rng.seed(s)
        super().before_trial(study, trial)


def enqueue_start(study, params: dict) -> bool:
    """Queue ``params`` as the next trial unless a trial that is finished,
    running or waiting already carries them; return whether it was queued.

    A start trial killed mid-run is left FAIL by :func:`open_study`, so the
    resumed study queues it again: its proposals depend only on the finished
    trials (:class:`DeterministicTPESampler`), and an interrupted study runs
    the same configurations as an uninterrupted one."""
    from optuna.trial import TrialState

    if not params:
        return False
    live = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING,
            TrialState.WAITING)
    for t in study.get_trials(deepcopy=False, states=live):
        if t.state == TrialState.WAITING:
            queued = t.system_attrs.get("fixed_params", {})
        else:
            queued = t.params
        if all(queued.get(k) == v for k, v in params.items()):
            return False
    study.enqueue_trial(params)
    return True


class StudyLocked(RuntimeError):
    """Another process is running this study on the same local storage."""


def _local_storage_path(url: str) -> Path | None:
    if url.startswith("journal:"):
        return Path(url[len("journal:"):])
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):])
    return None


@contextlib.contextmanager
def study_lock(storage: str, study_name: str):
    """Hold an exclusive lock on ``study_name`` for local (file) storages.

    Two processes on one SQLite/journal study would both run the remaining
    trials and race on their states (Optuna's ``UpdateFinishedTrialError``, a
    lost trial).  The lock is an ``fcntl`` lock on ``<storage>.<study>.lock``: it
    is released by the kernel when the holder dies (``kill -9`` included), so a
    stale lock never blocks a resume.  Database servers (PostgreSQL, MySQL) are
    shared safely by :func:`claim_trial` and need no lock.
    """
    path = _local_storage_path(storage)
    if path is None:
        yield
        return
    import fcntl

    lock = path.parent / f".{path.name}.{study_name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise StudyLocked(
                f"study {study_name} on {mask_url(storage)} is being run by another "
                f"process ({holder}); a local SQLite/journal study takes one worker "
                "at a time -- wait for it, or share a PostgreSQL study between "
                "workers (README, 'Scaling out')") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def open_study(
    name: str,
    storage: str,
    *,
    sampler_seed: int,
    n_startup_trials: int,
    pruner_cfg: dict,
    fail_stale_running: bool,
):
    """Create or load study ``name``; returns ``(study, n_done)``
    (:func:`done_trials`)."""
    from optuna.trial import TrialState

    pruner = optuna.pruners.MedianPruner(
        n_startup_trials=int(pruner_cfg["n_startup_trials"]),
        n_warmup_steps=int(pruner_cfg["n_warmup_steps"]),
    )
    study = optuna.create_study(
        study_name=name, storage=_storage_object(storage), direction="minimize",
        pruner=pruner, load_if_exists=True,
    )
    shared = is_server_storage(storage)
    if fail_stale_running and shared:
        optuna.storages.fail_stale_trials(study)  # dead heartbeats only
    elif fail_stale_running:
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    if shared:
        # Several live workers: each samples from its own stream (the trial
        # order depends on timing anyway, so there is no replay to preserve).
        n_existing = len(study.get_trials(deepcopy=False))
        seed = int(sampler_seed) + n_existing
        seed += zlib.crc32(f"{socket.gethostname()}:{os.getpid()}".encode())
        study.sampler = optuna.samplers.TPESampler(
            seed=seed % 2**32, n_startup_trials=int(n_startup_trials))
    else:
        study.sampler = DeterministicTPESampler(
            seed=int(sampler_seed), n_startup_trials=int(n_startup_trials))
    return study, len(done_trials(study))


class FailureReport:
    """``study.optimize`` callback: print each distinct trial error once (the
    first trial that raised it and the parameters), keep :attr:`status` (the
    trials done, the best loss: the stage's progress line), and stop the study
    when its first :data:`ALL_FAIL_STOP` done trials all failed.

    ``prefix`` starts every line (``tune <model>/<dataset>``); :attr:`errors`
    maps each error text to the numbers of the trials that raised it."""

    def __init__(self, prefix: str, study=None, n_trials: int | None = None) -> None:
        self.prefix, self.n_trials = prefix, n_trials
        self.status = f"{prefix}: trials running"
        self.errors: dict[str, list[int]] = {}
        for t in done_trials(study) if study is not None else ():
            if ERROR_ATTR in t.user_attrs:  # a resumed study's: not printed again
                self.errors.setdefault(t.user_attrs[ERROR_ATTR], []).append(t.number)

    def __call__(self, study, trial) -> None:
        error = trial.user_attrs.get(ERROR_ATTR)
        if error is not None:
            if error not in self.errors:
                print(f"{self.prefix}: trial {trial.number} failed ({trial.params}): "
                      f"{error}", flush=True)
            self.errors.setdefault(error, []).append(trial.number)
        done = done_trials(study)
        values = [t.value for t in done if t.value is not None]
        best = f", best {min(values):.4f}" if values else ""
        self.status = (f"{self.prefix}: {len(done)} of {self.n_trials or '?'} "
                       f"trials done{best}")
        if len(done) >= ALL_FAIL_STOP and all(ERROR_ATTR in t.user_attrs
                                               for t in done):
            study.stop()

    def summary(self) -> str:
        """``k trials failed: <error> (trials i, j)``, one per distinct error."""
        return "; ".join(f"{len(n)} failed with {e} (trials "
                         f"{', '.join(map(str, n))})"
                         for e, n in self.errors.items())
