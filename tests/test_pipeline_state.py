"""Clone-independent state: provenance without absolute paths, a
documented data/ layout, generated files gitignored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data" / "raw"


@pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw")
def test_provenance_records_mirror_paths_relative(tmp_path):
    from weakkernels.pipeline.datasets import download

    recs = download(["g50c"], tmp_path / "raw", mirror=MIRROR, retries=1,
                    timeout=10.0, use_network=False, allow_unverified=False,
                    progress=False)
    text = (tmp_path / "raw" / "provenance.json").read_text()
    assert str(MIRROR) not in text and str(ROOT.parent) not in text
    for r in recs["g50c"]:
        assert r["origin"].startswith("mirror:") or r["origin"] == "existing"
    assert json.loads(text) == recs


def test_data_layout_is_documented():
    readme = (ROOT / "data" / "README.md").read_text()
    for part in ("raw/", "prepared/", "splits/", "provenance.json", "scale_lo"):
        assert part in readme


@pytest.mark.parametrize("path", ["dvc_plots/index.html", "mlruns/0/meta.yaml",
                                  "mlartifacts/x", "mlflow.db", "optuna/optuna.db",
                                  "data/raw/x", "data/prepared/x.npz",
                                  "data/splits/x/ssl_seed0.npz", "models/x.wkm",
                                  "results/tune/best_params.json",
                                  "results/evaluate/summary.json"])
def test_generated_files_are_gitignored(path):
    proc = subprocess.run(["git", "check-ignore", "-q", "--no-index", path],
                          cwd=ROOT, capture_output=True)
    assert proc.returncode == 0, f"{path} is not gitignored"
