"""Sparse input on the random-feature side.

The numba CSR x dense projection against a naive NumPy loop; ``sigma="scale"``
and the feature maps on sparse vs dense X; every random-feature estimator
(both solvers) fitted on the same data dense and sparse with the same seed;
sparse predict on CSR/CSC/COO; save/load of a model fitted on sparse data; no
densifying anywhere in fit or predict; the synthetic RCV1-shaped generator.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels import FRS3VM, QSGS2AUC, TSGS3VM, TSGSU, load
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC
from weakkernels.baselines.su import CUU, SUSL
from weakkernels.class_prior import estimate_class_prior
from weakkernels.kernels import resolve_sigma
from weakkernels.pipeline.synthetic import make_rcv1_like
from weakkernels.random_features import (
    _CSR_PROJECT,
    FeatureSpec,
    RandomFeatures,
    _flat_rows,
    csr_project,
)


def _naive_project(X, W):
    """``X @ W`` by an explicit loop over the stored entries, in float64."""
    X = sp.csr_matrix(X)
    Z = np.zeros((X.shape[0], W.shape[1]))
    for i in range(X.shape[0]):
        for p in range(X.indptr[i], X.indptr[i + 1]):
            Z[i] += float(X.data[p]) * W[X.indices[p]].astype(np.float64)
    return Z


def _text_like(n=600, d=300, density=0.05, seed=0, n_labeled=40):
    """Small sparse text-like set; ``y == -1`` on all but ``n_labeled`` rows
    (both classes among them)."""
    X, y = make_rcv1_like(n, d, density, seed=seed, n_informative=60)
    rng = np.random.default_rng(seed)
    lab = np.concatenate([
        rng.choice(np.flatnonzero(y == c), n_labeled // 2, replace=False)
        for c in (0, 1)
    ])
    y_semi = np.full(n, -1)
    y_semi[lab] = y[lab]
    return X, y_semi, y


def _su_layout(X, y, n_pairs=100):
    """SU input: ``n_pairs`` similar pairs (two same-class rows, consecutive,
    ``y == 1``) followed by the unlabeled rows (``y == -1``)."""
    rng = np.random.default_rng(1)
    order = []
    for c in (0, 1):
        idx = rng.permutation(np.flatnonzero(y == c))
        order.append(idx[: 2 * (n_pairs // 2)])
    pairs = np.concatenate(order)
    rest = np.setdiff1d(np.arange(X.shape[0]), pairs)
    Xs = sp.vstack([X[pairs], X[rest]], format="csr")
    ys = np.concatenate([np.ones(pairs.size, int), -np.ones(rest.size, int)])
    return Xs, ys


# ------------------------------------------------------- the CSR kernel ---
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_project_matches_a_naive_loop(dtype, index_dtype):
    rng = np.random.default_rng(0)
    X = sp.random(57, 400, density=0.03, format="csr", dtype=dtype, random_state=1)
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    X.data[X.indptr[3] : X.indptr[4]] = 0  # an empty row
    X.eliminate_zeros()
    W = rng.standard_normal((400, 37)).astype(dtype)
    ref = _naive_project(X, W)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(csr_project(X, W), ref, rtol=tol, atol=tol)
    # a column slice of a wider array (the growing SGD expansion) in place
    Wbig = rng.standard_normal((400, 100)).astype(dtype)
    view = Wbig[:, 20:57]
    assert not view.flags.c_contiguous
    np.testing.assert_allclose(
        csr_project(X, view), _naive_project(X, view), rtol=tol, atol=tol
    )
    # rows r0.. of X into a buffer
    out = np.empty((10, 37), dtype=dtype)
    csr_project(X, W, out=out, row0=40)
    np.testing.assert_allclose(out, ref[40:50], rtol=tol, atol=tol)


def test_csr_project_serial_and_parallel_are_bit_identical():
    rng = np.random.default_rng(2)
    X = sp.random(300, 500, density=0.02, format="csr", dtype=np.float32,
                  random_state=3)
    W = rng.standard_normal((500, 64)).astype(np.float32)
    Wf, ld = _flat_rows(W)
    a = np.empty((300, 64), np.float32)
    b = np.empty((300, 64), np.float32)
    _CSR_PROJECT[0](X.indptr, X.indices, X.data, 0, Wf, ld, a)
    _CSR_PROJECT[1](X.indptr, X.indices, X.data, 0, Wf, ld, b)
    assert np.array_equal(a, b)


def test_csr_project_sums_duplicates_and_unsorted_indices():
    # a valid but non-canonical CSR: column 2 twice in row 0, unsorted row 1
    X = sp.csr_matrix(
        (np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([2, 0, 2, 3, 1]),
         np.array([0, 3, 5])), shape=(2, 4),
    )
    W = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(csr_project(X, W), X.toarray() @ W)


def test_csr_project_checks_its_inputs():
    X = sp.random(5, 6, density=0.5, format="csr", dtype=np.float64)
    with pytest.raises(TypeError, match="CSR"):
        csr_project(X.tocsc(), np.zeros((6, 2)))
    with pytest.raises(ValueError, match="shape"):
        csr_project(X, np.zeros((7, 2)))
    with pytest.raises(ValueError, match="match"):
        csr_project(X, np.zeros((6, 2), np.float32))
    with pytest.raises(ValueError, match="out"):
        csr_project(X, np.zeros((6, 2)), out=np.zeros((5, 3)))


# ------------------------------------------------- statistics of X ---
def test_resolve_sigma_scale_on_sparse_equals_dense():
    X, _, _ = _text_like()
    dense = resolve_sigma("scale", X.toarray())
    for fmt in ("csr", "csc", "coo"):
        assert resolve_sigma("scale", X.asformat(fmt)) == pytest.approx(
            dense, rel=1e-12
        )
    # duplicates in a COO matrix are one entry (their sum), as in its dense form
    coo = sp.coo_matrix(([1.0, 2.0, 5.0], ([0, 0, 1], [1, 1, 2])), shape=(3, 4))
    assert resolve_sigma("scale", coo) == pytest.approx(
        resolve_sigma("scale", coo.toarray()), rel=1e-12
    )
    assert resolve_sigma(0.25, X) == 0.25


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_features_and_decision_on_sparse_equal_dense(kernel, dtype):
    X, _, _ = _text_like(n=200, d=300)
    spec = FeatureSpec(kernel, 0.7, 3, 1.0, X.shape[1], 16, seed=5, dtype=dtype)
    W, second = spec.blocks(0, 4)
    dense = spec.features(X.toarray(), W, second)
    sparse = spec.features(X, W, second)
    tol = 2e-5 if dtype == np.float32 else 1e-10
    scale = np.abs(dense).max()
    atol = tol * scale
    if dtype == np.float32 and spec.is_fourier:
        # the two projections sum x_k w_kj in different orders (BLAS picks
        # its kernel per CPU); in float32 the phase then differs by up to a
        # few ulps of sum_k |x_k w_kj|, large for the Laplacian's Cauchy
        # frequencies (this check failed on one x86-64 machine at 1.2e-5
        # against 7e-6 with a fixed bound), and cos moves by as much
        spread = np.abs(X.toarray()) @ np.abs(W.astype(np.float64))
        atol = atol + 8 * np.finfo(np.float32).eps * spread * spec.norm
    err = np.abs(sparse.astype(np.float64) - dense)
    assert np.all(err <= atol + tol * np.abs(dense)), float(err.max())
    coef = np.random.default_rng(0).standard_normal((2, 64))
    a = spec.decision(X.toarray(), coef, 4)
    b = spec.decision(X.tocsc(), coef, 4, blocks_per_chunk=3)
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_rows_of_a_block_are_bit_identical_to_the_full_block(kernel):
    spec = FeatureSpec(kernel, 0.3, 2, 1.0, 1000, 16, seed=9, dtype=np.float32)
    cols = np.array([0, 5, 17, 640, 999])
    W, phase = spec.block(3)
    Wr, phase_r = spec.block(3, cols)
    assert np.array_equal(Wr, W[cols]) and np.array_equal(phase_r, phase)
    Wb, _ = spec.blocks(2, 5)
    assert np.array_equal(spec.blocks(2, 5, cols)[0], Wb[cols])


def test_sparse_decision_regenerates_only_the_used_columns_bit_identically():
    # rows using 30 of 2000 columns: decision regenerates 30 rows of W per
    # block; the result must be the full-W computation's, bit for bit
    rng = np.random.default_rng(4)
    X = sp.random(50, 30, density=0.3, format="csr", random_state=5)
    X = sp.hstack([sp.csr_matrix((50, 1000)), X, sp.csr_matrix((50, 970))],
                  format="csr").astype(np.float32)
    spec = FeatureSpec("rbf", 0.5, 2, 1.0, 2000, 16, seed=2, dtype=np.float32)
    n_blocks, coef = 6, rng.standard_normal((1, 96)).astype(np.float32)
    got = spec.decision(X, coef, n_blocks, blocks_per_chunk=4)
    ref = np.zeros((50, 1))
    for b0 in (0, 4):
        W, second = spec.blocks(b0, min(n_blocks, b0 + 4))
        spec.accumulate(X, W, second, np.ascontiguousarray(
            coef[:, b0 * 16 : (b0 + W.shape[1] // 16) * 16]), 1.0, ref)
    assert np.array_equal(got, ref)
    generated = []
    orig = FeatureSpec.block

    def spy(self, b, cols=None):
        generated.append(self.d if cols is None else cols.size)
        return orig(self, b, cols)

    FeatureSpec.block = spy
    try:
        spec.decision(X, coef, n_blocks)
    finally:
        FeatureSpec.block = orig
    assert max(generated) <= 30


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_random_features_transform_sparse_equals_dense(kernel):
    X, _, _ = _text_like(n=120, d=300)
    rf = RandomFeatures(kernel=kernel, n_components=96, random_state=0)
    a = rf.fit(X.toarray()).transform(X.toarray())
    b = RandomFeatures(kernel=kernel, n_components=96, random_state=0).fit(
        X.tocoo()).transform(X.tocsc())
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())


def test_float32_phase_range_check_also_refuses_sparse_rows():
    X, _, _ = _text_like(n=50, d=100)
    spec = FeatureSpec("rbf", 1.0, 2, 1.0, 100, 32, seed=0, dtype=np.float32)
    W, second = spec.blocks(0, 1)
    with pytest.raises(ValueError, match="norm up to"):
        spec.features(X * 1e8, W, second)
    with pytest.raises(ValueError, match="norm up to"):
        spec.features(X.toarray() * 1e8, W, second)


# ------------------------------------------------------------ estimators ---
SEMI = [
    pytest.param(lambda: TSGS3VM(max_features=256, random_state=0,
                                 features="fourier"), id="TSGS3VM-lbfgs"),
    pytest.param(lambda: TSGS3VM(max_features=256, random_state=0,
                                 features="nystroem"), id="TSGS3VM-nystroem"),
    pytest.param(lambda: TSGS3VM(solver="sgd", batch_size=32, random_state=0),
                 id="TSGS3VM-sgd"),
    pytest.param(lambda: TSGS3VM(solver="sgd", batch_size=32, max_features=64,
                                 random_state=0), id="TSGS3VM-sgd-budget"),
    pytest.param(lambda: FRS3VM(n_components=128, random_state=0), id="FRS3VM-lbfgs"),
    pytest.param(lambda: FRS3VM(solver="sgd", n_components=64, max_iter=40,
                                random_state=0), id="FRS3VM-sgd"),
    pytest.param(lambda: QSGS2AUC(max_features=256, random_state=0,
                                  features="fourier"), id="QSGS2AUC-lbfgs"),
    pytest.param(lambda: QSGS2AUC(max_features=256, random_state=0),
                 id="QSGS2AUC-auto"),
    pytest.param(lambda: QSGS2AUC(solver="sgd", batch_size=32, random_state=0),
                 id="QSGS2AUC-sgd"),
]
SU = [
    pytest.param(lambda: TSGSU(sigma="scale", lam=1e-2, random_state=0,
                               features="fourier"), id="TSGSU-lbfgs"),
    pytest.param(lambda: TSGSU(lam=1e-2, max_features=256, random_state=0),
                 id="TSGSU-auto"),
    pytest.param(lambda: TSGSU(solver="sgd", batch_size=50, random_state=0),
                 id="TSGSU-sgd"),
]


def _data(make):
    X, y, yt = _text_like()
    est = make()
    if isinstance(est, TSGSU):
        X, y = _su_layout(X, yt)
    return est, X, y


def _agree(a, b, tol=1e-4):
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol * np.abs(a).max())


@pytest.mark.filterwarnings("ignore:prior=None")
@pytest.mark.parametrize("make", SEMI + SU)
def test_sparse_fit_agrees_with_dense_fit(make):
    est, X, y = _data(make)
    Xd = X.toarray()
    dense = make().fit(Xd, y)
    sparse = est.fit(X, y)
    assert sparse.n_features_in_ == X.shape[1]
    a = dense.decision_function(Xd)
    if getattr(est, "solver", "sgd") == "lbfgs" and est.dtype == "float32":
        # float32 features: CSR and dense projections round differently and
        # L-BFGS stops on the objective's float32 noise (ftol) at points that
        # differ in flat directions: FRS3VM here, objectives equal to 1e-8,
        # decision values 4e-4 apart (measured). The invariant is the optimum.
        assert sparse.objective_curve_[-1] == pytest.approx(
            dense.objective_curve_[-1], rel=1e-6)
        _agree(a, sparse.decision_function(X), tol=2e-3)
    else:
        _agree(a, sparse.decision_function(X))
    assert np.abs(a).max() > 1e-3  # a model, not zeros agreeing with zeros
    if hasattr(dense, "sigma_"):
        assert sparse.sigma_ == pytest.approx(dense.sigma_, rel=1e-12)


@pytest.mark.filterwarnings("ignore:prior=None")
@pytest.mark.parametrize("make", SEMI + SU)
def test_sparse_predict_on_csr_csc_coo_and_save_load(make, tmp_path):
    est, X, y = _data(make)
    est.fit(X, y)
    ref = est.decision_function(X.toarray())
    for fmt in ("csr", "csc", "coo"):
        _agree(ref, est.decision_function(X.asformat(fmt)))
        np.testing.assert_array_equal(
            est.predict(X.asformat(fmt)), est.predict(X)
        )
    path = tmp_path / "m.wk"
    est.save(path)
    back = load(path)
    assert type(back) is type(est)
    np.testing.assert_array_equal(back.decision_function(X),
                                  est.decision_function(X))
    np.testing.assert_array_equal(back.predict_proba(X.tocsc()),
                                  est.predict_proba(X.tocsc()))
    # a seed-based model: the file does not grow with the training data; a
    # Nyström one adds its landmarks (m x d floats), whatever n is
    extra = (est.spec_.landmarks.nbytes
             if getattr(est, "features_", "fourier") == "nystroem" else 0)
    assert len(est.to_bytes()) < 64 * 1024 + 8 * est.coef_.size + extra


@pytest.mark.filterwarnings("ignore:prior=None")
@pytest.mark.parametrize("make", SEMI + SU)
def test_sparse_fit_and_predict_never_densify(make, monkeypatch):
    est, X, y = _data(make)

    def refuse(self, *args, **kwargs):
        raise AssertionError("sparse input was densified")

    if getattr(est, "features", None) == "nystroem" or (
            getattr(est, "features", None) == "auto"
            and getattr(est, "solver", "lbfgs") != "sgd"):
        # the Nyström landmarks are dense by design: at most m rows (here
        # 256) are densified, never the input
        def refuse(self, *args, **kwargs):
            if self.shape[0] > 256:
                raise AssertionError("sparse input was densified")
            return densify[type(self)](self, *args, **kwargs)

    densify = {cls: cls.toarray for cls in (sp.csr_matrix, sp.csc_matrix,
                                             sp.coo_matrix)}
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    est.fit(X, y)
    est.decision_function(X.tocsc())


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_sparse_fit_is_bit_identical_across_thread_counts(solver, monkeypatch):
    import numba

    from weakkernels import _feature_kernels

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    # small data: force the parallel kernel variants whenever 2 threads are set
    monkeypatch.setattr(_feature_kernels, "_PARALLEL_MIN_WORK", 0)
    X, y, _ = _text_like()
    kw = dict(solver=solver, max_features=256, batch_size=32, random_state=0)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = TSGS3VM(**kw).fit(X, y)
        f1 = one.decision_function(X)
        numba.set_num_threads(2)
        two = TSGS3VM(**kw).fit(X, y)
        f2 = two.decision_function(X)
    finally:
        numba.set_num_threads(old)
    assert one.to_bytes() == two.to_bytes()
    assert np.array_equal(f1, f2)


@pytest.mark.filterwarnings("ignore:prior=None")
def test_qsg_s2auc_score_on_sparse_rows():
    X, y, yt = _text_like()
    est = QSGS2AUC(max_features=128, random_state=0).fit(X, y)
    y_eval = yt.copy()
    y_eval[::3] = -1  # unlabeled rows are ignored by the AUC
    for fmt in ("csr", "csc", "coo"):
        assert est.score(X.asformat(fmt), y_eval) == pytest.approx(
            est.score(X.toarray(), y_eval), abs=1e-12)
        assert est.auc(X.asformat(fmt), y_eval) == pytest.approx(
            est.auc(X.toarray(), y_eval), abs=1e-12)


def test_sparse_multiclass_one_vs_rest():
    X, _, yt = _text_like(n=400)
    y3 = yt + (X[:, 0].toarray().ravel() > 0)  # a third class
    y = np.full(400, -1)
    y[::8] = y3[::8]
    kw = dict(max_features=128, random_state=0)
    a = TSGS3VM(**kw).fit(X.toarray(), y).decision_function(X.toarray())
    b = TSGS3VM(**kw).fit(X, y).decision_function(X)
    assert a.shape == (400, 3)
    _agree(a, b)


def test_float32_sparse_input_is_kept_float32():
    X, y, _ = _text_like()
    X32 = X.astype(np.float32)
    a = TSGS3VM(max_features=128, random_state=0).fit(X32, y)
    b = TSGS3VM(max_features=128, random_state=0).fit(X32.toarray(), y)
    _agree(b.decision_function(X32.toarray()), a.decision_function(X32))


@pytest.mark.parametrize(
    "make",
    [lambda: SUSL(n_centers=50, random_state=0),
     lambda: CUU(n_centers=50, max_iter=10, batch_size=50, random_state=0),
     lambda: TSGSU(prior="auto", random_state=0)],
    ids=["SUSL", "CUU", "TSGSU-auto-prior"],
)
def test_su_baselines_and_prior_estimate_accept_sparse(make):
    X, _, yt = _text_like()
    Xs, ys = _su_layout(X, yt)
    a = make().fit(Xs.toarray(), ys)
    b = make().fit(Xs, ys)
    _agree(a.decision_function(Xs.toarray()), b.decision_function(Xs.tocsc()))


def test_class_prior_estimate_on_sparse_equals_dense():
    X, _, yt = _text_like()
    Xs, ys = _su_layout(X, yt)
    S, U = Xs[ys == 1], Xs[ys == -1]
    a = estimate_class_prior(S.toarray(), U.toarray(), sigma=0.5, random_state=0)
    b = estimate_class_prior(S, U, sigma=0.5, random_state=0)
    assert b["prior"] == pytest.approx(a["prior"], abs=1e-6)


# ----------------------------------------- synthetic RCV1-shaped data ---
def test_make_rcv1_like_shape_density_classes_and_seed():
    X, y = make_rcv1_like(3000, 8000, 0.004, seed=7)
    assert sp.issparse(X) and X.format == "csr" and X.has_canonical_format
    assert X.shape == (3000, 8000) and y.shape == (3000,)
    density = X.nnz / (X.shape[0] * X.shape[1])
    assert density == pytest.approx(0.004, rel=0.05)
    assert set(np.unique(y)) == {0, 1} and 0.4 < y.mean() < 0.6
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-10)
    X2, y2 = make_rcv1_like(3000, 8000, 0.004, seed=7)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    X3, y3 = make_rcv1_like(3000, 8000, 0.004, seed=8)
    assert (X != X3).nnz > 0 and not np.array_equal(y, y3)
    assert make_rcv1_like(100, 500, 0.02, seed=0, dtype=np.float32)[0].dtype == (
        np.float32
    )


def test_make_rcv1_like_labels_are_learnable_from_the_sparse_rows():
    # the teacher is mostly linear in the sparse rows: a linear model on the
    # first half must beat chance by far on the second half
    from sklearn.linear_model import LogisticRegression

    X, y = make_rcv1_like(4000, 3000, 0.01, seed=0, nonlinear=0.3)
    clf = LogisticRegression(C=100.0, max_iter=1000).fit(X[:2000], y[:2000])
    assert clf.score(X[2000:], y[2000:]) > 0.75


def test_make_rcv1_like_refuses_bad_density():
    with pytest.raises(ValueError, match="density"):
        make_rcv1_like(10, 10, 1.5)


@pytest.mark.filterwarnings("ignore:prior=None")
@pytest.mark.parametrize("cls", [ExactS2AUC, PNUAUC])
def test_exact_auc_peers_take_sparse_input_densified(cls, tmp_path):
    """The exact-kernel AUC peers (pipeline models s2auc_exact, pnu_auc) take
    CSR/CSC/COO rows and densify them: the same model as a dense fit, and a
    model file that loads and predicts on sparse rows."""
    est, X, y = _data(lambda: cls(lam=1e-3))
    Xd = X.toarray()
    a = cls(lam=1e-3).fit(Xd, y).decision_function(Xd)
    est.fit(X, y)
    for fmt in ("csr", "csc", "coo"):
        np.testing.assert_allclose(est.decision_function(X.asformat(fmt)), a,
                                   rtol=1e-10, atol=1e-10)
    assert np.abs(a).max() > 1e-3
    path = tmp_path / "m.wk"
    est.save(path)
    np.testing.assert_array_equal(load(path).decision_function(X),
                                  est.decision_function(X))


def test_exact_auc_peers_refuse_a_dense_copy_over_budget_and_predict_in_blocks(
        monkeypatch):
    import weakkernels.baselines.auc as auc

    est, X, y = _data(lambda: ExactS2AUC(lam=1e-3))
    est.fit(X, y)
    ref = est.decision_function(X.toarray())
    # a block of 7 rows at a time: the same values as one dense product
    monkeypatch.setattr(auc, "_DENSE_ENTRIES", 7 * X.shape[1])
    np.testing.assert_allclose(est.decision_function(X), ref, rtol=1e-12,
                               atol=1e-12)
    with pytest.raises(ValueError, match="dense"):
        ExactS2AUC(lam=1e-3).fit(X, y)
