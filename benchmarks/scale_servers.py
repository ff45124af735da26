"""Throw-away PostgreSQL and MLflow servers on loopback, for scale tests and figures.

Both are context managers that bind to ``127.0.0.1`` on a free port, wait (with a
deadline) until the server answers, and always stop it and delete its files on
exit.  Used by ``tests/test_scaling_*.py`` and ``tests/test_serving*.py``; the
documentation's pipeline page shows the same steps by hand.

PostgreSQL refuses to run as root: when run as root the server runs as the
``postgres`` system user (created by the Debian ``postgresql`` package).  The
password is random, given to clients through ``PGPASSWORD`` (libpq), never put
in a URL.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PgServer",
    "ServerUnavailable",
    "free_port",
    "mlflow_server",
    "postgres_server",
    "wait_http",
]


class ServerUnavailable(RuntimeError):
    """The server software is not installed or cannot run here."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None,
              log: Path | None = None) -> None:
    """Poll ``url`` until it answers 200, the process dies, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"server exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise TimeoutError(f"{url} did not answer within {timeout} s\n{tail}")


def stop_process(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM the process group started for ``proc``, then SIGKILL."""
    import signal

    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=timeout)


# ------------------------------------------------------------------ PostgreSQL


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str
    dbname: str

    @property
    def url(self) -> str:
        """SQLAlchemy URL *without* the password (libpq reads ``PGPASSWORD``)."""
        return (f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/"
                f"{self.dbname}")

    def env(self) -> dict[str, str]:
        return {"PGPASSWORD": self.password}

    def create_database(self, name: str) -> str:
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user,
                                password=self.password, dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return (f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{name}")


def _pg_bindir() -> Path | None:
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextmanager
def postgres_server(dbname: str = "optuna", timeout: float = 60) -> Iterator[PgServer]:
    """A fresh PostgreSQL cluster on ``127.0.0.1:<free port>`` with database
    ``dbname``; stopped (``-m immediate``) and deleted on exit."""
    bindir = _pg_bindir()
    if bindir is None:
        raise ServerUnavailable(
            "PostgreSQL server binaries (initdb, pg_ctl) not found; install them "
            "with `apt-get install -y postgresql`")
    try:
        import psycopg2  # noqa: F401
    except ImportError as exc:
        raise ServerUnavailable("psycopg2 is not installed") from exc
    run_as: dict = {}
    if os.geteuid() == 0:
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise ServerUnavailable("running as root and no `postgres` user to run "
                                    "the server as") from exc
        run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    base = Path(tempfile.mkdtemp(prefix="wk-pg-"))
    password = secrets.token_urlsafe(18)
    started = False
    try:
        pwfile = base / "pw"
        pwfile.write_text(password + "\n")
        os.chmod(pwfile, 0o600)
        if run_as:
            for p in (base, pwfile):
                os.chown(p, run_as["user"], run_as["group"])
        env = {**os.environ, "LC_ALL": "C"}
        res = subprocess.run(
            [str(bindir / "initdb"), "-D", str(base / "data"), "-U", "wk",
             f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8",
             "--no-sync"],
            capture_output=True, text=True, env=env, timeout=timeout, **run_as)
        if res.returncode:
            raise ServerUnavailable(f"initdb failed: {res.stderr[-2000:]}")
        port = free_port()
        opts = (f"-c listen_addresses=127.0.0.1 -p {port} -k {base} "
                "-c fsync=off -c full_page_writes=off")
        res = subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(base / "data"), "-l",
             str(base / "server.log"), "-w", "-t", str(int(timeout)), "-o", opts,
             "start"],
            capture_output=True, text=True, env=env, timeout=timeout + 10, **run_as)
        started = True
        if res.returncode:
            log = (base / "server.log")
            raise ServerUnavailable(
                f"pg_ctl start failed: {res.stderr[-1000:]}\n"
                f"{log.read_text()[-2000:] if log.exists() else ''}")
        server = PgServer("127.0.0.1", port, "wk", password, dbname)
        server.create_database(dbname)
        yield server
    finally:
        if started:
            subprocess.run(
                [str(bindir / "pg_ctl"), "-D", str(base / "data"), "-m", "immediate",
                 "-w", "-t", "30", "stop"],
                capture_output=True, timeout=60, **run_as)
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------ MLflow


@contextmanager
def mlflow_server(backend_uri: str | None = None, timeout: float = 120,
                  workdir: str | os.PathLike | None = None,
                  extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``mlflow server`` on ``127.0.0.1:<free port>`` with a sqlite backend (or
    ``backend_uri``) and ``--artifacts-destination`` in a temp dir; yields its
    ``http://`` URI."""
    base = Path(tempfile.mkdtemp(prefix="wk-mlflow-", dir=workdir))
    port = free_port()
    backend = backend_uri or f"sqlite:///{base / 'mlflow.db'}"
    log = base / "server.log"
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1",
           "--port", str(port), "--backend-store-uri", backend,
           "--artifacts-destination", str(base / "artifacts"), "--workers", "1"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1",
           **(extra_env or {})}
    env.pop("MLFLOW_TRACKING_URI", None)
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                cwd=base, start_new_session=True)
    try:
        uri = f"http://127.0.0.1:{port}"
        wait_http(f"{uri}/health", timeout, proc, log)
        yield uri
    finally:
        stop_process(proc)
        shutil.rmtree(base, ignore_errors=True)
