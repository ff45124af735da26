"""Reruns are bit-identical: every estimator (two fits, 1 vs 2 numba threads,
save/load) and the tiny pipeline run twice in separate processes (different
hash seeds and numba thread counts) give the same model files, predictions and
metrics."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
import yaml

import weakkernels as wk
from _reliability import ESTIMATORS, available_estimators

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data" / "raw"


def _fit(name, threads):
    make, data = ESTIMATORS[name].make, ESTIMATORS[name].data
    X, y = data()
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make().fit(X, y)
    finally:
        numba.set_num_threads(old)
    return est, X


def _outputs(est, X):
    out = {"decision": est.decision_function(X), "predict": est.predict(X)}
    if hasattr(est, "predict_proba"):
        out["proba"] = est.predict_proba(X)
    return out


@pytest.mark.parametrize("name", available_estimators())
def test_estimator_reruns_threads_and_reload_are_bit_identical(name, tmp_path):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here: 1 vs 2 threads cannot differ")
    a, X = _fit(name, threads=1)
    b, _ = _fit(name, threads=2)
    c, _ = _fit(name, threads=1)
    blob = a.to_bytes()
    assert blob == b.to_bytes() == c.to_bytes(), "model file differs across reruns"
    a.save(tmp_path / "m.wkm")
    r = wk.load(tmp_path / "m.wkm")
    assert r.to_bytes() == blob  # save -> load -> save is byte-identical
    ref = _outputs(a, X)
    for other in (b, r):
        got = _outputs(other, X)
        for key, val in ref.items():
            assert np.all(np.isfinite(np.asarray(val, dtype=float))), key
            np.testing.assert_array_equal(got[key], val, err_msg=key)


# ----------------------------------------------------------------- pipeline

DRIVER = textwrap.dedent("""
    import runpy
    import sys

    import weakkernels.pipeline.search as search

    # The study name hashes the estimator code, which other developers may be
    # editing while this test runs; both runs must name the same study.
    search.estimator_code_hash = lambda: "pinned"
    p = "params.yaml"
    for script, *args in [
        ("download", "--out", "data/raw"),
        ("prepare", "--raw", "data/raw", "--out", "data/prepared"),
        ("split", "--prepared", "data/prepared", "--out", "data/splits"),
        ("tune", "--prepared", "data/prepared", "--splits", "data/splits",
         "--out", "results/tune", "--metrics", "metrics/tune.json"),
        ("train", "--prepared", "data/prepared", "--splits", "data/splits",
         "--best", "results/tune/best_params.json", "--models-dir", "models",
         "--predictions", "results/predictions", "--out", "results/train/runs.json"),
        ("evaluate", "--runs", "results/train/runs.json", "--predictions",
         "results/predictions", "--prepared", "data/prepared", "--out",
         "results/evaluate", "--metrics", "metrics/test.json"),
    ]:
        # The stage scripts themselves (this process: the pinned hash above).
        sys.argv = [script, *args, "--params", p]
        try:
            runpy.run_path(f"{pipelines}/{{script}}.py", run_name="__main__")
        except SystemExit as done:
            assert done.code == 0, (script, done.code)
""")


# Keys whose values are wall-clock times or run ids: everything else must match.
_VOLATILE = ("time", "run_id", "_s_", "fit_time", "elapsed")


def tiny_params() -> dict:
    from weakkernels.pipeline.registry import MODELS

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["data"]["datasets"] = ["g50c"]
    params["download"].update(mirror=str(MIRROR), use_network=False)
    params["split"].update(seeds=[0, 1])
    params["split"]["su"].update(datasets=[])
    want = ["tsgs3vm", "qsgs2auc", "cccp_tsvm"]  # one per engine family
    params["models"]["names"] = [m for m in want if m in set(MODELS)]
    # few validation reports: each is an MLflow write (sqlite commit)
    params["tune"].update(n_trials=2, n_startup_trials=2, storage=None,
                          callback_every=64)
    params["train"].update(seeds=[1], log_pyfunc=False, callback_every=64)
    params["evaluate"].update(check_reload=True)
    return params


def _strip(obj):
    """Drop wall-clock and run-id fields from JSON results."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items()
                if not any(t in k for t in _VOLATILE)}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def fingerprint(root: Path) -> dict[str, str]:
    """sha256 of every artifact; JSON without times; npz without the time column."""
    out = {}
    for sub in ("data/prepared", "data/splits", "models", "results", "metrics"):
        for path in sorted((root / sub).rglob("*")):
            if not path.is_file():
                continue
            rel = str(path.relative_to(root))
            if path.suffix == ".json":
                data = _strip(json.loads(path.read_text()))
                payload = json.dumps(data, sort_keys=True).encode()
            elif path.suffix == ".npz":
                with np.load(path, allow_pickle=False) as z:
                    h = hashlib.sha256()
                    for k in sorted(z.files):
                        a = z[k]
                        if k == "curve" and a.ndim == 2 and a.shape[1] == 3:
                            a = a[:, :2]  # (step, loss, elapsed seconds)
                        h.update(k.encode() + a.tobytes() + str(a.dtype).encode())
                    payload = h.digest()
            else:
                payload = path.read_bytes()
            out[rel] = hashlib.sha256(payload).hexdigest()
    return out


def _start_pipeline(root: Path, hash_seed: str, threads: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID",
                        "WK_OPTUNA_STORAGE")}
    env.update(PYTHONHASHSEED=hash_seed, NUMBA_NUM_THREADS=threads,
               MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1")
    code = DRIVER.format(pipelines=str(ROOT / "pipelines"))
    return subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw")
def test_tiny_pipeline_twice_gives_identical_artifacts(tmp_path):
    params = tiny_params()
    roots, procs = [], []
    # Both runs at once (the stages mostly wait on sqlite commits): different
    # processes, hash seeds and numba thread counts, same params and seeds.
    for i, (hash_seed, threads) in enumerate((("1", "1"), ("2", "2"))):
        root = tmp_path / f"run{i}"
        root.mkdir()
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        procs.append(_start_pipeline(root, hash_seed, threads))
        roots.append(root)
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    a, b = fingerprint(roots[0]), fingerprint(roots[1])
    assert any(k.startswith("models/") for k in a), "no model file was written"
    assert any(k.startswith("results/predictions/") for k in a)
    assert "metrics/test.json" in a
    assert a.keys() == b.keys()
    differ = sorted(k for k in a if a[k] != b[k])
    assert not differ, f"artifacts differ between identical runs: {differ}"
