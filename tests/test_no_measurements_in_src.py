"""The comments and docstrings of ``src/`` hold no measurements.

A measured figure (a percentage, percentage points, CPU seconds, decimal
gigabytes, a commit hash, a ``BENCHMARKS.md`` section) belongs on a page of
``docs/benchmarks/`` with its command (``design_notes.md``,
``solver_defaults.md``); the code says why in one line and links the
section. Sizes that follow from the code (``2 GiB`` bounds, ``16 MB`` of
float32 features) are arithmetic, not measurements, and are not matched.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "weakkernels"
MEASURED = {
    "a percentage": re.compile(r"\d(?:\.\d+)? ?%"),
    "percentage points": re.compile(r"\d ?pp\b"),
    "CPU seconds": re.compile(r"\d(?:\.\d+)? ?s (?:of )?(?:system |fit )?CPU"),
    "decimal gigabytes": re.compile(r"\d(?:\.\d+)? ?GB\b"),
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])"
                                r"[0-9a-f]{7,40}\b"),
    "the removed BENCHMARKS.md": re.compile(r"BENCHMARKS\.md"),
}


def comment_and_docstring_lines(path: Path):
    """``(line number, text)`` of every comment and docstring line."""
    source = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                      | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                first = node.body[0].lineno
                for i, line in enumerate(doc.splitlines()):
                    yield first + i, line


def measurements(path: Path, root: Path = SRC.parent) -> list[str]:
    """One ``file:line: kind: text`` per measured figure of ``path``."""
    return [f"{path.relative_to(root)}:{line}: {what}: {text.strip()}"
            for line, text in comment_and_docstring_lines(path)
            for what, pattern in MEASURED.items() if pattern.search(text)]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(SRC)))
def test_no_measured_figures_in_comments_or_docstrings(path):
    assert measurements(path) == []


def test_the_patterns_see_measurements(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docs: 8.79 % test error, 3 pp behind, 11.2 s of system CPU."""\n'
        "# 3.5 GB written, see 952e9b9 and BENCHMARKS.md\n"
        "SIZE = 2 ** 31  # 2 GiB, 16 MB of float32 features: arithmetic\n")
    found = [m.split(": ")[1] for m in measurements(sample, tmp_path)]
    assert sorted(found) == sorted([
        "a percentage", "percentage points", "CPU seconds",
        "decimal gigabytes", "a commit hash", "the removed BENCHMARKS.md"])

