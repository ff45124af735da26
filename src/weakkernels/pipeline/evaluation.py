"""The ``evaluate`` stage: test error / accuracy / AUC per model x dataset x seed.

Reads the train stage's run list and test predictions, computes the metrics,
checks that every saved model file reloads (``weakkernels.load``) and reproduces
its test scores, flags degenerate models, and writes

* ``metrics/test.json`` -- the headline, small enough for ``dvc metrics show``
  and ``dvc exp show``: per dataset, like with like -- the flagship
  (:data:`~weakkernels.pipeline.comparison.HEADLINE_MODEL`) against ``svc`` on
  the same labels and splits, their paired mean difference of test error
  (``diff``, negative: the flagship errs less) and whether the seeds resolve it
  (``resolved``), and the number of flagged models (DVC ``metrics:``; no
  timings, which change on every run);
* ``<out>/summary.json`` -- mean and std over seeds per model / dataset /
  unlabeled size and the degenerate flags (for the report stage);
* ``<out>/per_seed.json`` -- one record per run;
* ``results/timings/{summary,per_seed}.json`` -- the same with the timings and
  MLflow run ids (``--timings``; not DVC outputs: they change on every run).

A model is *degenerate* on a test set when it predicts a single class or its
error is at least the majority-class error (the error of always answering the
most frequent test class): tuning picked a point that learned nothing.  The
flag and its reason go into the summary, the report and MLflow
(``degenerate=true``, ``degenerate_reason``).

A semi-supervised model is *behind the supervised baseline* when its mean test
error exceeds that of ``svc`` on the same labels (same dataset, unlabeled size
and seeds) by more than :data:`BEHIND_SUPERVISED` (``behind_supervised`` in the
summary, the gap; a note in the report): its unlabeled term costs accuracy
there, which neither it nor the degenerate flag says (docs/benchmarks/design_notes.md,
"The pipeline").

The same values go to MLflow with the ``test_`` prefix: per seed into the seed
run, means into the model x dataset x n_unlabeled run, and the comparison (each
model's mean test error / AUC per dataset and the headline,
:func:`parent_metrics`) into the ``train`` parent run.  Each dataset's best
servable classifier is registered in MLflow's model registry as a version of
``weakkernels-<dataset>``; its alias ``champion`` (what is served) moves only
on purpose
(:func:`champions`, :func:`register_champions`, :mod:`.promotion`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from weakkernels.pipeline.common import load_prepared
from weakkernels.pipeline.comparison import (
    HEADLINE_MODEL,
    REFERENCE,
    paired_differences,
)
from weakkernels.pipeline.promotion import experiment_name, register
from weakkernels.pipeline.registry import MODELS, load_model, scores
from weakkernels.pipeline.storage import load_npz

__all__ = ["BEHIND_SUPERVISED",
           "behind_supervised", "champions", "check_reloads",
           "comparison_size", "degenerate_reason", "evaluate",
           "headline", "headline_metrics", "log_to_mlflow", "parent_metrics",
           "register_champions",
           "summary_lines", "served_test_rows", "test_metrics"]


def test_metrics(y_true, y_pred, score) -> dict[str, float]:
    """Error, accuracy and (binary problems, finite scores) ROC AUC."""
    from sklearn.metrics import roc_auc_score

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    acc = float(np.mean(y_true == y_pred))
    out = {"test_error": 1.0 - acc, "test_accuracy": acc}
    score = np.asarray(score, dtype=np.float64)
    if len(np.unique(y_true)) == 2 and np.all(np.isfinite(score)):
        out["test_auc"] = float(roc_auc_score(y_true, score))
    return out


def degenerate_reason(y_true, y_pred) -> str | None:
    """Why a model's test predictions are no better than a constant, or None."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if len(y_true) == 0:
        return None
    classes = np.unique(y_pred)
    if len(classes) == 1:
        return f"predicts only class {int(classes[0])} on {len(y_pred)} test points"
    _, counts = np.unique(y_true, return_counts=True)
    majority_error = 1.0 - counts.max() / len(y_true)
    error = float(np.mean(y_true != y_pred))
    if error >= majority_error:
        return (f"test error {error:.3f} >= majority-class error "
                f"{majority_error:.3f}")
    return None


# Gap in mean test error (one percentage point) past which a semi-supervised
# model is noted as behind SVC on the same labels: well above the default
# report's seed noise between equal machines (one test point in 2 000 a seed).
BEHIND_SUPERVISED = 0.01


