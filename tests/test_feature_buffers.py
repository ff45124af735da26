"""Features computed in buffers the caller keeps (``work``, what a Dask task
does for its sub-chunks: random_features.work_array) are the features of new
arrays, bit for bit. tests/test_dask.py checks the whole fits, but in
float64; these are the float32 paths too."""

import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels._dsg import primal_chunk
from weakkernels.random_features import (
    _KERNEL_BLOCK_BYTES,
    FeatureSpec,
    NystromSpec,
    _rbf_from_products,
)


def _rows(sparse, n=700, d=28, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).astype(np.float32)
    X[X < 0.4] = 0.0
    return sp.csr_matrix(X) if sparse else X


def _specs(dtype, d=28):
    rng = np.random.default_rng(1)
    nys = NystromSpec("rbf", 0.1, rng.random((300, d)), dtype)
    return [nys, nys.row_whitened(),
            FeatureSpec("rbf", 0.1, 2, 1.0, d, 64, 0, dtype),
            FeatureSpec("poly", 0.1, 2, 1.0, d, 64, 0, dtype)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_features_in_kept_buffers_are_the_same_bits(dtype, sparse):
    X = _rows(sparse)
    work = {}  # one set of buffers for every spec and chunk: reused, regrown
    for spec in _specs(dtype):
        W, second = spec.blocks(0, 1 if isinstance(spec, NystromSpec) else 3)
        norm = spec.dtype.type(0.5)
        for r0, r1 in [(0, 512), (512, 700), (3, 20), (0, 700)]:
            ref = primal_chunk(X[r0:r1], spec, W, second, norm)
            got = primal_chunk(X[r0:r1], spec, W, second, norm, work=work)
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref)
    if not sparse:  # rows converted into a buffer: float64, strided
        spec = _specs(np.float32)[0]
        W, second = spec.blocks(0, 1)
        for rows in (X.astype(np.float64), X[::2], np.asfortranarray(X)):
            np.testing.assert_array_equal(
                primal_chunk(rows, spec, W, second, np.float32(1), work=work),
                primal_chunk(rows, spec, W, second, np.float32(1)))


def test_narrow_kernel_blocks_are_the_fresh_products():
    """The float32 kernel on narrow rows computes its products block by block
    into one buffer: the bits of a new product per block (as before the
    buffer; several blocks, a ragged last one)."""
    X = _rows(False, n=1000).astype(np.float64)
    spec = _specs(np.float32)[0]
    W, sq = spec.blocks(0, 1)
    step = max(16, _KERNEL_BLOCK_BYTES // (8 * W.shape[1]))
    assert X.shape[0] > 2 * step and X.shape[0] % step
    xx = np.einsum("ij,ij->i", X, X)
    ref = np.empty((X.shape[0], W.shape[1]), dtype=np.float32)
    bits = np.empty(W.shape[1], dtype=np.int32)
    for r0 in range(0, X.shape[0], step):
        _rbf_from_products(X[r0:r0 + step] @ W, xx[r0:r0 + step], sq,
                           spec.sigma, ref[r0:r0 + step], bits)
    np.testing.assert_array_equal(spec._kernel(X, W, sq), ref)
    np.testing.assert_array_equal(spec._kernel(X, W, sq, work={}), ref)
