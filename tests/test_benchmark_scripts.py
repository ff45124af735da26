"""Every script under ``benchmarks/`` compiles: a benchmark page cites its
command, so a script that cannot run breaks the page's claim to be
reproducible. (Running them is what the pages' measurements did; compiling
is what a test can afford.)"""

from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))


def test_there_are_scripts():
    assert len(SCRIPTS) > 20


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_script_compiles(path):
    compile(path.read_text(), str(path), "exec")