def behind_supervised(summary: dict) -> dict[tuple[str, str, str], float]:
    """``{(model, dataset, "nu<n>"): gap}`` for every semi-supervised model
    (task ``"ssl"``, fitted on unlabeled rows too) whose mean test error is
    more than :data:`BEHIND_SUPERVISED` above ``svc``'s
    (:data:`~weakkernels.pipeline.comparison.REFERENCE`) in the same cell."""
    out = {}
    for ds, by_nu in summary.get(REFERENCE, {}).items():
        for nu, base in by_nu.items():
            if base.get("degenerate"):  # no baseline to be behind
                continue
            for model, by_ds in summary.items():
                spec = MODELS.get(model)
                e = by_ds.get(ds, {}).get(nu)
                if (e is None or spec is None or spec.task != "ssl"
                        or spec.labeled_only or model == REFERENCE):
                    continue
                gap = e["test_error_mean"] - base["test_error_mean"]
                if gap > BEHIND_SUPERVISED:
                    out[(model, ds, nu)] = round(gap, 4)
    return out


def _datasets(summary: dict) -> list[str]:
    return sorted({ds for by_ds in summary.values() for ds in by_ds})


def comparison_size(summary: dict, dataset: str) -> tuple[str, list[str]]:
    """``(nu<n>, models)``: the unlabeled size most models of ``dataset`` share
    (ties: the largest) and the models that ran at it."""
    sizes: dict[str, list[str]] = {}
    for model, by_ds in summary.items():
        for nu in by_ds.get(dataset, {}):
            sizes.setdefault(nu, []).append(model)
    nu = max(sizes, key=lambda k: (len(sizes[k]), int(k[2:])))
    return nu, sizes[nu]


def parent_metrics(summary: dict, per_seed: list[dict]) -> dict[str, float]:
    """The comparison in one row: per dataset, each model's mean test error
    (``test_error.<dataset>.<model>``) and AUC (``test_auc.<dataset>.<model>``)
    at the comparison size, and the headline (:func:`headline_metrics`).
    Logged into the ``train`` parent run, whose row in the MLflow UI then
    compares every model without expanding its children."""
    out: dict[str, float] = {}
    for ds in _datasets(summary):
        nu, models = comparison_size(summary, ds)
        for m in models:
            for key in ("test_error", "test_auc"):
                if f"{key}_mean" in summary[m][ds][nu]:
                    out[f"{key}.{ds}.{m}"] = summary[m][ds][nu][f"{key}_mean"]
    out.update(headline_metrics(headline(summary, per_seed)))
    return out


def _headline_size(summary: dict, paired: dict, dataset: str) -> str | None:
    """The unlabeled size of the headline: the comparison size if the flagship
    and the reference both ran there, else the largest size they share."""
    shared = [nu for nu in summary.get(HEADLINE_MODEL, {}).get(dataset, {})
              if (HEADLINE_MODEL, dataset, int(nu[2:])) in paired]
    if not shared:
        return None
    nu, _ = comparison_size(summary, dataset)
    return nu if nu in shared else max(shared, key=lambda k: int(k[2:]))


def headline(summary: dict, per_seed: list[dict]) -> dict:
    """Per dataset, like with like: the flagship
    (:data:`~weakkernels.pipeline.comparison.HEADLINE_MODEL`) against the
    supervised machine on the same labels and splits
    (:data:`~weakkernels.pipeline.comparison.REFERENCE`) at the unlabeled size
    most models share (:func:`_headline_size`).  ``diff``: the mean over seeds
    of the flagship's test error minus the reference's on the same split
    (negative: the flagship errs less); ``resolved``: the seeds resolve it (the
    report's mark, :func:`~weakkernels.pipeline.comparison.paired_differences`);
    ``flagged``: the number of degenerate model x size entries of the dataset.
    A dataset where the two did not both run has ``flagged`` only.  Three
    values per dataset: ``dvc metrics show`` stays within 120 columns for
    two datasets."""
    paired = paired_differences(per_seed)
    out: dict = {}
    for ds in _datasets(summary):
        entry: dict = {}
        nu = _headline_size(summary, paired, ds)
        if nu is not None:
            mean, _, _, resolved = paired[(HEADLINE_MODEL, ds, int(nu[2:]))]
            entry.update(diff=round(mean, 4), resolved=resolved)
        entry["flagged"] = sum(bool(e.get("degenerate")) for by_ds in summary.values()
                               for e in by_ds.get(ds, {}).values())
        out[ds] = entry
    return out


def headline_metrics(head: dict) -> dict[str, float]:
    """:func:`headline` as MLflow metrics: ``headline.<dataset>.<key>``
    (``resolved`` as 1.0 / 0.0)."""
    return {f"headline.{ds}.{k}": float(v) for ds, entry in head.items()
            for k, v in entry.items()}


