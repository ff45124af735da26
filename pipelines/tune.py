"""Stage ``tune``: Optuna TPE per model x dataset on the tuning split.

Protocol: hyper-parameters are chosen on a labeled *validation* split
(``split.ssl.n_val`` points of split ``tune.split_seed``, disjoint from its
training points; never the test points of the reported splits) at
``tune.n_unlabeled`` (default: the smallest unlabeled size).  The loss is the
validation error (1 - AUC for the AUC model).  Estimators with a ``callback``
report the validation loss every ``tune.callback_every`` iterations; the
MedianPruner stops hopeless trials.  Each trial is a nested MLflow run.

Writes ``<out>/best_params.json`` and ``metrics/tune.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from weakkernels.pipeline.common import (
    fit_data,
    fixed_params,
    load_prepared,
    load_split,
    model_dataset_pairs,
    split_kind,
    split_path,
)
from weakkernels.pipeline.models import (
    MODELS,
    FitContext,
    ValidationMonitor,
    build,
    check_models,
    objective,
    scores,
    suggest,
)
from weakkernels.pipeline.splits import eval_labels
from weakkernels.pipeline.stale_runs import kill_stale_runs, process_tag
from weakkernels.pipeline.storage import (
    atomic_write_json,
    canonical_hash,
    load_params,
    repo_root,
    sha256_file,
)
from weakkernels.pipeline.tuning import (
    claim_trial,
    mask_url,
    open_study,
    resolve_storage,
)


def run_trial(trial, model, X, y, split, n_unlabeled, *, fixed, overrides,
              callback_every, seed, log_mlflow=True, budget=None) -> float:
    """Fit one configuration; report intermediate validation losses; return loss.

    ``budget``: the study's total ``n_trials``, shared by every worker on the
    same storage (:func:`claim_trial` refuses a trial beyond it)."""
    import mlflow
    import optuna

    if budget is not None:
        claim_trial(trial, budget)
    spec = MODELS[model]
    params = suggest(trial, model, overrides)
    sp, X_fit, y_fit, n_l, prior, scale = fit_data(model, X, y, split, n_unlabeled)
    X_val, y_val = X[sp["val"]], eval_labels(y, sp, sp["val"])

    def on_value(step, loss, elapsed):
        trial.report(loss, step)
        if log_mlflow:
            mlflow.log_metric("val_loss", loss, step=step)
        if trial.should_prune():
            raise optuna.TrialPruned(f"pruned at iteration {step} (loss {loss:.4f})")

    monitor = ValidationMonitor(spec.task, X_val, y_val, on_value)
    ctx = FitContext(n_labeled=n_l, n_unlabeled=n_unlabeled, seed=seed,
                     prior=prior, callback=monitor if spec.callback else None,
                     callback_every=callback_every, sigma_scale=scale)
    est = build(model, params, fixed, ctx)
    run = mlflow.start_run(run_name=f"trial-{trial.number}", nested=True) \
        if log_mlflow else None
    status = "FAILED"
    try:
        if run is not None:
            mlflow.log_params({**params, "trial": trial.number})
        monitor.start()
        t0 = time.perf_counter()
        try:
            est.fit(X_fit, y_fit)
        except optuna.TrialPruned:
            if run is not None:
                mlflow.set_tag("optuna.state", "PRUNED")
            raise
        fit_time = time.perf_counter() - t0 - monitor.overhead
        loss = objective(spec.task, y_val, est.predict(X_val), scores(est, X_val))
        trial.set_user_attr("fit_time_s", fit_time)
        if run is not None:
            trial.set_user_attr("mlflow_run_id", run.info.run_id)
            mlflow.log_metrics({"val_loss_final": loss, "fit_time_s": fit_time})
            mlflow.set_tag("optuna.state", "COMPLETE")
        status = "FINISHED"
        return loss
    except optuna.TrialPruned:
        status = "KILLED"
        raise
    except Exception as exc:
        if run is not None:
            mlflow.set_tag("optuna.state", "FAIL")
            mlflow.set_tag("error", f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        if run is not None:
            mlflow.end_run(status=status)


def estimator_code_hash() -> str:
    """sha256 over the estimator modules (``src/weakkernels/*.py``)."""
    import hashlib

    import weakkernels

    h = hashlib.sha256()
    for path in sorted(Path(weakkernels.__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def study_name(model, dataset, split_file, fixed, overrides, cfg, n_unlabeled) -> str:
    fp = canonical_hash({
        "model": model, "dataset": dataset, "split_sha256": sha256_file(split_file),
        "fixed": fixed or {}, "space": {k: list(v) for k, v in
                                        MODELS[model].space.items()},
        "overrides": overrides or {}, "sampler_seed": cfg.get("sampler_seed", 0),
        "n_startup_trials": cfg.get("n_startup_trials", 4),
        "pruner": cfg.get("pruner") or {}, "n_unlabeled": n_unlabeled,
        "callback_every": cfg.get("callback_every", 2),
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
    """Run (or resume) one study per pair; return the best parameters per pair."""
    import mlflow
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = resolve_storage(cfg.get("storage"), root)
    split_seed = int(cfg.get("split_seed", 0))
    best: dict[str, dict] = {}
    for model, dataset in pairs:
        data = load_prepared(prepared_dir, dataset)
        X, y = data["X"], data["y"]
        kind = split_kind(model)
        split = load_split(splits_dir, dataset, kind, split_seed)
        n_u = cfg.get("n_unlabeled") or int(min(split["n_unlabeled"]))
        n_u = min(int(n_u), len(split["unlabeled"]))
        fixed = fixed_params(models_cfg, model, dataset)
        overrides = (cfg.get("space") or {}).get(model, {})
        name = study_name(model, dataset, split_path(splits_dir, dataset, kind,
                                                     split_seed),
                          fixed, overrides, cfg, n_u)
        study, n_done = open_study(
            name, storage, sampler_seed=int(cfg.get("sampler_seed", 0)),
            n_startup_trials=int(cfg.get("n_startup_trials", 4)),
            pruner_cfg=cfg.get("pruner"),
            fail_stale_running=bool(cfg.get("fail_stale_running", True)),
        )
        remaining = max(0, int(cfg["n_trials"]) - n_done)
        if log_mlflow and cfg.get("fail_stale_running", True):
            kill_stale_runs(name, storage, study)  # runs a killed attempt left
        run = mlflow.start_run(run_name=f"tune {model} / {dataset}", nested=True) \
            if log_mlflow else None
        try:
            if run is not None:
                mlflow.set_tags({"model": model, "dataset": dataset,
                                 "optuna.study": name,
                                 "optuna.storage": mask_url(storage),
                                 "wk.process": process_tag()})
                mlflow.log_params({"n_trials": cfg["n_trials"], "n_unlabeled": n_u,
                                   "split_seed": split_seed,
                                   "resumed_with_finished_trials": n_done})
            t0 = time.perf_counter()
            if remaining:
                study.optimize(
                    lambda t, m=model, X=X, y=y, s=split, nu=n_u, f=fixed,
                    o=overrides: run_trial(
                        t, m, X, y, s, nu, fixed=f, overrides=o,
                        callback_every=int(cfg.get("callback_every", 2)),
                        seed=split_seed, log_mlflow=log_mlflow,
                        budget=int(cfg["n_trials"])),
                    n_trials=remaining,
                    timeout=cfg.get("timeout_per_study"),
                    catch=(ValueError, ArithmeticError, np.linalg.LinAlgError),
                    gc_after_trial=False,
                )
            states = [t.state.name for t in study.get_trials(deepcopy=False)]
            try:
                bt = study.best_trial
            except ValueError as exc:
                raise RuntimeError(
                    f"study {name}: no trial completed ({states.count('PRUNED')} "
                    f"pruned, {states.count('FAIL')} failed)"
                ) from exc
            rec = {
                "params": bt.params,
                "val_loss": float(bt.value),
                "trial": bt.number,
                "study": name,
                "n_unlabeled": n_u,
                "n_complete": states.count("COMPLETE"),
                "n_pruned": states.count("PRUNED"),
                "n_failed": states.count("FAIL"),
                "mlflow_run_id": bt.user_attrs.get("mlflow_run_id"),
            }
            best[f"{model}/{dataset}"] = rec
            if run is not None:
                mlflow.log_metrics({"best_val_loss": rec["val_loss"],
                                    "n_complete": rec["n_complete"],
                                    "n_pruned": rec["n_pruned"],
                                    "tune_time_s": time.perf_counter() - t0})
                mlflow.log_params({f"best.{k}": v for k, v in bt.params.items()})
                if rec["mlflow_run_id"]:
                    mlflow.set_tag("best_trial_run_id", rec["mlflow_run_id"])
            print(f"tune {model}/{dataset}: best val loss {rec['val_loss']:.4f} "
                  f"(trial {bt.number}; {rec['n_complete']} complete, "
                  f"{rec['n_pruned']} pruned, {rec['n_failed']} failed)")
        finally:
            if run is not None:
                mlflow.end_run()
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prepared", default="data/prepared")
    ap.add_argument("--splits", default="data/splits")
    ap.add_argument("--out", default="results/tune")
    ap.add_argument("--metrics", default="metrics/tune.json")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--n-trials", default=None, help="override tune.n_trials")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    if args.n_trials is not None:
        params["tune"]["n_trials"] = int(float(args.n_trials))
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    root = repo_root(Path(args.params).resolve().parent)
    models = params["models"]["names"]
    check_models(models)
    pairs = model_dataset_pairs(models, params["data"]["datasets"],
                                (params["split"].get("su") or {}).get("datasets", []))
    cfg = params["tune"]
    setup_mlflow(params["mlflow"]["experiment"], root)
    with mlflow.start_run(run_name="tune"):
        mlflow.set_tags(provenance_tags(root, "tune", {k: params[k] for k in
                                                       ("tune", "models", "data")}))
        best = tune(pairs, args.prepared, args.splits, cfg, params["models"],
                    root=root)
    atomic_write_json(Path(args.out) / "best_params.json", best)
    metrics: dict[str, dict] = {}
    for key, rec in best.items():
        model, dataset = key.split("/", 1)
        metrics.setdefault(model, {})[dataset] = {
            "val_loss": rec["val_loss"], "n_complete": rec["n_complete"],
            "n_pruned": rec["n_pruned"]}
    atomic_write_json(args.metrics, metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
