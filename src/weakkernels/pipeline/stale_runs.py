"""Close the MLflow runs a killed tune stage left RUNNING.

A process killed with SIGKILL (or a power cut) never calls ``mlflow.end_run``:
its stage run, its study run (tag ``optuna.study``) and the trial run it was
fitting stay RUNNING forever in the tracking store.  When the study is resumed,
:func:`kill_stale_runs` marks them KILLED -- the same moment
:func:`weakkernels.pipeline.tuning.open_study` marks the killed Optuna trial
FAIL, under the same rule (``tune.fail_stale_running``):

* local storage (sqlite file, journal): one process works on a study at a time,
  so every RUNNING run of the study not opened by this process is stale;
* server storage shared by many workers: live peers' runs are RUNNING too, so
  only the trial runs of trials Optuna failed for a dead heartbeat are marked.

Study runs also carry the tag ``wk.process`` (``host:pid``, :func:`process_tag`).
With local storage a RUNNING study run whose process on this host is gone is
stale whatever its study: a killed attempt followed by an edit of the estimator
code (which names a new study) leaves nothing RUNNING either.
"""

from __future__ import annotations

from weakkernels.pipeline.tracking import (
    PROCESS_TAG,
    dead_here,
    mark_killed,
    process_tag,
)

__all__ = ["kill_stale_runs", "process_tag"]


def _active_run_ids() -> set[str]:
    """The runs this process has open: the active run and its ancestors."""
    import mlflow

    ids: set[str] = set()
    run = mlflow.active_run()
    client = mlflow.MlflowClient()
    while run is not None and run.info.run_id not in ids:
        ids.add(run.info.run_id)
        parent = run.data.tags.get("mlflow.parentRunId")
        run = client.get_run(parent) if parent else None
    return ids


def _mark(client, run_id: str) -> None:
    mark_killed(client, run_id, "kill_stale_runs (resumed study)")


def kill_stale_runs(study: str, storage: str | None = None,
                    optuna_study=None) -> list[str]:
    """Mark KILLED the RUNNING MLflow runs a dead process left for ``study``.

    Local ``storage``: every RUNNING run tagged ``optuna.study == study`` that
    this process did not open.  Server ``storage`` (see
    :func:`~weakkernels.pipeline.tuning.is_server_storage`): RUNNING trial runs
    whose trial ``optuna_study`` holds as FAIL (dead heartbeat).  Both: every
    RUNNING run whose ``wk.process`` names a dead process of this host.  With
    each stale run go its RUNNING child runs (trials) and RUNNING parent (the
    stage run).

    Returns the ids of the runs marked.
    """
    import mlflow

    from weakkernels.pipeline.tuning import is_server_storage

    client = mlflow.MlflowClient()
    active = _active_run_ids()
    exp_ids = [e.experiment_id for e in client.search_experiments()]
    if not exp_ids:
        return []
    quoted = study.replace("'", "\\'")
    shared = storage is not None and is_server_storage(storage)
    stale = {}
    if not shared:
        stale = {
            r.info.run_id: r for r in client.search_runs(
                exp_ids,
                filter_string=f"tags.`optuna.study` = '{quoted}' "
                              "and attributes.status = 'RUNNING'",
                max_results=1000,
            )
            if r.info.run_id not in active
        }
    for r in client.search_runs(
        exp_ids, filter_string="attributes.status = 'RUNNING'", max_results=5000,
    ):
        if r.info.run_id not in active and dead_here(r.data.tags.get(PROCESS_TAG)):
            stale.setdefault(r.info.run_id, r)
    stale = list(stale.values())
    marked: list[str] = []
    for run in stale:
        children = client.search_runs(
            [run.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run.info.run_id}' "
                          "and attributes.status = 'RUNNING'",
            max_results=1000,
        )
        family = [run.info.run_id] + [c.info.run_id for c in children]
        parent = run.data.tags.get("mlflow.parentRunId")
        if parent and parent not in active:
            if client.get_run(parent).info.status == "RUNNING":
                family.append(parent)
        for run_id in family:
            if run_id not in marked and run_id not in active:
                _mark(client, run_id)
                marked.append(run_id)
    if shared:
        marked += _kill_failed_trial_runs(client, exp_ids, quoted, optuna_study,
                                          active | set(marked))
    return marked


def _kill_failed_trial_runs(client, exp_ids, quoted, optuna_study, active):
    from optuna.trial import TrialState

    if optuna_study is None:
        return []
    failed = {str(t.number) for t in optuna_study.get_trials(
        deepcopy=False, states=(TrialState.FAIL,))}
    marked = []
    for parent in client.search_runs(
            exp_ids, filter_string=f"tags.`optuna.study` = '{quoted}'",
            max_results=5000):
        for child in client.search_runs(
                [parent.info.experiment_id],
                filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' "
                              "and attributes.status = 'RUNNING'",
                max_results=5000):
            if (child.data.params.get("trial") in failed
                    and child.info.run_id not in active):
                _mark(client, child.info.run_id)
                marked.append(child.info.run_id)
    return marked