def evaluate(runs: list[dict], pred_dir, prepared_dir=None, *, check_reload=True):
    """Return ``(per_seed records, summary)``; see the module docstring."""
    per_seed = []
    cache: dict[str, np.ndarray] = {}
    for r in runs:
        p = load_npz(Path(pred_dir) / r["predictions"])
        rec = {k: r[k] for k in ("model", "dataset", "n_unlabeled", "seed", "task",
                                 "fit_time_s", "compile_time_s", "predict_time_s",
                                 "run_id", "group_run_id") if k in r}
        rec.update(test_metrics(p["y_test"], p["pred_test"], p["score_test"]))
        rec["n_test"] = int(len(p["y_test"]))
        reason = degenerate_reason(p["y_test"], p["pred_test"])
        if reason:
            rec["degenerate_reason"] = reason
        if check_reload and r.get("model_file") and prepared_dir is not None:
            if r["dataset"] not in cache:
                cache[r["dataset"]] = load_prepared(prepared_dir, r["dataset"])["X"]
            est = load_model(r["model_file"])
            s2 = scores(est, cache[r["dataset"]][p["test_idx"]])
            rec["reload_max_abs_diff"] = float(np.max(np.abs(s2 - p["score_test"])))
        per_seed.append(rec)
    summary: dict = {}
    groups: dict[tuple, list[dict]] = {}
    for rec in per_seed:
        groups.setdefault((rec["model"], rec["dataset"], rec["n_unlabeled"]),
                          []).append(rec)
    for (model, dataset, n_u), recs in groups.items():
        entry = {"n_seeds": len(recs)}
        for key in ("test_error", "test_accuracy", "test_auc", "fit_time_s",
                    "predict_time_s"):
            vals = [x[key] for x in recs if key in x]
            if vals:
                entry[f"{key}_mean"] = float(np.mean(vals))
                entry[f"{key}_std"] = float(np.std(vals))
        bad = [f"seed {x['seed']}: {x['degenerate_reason']}" for x in recs
               if "degenerate_reason" in x]
        entry["degenerate"] = bool(bad)
        if bad:
            entry["degenerate_reason"] = "; ".join(bad)
        summary.setdefault(model, {}).setdefault(dataset, {})[f"nu{n_u}"] = entry
    for (model, dataset, nu), gap in behind_supervised(summary).items():
        summary[model][dataset][nu]["behind_supervised"] = gap
    return per_seed, summary


def log_to_mlflow(per_seed, summary, parent_run_id=None) -> None:
    """Log test metrics into the train runs (by id; works inside an active run)."""
    import time

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient()
    now = int(time.time() * 1000)

    def log(run_id, metrics, reason=None):
        from mlflow.entities import RunTag

        tags = [RunTag("degenerate", "true" if reason else "false")]
        if reason:
            tags.append(RunTag("degenerate_reason", reason[:5000]))
        client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0)
                                          for k, v in metrics.items()], tags=tags)

    groups = {}
    for rec in per_seed:
        if rec.get("run_id"):
            log(rec["run_id"], {k: v for k, v in rec.items()
                                if k.startswith("test_") or k == "reload_max_abs_diff"},
                rec.get("degenerate_reason"))
        if rec.get("group_run_id"):
            groups[rec["group_run_id"]] = (rec["model"], rec["dataset"],
                                           rec["n_unlabeled"])
    for run_id, (model, dataset, n_u) in groups.items():
        entry = summary[model][dataset][f"nu{n_u}"]
        log(run_id, {k: v for k, v in entry.items() if k.startswith("test_")},
            entry.get("degenerate_reason"))
        if "behind_supervised" in entry:  # filter: tags.behind_supervised != ""
            client.set_tag(run_id, "behind_supervised",
                           f"{entry['behind_supervised']:.4f}")
    if parent_run_id:
        # Record the best model (lowest mean test error) per dataset and size.
        best = {}
        for model, by_ds in summary.items():
            for dataset, by_nu in by_ds.items():
                for nu, e in by_nu.items():
                    k = f"best_model.{dataset}.{nu}"
                    if e.get("degenerate"):
                        continue
                    if k not in best or e["test_error_mean"] < best[k][1]:
                        best[k] = (model, e["test_error_mean"])
        for k, (model, _) in best.items():
            client.set_tag(parent_run_id, k, model)
        client.log_batch(parent_run_id, metrics=[
            Metric(k, float(v), now, 0)
            for k, v in parent_metrics(summary, per_seed).items()])


