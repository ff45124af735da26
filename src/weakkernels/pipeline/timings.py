"""Wall-clock timings and MLflow run ids, kept out of the DVC-declared outputs.

Every output declared in ``dvc.yaml`` is a deterministic function of code,
params and data, so a second ``dvc repro --force`` (or a fresh clone's run)
gives byte-identical files and an identical ``dvc.lock``.  Timings change on
every run and MLflow run ids are new on every run: the stages write them to
the undeclared, gitignored ``results/timings/`` (and the report stage to
``reports/timings.md`` and ``plots/timings/``); MLflow has them too.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Record keys that change from run to run (also their ``_mean`` / ``_std``).
# ``n_failed``: a resumed study retries its failed trials (only complete and
# pruned ones count as done), so the count grows with every rerun.
# ``trial``: the best trial's Optuna number counts the trials a killed attempt
# left failed, so the same best configuration has a higher number after a
# ``kill -9`` and a resume (its parameters and loss stay in the output).
VOLATILE = ("fit_time_s", "compile_time_s", "predict_time_s", "curve_time_s",
            "run_id", "group_run_id", "parent_run_id", "mlflow_run_id", "pyfunc_uri",
            "n_failed", "trial")
TIMINGS_DIR = Path("results") / "timings"
# Seconds between two progress lines of a running stage: a log that is not a
# terminal (DVC's, CI's) shows no progress bar.
PROGRESS_S = 30.0


@contextlib.contextmanager
def heartbeat(status: Callable[[], str], every: float = PROGRESS_S):
    """Print ``status()`` every ``every`` seconds while the block runs (a
    daemon thread; ``status`` only reads what the block updates)."""
    stop = threading.Event()
    t0 = time.monotonic()

    def beat():
        while not stop.wait(every):
            print(f"{status()} ({time.monotonic() - t0:.0f} s)", flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def is_volatile(key: str) -> bool:
    return key in VOLATILE or key.removesuffix("_mean").removesuffix("_std") \
        in VOLATILE


def strip(obj: Any) -> Any:
    """``obj`` without the volatile keys of its (nested) dicts."""
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if not is_volatile(str(k))}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


def volatile(rec: dict) -> dict:
    """The volatile entries of one flat record."""
    return {k: v for k, v in rec.items() if is_volatile(k)}


def merge_runs(runs: list[dict], side: dict | None) -> list[dict]:
    """Train records with their timings and run ids (keyed by ``predictions``)
    from the sidecar put back; unchanged when there is none."""
    by = (side or {}).get("runs", {})
    return [{**r, **by.get(r.get("predictions"), {})} for r in runs]
