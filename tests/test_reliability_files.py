"""Model files and stage outputs on the file system (RELIABILITY.md,
section "Sparse structure", causes F and G): written with the user's umask,
never renamed over a device or FIFO; ``load`` refuses non-regular files and
oversized files before reading them."""

from __future__ import annotations

import os
import stat
import threading
import time

import numpy as np
import pytest

import weakkernels as wk
from weakkernels._artifact import MAX_BYTES, ModelFormatError, max_file_bytes
from weakkernels.pipeline import storage


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3))
    y = (X[:, 0] > 0).astype(int)
    return wk.RampSVM(max_cccp_iter=2).fit(X, y)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    try:
        yield lambda m: os.umask(m)
    finally:
        os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# ------------------------------------------------------------- F: umask


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600),
                                        (0o002, 0o664)])
def test_model_file_and_stage_outputs_follow_the_umask(model, umask, tmp_path,
                                                       mask, mode):
    # Before: mkstemp's 0600 whatever the umask; a serving user could not read.
    umask(mask)
    model.save(tmp_path / "m.wk")
    assert _mode(tmp_path / "m.wk") == mode
    storage.atomic_write_json(tmp_path / "metrics.json", {"a": 1})
    assert _mode(tmp_path / "metrics.json") == mode
    storage.save_npz(tmp_path / "a.npz", x=np.arange(3))
    assert _mode(tmp_path / "a.npz") == mode
    # overwriting keeps it so, and the content is the new one
    model.save(tmp_path / "m.wk")
    assert _mode(tmp_path / "m.wk") == mode
    assert wk.load(tmp_path / "m.wk").n_features_in_ == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "m.wk",
                                                          "metrics.json"]


# ----------------------------------------------- F: never over a non-regular file


def test_save_refuses_to_replace_a_fifo_or_directory(model, tmp_path):
    # Before: os.replace swapped the FIFO (as root: /dev/full) for a model file.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError, match="a FIFO exists at this path"):
        model.save(fifo)
    with pytest.raises(FileExistsError, match="a FIFO"):
        storage.atomic_write_text(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    (tmp_path / "dir").mkdir()
    with pytest.raises(FileExistsError, match="a directory"):
        model.save(tmp_path / "dir")
    # no temporary left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "pipe"]


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_save_as_root_leaves_a_device_node_alone(model, tmp_path):
    dev = tmp_path / "full"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full
    with pytest.raises(FileExistsError, match="a character device"):
        model.save(dev)
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_save_through_a_symlink_replaces_the_link_not_its_target(model, tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "link").symlink_to(target)
    model.save(tmp_path / "link")
    assert target.read_bytes() == b"keep"
    assert wk.load(tmp_path / "link").n_features_in_ == 3


# ------------------------------------------------------------- G: load


def _load_in_thread(fn, timeout=20.0):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t0 = time.perf_counter()
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "load blocked"
    return out, time.perf_counter() - t0


@pytest.mark.parametrize("loader", [wk.load, wk.RampSVM.load],
                         ids=["load", "RampSVM.load"])
def test_load_refuses_a_fifo_without_blocking(loader, tmp_path):
    # Before: open() of a FIFO with no writer blocked forever.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out, _ = _load_in_thread(lambda: loader(fifo))
    assert isinstance(out.get("exc"), ModelFormatError), out
    assert "a FIFO, not a regular file" in str(out["exc"])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_load_refuses_a_device(device):
    # Before: /dev/zero was read until MemoryError (1.6 GB resident).
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    out, _ = _load_in_thread(lambda: wk.load(device))
    assert isinstance(out.get("exc"), ModelFormatError), out
    assert "a character device" in str(out["exc"])


def test_load_checks_the_size_before_reading(tmp_path):
    # Before: a 3 GiB file was read whole, then refused (or MemoryError).
    big = tmp_path / "big.wk"
    with open(big, "wb") as fh:  # sparse: no disk space used
        fh.truncate(max_file_bytes() + 1)
    out, seconds = _load_in_thread(lambda: wk.load(big))
    assert isinstance(out.get("exc"), ModelFormatError), out
    assert "beyond the" in str(out["exc"]) and "max_bytes" in str(out["exc"])
    assert seconds < 5.0
    # the bound follows max_bytes
    small = tmp_path / "small.wk"
    with open(small, "wb") as fh:
        fh.truncate(max_file_bytes(2**20) + 1)
    with pytest.raises(ModelFormatError, match="beyond the"):
        wk.load(small, max_bytes=2**20)
    assert max_file_bytes() > MAX_BYTES


def test_load_still_reads_a_regular_file(model, tmp_path):
    model.save(tmp_path / "m.wk")
    again = wk.load(tmp_path / "m.wk")
    np.testing.assert_array_equal(again.dual_coef_, model.dual_coef_)
    with pytest.raises(FileNotFoundError):
        wk.load(tmp_path / "missing.wk")