def champions(runs: list[dict], per_seed: list[dict]) -> dict[str, dict]:
    """The model to offer for serving per dataset: ``{dataset: train record}``.

    Candidates are the classifiers logged as MLflow pyfunc models (``task ==
    "ssl"``, a ``pyfunc_uri``) whose model x size is not flagged degenerate on
    any seed.  The model x size with the lowest mean *validation* loss wins
    (the test points stay for reporting), then its seed with the lowest
    validation loss; ties go to the model name, the size and the seed, so the
    choice is a function of the DVC outputs.  Whether it is served is
    :func:`register_champions`' decision."""
    flagged = {(r["model"], r["dataset"], r["n_unlabeled"]) for r in per_seed
               if r.get("degenerate_reason")}
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        key = (r["model"], r["dataset"], r["n_unlabeled"])
        if r.get("pyfunc_uri") and r.get("task") == "ssl" and key not in flagged:
            groups.setdefault(key, []).append(r)
    best: dict[str, tuple] = {}
    for (model, dataset, n_u), recs in groups.items():
        rank = (float(np.mean([r["val_loss"] for r in recs])), model, n_u)
        if dataset not in best or rank < best[dataset][0]:
            best[dataset] = (rank, min(recs, key=lambda r: (r["val_loss"],
                                                             r["seed"])))
    return {ds: rec for ds, (_, rec) in sorted(best.items())}


def _same_cell(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in ("model", "dataset", "n_unlabeled"))


def served_test_rows(runs: list[dict], pred_dir, prepared_dir, rec: dict):
    """``seed -> (raw test rows, test labels)`` of ``rec``'s model x dataset x
    size: the rows its seed's test split scored, unscaled to what a served
    model takes (a DataFrame of ``x0 ..``, or CSR for a sparse set)."""
    import pandas as pd

    from weakkernels.pipeline.pyfunc_model import unscale_rows

    by_seed = {r["seed"]: r for r in runs if _same_cell(r, rec)}
    prep = load_prepared(prepared_dir, rec["dataset"])

    def rows(seed: int):
        p = load_npz(Path(pred_dir) / by_seed[seed]["predictions"])
        X = prep["X"][p["test_idx"]]
        if "scale_lo" in prep:
            X = unscale_rows(X, prep["scale_lo"], prep["scale_span"],
                             str(prep.get("scale_kind", "minmax")))
        if not hasattr(X, "toarray"):
            X = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
        return X, p["y_test"]

    return rows


def _test_wrong(runs: list[dict], pred_dir, rec: dict) -> dict:
    """``{seed: 0/1 test errors}`` of ``rec``'s model x dataset x size."""
    out = {}
    for r in runs:
        if _same_cell(r, rec):
            p = load_npz(Path(pred_dir) / r["predictions"])
            out[r["seed"]] = np.asarray(p["pred_test"]) != np.asarray(p["y_test"])
    return out


def register_champions(chosen: dict[str, dict], runs: list[dict] = (),
                       pred_dir=None, prepared_dir=None) -> dict[str, dict]:
    """Register each dataset's chosen model as a version of
    ``weakkernels-<dataset>`` and move its ``champion`` alias only on purpose
    (:func:`weakkernels.pipeline.promotion.register`: never from a DVC
    experiment; on the main line only on a resolved win over the current
    champion on the same seeds' test splits).  ``runs`` and the two
    directories give that comparison its test rows; without them nothing is
    resolved.  Returns per dataset ``{name, version, alias, moved}``."""
    exp = experiment_name()
    out = {}
    for dataset, rec in chosen.items():
        wrong = _test_wrong(runs, pred_dir, rec) if pred_dir else {}
        rows = served_test_rows(runs, pred_dir, prepared_dir, rec) if wrong else None
        out[dataset] = register(dataset, rec, wrong, rows, experiment=exp)
    return out


def check_reloads(per_seed: list[dict], tol: float = 1e-6) -> None:
    """Raise when a reloaded model file does not reproduce its test scores."""
    bad = [r for r in per_seed if r.get("reload_max_abs_diff", 0.0) > tol]
    if bad:
        raise RuntimeError(f"reloaded models disagree with their fits: {bad}")


def summary_lines(summary: dict) -> list[str]:
    """One line per model x dataset x size: mean test error and the flag."""
    lines = []
    for model, by_ds in summary.items():
        for dataset, by_nu in by_ds.items():
            for nu, e in by_nu.items():
                flag = f"  DEGENERATE: {e['degenerate_reason']}" \
                    if e["degenerate"] else ""
                lines.append(f"{model:16s} {dataset:10s} {nu:8s} test error "
                             f"{e['test_error_mean']:.4f} +- "
                             f"{e['test_error_std']:.4f}{flag}")
    return lines
