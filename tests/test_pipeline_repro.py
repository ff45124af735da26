"""Fresh-clone reproducibility of the tune stage: ``dvc repro tune`` of the real
dvc.yaml in two fresh project directories (each its own Optuna and MLflow
store, another hash seed) gives the same bytes in ``results/tune`` and the same
``dvc.lock`` entry; and the stage launcher pins the compiled kernels' target
so that the same holds from one x86-64 host to another."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_pipeline_e2e import MIRROR, ROOT, _run, build_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw"),
]

AVX2 = Path("/proc/cpuinfo").exists() and " avx2" in Path("/proc/cpuinfo").read_text()


def _small(params: dict) -> None:
    params["data"]["datasets"] = ["g50c"]
    params["models"]["names"] = ["svc", "tsgs3vm"]
    params["tune"].update(n_trials=3, n_startup_trials=2, callback_every=64)


def _tune_outputs(root: Path) -> tuple[dict[str, str], dict]:
    files = {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted((root / "results" / "tune").rglob("*")) if p.is_file()}
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]["tune"]
    return files, lock


def test_tune_twice_in_fresh_directories_gives_the_same_bytes(tmp_path):
    outs = []
    for i, hash_seed in enumerate(("1", "2")):
        root = tmp_path / f"clone{i}"
        root.mkdir()
        project = build_project(root, models=["svc", "tsgs3vm"], su=False,
                                edit=_small, repro=False)
        env = {**project["env"], "PYTHONHASHSEED": hash_seed}
        _run([sys.executable, "-m", "dvc", "repro", "tune"], project["root"], env,
             timeout=900)
        outs.append(_tune_outputs(project["root"]))
    (files0, lock0), (files1, lock1) = outs
    assert set(files0) == {"results/tune/best_params.json",
                           "results/tune/val_loss.json"}
    assert files0 == files1
    assert lock0 == lock1
    best = yaml.safe_load((tmp_path / "clone0" / "results/tune/best_params.json")
                          .read_text())
    assert set(best) == {"svc/g50c", "tsgs3vm/g50c"}


@pytest.mark.skipif(not AVX2, reason="the pin applies to x86-64 hosts with AVX2")
def test_launcher_pins_the_kernels_instruction_set():
    code = ("import numpy, scipy.linalg, threadpoolctl, numba.core.config as c; "
            "print(sorted({i['architecture'] for i in "
            "threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}), "
            "c.CPU_NAME, c.CPU_FEATURES)")
    env = {"PATH": "/usr/bin:/bin", "WK_PYTHON": sys.executable}
    out = subprocess.run(["sh", str(ROOT / "pipelines" / "python"), "-c", code],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['Haswell']", "haswell", "+avx2,+fma"]
    # a value set by the user wins
    env["NUMBA_CPU_NAME"] = "skylake"
    out = subprocess.run(["sh", str(ROOT / "pipelines" / "python"), "-c", code],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.split()[1] == "skylake"
