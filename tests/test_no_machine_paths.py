"""No absolute machine path in the repository's code, configuration or README.

A path such as ``/home/<user>/...`` or a data mirror under ``/work/...`` works on
one machine only; the repository refers to its own files relative to its root
and to scratch space through ``tempfile``.  Recorded benchmark outputs
(``benchmarks/results/``) are logs of runs on one machine and are not scanned;
nor are the fixtures (binary model files).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A path token starting at a machine root: preceded by start of line, space,
# quote, backtick, "=", "(" or ":" -- not ".dvc/tmp/" or "<repo>/tmp/".
MACHINE_PATH = re.compile(
    r"(?:^|[\s\"'`=(:,\[])(/(?:work|home|root|tmp|Users|mnt|scratch)/[^\s\"'`)]*)")
CODE_SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".txt",
                 ".in", ".json", ".lock"}
CODE_NAMES = {"Makefile", "MLproject", "README.md", "run", "python", ".gitignore",
              ".dvcignore"}
SKIP_PREFIXES = ("benchmarks/results/", "tests/fixtures/")
# Files of other changes in flight, with the line to fix; the test fails when one
# is clean (so the entry is removed with the fix).
KNOWN: dict[str, str] = {}


def scanned_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    this = Path(__file__).resolve().relative_to(ROOT).as_posix()  # its examples
    return [f for f in out if not f.startswith(SKIP_PREFIXES) and f != this
            and (Path(f).suffix in CODE_SUFFIXES or Path(f).name in CODE_NAMES)]


def machine_paths(text: str) -> list[str]:
    return [m.group(1) for m in MACHINE_PATH.finditer(text)]


@pytest.mark.parametrize(("text", "found"), [
    ("mirror = '/work/shared/data/raw'", ["/work/shared/data/raw"]),
    ("--out /tmp/tune-w1", ["/tmp/tune-w1"]),
    ('open("/home/me/x.csv")', ["/home/me/x.csv"]),
    ("root=${here%%/.dvc/tmp/exps/*}", []),
    ("mirror: ../shared/data/raw", []),
    ("see docs/tmp/notes", []),
])
def test_the_pattern_finds_machine_paths(text, found):
    assert machine_paths(text) == found


def test_no_machine_path_in_tracked_code_and_config():
    files = scanned_files()
    assert "params.yaml" in files and "pipelines/train.py" in files
    hits = {}
    for f in files:
        path = ROOT / f
        if not path.is_file():
            continue  # deleted in the working tree, not yet committed
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found = machine_paths(text)
        if found:
            hits[f] = found
    assert {f: h for f, h in hits.items() if f not in KNOWN} == {}
    assert not set(KNOWN) - set(hits), "fixed: remove it from KNOWN"
