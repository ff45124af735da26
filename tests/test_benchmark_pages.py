"""The documentation's benchmark pages and the result files they render.

Every committed result file under ``benchmarks/results/`` is named by a page
of ``docs/benchmarks/`` (a ``<!-- table ... -->`` directive or an image), and
every directive of those pages renders from its file; the rendered pages
carry no commit hash in a heading and no date, and every table drawn from a
benchmark run names its command. The renderers reproduce hand-computed
tables.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pages

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs" / "benchmarks").glob("*.md"))
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _committed_results() -> set[str]:
    out = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def _named(text: str) -> set[str]:
    named = set()
    for spec in pages.directives(text):
        named.update(spec.get("files") or [spec["file"]])
    named.update(m.lstrip("./") for m in re.findall(
        r"!\[[^\]]*\]\((?:\.\./)*(benchmarks/results/[^)]+)\)", text))
    return named


def test_every_result_file_is_rendered_by_a_docs_page():
    committed = _committed_results()
    assert 0 < len(committed) <= 60
    named = set().union(*(_named(p.read_text()) for p in DOCS))
    assert not committed - named, sorted(committed - named)
    assert not named - committed, sorted(named - committed)


def test_every_page_renders_without_hashes_or_dates():
    for page in DOCS:
        text = pages.expand(page.read_text())
        assert "<!-- table" not in text, page.name
        for line in text.splitlines():
            if line.startswith("#"):
                assert not HEX.search(line), (page.name, line)
        assert not DATE.search(text), (page.name, DATE.search(text).group())
        runs = [s for s in pages.directives(page.read_text())
                if s["renderer"] == "run"]
        assert text.count("Command: `") >= len(runs), page.name


def test_pivot_means_over_seeds_and_keeps_the_last_rerun(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("L,method,seed,error,rev\n"
                 "200,svc,0,0.10,a\n200,svc,1,0.20,a\n200,ours,0,0.30,a\n"
                 "200,ours,0,0.05,b\n"  # a re-run of seed 0: replaces 0.30
                 "400,svc,0,0.40,a\n")
    got = pages.render_pivot({"file": str(f), "rows": "L", "cols": "method",
                              "value": "error", "order": ["ours", "svc"],
                              "rev": True})
    assert got.splitlines() == [
        "| L | ours | svc | rev |", "|---|---|---|---|",
        "| 200 | 5.00 | 15.00 | a, b |", "| 400 | – | 40.00 | a |"]
    per_seed = pages.render_pivot({"file": str(f), "rows": "L", "cols": "method",
                                   "value": "error", "order": ["svc"],
                                   "where": {"L": 200}, "per_seed": True})
    assert per_seed.splitlines()[-1] == "| 200 | 10.00 / 20.00 (mean 15.00) |"


def test_records_expand_a_grid_of_fits(tmp_path):
    """``expand``: one row per fit of a record, the fit's keys over the
    record's, the record under ``_parent``; a record without fits is one row."""
    f = tmp_path / "g.json"
    f.write_text(json.dumps([
        {"U": 0, "C_star": None, "err": 0.1},
        {"U": 50, "C_star": 1.0, "err": 0.05, "paper": 0.04,
         "fits": [{"C_star": 1.0, "err": 0.05}, {"C_star": 0.5, "err": 0.07}]}]))
    got = pages.render_records({"files": [str(f)], "expand": "fits", "columns": [
        ["U", "U"], ["C*", "C_star"], ["chosen", "_parent.C_star"],
        ["paper %", "paper", "{:.0f}", 100], ["error %", "err", "{:.0f}", 100]]})
    assert got.splitlines()[2:] == ["| 0 | – | – | – | 10 |",
                                    "| 50 | 1.0 | 1.0 | 4 | 5 |",
                                    "| 50 | 0.5 | 1.0 | 4 | 7 |"]


def test_records_and_fields_read_dotted_keys(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"runs": [{"n": 1000, "err": 0.0123,
                                       "by_c": {"5.0": 0.4}}],
                             "a": {"b": [{"c": 7}]}}))
    rec = pages.render_records({"files": [str(f)], "path": "runs", "columns": [
        ["rows", "n", "{:,}"], ["error %", "err", "{:.2f}", 100],
        ["at C* = 5", "by_c.5.0"], ["missing", "nope"]]})
    assert rec.splitlines()[-1] == "| 1,000 | 1.23 | 0.4 | – |"
    fields = pages.render_fields({"file": str(f), "header": ["what", "value"],
                                  "rows": [["c", ["a.b.0.c"]], ["empty", []]]})
    assert fields.splitlines()[2:] == ["| c | 7 |", "| empty |  |"]


def test_include_keeps_a_scripts_table_from_its_first_row(tmp_path):
    f = tmp_path / "out.txt"
    f.write_text("{'U': 5000, 'times': [3.3]}\n\n"
                 "| U | s |\n|---|---|\n| 5000 | 3.29 |\n")
    got = pages.render_directive({"renderer": "include", "file": str(f),
                                  "from": "| U"})
    assert got.startswith("| U | s |\n|---|---|\n| 5000 | 3.29 |")
    assert got.endswith(f"<sub>Rendered from `{f}`.</sub>")


def test_records_mean_by_a_key_averages_the_listed_columns(tmp_path):
    """``mean_by``: one row per value of the key after the rows, the mean of
    the ``mean_of`` columns over that value's rows (a missing number left
    out), the other cells empty."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([{"U": 10, "err": 0.10, "cpu": 3.0, "seed": None},
                             {"U": 20, "err": 0.30, "cpu": 8.0, "seed": None}]))
    b.write_text(json.dumps([{"U": 10, "err": 0.20, "cpu": None, "seed": 1},
                             {"U": 10, "err": 0.40, "cpu": 5.0, "seed": 2}]))
    got = pages.render_records({
        "files": [str(a), str(b)], "mean_by": "U", "mean_of": ["err", "cpu"],
        "columns": [["seed", "seed"], ["U", "U"],
                    ["error %", "err", "{:.1f}", 100], ["cpu", "cpu"]]})
    assert got.splitlines()[2:] == [
        "| – | 10 | 10.0 | 3.0 |", "| – | 20 | 30.0 | 8.0 |",
        "| 1 | 10 | 20.0 | – |", "| 2 | 10 | 40.0 | 5.0 |",
        "| mean of 3 | 10 | 23.3 | 4.0 |", "| mean of 1 | 20 | 30.0 | 8.0 |"]
    first = pages.render_records({
        "files": [str(b)], "mean_by": "U", "mean_of": ["err"],
        "columns": [["U", "U"], ["error %", "err", "{:.0f}", 100]]})
    assert first.splitlines()[-1] == "| 10 (mean of 2) | 30 |"
