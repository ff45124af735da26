"""docs/fidelity.md names functions that exist.

Every ``weakkernels.x.y`` reference in the page (module, then attribute path:
class, function, method) must import and resolve; every repository path it
cites (``tests/...``, ``benchmarks/...``, ``BENCHMARKS.md`` sections) must
exist, in the tree or, for the record of the decision studies that left it
(``BENCHMARKS.md`` and their result files), at the record revision the page
names. A renamed or moved function fails this test instead of leaving a
stale page.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fidelity.md"

NAME = re.compile(r"\bweakkernels(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"`((?:tests|benchmarks|docs|src)/[^`\s:]+?)(?:::[^`]+)?`")
TEST_ID = re.compile(r"`(tests/[^`\s:]+)::([A-Za-z0-9_]+)`")
SECTION = re.compile(r'`BENCHMARKS\.md` "([^"]+)"')
RECORD = re.compile(r"record revision `([0-9a-f]{7,40})`")


def record_revision() -> str:
    return RECORD.search(DOC.read_text()).group(1)


def at_record(path: str) -> str | None:
    """``path`` at the record revision, or None if it is not there."""
    r = subprocess.run(["git", "show", f"{record_revision()}:{path}"], cwd=ROOT,
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def resolve(dotted: str):
    """Import the longest importable module prefix of ``dotted``, then walk
    the remaining attributes; raise if any step is missing."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name and not ".".join(parts[:i]).startswith(exc.name):
                raise  # a real import error inside the module
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)  # AttributeError names the missing step
        return obj
    raise ModuleNotFoundError(dotted)


def _names() -> list[str]:
    return sorted(set(NAME.findall(DOC.read_text())))


def test_doc_cites_enough():
    """The page is the equation -> function map for five papers."""
    text = DOC.read_text()
    for paper in ("Paper 000", "Paper 002", "Paper 003", "Paper 004"):
        assert paper in text
    assert len(_names()) >= 60


@pytest.mark.parametrize("dotted", _names())
def test_name_resolves(dotted):
    resolve(dotted)


def test_resolver_fails_on_wrong_names():
    with pytest.raises(AttributeError):
        resolve("weakkernels.tsgs3vm.TSGS3VM.no_such_method")
    with pytest.raises(AttributeError):
        resolve("weakkernels._dsg.step_sizes")
    with pytest.raises((ModuleNotFoundError, AttributeError)):
        resolve("weakkernels.no_such_module.f")


def test_cited_paths_exist():
    text = DOC.read_text()
    paths = {p.rstrip(".,") for p in PATH.findall(text)}
    missing = [p for p in paths if "*" not in p and "{" not in p
               and not (ROOT / p).exists() and at_record(p) is None]
    assert not missing


def test_cited_tests_exist():
    for path, name in TEST_ID.findall(DOC.read_text()):
        assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), (
            path, name)


def test_cited_benchmark_sections_exist():
    bench = at_record("BENCHMARKS.md")
    assert bench, f"BENCHMARKS.md is not at the record revision {record_revision()}"
    heads = [h.strip() for h in re.findall(r"^#+ (.+)$", bench, re.M)]
    for title in SECTION.findall(DOC.read_text()):
        title = title.rstrip(". ")
        assert any(h.startswith(title.rstrip(".")) or
                   h.startswith(title.replace(" ...", "")) for h in heads), title
