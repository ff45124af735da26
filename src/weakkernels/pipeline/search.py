"""The ``tune`` stage: Optuna TPE per model x dataset on the tuning split.

Protocol: hyper-parameters are chosen on split ``tune.split_seed`` (never the
test points of the reported splits) at ``tune.n_unlabeled`` (null: the smallest
unlabeled size).  With at most ``tune.cv_max_labeled`` labeled points the loss
is the mean over a stratified ``tune.cv_folds``-fold cross-validation on the
labeled points (each fold trained on the other folds + the unlabeled points);
otherwise it is the error on the labeled *validation* split
(``split.ssl.n_val`` points, disjoint from the training points).  The loss is
the error (1 - AUC for the AUC model).  The MedianPruner stops hopeless trials
from the running mean after each fold, or (validation split) from the
validation loss the estimators with a ``callback`` report every
``tune.callback_every`` iterations.  Each trial is a nested MLflow run.

With ``tune.c_star_fallback: one_se`` an S3VM's best trial is then refit
beside the same configuration with ``C* = 0`` (its own supervised machine),
on the same folds or validation split, and its C* is kept only if it is
better by more than one standard error of the paired per-point difference
(:func:`supervised_fallback`): paper 004 picks C* on labeled validation data,
and a tuned S3VM must not be worse there than its supervised machine.

Writes ``<out>/best_params.json`` and the best validation loss per model x
dataset (``--metrics``; ``results/tune/val_loss.json`` in ``dvc.yaml``).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from pathlib import Path

import numpy as np

import weakkernels
from weakkernels._selection import one_se_better
from weakkernels.pipeline.common import (
    fit_data,
    fixed_params,
    load_prepared,
    load_split,
    split_kind,
    split_path,
)
from weakkernels.pipeline.datasets import DATASETS
from weakkernels.pipeline.registry import (
    MODELS,
    FitContext,
    ValidationMonitor,
    build,
    check_fixed_vs_searched,
    is_choices,
    objective,
    scores,
    start_params,
    suggest,
)
from weakkernels.pipeline.splits import eval_labels, resolve, stratified_folds
from weakkernels.pipeline.stale_runs import kill_stale_runs, process_tag
from weakkernels.pipeline.storage import canonical_hash, sha256_file
from weakkernels.pipeline.timings import heartbeat
from weakkernels.pipeline.tracking import (
    log_dataset_input,
    log_resolved_params,
    nested_run,
)
from weakkernels.pipeline.tuning import (
    FailureReport,
    claim_trial,
    enqueue_start,
    mask_url,
    open_study,
    record_error,
    resolve_storage,
    study_lock,
)

__all__ = ["TRIAL_ERRORS", "cv_fold_count", "estimator_code_hash", "one_se_better",
           "run_trial", "study_name", "supervised_fallback", "tune", "val_loss_metrics"]


# Errors of a trial's fit that fail the trial, not the stage: a configuration
# the estimator refuses or a solver that diverged. The study records them
# (Optuna's ``catch``; the trial's ``error`` attribute) and moves on.
TRIAL_ERRORS = (ValueError, ArithmeticError, np.linalg.LinAlgError)


def cv_fold_count(model: str, y, split, cfg: dict) -> int:
    """Folds of the cross-validation on the labeled points, 0 = validation split.

    Cross-validation is used when the split has at most ``tune.cv_max_labeled``
    labeled points (g50c's official splits have 50): one validation set drawn
    from so few labels (or from the test points) can rank a degenerate
    configuration first.  ``k = min(tune.cv_folds, smallest class count)``.
    SU splits hold pairs, not labels, and keep the validation split.
    """
    if MODELS[model].task == "su" or "labeled" not in split:
        return 0
    lab = np.asarray(y[split["labeled"]])
    if int(cfg["cv_folds"]) < 2 or len(lab) > int(cfg["cv_max_labeled"]):
        return 0
    counts = np.unique(lab, return_counts=True)[1]
    k = min(int(cfg["cv_folds"]), int(counts.min())) if len(counts) >= 2 else 0
    return k if k >= 2 else 0


def run_trial(trial, model, X, y, split, n_unlabeled, *, fixed, overrides,
              callback_every, seed, log_mlflow=True, budget=None,
              cv_folds: int = 0, dataset: str | None = None) -> float:
    """Fit one configuration; report intermediate validation losses; return loss.

    ``cv_folds >= 2``: stratified k-fold on the labeled points (train on the
    other folds + the unlabeled points, score the held-out fold); the running
    mean over the folds is reported after each fold (step = fold) for the
    pruner, and the mean over all folds is the objective.  Otherwise one fit
    scored on the validation split, reported every ``callback_every`` iterations.

    ``budget``: the study's total ``n_trials``, shared by every worker on the
    same storage (:func:`claim_trial` refuses a trial beyond it).

    ``dataset``: the data set's registry name, logged as the trial run's
    MLflow input."""
    if budget is not None:
        claim_trial(trial, budget)
    # Warnings of a trial's fits (a degenerate model for a bad configuration, a
    # solver that did not converge) describe that trial: they are stored with it
    # (Optuna user attribute and MLflow tag ``warnings``) and counted on the
    # study's one line by _run_study, instead of one stderr line per trial.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return _run_trial(trial, model, X, y, split, n_unlabeled, fixed=fixed,
                              overrides=overrides, callback_every=callback_every,
                              seed=seed, log_mlflow=log_mlflow, cv_folds=cv_folds,
                              dataset=dataset)
        finally:
            seen = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
            if seen:
                trial.set_user_attr("warnings", [m[:300] for m in seen[:5]])
                run_id = trial.user_attrs.get("mlflow_run_id")
                if log_mlflow and run_id:
                    from mlflow import MlflowClient

                    MlflowClient().set_tag(run_id, "warnings",
                                           " | ".join(seen)[:5000])


def _run_trial(trial, model, X, y, split, n_unlabeled, *, fixed, overrides,
               callback_every, seed, log_mlflow, cv_folds, dataset=None) -> float:
    import mlflow
    import optuna

    params = suggest(trial, model, overrides)
    data = fit_data(model, X, y, split, n_unlabeled)
    sp = data[0]
    run = mlflow.start_run(run_name=f"trial-{trial.number}", nested=True) \
        if log_mlflow else None
    status = "FAILED"
    try:
        if run is not None:
            trial.set_user_attr("mlflow_run_id", run.info.run_id)
            mlflow.log_params({**params, "trial": trial.number,
                               "cv_folds": cv_folds})
            if dataset is not None:
                _log_input(dataset, X, sp, seed)
        t0 = time.perf_counter()
        overhead = 0.0
        if cv_folds >= 2:
            loss = _cross_validated_loss(
                trial, model, params, fixed, X, y, sp, n_unlabeled, cv_folds,
                seed=seed, callback_every=callback_every, run=run)
        else:
            loss, t0, overhead = _validation_loss(
                trial, model, params, fixed, X, y, data, n_unlabeled, seed=seed,
                callback_every=callback_every, run=run, log_mlflow=log_mlflow)
        fit_time = time.perf_counter() - t0 - overhead
        trial.set_user_attr("fit_time_s", fit_time)
        if run is not None:
            mlflow.log_metrics({"val_loss_final": loss, "fit_time_s": fit_time})
            mlflow.set_tag("optuna.state", "COMPLETE")
        status = "FINISHED"
        return loss
    except optuna.TrialPruned:
        status = "KILLED"
        raise
    except Exception as exc:
        # a trial's own failure is stored on it (and counts as done, so the
        # sampler moves on); any other error stops the stage
        text = record_error(trial, exc) if isinstance(exc, TRIAL_ERRORS) \
            else f"{type(exc).__name__}: {exc}"[:500]
        if run is not None:
            mlflow.set_tag("optuna.state", "FAIL")
            mlflow.set_tag("error", text)
        raise
    finally:
        if run is not None:
            mlflow.end_run(status=status)


def _cross_validated_loss(trial, model, params, fixed, X, y, sp, n_unlabeled,
                          cv_folds, *, seed, callback_every, run) -> float:
    """The mean validation loss over ``cv_folds`` folds (the running mean
    reported after each, the trial pruned between folds)."""
    import mlflow
    import optuna

    spec = MODELS[model]
    losses = []
    for f, (ctx, Xf, yf, X_val, y_val) in enumerate(_protocol_fits(
            model, X, y, sp, n_unlabeled, cv_folds, seed=seed,
            callback_every=callback_every)):
        est = build(model, params, fixed, ctx).fit(Xf, yf)
        if run is not None and f == 0:  # once per run: the first fold's
            log_resolved_params(est)
        losses.append(objective(spec.task, y_val, est.predict(X_val),
                                scores(est, X_val)))
        running = float(np.mean(losses))
        trial.report(running, f)
        if run is not None:
            mlflow.log_metric("val_loss", losses[-1], step=f)
        if f + 1 < cv_folds and trial.should_prune():
            if run is not None:
                mlflow.set_tag("optuna.state", "PRUNED")
            raise optuna.TrialPruned(
                f"pruned after fold {f} (mean loss {running:.4f})")
    trial.set_user_attr("fold_losses", losses)
    return float(np.mean(losses))


def _validation_loss(trial, model, params, fixed, X, y, data, n_unlabeled, *,
                     seed, callback_every, run, log_mlflow):
    """The loss on the validation split of one fit, reported along the fit
    (the trial pruned from the callback); ``(loss, t0, overhead)``: when the
    fit started and the callback's own seconds."""
    import mlflow
    import optuna

    spec = MODELS[model]
    sp, X_fit, y_fit, n_l, prior, scale = data
    X_val, y_val = X[sp["val"]], eval_labels(y, sp, sp["val"])

    def on_value(step, value, elapsed):
        trial.report(value, step)
        if log_mlflow:
            mlflow.log_metric("val_loss", value, step=step)
        if trial.should_prune():
            raise optuna.TrialPruned(
                f"pruned at iteration {step} (loss {value:.4f})")

    monitor = ValidationMonitor(spec.task, X_val, y_val, on_value)
    ctx = FitContext(n_labeled=n_l, n_unlabeled=n_unlabeled, seed=seed,
                     prior=prior, callback=monitor if spec.callback else None,
                     callback_every=callback_every, sigma_scale=scale)
    est = build(model, params, fixed, ctx)
    monitor.start()
    t0 = time.perf_counter()
    try:
        est.fit(X_fit, y_fit)
    except optuna.TrialPruned:
        if run is not None:
            mlflow.set_tag("optuna.state", "PRUNED")
        raise
    overhead = monitor.overhead
    if run is not None:
        log_resolved_params(est)
    loss = objective(spec.task, y_val, est.predict(X_val), scores(est, X_val))
    return loss, t0, overhead


def _protocol_fits(model, X, y, split, n_unlabeled, cv_folds, *, seed,
                   callback_every):
    """The fits of the validation protocol, without a callback:
    ``(ctx, X_fit, y_fit, X_val, y_val)`` for each of ``cv_folds >= 2``
    stratified folds (trained on the other folds + the unlabeled points,
    scored on the held-out labels; the same folds for every trial), else once
    for the validation split."""
    sp, X_fit, y_fit, n_l, prior, scale = fit_data(model, X, y, split, n_unlabeled)

    def ctx(n):
        return FitContext(n_labeled=n, n_unlabeled=n_unlabeled, seed=seed,
                          prior=prior, callback=None,
                          callback_every=callback_every, sigma_scale=scale)

    if cv_folds < 2:
        yield ctx(n_l), X_fit, y_fit, X[sp["val"]], eval_labels(y, sp, sp["val"])
        return
    for tr, te in stratified_folds(y[sp["labeled"]], cv_folds, seed):
        sp_f = {**sp, "labeled": sp["labeled"][tr]}
        _, Xf, yf, n_lf, _, _ = fit_data(model, X, y, sp_f, n_unlabeled)
        held = sp["labeled"][te]
        yield ctx(n_lf), Xf, yf, X[held], eval_labels(y, sp, held)


def supervised_fallback(model, params, X, y, split, n_unlabeled, *, fixed, seed,
                        cv_folds, callback_every) -> dict:
    """Paper 004 chooses C* on labeled validation data; a tuned S3VM must
    never be worse there than its own supervised machine. Refit the best
    trial's ``params`` and the same with ``C* = 0`` under the trial's
    protocol (same folds or validation split) and keep the tuned C* only if
    it is better by more than one standard error (:func:`one_se_better`).

    Returns the record: the chosen ``params``, both validation losses (the
    tuning objective) and errors, the paired difference and its SE."""
    task = MODELS[model].task
    twin = {**params, "c_star_scale": 0.0}
    out = {}
    for name, p in (("tuned", params), ("supervised", twin)):
        wrong, losses = [], []
        for ctx, Xf, yf, X_val, y_val in _protocol_fits(
                model, X, y, split, n_unlabeled, cv_folds, seed=seed,
                callback_every=callback_every):
            est = build(model, p, fixed, ctx).fit(Xf, yf)
            pred = est.predict(X_val)
            wrong.append(np.asarray(pred) != np.asarray(y_val))
            losses.append(objective(task, y_val, pred, scores(est, X_val)))
        out[name] = (np.concatenate(wrong), float(np.mean(losses)))
    better, diff, se = one_se_better(out["tuned"][0], out["supervised"][0])
    kept = "tuned" if better else "supervised"
    return {"rule": "one_se", "kept": kept,
            "params": params if better else twin,
            "val_loss": out[kept][1],
            "tuned_val_loss": out["tuned"][1],
            "supervised_val_loss": out["supervised"][1],
            "tuned_val_error": float(out["tuned"][0].mean()),
            "supervised_val_error": float(out["supervised"][0].mean()),
            "paired_diff": diff, "paired_se": se,
            "n_val_points": int(out["tuned"][0].size)}


def _log_input(dataset: str, X, split: dict, seed: int) -> None:
    kind = "su" if "pairs" in split else "ssl"
    log_dataset_input(DATASETS.get(dataset), X, split, context="tuning",
                      name=dataset, split_name=f"{kind} seed {seed}")


def estimator_code_hash() -> str:
    """sha256 over the code a trial's loss depends on: every module of the
    package -- the estimators, the solver package ``_dsg/``, the baselines and
    the pipeline (model factories, the validation objective, this module). A
    study is resumed only by the code that ran its trials."""
    pkg = Path(weakkernels.__file__).parent
    paths = sorted(pkg.rglob("*.py"))
    h = hashlib.sha256()
    for path in paths:
        h.update(path.relative_to(path.parents[1]).as_posix().encode() + b"\0"
                 + path.read_bytes())
    return h.hexdigest()[:16]


# tune.* keys that do not change which trials a study runs: where it is stored,
# housekeeping of a killed run, and a wall-clock cap (a study cut short by its
# timeout must resume, not restart).
# The C* = 0 check runs after the trials and changes none of them.
_NOT_IN_IDENTITY = ("storage", "fail_stale_running", "timeout_per_study", "space",
                    "c_star_fallback")


def study_name(model, dataset, split_file, fixed, overrides, cfg, n_unlabeled) -> str:
    """``<model>__<dataset>__<fingerprint>``: the fingerprint covers every tune
    setting that changes the result -- ``n_trials`` included, so
    ``dvc exp run -S tune.n_trials=2`` runs a fresh 2-trial study (as a fresh
    clone would) instead of resuming a 10-trial one -- plus the split file, the
    fixed settings, the search space and the estimator code."""
    fp = canonical_hash({
        "model": model, "dataset": dataset, "split_sha256": sha256_file(split_file),
        "fixed": fixed or {}, "space": {k: list(v) for k, v in
                                        MODELS[model].space.items()},
        "overrides": overrides or {}, "n_unlabeled": n_unlabeled,
        "tune": {k: v for k, v in cfg.items() if k not in _NOT_IN_IDENTITY},
        "start": start_params(model, overrides) if cfg["start_with_defaults"] else {},
        # Trials run with other estimator code must not be mixed into this study.
        "code": estimator_code_hash(),
    })
    return f"{model}__{dataset}__{fp}"


def tune(
    pairs: list[tuple[str, str]],
    prepared_dir,
    splits_dir,
    cfg: dict,
    models_cfg: dict,
    *,
    root=".",
    log_mlflow: bool = True,
) -> dict[str, dict]:
    """Run (or resume) one study per pair; return the best parameters per pair.

    ``cfg`` is the ``tune`` section of ``params.yaml`` with every key present
    (``params.yaml`` is the only place defaults live)."""
    import optuna

    # ERROR: Optuna's warning for a failed trial repeats its traceback on every
    # trial; FailureReport prints each distinct error once instead.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = resolve_storage(cfg["storage"], root)
    split_seed = int(cfg["split_seed"])
    best: dict[str, dict] = {}
    logged: set[str] = set()
    for model, dataset in pairs:
        data = load_prepared(prepared_dir, dataset)
        X, y = data["X"], data["y"]
        if log_mlflow and dataset not in logged:  # the stage's parent run
            logged.add(dataset)
            log_dataset_input(DATASETS.get(dataset), X, context="tuning",
                              name=dataset)
        kind = split_kind(model)
        split = load_split(splits_dir, dataset, kind, split_seed)
        n_u = cfg["n_unlabeled"] or int(min(split["n_unlabeled"]))
        n_u = min(int(n_u), len(split["unlabeled"]))
        fixed = fixed_params(models_cfg, model, dataset)
        overrides = (cfg["space"] or {}).get(model, {})
        check_fixed_vs_searched(model, fixed, overrides, where=dataset)
        folds = cv_fold_count(model, y, split, cfg)
        name = study_name(model, dataset, split_path(splits_dir, dataset, kind,
                                                     split_seed),
                          fixed, overrides, cfg, n_u)
        with study_lock(storage, name):
            best[f"{model}/{dataset}"] = _run_study(
                name, storage, model, dataset, X, y, split, n_u, fixed, overrides,
                folds, cfg, log_mlflow)
    return best


def _run_study(name, storage, model, dataset, X, y, split, n_u, fixed, overrides,
               folds, cfg, log_mlflow) -> dict:
    import mlflow

    split_seed = int(cfg["split_seed"])
    study, n_done = open_study(
        name, storage, sampler_seed=int(cfg["sampler_seed"]),
        n_startup_trials=int(cfg["n_startup_trials"]), pruner_cfg=cfg["pruner"],
        fail_stale_running=bool(cfg["fail_stale_running"]),
    )
    remaining = max(0, int(cfg["n_trials"]) - n_done)
    if remaining and cfg["start_with_defaults"]:
        enqueue_start(study, start_params(model, overrides))
    if log_mlflow and cfg["fail_stale_running"]:
        kill_stale_runs(name, storage, study)  # runs a killed attempt left
    with nested_run(f"tune {model} / {dataset}", enabled=log_mlflow) as run:
        if run is not None:
            mlflow.set_tags({"model": model, "dataset": dataset,
                             "optuna.study": name,
                             "optuna.storage": mask_url(storage),
                             "wk.process": process_tag()})
            mlflow.log_params({"n_trials": cfg["n_trials"], "n_unlabeled": n_u,
                               "split_seed": split_seed, "cv_folds": folds,
                               "resumed_with_finished_trials": n_done})
            _log_input(dataset, X, resolve(split, n_u), split_seed)
        t0 = time.perf_counter()
        report = FailureReport(f"tune {model}/{dataset}", study,
                               int(cfg["n_trials"]))
        if remaining:
            with heartbeat(lambda: report.status):
                _optimize(study, report, remaining, model, X, y, split, n_u, fixed,
                          overrides, folds, cfg, log_mlflow, dataset)
        trials = study.get_trials(deepcopy=False)
        states = [t.state.name for t in trials]
        warned_note = _warned_note(trials)
        try:
            bt = study.best_trial
        except ValueError as exc:
            raise RuntimeError(
                f"tune {model}/{dataset}: no trial completed "
                f"({states.count('PRUNED')} pruned, {states.count('FAIL')} "
                f"failed: {report.summary() or 'killed'}){warned_note}; "
                f"study {name}"
            ) from exc
        rec, fallback = _best_record(bt, states, name, model, X, y, split, n_u,
                                     fixed, overrides, folds, cfg)
        if run is not None:
            _log_best(rec, bt, fallback, time.perf_counter() - t0)
        _print_best(model, dataset, rec, bt, fallback, warned_note)
        return rec


def _warned_note(trials) -> str:
    """How many trials warned, and of what kinds, for the study's one line
    (the messages are on each trial)."""
    warned = [t for t in trials if t.user_attrs.get("warnings")]
    kinds = sorted({m.split(":", 1)[0] for t in warned
                    for m in t.user_attrs["warnings"]})
    return (f"; {len(warned)} of {len(trials)} trials warned "
            f"({', '.join(kinds)}: user_attrs['warnings'], MLflow tag "
            "'warnings')") if warned else ""


def _best_record(bt, states, name, model, X, y, split, n_u, fixed, overrides,
                 folds, cfg):
    """The study's record for ``train``: the best trial's parameters (after
    the C* = 0 check where it applies), its loss and the study's counts;
    and the check's record (None without one)."""
    split_seed = int(cfg["split_seed"])
    # Values fixed through tune.space (scalars) are not trial parameters, but
    # train needs them too.
    pinned = {k: v for k, v in (overrides or {}).items()
              if v is not None and not isinstance(v, list | tuple)
              and not is_choices(v)}
    params, val_loss, fallback = dict(bt.params), float(bt.value), None
    if (cfg["c_star_fallback"] == "one_se" and MODELS[model].c_star
            and MODELS[model].task == "ssl" and "c_star_scale" in params):
        fallback = supervised_fallback(
            model, {**pinned, **params}, X, y, split, n_u, fixed=fixed,
            seed=split_seed, cv_folds=folds,
            callback_every=int(cfg["callback_every"]))
        params, val_loss = fallback.pop("params"), fallback["val_loss"]
    rec = {
        "params": {**pinned, **params},
        "val_loss": val_loss,
        "validation": f"{folds}-fold CV on the labeled points" if folds
        else "validation split",
        "trial": bt.number,
        "study": name,
        "n_unlabeled": n_u,
        "n_complete": states.count("COMPLETE"),
        "n_pruned": states.count("PRUNED"),
        "n_failed": states.count("FAIL"),
        "mlflow_run_id": bt.user_attrs.get("mlflow_run_id"),
    }
    if fallback is not None:
        rec["c_star_fallback"] = fallback
    return rec, fallback


def _log_best(rec, bt, fallback, tune_time) -> None:
    """The study's result on its MLflow run."""
    import mlflow

    mlflow.log_metrics({"best_val_loss": rec["val_loss"],
                        "n_complete": rec["n_complete"],
                        "n_pruned": rec["n_pruned"],
                        "tune_time_s": tune_time})
    mlflow.log_params({f"best.{k}": v for k, v in bt.params.items()})
    if fallback is not None:
        mlflow.log_metrics({
            f"c_star_fallback.{k}": v for k, v in fallback.items()
            if isinstance(v, float | int) and not isinstance(v, bool)})
        mlflow.set_tag("c_star_kept", fallback["kept"])
    if rec["mlflow_run_id"]:
        mlflow.set_tag("best_trial_run_id", rec["mlflow_run_id"])


def _print_best(model, dataset, rec, bt, fallback, warned_note="") -> None:
    """The study's result on the stage's output, in one line (``warned_note``:
    how many trials warned, and of what)."""
    if fallback is not None:
        print(f"tune {model}/{dataset}: C* = 0 check: tuned "
              f"{fallback['tuned_val_error']:.4f} vs supervised "
              f"{fallback['supervised_val_error']:.4f} validation error "
              f"(paired diff {fallback['paired_diff']:+.4f}, SE "
              f"{fallback['paired_se']:.4f}): keeps the {fallback['kept']} "
              "machine")
    print(f"tune {model}/{dataset}: best val loss {rec['val_loss']:.4f} "
          f"({rec['validation']}; trial {bt.number}; {rec['n_complete']} "
          f"complete, {rec['n_pruned']} pruned, {rec['n_failed']} failed)"
          f"{warned_note}")


def _optimize(study, report, remaining, model, X, y, split, n_u, fixed, overrides,
              folds, cfg, log_mlflow, dataset) -> None:
    split_seed = int(cfg["split_seed"])
    study.optimize(
        lambda t: run_trial(
            t, model, X, y, split, n_u, fixed=fixed, overrides=overrides,
            callback_every=int(cfg["callback_every"]), seed=split_seed,
            log_mlflow=log_mlflow, budget=int(cfg["n_trials"]),
            cv_folds=folds, dataset=dataset),
        n_trials=remaining,
        timeout=cfg["timeout_per_study"],
        catch=TRIAL_ERRORS,
        callbacks=[report],
        gc_after_trial=False,
    )


def val_loss_metrics(best: dict[str, dict]) -> dict[str, dict]:
    """``{model: {dataset: {val_loss, n_complete, n_pruned}}}`` of the studies."""
    metrics: dict[str, dict] = {}
    for key, rec in best.items():
        model, dataset = key.split("/", 1)
        metrics.setdefault(model, {})[dataset] = {
            "val_loss": rec["val_loss"], "n_complete": rec["n_complete"],
            "n_pruned": rec["n_pruned"]}
    return metrics
