"""The SYNTHETIC large-data generator and its place in the pipeline registry."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from _pipeline import params as repo_params
from weakkernels.pipeline import datasets as ds
from weakkernels.pipeline.preparation import prepare
from weakkernels.pipeline.synthetic import (
    CHUNK_ROWS,
    SYNTHETIC,
    SyntheticSpec,
    _teacher,
    open_synthetic,
    synthetic_rows,
    write_synthetic,
)

ROOT = Path(__file__).resolve().parents[1]


def test_shapes_are_those_of_hepmass_and_susy():
    assert (SYNTHETIC["synthetic_hepmass"].n_rows,
            SYNTHETIC["synthetic_hepmass"].n_features) == (10_500_000, 28)
    assert (SYNTHETIC["synthetic_susy"].n_rows,
            SYNTHETIC["synthetic_susy"].n_features) == (5_000_000, 18)


def test_rows_are_chunk_independent_and_prefix_stable():
    spec = SyntheticSpec("t", 3 * CHUNK_ROWS, 6, seed=5)
    X, y = synthetic_rows(spec, 0, 2 * CHUNK_ROWS + 10)
    # any range straddling a chunk boundary equals the slice of the long range
    Xa, ya = synthetic_rows(spec, CHUNK_ROWS - 7, CHUNK_ROWS + 9)
    np.testing.assert_array_equal(Xa, X[CHUNK_ROWS - 7:CHUNK_ROWS + 9])
    np.testing.assert_array_equal(ya, y[CHUNK_ROWS - 7:CHUNK_ROWS + 9])
    # a smaller set with the same seed is a prefix of the larger one
    Xp, yp = synthetic_rows(spec.prefix(1000), 0, 1000)
    np.testing.assert_array_equal(Xp, X[:1000])
    assert X.dtype == np.float32 and y.dtype == np.int8
    assert X.min() >= 0.0 and X.max() < 1.0
    assert 0.45 < y.mean() < 0.55  # median threshold: balanced classes
    # another seed gives other data
    Xo, _ = synthetic_rows(SyntheticSpec("t", 3 * CHUNK_ROWS, 6, seed=6), 0, 100)
    assert not np.array_equal(Xo, X[:100])


@pytest.mark.parametrize("name, digest", [
    ("synthetic_hepmass",
     "df7f2eb7911a0f66a9cb5b9885e95e3a8fb0dc8080c9f9ac7876400cc271807f"),
    ("synthetic_susy",
     "747f374d1d06eb39df0d16b6a0cfa24275c9ecfb341f003f206745114a0263c7"),
])
def test_gap_free_sets_keep_their_rows(name, digest):
    """The ``gap`` option left the HEPMASS / SUSY rows as they were: digests of
    their first 1 000 rows, taken with the generator before the option (ec92b2a),
    so every benchmark row measured on them stays comparable."""
    X, y = synthetic_rows(SYNTHETIC[name], 0, 1000)
    assert hashlib.sha256(X.tobytes() + y.tobytes()).hexdigest() == digest


def test_gap_empties_a_band_around_the_boundary():
    """With ``gap``, no row's teacher value lies within ``m`` of the threshold,
    the classes stay balanced, labels still flip at ``label_noise``, and rows
    stay chunk-independent and prefix-stable (rejection happens inside a chunk)."""
    spec = SyntheticSpec("t", 3 * CHUNK_ROWS, 6, seed=5, gap=0.3)
    W, b, a, thr, m = _teacher(spec)
    X, y = synthetic_rows(spec, 0, 2 * CHUNK_ROWS)
    f = np.cos(X.astype(np.float64) @ W + b) @ a
    assert m > 0 and np.abs(f - thr).min() >= m
    # on the uniform cube the band holds ~30 % of the rows
    U = np.random.default_rng(0).random((20_000, 6))
    band = np.abs(np.cos(U @ W + b) @ a - thr) < m
    assert 0.27 < band.mean() < 0.33, band.mean()
    assert 0.45 < y.mean() < 0.55
    assert 0.015 < np.mean((f > thr) != y) < 0.025  # label_noise 0.02
    Xa, ya = synthetic_rows(spec, CHUNK_ROWS - 7, CHUNK_ROWS + 9)
    np.testing.assert_array_equal(Xa, X[CHUNK_ROWS - 7:CHUNK_ROWS + 9])
    np.testing.assert_array_equal(ya, y[CHUNK_ROWS - 7:CHUNK_ROWS + 9])
    Xp, _ = synthetic_rows(spec.prefix(1000), 0, 1000)
    np.testing.assert_array_equal(Xp, X[:1000])
    with pytest.raises(ValueError, match="gap"):
        synthetic_rows(SyntheticSpec("t", 10, 3, gap=0.95), 0, 10)


def test_teacher_is_learnable_and_nonlinear():
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    spec = SYNTHETIC["synthetic_susy"]
    X, y = synthetic_rows(spec, 0, 5000)
    Xt, yt = X[2000:], y[2000:]
    rbf = SVC(gamma=spec.teacher_sigma, C=10.0).fit(X[:2000], y[:2000])
    lin = LogisticRegression(max_iter=1000).fit(X[:2000], y[:2000])
    err_rbf = np.mean(rbf.predict(Xt) != yt)
    err_lin = np.mean(lin.predict(Xt) != yt)
    assert err_rbf < 0.2, err_rbf  # chance is 0.5
    assert err_rbf < err_lin - 0.03, (err_rbf, err_lin)  # the teacher is nonlinear


def test_write_streams_in_chunks_and_memmaps(tmp_path):
    """File content equals the in-memory rows; allocation stays at one chunk."""
    small = SyntheticSpec("t", CHUNK_ROWS, 8, seed=1)
    big = SyntheticSpec("t", 6 * CHUNK_ROWS + 123, 8, seed=1)
    peaks = []
    for spec, sub in ((small, "small"), (big, "big")):
        tracemalloc.start()
        write_synthetic(spec, tmp_path / sub)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # 6x more data, same peak allocation (NumPy reports to tracemalloc)
    assert peaks[1] < 1.2 * peaks[0], peaks
    assert peaks[1] < 64 * 2**20  # one chunk and its teacher values
    X, y = open_synthetic(tmp_path / "big")
    assert isinstance(X, np.memmap) and X.dtype == np.float32
    assert X.shape == (big.n_rows, 8) and not X.flags.writeable
    Xr, yr = synthetic_rows(big, 5 * CHUNK_ROWS, big.n_rows)
    np.testing.assert_array_equal(X[5 * CHUNK_ROWS:], Xr)
    np.testing.assert_array_equal(y[5 * CHUNK_ROWS:], yr)
    Xs, _ = open_synthetic(tmp_path / "small")
    np.testing.assert_array_equal(Xs, X[:CHUNK_ROWS])
    assert not list((tmp_path / "big").glob(".*.tmp"))
    # rerun with the same spec keeps the files (no rewrite)
    mtime = (tmp_path / "big" / "X.npy").stat().st_mtime_ns
    write_synthetic(big, tmp_path / "big")
    assert (tmp_path / "big" / "X.npy").stat().st_mtime_ns == mtime


def test_registered_in_pipeline_download_and_prepare(tmp_path):
    """`synthetic_susy_100k` goes through the download and prepare stages."""
    assert "synthetic_hepmass" in ds.DATASETS and "synthetic_susy_1m" in ds.DATASETS
    assert "SYNTHETIC" in ds.DATASETS["synthetic_hepmass"].description
    assert "low-density" in ds.DATASETS["synthetic_hepmass_gap_1m"].description
    recs = ds.download_dataset("synthetic_susy_100k", tmp_path / "raw", None)
    assert recs[0]["origin"].startswith("generated (synthetic")
    raw = ds.load_raw("synthetic_susy_100k", tmp_path / "raw")
    assert isinstance(raw.X, np.memmap) and raw.X.shape == (100_000, 18)
    full = SYNTHETIC["synthetic_susy"]
    Xr, yr = synthetic_rows(full, 99_990, 100_000)  # a prefix of the full set
    np.testing.assert_array_equal(raw.X[-10:], Xr)

    summary = prepare(["synthetic_susy_100k"], tmp_path / "raw",
                      tmp_path / "prepared", **repo_params()["prepare"])
    assert summary["synthetic_susy_100k"]["n"] == 100_000
    assert summary["synthetic_susy_100k"]["d"] == 18
    assert summary["synthetic_susy_100k"]["classes"] == [0.0, 1.0]


@pytest.mark.parametrize("bad", [(-1, 5), (10, 5)])
def test_bad_row_range(bad):
    with pytest.raises(ValueError):
        synthetic_rows(SyntheticSpec("t", 100, 3), *bad)
