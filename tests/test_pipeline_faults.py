"""The pipeline under faults, through ``dvc repro`` of the real dvc.yaml in a
temporary project (one model, g50c from the mirror, 3 trials):

* ``kill -9`` of the whole ``dvc repro`` process group during ``tune``, then
  during ``train``; ``dvc repro`` again completes and every DVC output hash in
  ``dvc.lock`` equals an uninterrupted run's;
* two ``dvc repro`` at once: the second waits or is refused with DVC's lock
  message; the first completes with the uninterrupted run's outputs;
* the project on a full file system (a small tmpfs, mounted in a private mount
  namespace): a clear error naming the file, no half-written output, and
  ``dvc repro`` succeeds once space is freed;
* a missing or corrupt mirror file: the download stage names the file and its
  expected sha256;
* the MLflow tracking server stopped in the middle of ``train``: a clear error
  naming the server, and what was logged before stays in its store.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from test_pipeline_e2e import MIRROR, build_project

N_TRIALS = 3

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw"),
]


def _tiny(params: dict) -> None:
    params["data"]["datasets"] = ["g50c"]
    params["split"]["seeds"] = [0, 1, 2]
    # few validation reports: each one is an MLflow write
    params["tune"].update(callback_every=64)
    # two fits in train, so a kill can fall between two model files
    params["train"].update(seeds=[1, 2], log_pyfunc=False, callback_every=64)


def _dvc(root: Path, env: dict, *args: str, timeout: float = 1800,
         check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"dvc {' '.join(args)} failed ({proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    return proc


def _start(root: Path, env: dict, log: str) -> subprocess.Popen:
    """``dvc repro`` in its own process group (so ``killpg`` takes DVC, the
    stage's shell and the stage's Python at once, as a crash would)."""
    out = open(root.parent / f"{root.name}.{log}.log", "w")  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "dvc", "repro"], cwd=root,
                            env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _log(root: Path, log: str) -> str:
    return (root.parent / f"{root.name}.{log}.log").read_text()


def _wait_for(cond, proc: subprocess.Popen, what: str, timeout: float = 900):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        if proc.poll() is not None:
            pytest.fail(f"dvc repro ended ({proc.returncode}) before {what}",
                        pytrace=False)
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}", pytrace=False)


def _kill9(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


def _trials(db: Path, state: str) -> int:
    """How many trials of the Optuna sqlite store are in ``state``."""
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM trials WHERE state = ?",
                               (state,)).fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:  # tables not created yet, or locked
        return 0


def _finished_study(reference: dict, tmp: Path, env: dict) -> dict:
    """``env`` with the reference run's finished study as the Optuna store:
    ``tune`` then runs no trial (the faults of these tests come later)."""
    shutil.copy(reference["root"] / "optuna" / "optuna.db", tmp / "optuna.db")
    return {**env, "WK_OPTUNA_STORAGE": f"sqlite:///{tmp}/optuna.db"}


def _model_files(root: Path) -> list[Path]:
    return sorted((root / "models").rglob("*.wkm"))


def _outs(root: Path) -> dict[str, str]:
    """Every DVC output of ``dvc.lock`` with its hash."""
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {o["path"]: o["md5"] for st in lock["stages"].values()
            for o in st.get("outs", [])}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _assert_like_reference(root: Path, ref: dict, env: dict) -> None:
    assert _outs(root) == ref, "DVC outputs differ from the uninterrupted run's"
    status = _dvc(root, env, "status", "--quiet", check=False)
    assert status.returncode == 0, status.stdout  # every stage up to date


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The tiny project with download, prepare and split done (shared: the
    faults below are all later)."""
    root = tmp_path_factory.mktemp("faults") / "base"
    root.mkdir()
    proj = build_project(root, models=["tsgs3vm"], su=False, n_trials=N_TRIALS,
                         edit=_tiny, repro=False)
    _dvc(root, proj["env"], "repro", "split")
    return proj


@pytest.fixture(scope="module")
def reference(base):
    """An uninterrupted ``dvc repro``: its output hashes."""
    root = _copy(base["root"], base["root"].parent / "reference")
    _dvc(root, base["env"], "repro")
    return {"root": root, "outs": _outs(root)}


