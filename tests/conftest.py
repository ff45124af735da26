"""Test-wide settings: telemetry off, deterministic hypothesis runs."""

import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_environment():
    """Undo environment changes a test (or a library it calls, e.g. MLflow's
    project runner setting MLFLOW_EXPERIMENT_ID) leaves behind: subprocesses
    started by later tests inherit os.environ and would point at an experiment
    or run of another store."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh MLflow sqlite store as ``MLFLOW_TRACKING_URI``; yields the
    client. A test that opens it first silences MLflow's SQLAlchemy
    deprecation message itself (``filterwarnings``), as setup_mlflow does."""
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    for var in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(var, raising=False)
    yield mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    while mlflow.active_run():
        mlflow.end_run()


def pytest_collection_modifyitems(config, items):
    """Run order, file by file (each file's tests stay together and in their
    order): the files holding a test marked ``slow`` first, then the others by
    their number of tests, most first. ``make test`` runs pytest-xdist's
    ``--dist loadfile --no-loadscope-reorder``, which hands the files to the
    two workers in this order: the long files start at once instead of last
    (xdist's own order, by test count, left the repro files to the end, where
    one worker ran them while the other idled)."""
    first, count, slow = {}, {}, set()
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
        count[item.path] = count.get(item.path, 0) + 1
        if item.get_closest_marker("slow") is not None:
            slow.add(item.path)
    items.sort(key=lambda item: (item.path not in slow, -count[item.path],
                                 first[item.path]))
