"""The README's Dask snippet (section "Dask") runs as pasted: extracted
from README.md, written to a file and run by a fresh interpreter (a
``LocalCluster`` of worker processes needs the ``__main__`` guard)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("distributed")


def readme_snippet(heading: str = "## Dask") -> str:
    """The first ``python`` code block after ``heading`` in README.md."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def test_readme_dask_snippet_runs_as_pasted(tmp_path):
    code = readme_snippet()
    assert "from_zarr" not in code  # zarr is not in the pinned environment
    (tmp_path / "snippet.py").write_text(code)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # the snippet prints the first five decision values
    values = np.array(proc.stdout.strip().splitlines()[-1].strip("[]").split(),
                      dtype=float)
    assert values.shape == (5,) and np.all(np.isfinite(values))
    assert np.ptp(values) > 0  # a fitted model, not a constant
