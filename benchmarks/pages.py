"""The tables of the documentation's benchmark pages, drawn from result files.

Every table of ``docs/benchmarks/*.md`` whose numbers live in a result file
under ``benchmarks/results/`` is a directive in the page source, an HTML
comment that names a renderer and its file::

    <!-- table
    renderer: run
    file: benchmarks/results/harness/paper004__ds-g50c.json
    heading: "**g50c**"
    -->

and :func:`expand` replaces it by the table the renderer draws from that
file (``docs/conf.py`` calls it on every benchmark page when the site is
built, ``make docs``). ``python benchmarks/pages.py docs/benchmarks/x.md``
prints a page expanded.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# how a target's evaluation reads in a table (the harness's own tables too)
MET = {True: "**met**", False: "**not met**", None: "not measured"}

DIRECTIVE = re.compile(r"^<!-- table\n(.*?)^-->\n", re.M | re.S)


# -- renderers: spec (the directive's YAML) -> markdown -------------------------

def _fmt(v, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _match(row: dict, where: dict) -> bool:
    for col, allowed in (where or {}).items():
        allowed = allowed if isinstance(allowed, list) else [allowed]
        if row.get(col) not in [str(a) for a in allowed]:
            return False
    return True


def _key_label(key: tuple, labels: dict) -> str:
    return ", ".join(str(labels.get(k, k)) for k in key)


def render_pivot(spec: dict) -> str:
    """A CSV of one measurement per line, pivoted: one table row per value of
    ``rows`` (one or more columns), one table column per value of ``cols``
    (one or more columns, their labelled values joined by commas; ``order``
    lists these joined names), each cell the ``agg`` ("mean" or "median") of
    ``value`` x ``scale`` over
    the remaining lines (seeds, splits). A line repeated with the same keys
    and ``seed``/``split`` (a re-run at a later revision) counts once: the
    last one in the file. ``where`` keeps lines whose column is in a list;
    ``order``/``labels`` order and name the columns; ``per_seed: true`` shows
    every seed's value and the mean; ``rev: true`` adds the revisions that
    measured the row (the CSV's ``rev`` column)."""
    lines = list(csv.DictReader((ROOT / spec["file"]).open()))
    rows_by = spec["rows"] if isinstance(spec["rows"], list) else [spec["rows"]]
    cols_by = spec["cols"] if isinstance(spec["cols"], list) else [spec["cols"]]
    value = spec["value"]
    scale, digits = spec.get("scale", 100), spec.get("digits", 2)
    labels = spec.get("labels", {})
    rep = next((c for c in ("seed", "split") if lines and c in lines[0]), None)
    cells: dict[tuple, dict] = {}
    for line in lines:
        if not _match(line, spec.get("where")):
            continue
        rkey = tuple(line[c] for c in rows_by)
        ckey = ", ".join(str(labels.get(line[c], line[c])) for c in cols_by)
        cells.setdefault(rkey, {}).setdefault(ckey, {})[line.get(rep)] = line
    cols = [str(labels.get(str(c), c)) for c in spec.get("order", [])] or list(
        dict.fromkeys(c for r in cells.values() for c in r))
    agg = {"mean": statistics.fmean, "median": statistics.median}[
        spec.get("agg", "mean")]
    head = spec.get("row_header", ", ".join(rows_by))
    out = ["| " + " | ".join([head] + [str(labels.get(c, c)) for c in cols]
                             + (["rev"] if spec.get("rev") else [])) + " |",
           "|" + "---|" * (len(cols) + 1 + bool(spec.get("rev")))]
    row_order = spec.get("row_order")
    keys = list(cells)
    if row_order:
        rank = {str(v): i for i, v in enumerate(row_order)}
        keys.sort(key=lambda k: rank.get(k[0], len(rank)))
    for rkey in keys:
        texts, revs = [], set()
        for c in cols:
            got = cells[rkey].get(c, {})
            vals = [scale * float(v[value]) for v in got.values()
                    if v[value] not in ("", None)]
            revs.update(v.get("rev") for v in got.values() if v.get("rev"))
            if not vals:
                texts.append("–")
            elif spec.get("per_seed") and len(vals) > 1:
                texts.append(" / ".join(_fmt(v, digits) for v in vals)
                             + f" (mean {_fmt(agg(vals), digits)})")
            else:
                texts.append(_fmt(agg(vals), digits))
        extra = [", ".join(sorted(revs))] if spec.get("rev") else []
        out.append("| " + " | ".join([_key_label(rkey, labels)] + texts + extra)
                   + " |")
    return "\n".join(out)


def _get(obj, path: str):
    """``obj`` at a dotted ``path``; a key may itself hold dots ("5.0")."""
    parts = path.split(".")
    while parts and obj is not None:
        if isinstance(obj, list):
            obj, parts = obj[int(parts[0])], parts[1:]
            continue
        for k in range(len(parts), 0, -1):
            key = ".".join(parts[:k])
            if key in obj:
                obj, parts = obj[key], parts[k:]
                break
        else:
            return None
    return obj


def _cell(v, fmt: str | None = None, mul: float | None = None) -> str:
    if v is None:
        return "–"
    if mul is not None:
        v = v * mul
    if fmt:
        return fmt.format(v)
    return str(v)


def render_records(spec: dict) -> str:
    """One table row per record of a JSON list (``path`` inside each file
    of ``files``, in order); ``columns`` is a list of ``[header, key, fmt,
    mul]`` (dotted keys; ``fmt`` a ``str.format`` pattern or null; ``mul``,
    optional, multiplies the value first, e.g. 100 for a percentage). A JSON
    object of records is read in order, each record's name as ``_key``.
    ``expand`` names a list inside a record (e.g. every fit of a grid): the
    record then gives one row per item, the item's keys over the record's,
    the record itself under ``_parent``; a record without it is one row.
    ``mean_by`` (a key) adds, after the rows, one row per value of that key:
    "mean of n" (n rows) in the first column, the key's value in its own,
    and the mean of each column whose key is listed in ``mean_of`` over the
    rows of that value (a row without the number left out; other cells
    empty)."""
    cols = spec["columns"]
    out = ["| " + " | ".join(c[0] for c in cols) + " |", "|" + "---|" * len(cols)]
    groups: dict = {}  # mean_by value -> the rows shown with it
    for f in spec["files"]:
        data = json.loads((ROOT / f).read_text())
        records = _get(data, spec["path"]) if spec.get("path") else data
        if isinstance(records, dict):  # records by name: the name is "_key"
            records = [{"_key": k, **v} for k, v in records.items()]
        if spec.get("expand"):
            records = [row for rec in records for row in (
                [{**rec, **item, "_parent": rec} for item in rec[spec["expand"]]]
                if rec.get(spec["expand"]) else [rec])]
        for rec in records:
            if not _match({k: str(v) for k, v in rec.items()}, spec.get("where")):
                continue
            out.append("| " + " | ".join(
                _cell(_get(rec, c[1]), *c[2:4]) for c in cols) + " |")
            if spec.get("mean_by"):
                groups.setdefault(_get(rec, spec["mean_by"]), []).append(rec)
    for value, recs in groups.items():
        cells = []
        for c in cols:
            vals = [v for v in (_get(r, c[1]) for r in recs)
                    if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if c[1] == spec["mean_by"]:
                cells.append(_cell(value, *c[2:4]))
            elif c[1] in spec.get("mean_of", []) and vals:
                cells.append(_cell(statistics.fmean(vals), *c[2:4]))
            else:
                cells.append("")
        label = f"mean of {len(recs)}"
        cells[0] = f"{cells[0]} ({label})" if cells[0] else label
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def render_fields(spec: dict) -> str:
    """Named values of one JSON file: ``header`` (the column names) and
    ``rows``, each ``[label, [key, fmt, mul], ...]`` (as in
    :func:`render_records`; ``[]`` leaves a cell empty)."""
    data = json.loads((ROOT / spec["file"]).read_text())
    out = ["| " + " | ".join(spec["header"]) + " |",
           "|" + "---|" * len(spec["header"])]
    for label, *cells in spec["rows"]:
        out.append("| " + " | ".join(
            [label] + [_cell(_get(data, c[0]), *c[1:3]) if c else ""
                       for c in cells]) + " |")
    return "\n".join(out)


def render_csv(spec: dict) -> str:
    """A CSV as it is: the ``columns`` given (all by default), optionally
    renamed by ``labels``, multiplied by ``mul`` and rounded to ``digits``
    (one number, or one per column); ``where`` filters lines,
    ``last_of`` (a list of columns) keeps the last line of each group."""
    lines = [r for r in csv.DictReader((ROOT / spec["file"]).open())
             if _match(r, spec.get("where"))]
    if spec.get("last_of"):  # the last line of each group: a run's final state
        last = {tuple(r[c] for c in spec["last_of"]): r for r in lines}
        lines = [r for r in lines if last[tuple(r[c] for c in spec["last_of"])]
                 is r]
    cols = spec.get("columns") or list(lines[0])
    labels, digits = spec.get("labels", {}), spec.get("digits")
    mul = spec.get("mul", {})

    def show(c: str, v: str) -> str:
        d = digits.get(c) if isinstance(digits, dict) else digits
        if d is None:
            return v or "–"
        try:
            return _fmt(float(v) * mul.get(c, 1), d)
        except ValueError:
            return v or "–"

    out = ["| " + " | ".join(labels.get(c, c) for c in cols) + " |",
           "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(show(c, r[c]) for c in cols) + " |" for r in lines]
    return "\n".join(out)


def render_harness(spec: dict) -> str:
    """A table the benchmark harness wrote for one run (``<run>.md`` beside its
    JSON): kept as written, with its heading replaced by ``heading`` when
    given (the run's own is its command's filters) and image links made
    relative to the repository root; ``from`` drops what comes before its
    first occurrence. ``include`` is the same for any markdown a benchmark
    script wrote."""
    text = (ROOT / spec["file"]).read_text().strip()
    if spec.get("from"):  # drop what the script printed before its table
        text = text[text.index(spec["from"]):]
    folder = Path(spec["file"]).parent.as_posix()
    text = text.replace("](results/harness/", f"]({folder}/")
    if spec.get("heading"):
        first, _, rest = text.partition("\n")
        text = (spec["heading"] + "\n" + rest) if first.startswith("#") else (
            spec["heading"] + "\n\n" + text)
    return text


def paired_table(proto: dict, summary: list[dict]) -> list[str]:
    """Markdown lines: for each method named in the protocol's ``paired_with``,
    every other method's mean difference to it, seed by seed on the same
    splits (pp of test error; AUC for the AUC task), with its standard
    error."""
    auc = proto["task"] == "auc"
    scale, unit = (1.0, "AUC") if auc else (100.0, "pp of test error")
    key = "test_auc" if auc else "test_error"
    lines = []
    for ref in proto["paired_with"]:
        lines += [f"Paired against **{ref}**, seed by seed on the same splits: "
                  f"mean difference ({unit}; positive: "
                  f"{'higher' if auc else 'more errors'} than it) +- its "
                  "standard error, over the seeds both ran:", "",
                  "| data set | n_u | method | mean | difference | seeds |",
                  "|---|---|---|---|---|---|"]
        for s in summary:
            p = (s.get("paired") or {}).get(ref)
            if not p:
                continue
            se = "" if p["paired_se"] is None else f" +- {scale * p['paired_se']:.2f}"
            lines.append(f"| {s['dataset']} | {s['n_unlabeled']:,} | {s['method']} "
                         f"| {scale * s[key + '_mean']:.2f} | "
                         f"{scale * p['paired_diff']:+.2f}{se} | {p['paired_n']} |")
        lines.append("")
    return lines


def render_run(spec: dict) -> str:
    """One harness run, compact, from its JSON (``file``): the command, the
    machine and date, one row per method with one cell per (data set, n_u):
    median test error % (AUC) [range] / median fit CPU s (wall s where no CPU
    time was recorded), and the run's own target evaluation as stored
    (``--rebuild`` would re-evaluate the targets against today's protocol
    file, where renamed methods read "not measured"). ``date: false`` leaves
    the run's date out (the documentation's pages)."""
    d = json.loads((ROOT / spec["file"]).read_text())
    auc = d["protocol"].get("task") == "auc"
    key, scale, nd = ("test_auc", 1.0, 4) if auc else ("test_error", 100.0, 2)
    cols = list(dict.fromkeys((s["dataset"], s["n_unlabeled"])
                              for s in d["summary"]))
    methods = list(dict.fromkeys(s["method"] for s in d["summary"]))
    cell = {(s["method"], s["dataset"], s["n_unlabeled"]): s for s in d["summary"]}
    what = "test AUC" if auc else "test error %"
    hw = d["hardware"]
    load = re.search(r"load average at the end of this run: ([\d.]+)", hw)
    machine = hw.split(",")[0] + (f", load {load.group(1)} at the end" if load
                                  else "")
    out = [spec["heading"], "",
           f"Command: `{d['command']}`  ",
           (f"Run of {d['date']} UTC" if d.get("date") and spec.get("date", True)
            else "Run")
           + f" on {machine} (2 shared cores, one thread per method); seeds "
           f"{d['protocol']['seeds']}.", "",
           f"Median {what} [min–max over seeds] / median fit CPU s (wall s, "
           "marked w, where no CPU time was recorded):", "",
           "| method | " + " | ".join(f"{ds}, n_u = {n:,}" for ds, n in cols) + " |",
           "|" + "---|" * (len(cols) + 1)]
    for m in methods:
        texts = []
        for ds, n in cols:
            s = cell.get((m, ds, n))
            if s is None:
                texts.append("")
                continue
            if s[key] is None:
                texts.append("; ".join(s["statuses"]) or "–")
                continue
            t = f"{scale * s[key]:.{nd}f}"
            if s[key + "_min"] != s[key + "_max"]:
                t += (f" [{scale * s[key + '_min']:.{nd}f}–"
                      f"{scale * s[key + '_max']:.{nd}f}]")
            if s.get("fit_cpu_s") is not None:
                t += f" / {s['fit_cpu_s']:.3g}"
            elif s.get("fit_s") is not None:
                t += f" / {s['fit_s']:.3g} w"
            if s["n_ok"] < s["n_runs"]:
                t += f" ({s['n_ok']}/{s['n_runs']} ok: {'; '.join(s['statuses'])})"
            texts.append(t)
        out.append(f"| {m} | " + " | ".join(texts) + " |")
    if d["protocol"].get("paired_with"):
        out += [""] + paired_table(d["protocol"], d["summary"])[:-1]
    if d["protocol"].get("reference"):
        out += ["", "Reference figures measured elsewhere, not in this run: "
                + "; ".join(d["protocol"]["reference"]) + "."]
    if d.get("targets"):
        out += ["", "| target | met? | measured |", "|---|---|---|"]
        for t in d["targets"]:
            out.append(f"| {t['target']} | {MET[t['met']]} | {t['detail']} |")
    return "\n".join(out) + f"\n\n<sub>Rendered from `{spec['file']}`.</sub>"


RENDERERS = {"pivot": render_pivot, "records": render_records,
             "fields": render_fields, "csv": render_csv,
             "harness": render_harness, "include": render_harness,
             "run": render_run}


def render_directive(spec: dict) -> str:
    table = RENDERERS[spec["renderer"]](spec)
    if spec["renderer"] == "run":  # names its file itself
        return table
    files = spec.get("files") or [spec["file"]]
    src = ", ".join(f"`{f}`" for f in files)
    return f"{table}\n\n<sub>Rendered from {src}.</sub>"


def expand(text: str) -> str:
    """``text`` with every ``<!-- table ... -->`` directive replaced by its table."""
    def one(m: re.Match) -> str:
        return render_directive(yaml.safe_load(m.group(1))) + "\n"
    return DIRECTIVE.sub(one, text)


def directives(text: str) -> list[dict]:
    """The specs of the directives of a page."""
    return [yaml.safe_load(m.group(1)) for m in DIRECTIVE.finditer(text)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page", type=Path, help="a page source (docs/benchmarks/*.md)")
    args = ap.parse_args(argv)
    sys.stdout.write(expand(args.page.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
