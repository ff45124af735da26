"""Stage ``report``: PNG plots and a markdown summary of the evaluated runs.

* ``error_vs_time.png`` -- mean test error against mean training time (one panel
  per dataset, largest unlabeled size; bars = std over seeds);
* ``time_vs_unlabeled.png`` -- training time against the number of unlabeled
  points, log-log;
* ``error_boxplot.png`` -- test error over seeds per method;
* ``val_curves.png`` -- validation error against training time for the models
  that report through ``callback`` (first seed).

The PNGs are DVC image plots (``dvc plots show`` needs no network) and are also
logged to MLflow with the markdown table ``summary.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from weakkernels.pipeline.storage import atomic_write, atomic_write_text, load_npz


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110,
                                             bbox_inches="tight"))
    plt.close(fig)
    return path


def _panels(n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 4.0), squeeze=False)
    return fig, axes[0]


def plot_error_vs_time(per_seed, path):
    by_ds = defaultdict(list)
    for r in per_seed:
        by_ds[r["dataset"]].append(r)
    fig, axes = _panels(len(by_ds))
    for ax, (ds, recs) in zip(axes, sorted(by_ds.items()), strict=True):
        nu = max(r["n_unlabeled"] for r in recs)
        for model in sorted({r["model"] for r in recs}):
            sel = [r for r in recs if r["model"] == model and r["n_unlabeled"] == nu]
            if not sel:
                continue
            t = [r["fit_time_s"] for r in sel]
            e = [r["test_error"] for r in sel]
            ax.errorbar(np.mean(t), np.mean(e), xerr=np.std(t), yerr=np.std(e),
                        fmt="o", capsize=3, label=model)
        ax.set_xscale("log")
        ax.set_xlabel("training time [s] (log)")
        ax.set_ylabel("test error")
        ax.set_title(f"{ds} (n_unlabeled={nu})")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_time_vs_unlabeled(per_seed, path):
    by_ds = defaultdict(list)
    for r in per_seed:
        by_ds[r["dataset"]].append(r)
    fig, axes = _panels(len(by_ds))
    for ax, (ds, recs) in zip(axes, sorted(by_ds.items()), strict=True):
        for model in sorted({r["model"] for r in recs}):
            pts = defaultdict(list)
            for r in recs:
                if r["model"] == model:
                    pts[r["n_unlabeled"]].append(r["fit_time_s"])
            xs = sorted(pts)
            ax.plot(xs, [np.mean(pts[x]) for x in xs], "o-", label=model)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of unlabeled points (log)")
        ax.set_ylabel("training time [s] (log)")
        ax.set_title(ds)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_error_boxplot(per_seed, path):
    by_ds = defaultdict(list)
    for r in per_seed:
        by_ds[r["dataset"]].append(r)
    fig, axes = _panels(len(by_ds))
    for ax, (ds, recs) in zip(axes, sorted(by_ds.items()), strict=True):
        nu = max(r["n_unlabeled"] for r in recs)
        models = sorted({r["model"] for r in recs})
        data = [[r["test_error"] for r in recs
                 if r["model"] == m and r["n_unlabeled"] == nu] for m in models]
        keep = [(m, d) for m, d in zip(models, data, strict=True) if d]
        ax.boxplot([d for _, d in keep], tick_labels=[m for m, _ in keep])
        ax.tick_params(axis="x", rotation=45, labelsize=7)
        ax.set_ylabel("test error")
        ax.set_title(f"{ds} (n_unlabeled={nu})")
        ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def plot_val_curves(runs, pred_dir, path):
    curves = defaultdict(list)
    for r in runs:
        c = load_npz(Path(pred_dir) / r["predictions"])["curve"]
        if len(c) and r["seed"] == min(x["seed"] for x in runs):
            curves[r["dataset"]].append((r["model"], r["n_unlabeled"], c))
    fig, axes = _panels(max(1, len(curves)))
    for ax, (ds, items) in zip(axes, sorted(curves.items()), strict=False):
        for model, nu, c in items:
            ax.plot(c[:, 2], c[:, 1], ".-", label=f"{model} nu={nu}")
        ax.set_xlabel("training time [s]")
        ax.set_ylabel("validation loss")
        ax.set_title(ds)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    if not curves:
        axes[0].text(0.5, 0.5, "no model reported intermediate validation errors",
                     ha="center", va="center")
        axes[0].set_axis_off()
    return _save(fig, path)


def summary_table(summary: dict) -> str:
    lines = ["# Results", "",
             "Mean +- std over seeds; times in seconds (fit excludes the warm-up, "
             "which holds numba compilation).", ""]
    rows = []
    for model, by_ds in summary.items():
        for ds, by_nu in by_ds.items():
            for nu, e in by_nu.items():
                rows.append((ds, int(nu[2:]), model, e))
    for ds in sorted({r[0] for r in rows}):
        lines += [f"## {ds}", "",
                  "| n_unlabeled | model | test error | test AUC | fit time | "
                  "predict time | seeds |",
                  "|---:|---|---:|---:|---:|---:|---:|"]
        sel = sorted((r for r in rows if r[0] == ds),
                     key=lambda r: (r[1], r[3]["test_error_mean"]))
        for _, nu, model, e in sel:
            auc = (f"{e['test_auc_mean']:.4f} +- {e['test_auc_std']:.4f}"
                   if "test_auc_mean" in e else "n/a")
            lines.append(
                f"| {nu} | {model} | {e['test_error_mean']:.4f} +- "
                f"{e['test_error_std']:.4f} | {auc} | {e['fit_time_s_mean']:.3f} | "
                f"{e['predict_time_s_mean']:.4f} | {e['n_seeds']} |")
        lines.append("")
    return "\n".join(lines)


def report(per_seed, summary, runs, pred_dir, plots_dir, summary_path) -> list[Path]:
    plots_dir = Path(plots_dir)
    paths = [
        plot_error_vs_time(per_seed, plots_dir / "error_vs_time.png"),
        plot_time_vs_unlabeled(per_seed, plots_dir / "time_vs_unlabeled.png"),
        plot_error_boxplot(per_seed, plots_dir / "error_boxplot.png"),
        plot_val_curves(runs, pred_dir, plots_dir / "val_curves.png"),
    ]
    atomic_write_text(summary_path, summary_table(summary))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-seed", default="results/evaluate/per_seed.json")
    ap.add_argument("--metrics", default="metrics/test.json")
    ap.add_argument("--runs", default="results/train/runs.json")
    ap.add_argument("--predictions", default="results/predictions")
    ap.add_argument("--plots", default="plots")
    ap.add_argument("--summary", default="reports/summary.md")
    ap.add_argument("--params", default="params.yaml")
    args = ap.parse_args(argv)
    per_seed = json.loads(Path(args.per_seed).read_text())
    summary = json.loads(Path(args.metrics).read_text())
    train_out = json.loads(Path(args.runs).read_text())
    paths = report(per_seed, summary, train_out["runs"], args.predictions,
                   args.plots, args.summary)
    parent = train_out.get("parent_run_id")
    if parent:
        import mlflow

        from weakkernels.pipeline.storage import load_params, repo_root
        from weakkernels.pipeline.tracking import setup_mlflow

        params = load_params(args.params)
        setup_mlflow(params["mlflow"]["experiment"],
                     repo_root(Path(args.params).resolve().parent))
        with mlflow.start_run(run_id=parent):
            for p in paths:
                mlflow.log_artifact(str(p), artifact_path="report")
            mlflow.log_artifact(args.summary, artifact_path="report")
    print(Path(args.summary).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
