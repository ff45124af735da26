"""The ``train`` stage: fit the tuned parameters x ``train.seeds`` x unlabeled sizes.

For every run it measures, separately: a warm-up fit on a tiny subset
(``compile_time_s``: numba compilation + a tiny fit; only the first run of a
model in the process pays the compilation), the real fit (``fit_time_s``,
excluding the time spent in the validation callback) and prediction on the test
set (``predict_time_s``); these, the curve's times and the MLflow run ids go
to the undeclared ``results/timings/train.json``, not to the DVC outputs.
Estimators with a ``callback`` log the validation error against iterations
(``val_error``, ``step=`` iteration) and the matching training time
(``train_time_s``, same steps). Our models are saved with ``est.save``
(pickle-free file), logged as an artifact and as an MLflow pyfunc model that
applies the ``prepare`` stage's scaling itself (it takes raw rows). Test scores
go to ``<predictions>/<run>.npz`` for the evaluate stage.

MLflow layout: one parent run ``train`` per stage, a nested run per model x
dataset x n_unlabeled, and inside it one nested run per seed.  Every one of
them logs its data set as an MLflow input (the split's row counts in the
input's tags).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from weakkernels.pipeline.common import (
    fit_data,
    fixed_params,
    load_prepared,
    load_split,
    split_kind,
)
from weakkernels.pipeline.datasets import DATASETS
from weakkernels.pipeline.registry import (
    MODELS,
    FitContext,
    ValidationMonitor,
    build,
    objective,
    scores,
)
from weakkernels.pipeline.splits import eval_labels, resolve
from weakkernels.pipeline.storage import save_npz
from weakkernels.pipeline.timings import heartbeat
from weakkernels.pipeline.tracking import (
    log_dataset_input,
    log_pyfunc,
    log_resolved_params,
    nested_run,
)

__all__ = ["FitPool", "train", "train_one", "warmup_rows"]


def warmup_rows(y_fit: np.ndarray, is_su: bool, n: int = 40) -> np.ndarray:
    """A tiny, valid training subset: some labeled (or paired) and unlabeled rows."""
    lab = np.flatnonzero(y_fit != -1)
    unl = np.flatnonzero(y_fit == -1)
    if is_su:
        lab = lab[: 2 * (n // 2)]  # whole pairs only
    else:
        pick = []
        for c in np.unique(y_fit[lab]):  # keep every class present
            pick.extend(lab[y_fit[lab] == c][: max(2, n // 4)])
        lab = np.sort(np.asarray(pick, dtype=np.int64))
    return np.concatenate([lab, unl[:n]])


def train_one(model, X, y, split, n_u, params, fixed, *, seed, callback_every,
              model_path=None, on_curve=None) -> dict:
    """Fit one model on one split; return timings, test scores, curve and the
    fitted estimator."""
    spec = MODELS[model]
    sp, X_fit, y_fit, n_l, prior, scale = fit_data(model, X, y, split, n_u)
    X_val, y_val = X[sp["val"]], eval_labels(y, sp, sp["val"])
    X_test, y_test = X[sp["test"]], eval_labels(y, sp, sp["test"])
    is_su = "pairs" in sp

    # Warm-up on a tiny subset: pays numba compilation outside the timed fit.
    w = warmup_rows(y_fit, is_su)
    n_u_w = int(np.sum(y_fit[w] == -1))
    ctx_w = FitContext(n_labeled=int(np.sum(y_fit[w] != -1)), n_unlabeled=n_u_w,
                       seed=seed, prior=prior, sigma_scale=scale)
    t0 = time.perf_counter()
    try:
        build(model, params, fixed, ctx_w).fit(X_fit[w], y_fit[w])
    except ValueError:
        pass  # a subset too small for this model: compile time then is ~0 anyway
    compile_time = time.perf_counter() - t0

    monitor = ValidationMonitor(spec.task, X_val, y_val, on_curve) \
        if spec.callback else None
    ctx = FitContext(n_labeled=n_l, n_unlabeled=n_u, seed=seed, prior=prior,
                     callback=monitor, callback_every=callback_every,
                     sigma_scale=scale)
    est = build(model, params, fixed, ctx)
    if monitor is not None:
        monitor.start()
    t0 = time.perf_counter()
    est.fit(X_fit, y_fit)
    fit_time = time.perf_counter() - t0 - (monitor.overhead if monitor else 0.0)

    t0 = time.perf_counter()
    s_test = scores(est, X_test)
    pred_test = np.asarray(est.predict(X_test)).astype(np.int64)
    predict_time = time.perf_counter() - t0

    val_loss = objective(spec.task, y_val, est.predict(X_val), scores(est, X_val))
    lab = y_fit != -1
    # SU rows carry no class labels: no training error to report.
    train_error = float(np.mean(est.predict(X_fit[lab]) != y_fit[lab])) \
        if not is_su and lab.any() else None
    if model_path is not None and spec.ours:
        _save_model(est, model_path)
    curve = np.asarray(monitor.history if monitor else np.zeros((0, 3)),
                       dtype=np.float64).reshape(-1, 3)
    return {
        "fit_time_s": fit_time, "compile_time_s": compile_time,
        "predict_time_s": predict_time, "val_loss": val_loss,
        "train_error": train_error, "n_fit": int(len(y_fit)),
        "n_labeled": n_l, "n_unlabeled": n_u,
        "test_idx": sp["test"], "y_test": y_test, "pred_test": pred_test,
        "score_test": s_test, "curve": curve, "X_example": X_test[:5],
        "estimator": est,
    }


def _save_model(est, path) -> None:
    """Write ``est`` to the pickle-free model file ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if "callback" in est.get_params(deep=False):
        # A callable cannot (and should not) go into a pickle-free model file.
        est.set_params(callback=None)
    est.save(path)


