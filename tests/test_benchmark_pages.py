"""BENCHMARKS.md is generated (benchmarks/pages.py) and cannot drift.

The committed page must equal the generator's output from
``benchmarks/pages/`` and the result files it names; the renderers must
reproduce tables from their files (a hand-computed fixture, and a table
published before the page was generated).
"""

from __future__ import annotations

import json
from pathlib import Path

import pages

ROOT = Path(__file__).resolve().parents[1]


def test_benchmarks_md_is_the_generated_page():
    """Edit benchmarks/pages/ (or a result file), then run
    ``python benchmarks/pages.py``: this fails until the page is rewritten."""
    assert (ROOT / "BENCHMARKS.md").read_text() == pages.build()


def test_check_mode_fails_on_a_stale_page(tmp_path):
    stale = tmp_path / "BENCHMARKS.md"
    stale.write_text("# Benchmarks\n")
    assert pages.main(["--check", "--out", str(stale)]) == 1
    stale.write_text(pages.build())
    assert pages.main(["--check", "--out", str(stale)]) == 0


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


def test_pivot_reproduces_a_published_table():
    """cod-rna, error vs U at L = 200 (3 seeds), as published in BENCHMARKS.md
    before the page was generated: SVC / C* = 0 / default / tuned, mean %,
    from the rows of the revision that measured it (later re-runs append
    rows of other revisions to the same file)."""
    got = pages.render_pivot({
        "file": "benchmarks/results/scale_accuracy/cod-rna.csv", "rows": "U",
        "cols": "method", "value": "error", "where": {"rev": "9bbd889"},
        "order": ["svc", "tsgs3vm_c0", "tsgs3vm", "tsgs3vm_tuned"]})
    assert got.splitlines()[2:] == [
        "| 2000 | 9.46 | 9.24 | 9.33 | 9.32 |",
        "| 8000 | 9.46 | 9.14 | 8.83 | 8.93 |",
        "| 20000 | 9.46 | 9.13 | 8.40 | 8.49 |",
        "| 49000 | 9.46 | 9.11 | 8.47 | 8.51 |"]


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


def test_directives_expand_and_the_contents_link_every_section(tmp_path):
    (tmp_path / "00-a.md").write_text(
        "## What to pick: `x` (y)\n\ntext\n\n<!-- table\nrenderer: csv\n"
        f"file: {tmp_path / 't.csv'}\ndigits: 1\n-->\n")
    (tmp_path / "10-b.md").write_text("## Two\n")
    (tmp_path / "t.csv").write_text("a,b\nx,0.25\n")
    page = pages.build(tmp_path)
    assert "- [What to pick: `x` (y)](#what-to-pick-x-y)" in page
    assert "- [Two](#two)" in page
    assert "| a | b |\n|---|---|\n| x | 0.2 |" in page  # 0.25 rounds half-even
    assert "<!-- table" not in page and "renderer:" not in page
    assert page.index("## What to pick") < page.index("## Two")


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
