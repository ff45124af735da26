"""The benchmark code: small, public API only, and every script compiles.

A documentation page cites each runner's command, so a script that cannot
run breaks the page's claim to be reproducible (running them is what the
pages' measurements did; compiling is what a test can afford). The runner
uses the package as a user would: no private ``weakkernels`` name (a module
or attribute starting with ``_``) is imported, and data are read only through
``weakkernels.pipeline.datasets``.
"""

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))
CODE = SCRIPTS + sorted(BENCHMARKS.rglob("*.sh"))


def test_benchmark_code_is_at_most_4000_lines():
    assert SCRIPTS
    lines = sum(len(p.read_text().splitlines()) for p in CODE)
    assert lines <= 4000, lines


def _private_imports(tree: ast.AST) -> list[str]:
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        bad += [n for n in names if n.startswith("weakkernels")
                and any(part.startswith("_") for part in n.split(".")[1:])]
    return bad


def test_the_check_finds_a_private_import():
    tree = ast.parse("from weakkernels._dsg import x\nimport weakkernels.tsgs3vm\n"
                     "from weakkernels.pipeline import _x")
    assert _private_imports(tree) == ["weakkernels._dsg.x",
                                      "weakkernels.pipeline._x"]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_script_compiles_and_imports_no_private_name(path):
    tree = compile(path.read_text(), str(path), "exec", ast.PyCF_ONLY_AST)
    assert not _private_imports(tree)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_no_private_data_loader(path):
    """Data files are parsed by the registry, not by a benchmark script."""
    text = path.read_text()
    for loader in ("load_svmlight_file", "scipy.io", "loadmat", "lzma.open"):
        assert loader not in text, (path.name, loader)