def train(pairs, best, prepared_dir, splits_dir, models_dir, pred_dir, cfg,
          models_cfg, *, log_mlflow=True, compute=None) -> list[dict]:
    """Every fit of the stage. ``compute`` (``params.yaml`` ``compute``):
    with ``scheduler: dask`` the fits run as tasks on a Dask cluster
    (:class:`FitPool`), the model files, scores and MLflow runs are written
    here, in the local order: the same outputs as a local run."""
    groups = _plan(pairs, best, splits_dir, cfg, models_cfg)
    with FitPool(compute) as pool:
        if pool.client is not None:  # submit every fit first, then log in order
            for g, (X, y, _) in _with_data(groups, prepared_dir):
                for seed in g["seeds"]:
                    pool.submit((g["model"], g["dataset"], g["n_u"], seed), X,
                                g["model"], y,
                                load_split(splits_dir, g["dataset"], g["kind"], seed),
                                g["n_u"], g["params"], g["fixed"], seed=seed,
                                callback_every=int(cfg["callback_every"]))
        return _train(groups, prepared_dir, splits_dir, models_dir, pred_dir, cfg,
                      log_mlflow=log_mlflow, pool=pool)


class FitPool:
    """Where :func:`train_one` runs: here (``scheduler: local``), or as tasks
    of a ``distributed.Client`` on ``address`` (a ``LocalCluster`` when it is
    null). A fit is deterministic given its inputs (the seeded estimators
    add their chunk partials in a fixed order), so where it ran does not
    change its result."""

    def __init__(self, compute=None):
        compute = compute or {"scheduler": "local", "address": None}
        self.client, self._cluster, self._futures = None, None, {}
        if compute["scheduler"] != "dask":
            return
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise ImportError("compute.scheduler: dask needs dask and distributed: "
                              "pip install 'weakkernels[dask]'") from exc
        if compute["address"]:
            self.client = Client(compute["address"])
        else:
            import dask

            # Dask's nannies pin BLAS/OpenMP to one thread; the local run does
            # not, and a threaded BLAS rounds differently (Cholesky of the
            # Nystrom landmarks, the kernel baselines' solves): the workers
            # get this process's environment, so their fits are the local ones
            env = {k: v for k, v in
                   dask.config.get("distributed.nanny.pre-spawn-environ").items()
                   if not k.endswith("_NUM_THREADS")}
            with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
                self._cluster = LocalCluster(threads_per_worker=1, processes=True,
                                             dashboard_address=None)
            self.client = Client(self._cluster)
        self._data: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def submit(self, key, X, *args, **kwargs):
        """Start fit ``key`` on the cluster (``X`` sent once per data set)."""
        ident = id(X)
        if ident not in self._data:
            self._data[ident] = (X, self.client.scatter(X, hash=False))
        self.submit_call(key, train_one, args[0], self._data[ident][1], *args[1:],
                         **kwargs)

    def submit_call(self, key, fn, *args, **kwargs):
        """Start ``fn(*args, **kwargs)`` as task ``key`` (an independent job
        of a stage or of the benchmark harness)."""
        self._futures[key] = self.client.submit(fn, *args, pure=False, **kwargs)

    def result(self, key):
        """The result of task ``key`` (waits for it)."""
        return self._futures.pop(key).result()

    def run(self, key, *args, model_path=None, on_curve=None, **kwargs):
        """:func:`train_one` here, or the result of its task; the model file
        is written and the curve reported here in both cases."""
        if self.client is None:
            return train_one(*args, model_path=model_path, on_curve=on_curve,
                             **kwargs)
        out = self.result(key)
        if model_path is not None and MODELS[args[0]].ours:
            _save_model(out["estimator"], model_path)
        if on_curve is not None:
            for step, loss, elapsed in out["curve"]:
                on_curve(int(step), float(loss), float(elapsed))
        return out


