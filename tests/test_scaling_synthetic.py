"""The SYNTHETIC large-data generator and its place in the pipeline registry."""

from __future__ import annotations

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