def test_kill_9_during_tune_and_train_then_repro_matches_uninterrupted(base,
                                                                        reference):
    root = _copy(base["root"], base["root"].parent / "killed")
    env = base["env"]
    db = root / "optuna" / "optuna.db"

    proc = _start(root, env, "tune")
    _wait_for(lambda: _trials(db, "COMPLETE") >= 1 and _trials(db, "RUNNING") >= 1,
              proc, "a trial running after a finished one")
    _kill9(proc)
    assert _trials(db, "RUNNING") == 1, "the kill came after the trial"
    assert "tune" not in yaml.safe_load((root / "dvc.lock").read_text())["stages"]

    proc = _start(root, env, "train")
    _wait_for(lambda: len(_model_files(root)) >= 1, proc, "a model file")
    _kill9(proc)
    assert len(_model_files(root)) < 2, "the kill came after train"
    assert "train" not in yaml.safe_load((root / "dvc.lock").read_text())["stages"]

    _dvc(root, env, "repro")
    assert _trials(db, "FAIL") == 1  # the killed trial, then marked failed
    _assert_like_reference(root, reference["outs"], env)


def test_two_repros_at_once_wait_or_refuse_and_corrupt_nothing(base, reference,
                                                               tmp_path):
    root = _copy(base["root"], tmp_path / "twice")
    env = _finished_study(reference, tmp_path, base["env"])
    first = _start(root, env, "first")
    _wait_for(lambda: (root / "results" / "tune" / "best_params.json").exists(),
              first, "the end of tune")
    second = _dvc(root, env, "repro", timeout=900, check=False)
    msg = second.stdout + second.stderr
    (tmp_path / "twice.second.log").write_text(msg)  # for a reader of the test
    assert first.wait(timeout=900) == 0, _log(root, "first")[-3000:]
    if second.returncode != 0:  # refused: DVC's lock message, nothing run
        assert "Unable to acquire lock" in msg or "is busy" in msg, msg[-3000:]
    _assert_like_reference(root, reference["outs"], env)


# ------------------------------------------------------------- full disk

FULL_DISK = textwrap.dedent("""
    # Runs in a private mount namespace (unshare -m): the tmpfs vanishes with it.
    import json, os, subprocess, sys
    from pathlib import Path

    src, mnt, report = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                   check=True)
    root = mnt / "proj"
    subprocess.run(["cp", "-a", str(src), str(root)], check=True)
    st = os.statvfs(mnt)
    # Leave 64 KiB: room for tune's small JSON files, not for a model file
    # (about 110 KiB).
    ballast = mnt / "ballast"
    with open(ballast, "wb") as fh:
        fh.write(b"\\0" * (st.f_bavail * st.f_frsize - 64 * 1024))
    repro = [sys.executable, "-m", "dvc", "repro"]
    full = subprocess.run(repro, cwd=root, capture_output=True, text=True)
    left = sorted(str(p.relative_to(root)) for sub in ("models", "results")
                  if (root / sub).exists() for p in (root / sub).rglob("*")
                  if p.is_file())
    lock_after_full = (root / "dvc.lock").read_text()
    status = subprocess.run([sys.executable, "-m", "dvc", "status", "--quiet"],
                            cwd=root, capture_output=True, text=True)
    ballast.unlink()  # free the space
    again = subprocess.run(repro, cwd=root, capture_output=True, text=True)
    report.write_text(json.dumps({
        "full_rc": full.returncode, "full_out": full.stdout + full.stderr,
        "left": left, "lock_after_full": lock_after_full,
        "status_rc": status.returncode,
        "again_rc": again.returncode, "again_out": again.stdout + again.stderr,
        "lock": (root / "dvc.lock").read_text()}))
""")