def _plan(pairs, best, splits_dir, cfg, models_cfg) -> list[dict]:
    """The stage's fits, in the order they are logged: one group per model x
    data set x unlabeled size (its tuned and fixed parameters, its seeds)."""
    seeds = [int(s) for s in cfg["seeds"]]
    groups = []
    for model, dataset in pairs:
        key = f"{model}/{dataset}"
        if key not in best:
            raise KeyError(f"no tuned parameters for {key} (run the tune stage)")
        params = best[key]["params"]
        fixed = fixed_params(models_cfg, model, dataset)
        clash = sorted(set(fixed) & (set(params) | ({"sigma"} if "sigma_rel" in params
                                                    else set())))
        if clash:
            raise ValueError(
                f"{key}: {clash} are both fixed (models.fixed) and tuned "
                f"(results/tune/best_params.json); the tuned value would win -- "
                f"remove them from models.fixed or rerun tune")
        kind = split_kind(model)
        first = load_split(splits_dir, dataset, kind, seeds[0])
        sizes = cfg["n_unlabeled"] or [int(n) for n in first["n_unlabeled"]]
        for i, n_u in enumerate(sizes):
            groups.append({"model": model, "dataset": dataset, "kind": kind,
                           "params": params, "fixed": fixed, "first": first,
                           "n_u": min(int(n_u), len(first["unlabeled"])),
                           "seeds": seeds, "new_pair": i == 0})
    return groups


def _with_data(groups, prepared_dir):
    """``(group, (X, y, scaler))``, each pair's prepared set loaded once."""
    data = None
    for g in groups:
        if g["new_pair"]:
            prep = load_prepared(prepared_dir, g["dataset"])
            # (lo, span, kind): kind is maxabs for a sparse (CSR) set, else minmax
            scaler = (prep["scale_lo"], prep["scale_span"],
                      str(prep.get("scale_kind", "minmax"))) \
                if "scale_lo" in prep else None
            data = (prep["X"], prep["y"], scaler)
        yield g, data


def _train(groups, prepared_dir, splits_dir, models_dir, pred_dir, cfg, *,
           log_mlflow, pool) -> list[dict]:
    total = sum(len(g["seeds"]) for g in groups)
    progress = {"status": f"train: 0 of {total} fits done"}
    with heartbeat(lambda: progress["status"]):
        return _train_groups(groups, prepared_dir, splits_dir, models_dir, pred_dir,
                             cfg, log_mlflow=log_mlflow, pool=pool,
                             progress=progress, total=total)


def _train_groups(groups, prepared_dir, splits_dir, models_dir, pred_dir, cfg, *,
                  log_mlflow, pool, progress, total) -> list[dict]:
    import mlflow

    records = []
    logged: set[str] = set()
    for g, (X, y, scaler) in _with_data(groups, prepared_dir):
        model, dataset, kind, n_u = g["model"], g["dataset"], g["kind"], g["n_u"]
        params, fixed, seeds = g["params"], g["fixed"], g["seeds"]
        if log_mlflow and dataset not in logged:  # the stage's parent run
            logged.add(dataset)
            log_dataset_input(DATASETS.get(dataset), X, context="training",
                              name=dataset)
        with nested_run(f"{model} / {dataset} / nu={n_u}",
                        enabled=log_mlflow) as group:
            if group is not None:
                mlflow.set_tags({"model": model, "dataset": dataset,
                                 "n_unlabeled": str(n_u), "level": "group"})
                mlflow.log_params({**params, **{f"fixed.{k}": v for k, v in
                                                 fixed.items()},
                                   "n_unlabeled": n_u, "seeds": str(seeds)})
                log_dataset_input(
                    DATASETS.get(dataset), X, resolve(g["first"], n_u),
                    context="training", name=dataset,
                    split_name=f"{kind} seeds {','.join(map(str, seeds))}")
            for seed in seeds:
                label = f"train {model}/{dataset} nu={n_u} seed={seed}"
                progress["status"] = (f"train: {len(records)} of {total} fits "
                                      f"done, fitting {label[6:]}")
                # a fit's warnings go on its run (tag 'warnings') and are named
                # on its one line, not printed one traceback line pair each
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    rec = _train_seed(model, dataset, X, y, kind, splits_dir,
                                      models_dir, pred_dir, n_u, seed, params,
                                      fixed, cfg, log_mlflow, scaler, pool)
                print(f"{label}: fit {rec['fit_time_s']:.3f}s (warm-up "
                      f"{rec['compile_time_s']:.2f}s) val loss "
                      f"{rec['val_loss']:.4f}{_warned(caught, rec['run_id'])}",
                      flush=True)
                rec["group_run_id"] = group.info.run_id if group else None
                records.append(rec)
    return records


