"""The ``report`` stage: PNG plots and a markdown summary of the evaluated runs.

Every plot has one panel per dataset x unlabeled size (every size, every model
that ran at it; one colour per model in every plot, one shared legend).  The DVC
outputs are reproducible (no timings, no run ids, no PNG software stamp):

* ``plots/error_boxplot.png`` -- test error over seeds per model (horizontal, so
  the model names never overlap);
* ``plots/val_curves.png`` -- validation error against iterations for the
  models that report through ``callback`` (first seed);
* ``reports/summary.md`` -- one table per dataset and unlabeled size; a model
  that predicts one class or is no better than the majority class is marked and
  explained in a footnote; each model's paired difference against ``svc``
  over the seeds (:func:`paired_differences`), marked only where the seeds
  resolve it; a model with NaN or infinite test scores shows no AUC and is
  counted (:func:`non_finite_scores`).

Timings change on every run, so they go to undeclared, gitignored files, from
``results/timings/`` (evaluate's records with timings):

* ``plots/timings/error_vs_time.png`` -- mean test error against mean training
  time (bars = std over seeds; an ``x`` marks a model flagged degenerate);
* ``plots/timings/time_vs_unlabeled.png`` -- training time against the number of
  unlabeled points, log-log (one panel per dataset);
* ``plots/timings/val_curves_time.png`` -- validation error against training time;
* ``reports/timings.md`` -- mean fit / predict times per model.

The PNGs of ``plots/`` are DVC image plots (``dvc plots show`` writes
``dvc_plots/index.html``, no network needed); everything is also logged to
MLflow (the train run), where runs' timings are compared.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from weakkernels.pipeline.storage import atomic_write, atomic_write_text, load_npz
from weakkernels.pipeline.timings import merge_runs

__all__ = ["flagged_cells", "non_finite_scores", "paired_differences", "report",
           "summary_table", "timings_report",
           "timings_report_from", "timings_table"]

FLAG = "⚠"
BEHIND = "↓"  # behind SVC on the same labels (evaluation.behind_supervised)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    # No "Software" (matplotlib version) chunk: the bytes depend on the figure only.
    atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=100,
                                             bbox_inches="tight",
                                             metadata={"Software": None}))
    plt.close(fig)
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_MARKERS = "osD^vP<>Xph*"


def _colors(models) -> dict[str, tuple]:
    """One fixed colour per model name (sorted), the same in every plot."""
    cmap = _plt().get_cmap("tab10")
    return {m: cmap(i % cmap.N) for i, m in enumerate(sorted(models))}


def _markers(models) -> dict[str, str]:
    """One marker per model: with more than ten models colours repeat."""
    return {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(sorted(models))}


def _cells(per_seed) -> dict[str, dict[int, list[dict]]]:
    """``{dataset: {n_unlabeled: [records]}}``, sizes ascending."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for r in per_seed:
        out[r["dataset"]][int(r["n_unlabeled"])].append(r)
    return {ds: dict(sorted(by.items())) for ds, by in sorted(out.items())}


def _grid(cells, width=5.0, height=3.8):
    """A row per dataset, a column per unlabeled size; unused axes hidden."""
    plt = _plt()
    ncols = max(len(by) for by in cells.values())
    fig, axes = plt.subplots(len(cells), ncols, figsize=(width * ncols,
                                                         height * len(cells)),
                             squeeze=False)
    panels = []
    for i, (ds, by_nu) in enumerate(cells.items()):
        for j in range(ncols):
            if j < len(by_nu):
                nu = list(by_nu)[j]
                panels.append((axes[i, j], ds, nu, by_nu[nu]))
            else:
                axes[i, j].set_axis_off()
    return fig, panels