def _can_mount() -> str | None:
    """Why a private tmpfs cannot be mounted here, or None."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "no unshare/mount"
    ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    probe = subprocess.run([*ns, "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr}"


def test_full_file_system_is_a_clear_error_and_repro_succeeds_after_freeing(
        base, reference, tmp_path):
    import json

    why = _can_mount()
    if why:
        pytest.skip(why)
    env = dict(base["env"])
    # The MLflow and Optuna stores stay on the normal disk: the outputs (and
    # DVC's cache) are what lives on the full file system.  The study is the
    # reference run's, finished: tune reruns no trial.
    env = _finished_study(reference, tmp_path, env)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path}/mlflow.db"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]
    subprocess.run([*ns, sys.executable, "-c", FULL_DISK, str(base["root"]),
                    str(mnt), str(tmp_path / "report.json")],
                   env=env, check=True, timeout=900)
    rep = json.loads((tmp_path / "report.json").read_text())
    out = rep["full_out"]
    assert rep["full_rc"] != 0, out[-3000:]
    assert "No space left on device" in out, out[-3000:]
    # the error names the output it could not write
    assert "OSError: [Errno 28] No space left on device: '" in out, out[-3000:]
    # no half-written output: no temporary file, no model file of train's
    assert not [f for f in rep["left"] if ".tmp" in f or f.startswith(".")], rep["left"]
    assert "train:" not in rep["lock_after_full"]  # DVC recorded no train
    assert rep["status_rc"] != 0  # `dvc status`: train still to run
    assert rep["again_rc"] == 0, rep["again_out"][-3000:]
    lock = yaml.safe_load(rep["lock"])
    outs = {o["path"]: o["md5"] for st in lock["stages"].values()
            for o in st.get("outs", [])}
    assert outs == reference["outs"]


# ----------------------------------------------------------- mirror faults


def _mirror_copy(tmp: Path) -> tuple[Path, Path, str]:
    from weakkernels.pipeline.datasets import DATASETS

    spec = DATASETS["g50c"]
    (fspec,) = spec.files
    mirror = tmp / "mirror"
    shutil.copytree(MIRROR / spec.dir, mirror / spec.dir)
    return mirror, mirror / spec.dir / fspec.name, fspec.sha256


@pytest.mark.parametrize("fault", ["missing", "corrupt"])
def test_mirror_file_missing_or_corrupt_names_the_file_and_its_sha256(
        base, tmp_path, fault):
    root = _copy(base["root"], tmp_path / "proj")
    mirror, path, sha = _mirror_copy(tmp_path)
    if fault == "missing":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["download"]["mirror"] = str(mirror)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.rmtree(root / "data" / "raw")  # nothing to reuse: the mirror is it
    proc = _dvc(root, base["env"], "repro", "download", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (f"DownloadError: could not obtain {path.parent.name}/{path.name} "
            f"(expected sha256 {sha})") in out, out[-3000:]
    assert str(path) in out and sha in out, out[-3000:]
    # DVC recorded nothing of the failed stage
    assert (root / "dvc.lock").read_text() == (base["root"] / "dvc.lock").read_text()


# ------------------------------------------------------- tracking server


# MLflow's own SQLAlchemy store, read here directly (tracking.setup_mlflow
# silences the same message in the stages).
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")
def test_tracking_server_stopped_mid_train_is_a_clear_error_keeping_logged_runs(
        base, reference, tmp_path):
    import mlflow

    from scale_servers import mlflow_server

    root = _copy(base["root"], tmp_path / "proj")
    env = _finished_study(reference, tmp_path, base["env"])
    backend = f"sqlite:///{tmp_path}/server.db"
    with mlflow_server(backend_uri=backend, workdir=tmp_path) as uri:
        env["MLFLOW_TRACKING_URI"] = uri
        proc = _start(root, env, "repro")
        # seed 2's model file: seed 1's run is logged and ended
        _wait_for(lambda: len(_model_files(root)) >= 2, proc, "two model files")
    # the server is stopped; train goes on to its next MLflow call
    t0 = time.monotonic()
    try:
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            _kill9(proc)
    waited = time.monotonic() - t0
    out = _log(root, "repro")
    assert rc != 0, out[-3000:]
    assert uri in out, out[-3000:]  # the error names the server
    assert waited < 120, f"the stage took {waited:.0f} s to give up"
    assert "train" not in yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    # what was logged before the stop is in the server's store
    client = mlflow.MlflowClient(tracking_uri=backend)
    exp = client.get_experiment_by_name(base["params"]["mlflow"]["experiment"])
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    names = [r.data.tags.get("mlflow.runName", "") for r in runs]
    assert "tune" in names and "train" in names, names
    seed1 = [r for r in runs if r.data.tags.get("mlflow.runName") == "seed 1"]
    assert len(seed1) == 1, names
    assert seed1[0].info.status == "FINISHED"
    assert {"val_loss", "fit_time_s", "train_error"} <= set(seed1[0].data.metrics)