def _warned(caught, run_id) -> str:
    """`` (warned: <kinds>)`` for a fit's line; the messages to its run."""
    if not caught:
        return ""
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    if run_id:
        from mlflow import MlflowClient

        MlflowClient().set_tag(run_id, "warnings", " | ".join(messages)[:5000])
    kinds = sorted({w.category.__name__ for w in caught})
    where = "; MLflow tag 'warnings'" if run_id else ""
    return f" (warned: {', '.join(kinds)}{where})"


def _train_seed(model, dataset, X, y, kind, splits_dir, models_dir, pred_dir, n_u,
                seed, params, fixed, cfg, log_mlflow, scaler=None,
                pool=None) -> dict:
    import mlflow

    split = load_split(splits_dir, dataset, kind, seed)
    tag = f"{model}__{dataset}__nu{n_u}__seed{seed}"
    model_path = Path(models_dir) / model / dataset / f"nu{n_u}_seed{seed}.wkm"
    with nested_run(f"seed {seed}", enabled=log_mlflow) as run:
        def on_curve(step, loss, elapsed):
            if log_mlflow and cfg["log_curves"]:
                mlflow.log_metrics({"val_error": loss, "train_time_s": elapsed},
                                   step=step)

        out = (pool or FitPool()).run(
            (model, dataset, n_u, seed), model, X, y, split, n_u, params, fixed,
            seed=seed, callback_every=int(cfg["callback_every"]),
            model_path=model_path, on_curve=on_curve)
        # The curve's wall-clock column stays out of the DVC output (see
        # weakkernels.pipeline.timings): iteration and validation loss only.
        save_npz(Path(pred_dir) / f"{tag}.npz", test_idx=out["test_idx"],
                 y_test=out["y_test"], pred_test=out["pred_test"],
                 score_test=out["score_test"], curve=out["curve"][:, :2])
        rec = {
            "model": model, "dataset": dataset, "n_unlabeled": n_u, "seed": seed,
            "task": MODELS[model].task, "predictions": f"{tag}.npz",
            "model_file": str(model_path) if MODELS[model].ours else None,
            **{k: out[k] for k in ("fit_time_s", "compile_time_s",
                                   "predict_time_s", "val_loss", "train_error",
                                   "n_fit", "n_labeled")},
            "run_id": run.info.run_id if run else None,
            "curve_time_s": [float(t) for t in out["curve"][:, 2]],
        }
        if run is not None:
            mlflow.set_tags({"model": model, "dataset": dataset,
                             "n_unlabeled": str(n_u), "seed": str(seed),
                             "level": "seed"})
            mlflow.log_params({**params, "seed": seed, "n_unlabeled": n_u,
                               "n_labeled": out["n_labeled"], "n_fit": out["n_fit"]})
            log_dataset_input(DATASETS.get(dataset), X, resolve(split, n_u),
                              context="training", name=dataset,
                              split_name=f"{kind} seed {seed}")
            log_resolved_params(out["estimator"])
            metrics = {"fit_time_s": out["fit_time_s"],
                       "compile_time_s": out["compile_time_s"],
                       "predict_time_s": out["predict_time_s"],
                       "val_loss": out["val_loss"]}
            if out["train_error"] is not None:
                metrics["train_error"] = out["train_error"]
            mlflow.log_metrics(metrics)
            if MODELS[model].ours:
                mlflow.log_artifact(str(model_path), artifact_path="model_file")
                if cfg["log_pyfunc"]:
                    lo_span, kind = (scaler[:2], scaler[2]) if scaler \
                        else (None, "minmax")
                    # named by estimator and data set: MLflow's models tab
                    # lists logged models by name
                    info = log_pyfunc(model_path, out["X_example"],
                                      name=f"{model}-{dataset}-nu{n_u}-seed{seed}",
                                      scaler=lo_span, scale_kind=kind)
                    rec["pyfunc_uri"] = info.model_uri
        return rec