def _log_axis(axis, lo: float, hi: float) -> None:
    """Log scale labelled as plain numbers at 1, 2, 5 x 10^k over short ranges
    (up to two decades) and at powers of ten otherwise, so labels never overlap
    (matplotlib's default labels its minor ticks on short ranges, and they do)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300))
    subs = (1.0, 2.0, 5.0) if decades <= 2 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs,
                                      numticks=12 if decades <= 6 else 6))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _legend(fig, colors, extra=()):
    from matplotlib.lines import Line2D

    markers = _markers(colors)
    handles = [Line2D([], [], color=c, marker=markers[m], linestyle="", label=m)
               for m, c in colors.items()] + list(extra)
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=9, frameon=False)


def plot_error_vs_time(per_seed, path, flagged=frozenset()):
    from matplotlib.lines import Line2D

    cells = _cells(per_seed)
    colors = _colors({r["model"] for r in per_seed})
    markers = _markers(colors)
    fig, panels = _grid(cells)
    for ax, ds, nu, recs in panels:
        for model in sorted({r["model"] for r in recs}):
            sel = [r for r in recs if r["model"] == model]
            t = [r["fit_time_s"] for r in sel]
            e = [r["test_error"] for r in sel]
            bad = (model, ds, nu) in flagged
            ax.errorbar(np.mean(t), np.mean(e), xerr=np.std(t), yerr=np.std(e),
                        fmt="x" if bad else markers[model], ms=9 if bad else 6,
                        capsize=3, color=colors[model])
        ax.set_xscale("log")
        times = [r["fit_time_s"] for r in recs if r["fit_time_s"] > 0]
        _log_axis(ax.xaxis, min(times, default=1.0), max(times, default=1.0))
        ax.set_xlabel("training time [s] (log)")
        ax.set_ylabel("test error")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{ds}, n_unlabeled={nu} ({len({r['model'] for r in recs})} "
                     "models)")
        ax.grid(True, alpha=0.3)
    _legend(fig, colors, [Line2D([], [], color="k", marker="x", linestyle="",
                                 label="flagged degenerate")] if flagged else [])
    fig.tight_layout()
    return _save(fig, path)


def plot_time_vs_unlabeled(per_seed, path):
    plt = _plt()
    cells = _cells(per_seed)
    colors = _colors({r["model"] for r in per_seed})
    markers = _markers(colors)
    fig, axes = plt.subplots(1, len(cells), figsize=(5.2 * len(cells), 4.0),
                             squeeze=False)
    for ax, (ds, by_nu) in zip(axes[0], cells.items(), strict=True):
        recs = [r for rs in by_nu.values() for r in rs]
        for model in sorted({r["model"] for r in recs}):
            pts = defaultdict(list)
            for r in recs:
                if r["model"] == model:
                    pts[r["n_unlabeled"]].append(r["fit_time_s"])
            xs = sorted(pts)
            ax.plot(xs, [np.mean(pts[x]) for x in xs], "-", marker=markers[model],
                    color=colors[model])
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = [r["n_unlabeled"] for r in recs]
        times = [r["fit_time_s"] for r in recs if r["fit_time_s"] > 0]
        _log_axis(ax.xaxis, min(sizes), max(sizes))
        _log_axis(ax.yaxis, min(times, default=1.0), max(times, default=1.0))
        ax.set_xlabel("number of unlabeled points (log)")
        ax.set_ylabel("training time [s] (log)")
        ax.set_title(ds)
        ax.grid(True, which="both", alpha=0.3)
    _legend(fig, colors)
    fig.tight_layout()
    return _save(fig, path)


def plot_error_boxplot(per_seed, path, flagged=frozenset()):
    cells = _cells(per_seed)
    colors = _colors({r["model"] for r in per_seed})
    n_models = max(len({r["model"] for r in recs}) for by in cells.values()
                   for recs in by.values())
    fig, panels = _grid(cells, height=max(2.5, 0.45 * n_models + 1.2))
    for ax, ds, nu, recs in panels:
        # Best (lowest mean error) at the top.
        # Ties by name: a set's order changes with PYTHONHASHSEED.
        models = sorted(sorted({r["model"] for r in recs}),
                        key=lambda m: -np.mean([r["test_error"] for r in recs
                                                if r["model"] == m]))
        data = [[r["test_error"] for r in recs if r["model"] == m] for m in models]
        box = ax.boxplot(data, orientation="horizontal", patch_artist=True,
                         widths=0.6)
        for patch, m in zip(box["boxes"], models, strict=True):
            patch.set_facecolor(colors[m])
            patch.set_alpha(0.6)
        ax.set_yticks(range(1, len(models) + 1),
                      [f"{m} {FLAG}" if (m, ds, nu) in flagged else m
                       for m in models], fontsize=9)
        ax.set_xlabel("test error (over seeds)")
        ax.set_xlim(left=0)
        ax.set_title(f"{ds}, n_unlabeled={nu}")
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def plot_val_curves(runs, pred_dir, path, times=False):
    """Validation loss against iterations, or against training time (``times``:
    the runs carry ``curve_time_s`` from results/timings/train.json)."""
    curves = defaultdict(list)
    for r in runs:
        c = load_npz(Path(pred_dir) / r["predictions"])["curve"]
        xs = c[:, 0] if len(c) else c
        if times and len(c):
            xs = np.asarray(r.get("curve_time_s", []), dtype=np.float64)
            if len(xs) != len(c):
                continue
        if len(c) and r["seed"] == min(q["seed"] for q in runs):
            curves[r["dataset"]].append((r["model"], r["n_unlabeled"],
                                         np.c_[xs, c[:, 1]]))
    fig, axes = _plt().subplots(1, max(1, len(curves)),
                                figsize=(5.2 * max(1, len(curves)), 4.0),
                                squeeze=False)
    axes = axes[0]
    for ax, (ds, items) in zip(axes, sorted(curves.items()), strict=False):
        for model, nu, c in items:
            ax.plot(c[:, 0], c[:, 1], ".-", label=f"{model} nu={nu}")
        ax.set_xlabel("training time [s]" if times else "iteration")
        ax.set_ylabel("validation loss")
        ax.set_title(ds)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    if not curves:
        axes[0].text(0.5, 0.5, "no model reported intermediate validation errors",
                     ha="center", va="center")
        axes[0].set_axis_off()
    return _save(fig, path)


def flagged_cells(summary: dict) -> set[tuple[str, str, int]]:
    """``(model, dataset, n_unlabeled)`` of the entries evaluate flagged."""
    return {(m, ds, int(nu[2:])) for m, by_ds in summary.items()
            for ds, by_nu in by_ds.items() for nu, e in by_nu.items()
            if e.get("degenerate")}


REFERENCE = "svc"  # the paired differences are against this model
RESOLVED = "✓"  # the paired difference is larger than its seeds resolve
NONFINITE = "∅"  # some test scores are NaN or infinite


def paired_differences(per_seed, reference: str = REFERENCE) -> dict:
    """``{(model, dataset, n_unlabeled): (mean, sd, n, resolved)}``: the test
    error of ``model`` minus the reference's on the same split (seed), over
    the seeds both ran. ``resolved``: at least two seeds and the mean's
    two-sided t interval at level 0.95 excludes 0
    (``|mean| > t_{0.975, n-1} sd / sqrt(n)``); with two
    seeds ``t`` is 12.7, so only a large, consistent difference is marked."""
    from scipy.stats import t as student_t

    ref = {(r["dataset"], int(r["n_unlabeled"]), r["seed"]): r["test_error"]
           for r in per_seed if r["model"] == reference}
    diffs: dict[tuple, list[float]] = defaultdict(list)
    for r in per_seed:
        key = (r["dataset"], int(r["n_unlabeled"]), r["seed"])
        if r["model"] != reference and key in ref:
            diffs[(r["model"], key[0], key[1])].append(r["test_error"] - ref[key])
    out = {}
    for cell, d in diffs.items():
        d = np.asarray(d)
        n, mean = d.size, float(d.mean())
        sd = float(d.std(ddof=1)) if n >= 2 else float("nan")
        resolved = n >= 2 and abs(mean) > (
            student_t.ppf(0.975, n - 1) * sd / np.sqrt(n))
        out[cell] = (mean, sd, n, bool(resolved))
    return out


def non_finite_scores(runs, pred_dir) -> dict:
    """``{(model, dataset, n_unlabeled): (scores, seeds)}`` of the cells whose
    saved test scores hold NaN or infinity: how many, in how many seeds."""
    out: dict[tuple, list[int]] = {}
    for r in runs:
        saved = load_npz(Path(pred_dir) / r["predictions"])
        bad = int(np.sum(~np.isfinite(saved["score_test"]))) \
            if "score_test" in saved else 0
        if bad:
            cell = out.setdefault((r["model"], r["dataset"], int(r["n_unlabeled"])),
                                  [0, 0])
            cell[0] += bad
            cell[1] += 1
    return {k: tuple(v) for k, v in out.items()}


def _paired_cell(paired, key) -> str:
    if key not in paired:
        return "--"
    mean, sd, n, resolved = paired[key]
    spread = f" +- {sd:.4f}" if n >= 2 else ""
    return f"{mean:+.4f}{spread} ({n}){' ' + RESOLVED if resolved else ''}"


def summary_table(summary: dict, paired: dict | None = None,
                  nonfinite: dict | None = None) -> str:
    """The markdown report. ``paired``: :func:`paired_differences`;
    ``nonfinite``: :func:`non_finite_scores` (a row with non-finite scores
    shows no AUC, and a footnote counts them)."""
    paired, nonfinite = paired or {}, nonfinite or {}
    lines = ["# Results", "",
             "Mean +- std over seeds. One table per dataset and number of "
             f"unlabeled points, best first. {FLAG} marks a *degenerate* model "
             "(it predicts one class, or its error is at least the majority-class "
             "error on the test set); the footnotes give the reason. "
             f"{BEHIND} marks a semi-supervised model more than 1 pp behind `svc` "
             "on the same labels (its unlabeled term costs accuracy). Timings are "
             "not here (this file is a DVC output and must be reproducible): see "
             "`reports/timings.md`, `plots/timings/` and MLflow.", "",
             f"*vs {REFERENCE}*: the paired difference of test error against "
             f"`{REFERENCE}` on the same splits, mean +- std over the seeds "
             f"(their number); {RESOLVED} marks a difference the seeds resolve "
             "(its 95 % t interval excludes 0). Without the mark, the two "
             f"models are not told apart by these seeds. {NONFINITE} marks "
             "a model whose test scores hold NaN or infinite values: its AUC "
             "is not shown (never averaged over the seeds that remain).", ""]
    rows = []
    for model, by_ds in summary.items():
        for ds, by_nu in by_ds.items():
            for nu, e in by_nu.items():
                rows.append((ds, int(nu[2:]), model, e))
    notes: list[str] = []
    for ds in sorted({r[0] for r in rows}):
        lines += [f"## {ds}", ""]
        for nu in sorted({r[1] for r in rows if r[0] == ds}):
            lines += [f"### {ds}, n_unlabeled = {nu}", "",
                      f"| model | test error | vs {REFERENCE} | test AUC | seeds |",
                      "|---|---:|---:|---:|---:|"]
            sel = sorted((r for r in rows if r[0] == ds and r[1] == nu),
                         key=lambda r: (r[3].get("degenerate", False),
                                        r[3]["test_error_mean"]))
            for _, _, model, e in sel:
                auc = (f"{e['test_auc_mean']:.4f} +- {e['test_auc_std']:.4f}"
                       if "test_auc_mean" in e else "n/a")
                name = model
                if (model, ds, nu) in nonfinite:
                    bad, seeds = nonfinite[(model, ds, nu)]
                    notes.append(f"{model} on {ds} (n_unlabeled = {nu}): {bad} "
                                 f"non-finite test score(s) in {seeds} of "
                                 f"{e['n_seeds']} seed(s); no AUC")
                    auc = f"n/a {NONFINITE}[^{len(notes)}]"
                if e.get("degenerate"):
                    notes.append(f"{model} on {ds} (n_unlabeled = {nu}): "
                                 f"{e['degenerate_reason']}")
                    name = f"{model} {FLAG}[^{len(notes)}]"
                elif "behind_supervised" in e:
                    notes.append(f"{model} on {ds} (n_unlabeled = {nu}): "
                                 f"{100 * e['behind_supervised']:.2f} pp behind "
                                 "svc on the same labels")
                    name = f"{model} {BEHIND}[^{len(notes)}]"
                lines.append(
                    f"| {name} | {e['test_error_mean']:.4f} +- "
                    f"{e['test_error_std']:.4f} | "
                    f"{_paired_cell(paired, (model, ds, nu))} | {auc} | "
                    f"{e['n_seeds']} |")
            lines.append("")
    if nonfinite:
        lines += [f"{NONFINITE} {len(nonfinite)} row(s) with non-finite test "
                  "scores.", ""]
    if notes:
        n_bad = sum(bool(r[3].get("degenerate")) for r in rows)
        if n_bad:
            lines += [f"{FLAG} {n_bad} degenerate result(s): do not read these "
                      "rows as the method's accuracy.", ""]
        lines += [f"[^{i}]: {note}" for i, note in enumerate(notes, 1)]
        lines.append("")
    return "\n".join(lines)


def timings_table(summary: dict, parent_run_id: str | None = None) -> str:
    """Markdown table of mean fit / predict time per dataset and size."""
    lines = ["# Timings", "",
             "Wall-clock seconds, mean +- std over seeds (fit excludes the warm-up, "
             "which holds numba compilation). Written by the `report` stage but not "
             "a DVC output: timings change on every run, so they would make "
             "`dvc.lock` and `git status` dirty. Compare runs in MLflow (metrics "
             "`fit_time_s`, `predict_time_s`, `compile_time_s`).", ""]
    if parent_run_id:
        lines += [f"MLflow train run: `{parent_run_id}`.", ""]
    rows = [(ds, int(nu[2:]), model, e) for model, by_ds in summary.items()
            for ds, by_nu in by_ds.items() for nu, e in by_nu.items()]
    for ds in sorted({r[0] for r in rows}):
        for nu in sorted({r[1] for r in rows if r[0] == ds}):
            lines += [f"## {ds}, n_unlabeled = {nu}", "",
                      "| model | test error | fit time [s] | predict time [s] |",
                      "|---|---:|---:|---:|"]
            sel = sorted((r for r in rows if r[0] == ds and r[1] == nu),
                         key=lambda r: r[3].get("fit_time_s_mean", 0.0))
            for _, _, model, e in sel:
                fit = (f"{e['fit_time_s_mean']:.3f} +- "
                       f"{e.get('fit_time_s_std', 0.0):.3f}"
                       if "fit_time_s_mean" in e else "n/a")
                pred = (f"{e['predict_time_s_mean']:.4f}"
                        if "predict_time_s_mean" in e else "n/a")
                flag = f" {FLAG}" if e.get("degenerate") else ""
                lines.append(f"| {model}{flag} | {e['test_error_mean']:.4f} | {fit} "
                             f"| {pred} |")
            lines.append("")
    return "\n".join(lines)


def report(per_seed, summary, runs, pred_dir, plots_dir, summary_path) -> list[Path]:
    """The DVC outputs: plots and summary without timings (reproducible)."""
    plots_dir = Path(plots_dir)
    flagged = flagged_cells(summary)
    paths = [
        plot_error_boxplot(per_seed, plots_dir / "error_boxplot.png", flagged),
        plot_val_curves(runs, pred_dir, plots_dir / "val_curves.png"),
    ]
    atomic_write_text(summary_path, summary_table(
        summary, paired_differences(per_seed), non_finite_scores(runs, pred_dir)))
    return paths


def timings_report(per_seed, summary, runs, pred_dir, plots_dir, md_path,
                   parent_run_id=None) -> list[Path]:
    """Timing plots and table (records with timings, results/timings/): not DVC
    outputs, gitignored."""
    plots_dir = Path(plots_dir)
    flagged = flagged_cells(summary)
    paths = [
        plot_error_vs_time(per_seed, plots_dir / "error_vs_time.png", flagged),
        plot_time_vs_unlabeled(per_seed, plots_dir / "time_vs_unlabeled.png"),
        plot_val_curves(runs, pred_dir, plots_dir / "val_curves_time.png",
                        times=True),
    ]
    atomic_write_text(md_path, timings_table(summary, parent_run_id))
    return paths


def timings_report_from(timings_dir, runs, pred_dir, plots_dir, md_path):
    """:func:`timings_report` from evaluate's records with timings in
    ``timings_dir`` (undeclared); ``([], None)`` when they are absent.
    Returns the written paths and the MLflow train run id (or None)."""
    tdir = Path(timings_dir)
    if not ((tdir / "per_seed.json").exists() and (tdir / "summary.json").exists()):
        return [], None
    side_path = tdir / "train.json"
    side = json.loads(side_path.read_text()) if side_path.exists() else {}
    parent = side.get("parent_run_id")
    paths = timings_report(
        json.loads((tdir / "per_seed.json").read_text()),
        json.loads((tdir / "summary.json").read_text()),
        merge_runs(runs, side), pred_dir, plots_dir, md_path, parent)
    return [*paths, Path(md_path)], parent
