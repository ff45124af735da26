"""The L-BFGS solver of the random-feature estimators reads every row.

The chunked objective (``_dsg._PrimalSet``) against the one-shot feature
matrix, the growing nested samples (``_dsg.primal_levels``), bit-identical
models for any thread count, held or streamed features, memory-mapped input,
and a default feature count that grows with the data.
"""

from dataclasses import replace

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels import FRS3VM, TSGS3VM, TSGSU, SolverOptions, _dsg
from weakkernels._dsg import Problem, _PrimalSet, primal_features, primal_levels
from weakkernels._dsg import moment_terms as _moment_terms
from weakkernels._dsg import primal as _primal
from weakkernels.random_features import FeatureSpec, NystromSpec


def _data(n=900, d=6, seed=0, n_labeled=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.4).astype(int)
    y_semi = np.full(n, -1)
    lab = rng.choice(n, n_labeled, replace=False)
    y_semi[lab] = y[lab]
    return X, y, y_semi


DEFAULT = SolverOptions()


@pytest.fixture
def small_levels():
    """Solver options for several levels and many chunks on a test-sized set
    (every sampled level kept, however close to the next, and an annealed fit
    on held features too: the level machinery is what these tests exercise)."""
    return SolverOptions(primal_start_rows=128, primal_merge_fraction=1.0,
                         primal_anneal_every_row=False, primal_chunk_rows=50)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("basis", ["fourier", "nystroem"])
def test_chunked_products_equal_the_one_shot_matrix(sparse, cache, threads, basis):
    """forward / backward / mean over chunks of 7 rows (held or regenerated,
    with or without a thread pool; the forward product in blocks of 3 rows,
    ``SolverOptions.fused_block_bytes``) equal the products with the whole feature
    matrix, float64, to 1e-10. Nyström: the chunks stream k(X, Z) and the
    whitening L^-T is applied to v and to the products once
    (``_dsg.Whitening``), yet the products are those of phi = k(X, Z) L^-T."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5))
    if basis == "nystroem":
        spec = NystromSpec("rbf", 0.3, X[rng.choice(60, 24, replace=False)],
                           np.float64)
        W, second = spec.blocks(0, 1)
        norm = 1.0
    else:
        spec = FeatureSpec("rbf", 0.3, 2, 1.0, 5, 16, 7, np.float64)
        W, second = spec.blocks(0, 3)
        norm = 1.0 / np.sqrt(3)
    white = _dsg.Whitening(spec)
    assert (white.T is None) == (basis == "fourier")
    opts = SolverOptions(primal_chunk_rows=7, fused_block_bytes=3 * W.shape[-1] * 8)
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    idx = np.sort(rng.choice(60, 45, replace=False))
    problem = Problem([(X, None), (X, idx)], 2, None, options=opts)
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    try:
        sub = np.sort(rng.choice(45, 30, replace=False))  # rows of set 1
        for s, rows, Xs in ((0, None, X), (1, None, X[idx]), (1, sub, X[idx[sub]])):
            ps = _PrimalSet(problem, s, rows, spec, W, second, norm, cache, pool)
            P = spec.features(Xs.toarray() if sparse else Xs, W, second) * norm
            v = rng.normal(size=(P.shape[1], 2))
            g = rng.normal(size=(P.shape[0], 2))
            np.testing.assert_allclose(ps.forward(white.lift(v)), P @ v,
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(white.lower(ps.backward(g)), P.T @ g,
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(white.lower(ps.mean()), P.mean(axis=0),
                                       rtol=1e-10, atol=1e-12)
    finally:
        if pool is not None:
            pool.shutdown()


def _stage_objectives(problem, spec):
    """Per solver stage: the finite-difference error of the objective's
    gradient at a random point, and (value, gradient) there, computed while
    the solver's thread pool is alive."""
    from scipy.optimize import check_grad

    out = []
    real_minimize = __import__("scipy.optimize", fromlist=["minimize"]).minimize

    def spy(fun, x0, args=(), **kw):
        z = np.random.default_rng(len(out)).normal(scale=0.1, size=x0.size)
        err = check_grad(lambda q: fun(q, *args)[0], lambda q: fun(q, *args)[1],
                         z, epsilon=1e-6)
        val, grad = fun(z, *args)
        out.append((err / max(1.0, np.linalg.norm(grad)), val, grad))
        return real_minimize(fun, x0, args=args, **kw)

    import scipy.optimize

    old = scipy.optimize.minimize
    scipy.optimize.minimize = spy
    try:
        _dsg.fit_expansion(problem, spec, solver="lbfgs", max_blocks=4, n_iter=5,
                           batch_size=None, seed=0)
    finally:
        scipy.optimize.minimize = old
    return out


@pytest.mark.parametrize("block_bytes", [None, 1])
@pytest.mark.parametrize("intercept", ["free", "balance"])
def test_chunked_gradient_matches_finite_differences(small_levels, intercept,
                                                     block_bytes):
    """The objective the solver minimises (float64 features) has the
    gradient it reports: finite differences on the chunked objective at every
    level, chunks of 50 rows, with a free bias and with features centred on a
    balance set; and the fused one-pass objective of a row-separable loss
    (``Problem.pointwise``) equals the two-pass one to 1e-10 -- each chunk
    whole, and in blocks of one row (``SolverOptions.fused_block_bytes``)."""
    opts = (small_levels if block_bytes is None
            else replace(small_levels, fused_block_bytes=block_bytes))
    X, _, y_semi = _data(n=300)
    spec = FeatureSpec("rbf", 0.2, 2, 1.0, X.shape[1], 8, 3, np.float64)
    lab = y_semi >= 0
    Y = np.where(y_semi[lab] == 1, 1.0, -1.0)[:, None]

    def pointwise(s, f, rows, m, w):
        if s == 0:
            h = np.maximum(0.0, 1.0 - Y[rows] * f)
            return float((h**2).sum()), -2.0 * h * Y[rows]
        e = np.exp(-3 * f**2)
        return float(w * e.sum()), w * -6.0 * f * e

    def loss(fs, idx, sizes, w):
        parts = [pointwise(s, f, np.arange(len(f)), len(f), w)
                 for s, f in enumerate(fs)]
        return sum(p[0] for p in parts), [p[1] for p in parts]

    sets = [(X[lab], None), (X, np.flatnonzero(~lab))]
    # "balance": features centred on the unlabeled set (mu enters the products)
    kw = dict(intercept=intercept, balance_target=np.array([0.1]), options=opts)
    two_pass = _stage_objectives(Problem(sets, 1, loss, **kw), spec)
    fused = _stage_objectives(Problem(sets, 1, loss, pointwise=pointwise, **kw),
                              spec)
    assert len(two_pass) == len(fused) == 2  # level 0 (128 unlabeled rows), all 240
    for (e1, v1, g1), (e2, v2, g2) in zip(two_pass, fused, strict=True):
        assert max(e1, e2) < 3e-5  # forward differences, step 1e-6
        assert v2 == pytest.approx(v1, rel=1e-10)
        np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", [
    ("su", "none"), ("su", "abs"), ("su", "relu"), ("auc", None)])
def test_objective_of_moments_equals_the_two_pass_one(small_levels, monkeypatch,
                                                      case):
    """TSGSU's Eq. (8) with the squared loss and QSG-S2AUC's Eq. (8) as
    losses of each set's (sum f, sum f^2) (``Problem.moments``: one fused
    pass, only (D,) sums back per chunk) give the objective and gradient of
    the two-pass loss on every row's outputs (from ``su_risk`` /
    ``pnu_auc_risk``) to 1e-10 at every level, with a free bias (TSGSU) and
    without one (QSG-S2AUC); the gradient passes finite differences. The
    features are streamed: the solver uses the moment form only then."""
    from weakkernels import qsg_s2auc, tsgsu

    calls = []
    streamed = replace(small_levels, primal_cache_max_bytes=0)
    monkeypatch.setattr(_primal, "moment_terms", lambda *a: calls.append(1)
                        or _moment_terms(*a))

    X, _, _ = _data(n=400)
    spec = FeatureSpec("rbf", 0.2, 2, 1.0, X.shape[1], 8, 3, np.float64)
    kind, corr = case
    if kind == "su":
        prior = 0.7
        sets = [(X[:60], None), (X, np.arange(60, 400))]

        def loss(fs, idx, sizes, w):
            fS, fU = fs[0][:, 0], fs[1][:, 0]
            gS, gU = tsgsu.su_risk_gradient(fS, fU, prior, "squared", corr)
            return (tsgsu.su_risk(fS, fU, prior, "squared", corr),
                    [gS[:, None], gU[:, None]])

        def moments(t, ms, w):
            return tsgsu.su_risk_of_moments(t, ms, prior, corr)

        kw = dict(intercept="free", options=streamed)
    else:
        gamma = 0.3
        sets = [(X, np.arange(0, 30)), (X, np.arange(30, 70)),
                (X, np.arange(70, 400))]

        def loss(fs, idx, sizes, w):
            f = [x[:, 0] for x in fs]
            grads = qsg_s2auc.pnu_auc_risk_grad(*f, gamma)
            return (qsg_s2auc.pnu_auc_risk(*f, gamma),
                    [g[:, None] for g in grads])

        def moments(t, ms, w):
            return qsg_s2auc.pnu_auc_risk_of_moments(t, ms, gamma)

        kw = dict(options=streamed)
    two_pass = _stage_objectives(Problem(sets, 1, loss, **kw), spec)
    one_pass = _stage_objectives(Problem(sets, 1, loss, moments=moments, **kw),
                                 spec)
    assert len(two_pass) == len(one_pass) == 2  # a 128-row level, then all
    assert calls  # the moment form ran
    for (e1, v1, g1), (e2, v2, g2) in zip(two_pass, one_pass, strict=True):
        assert max(e1, e2) < 3e-5  # forward differences, step 1e-6
        assert v2 == pytest.approx(v1, rel=1e-10)
        np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-12)


def test_held_features_use_the_two_pass_loss(small_levels):
    """Over held features the moment form would be slower than the two
    products: the solver calls ``loss`` there, never ``moments``."""
    X, _, _ = _data(n=300)
    spec = FeatureSpec("rbf", 0.2, 2, 1.0, X.shape[1], 8, 3, np.float64)

    def loss(fs, idx, sizes, w):
        f = fs[0]
        return float(np.sum(f * f)), [2.0 * f]

    def moments(t, ms, w):
        raise AssertionError("moment form on held features")

    _stage_objectives(Problem([(X, None)], 1, loss, moments=moments,
                              options=small_levels), spec)


def test_moments_loss_refuses_several_outputs():
    with pytest.raises(ValueError, match="one output"):
        Problem([(np.zeros((3, 2)), None)], 2, None, moments=lambda t, m, w: 0)


def test_levels_are_nested_and_end_with_every_row():
    opts = SolverOptions(primal_start_rows=100)
    levels = primal_levels([50, 1000, 30_000], seed=5, opts=opts)
    assert all(lv[0] is None for lv in levels)  # a small set is whole at once
    assert all(i is None for i in levels[-1])  # the last level: every row
    sizes = [lv[1].size if lv[1] is not None else 1000 for lv in levels]
    assert sizes[:3] == [100, 400, 1000]
    for a, b in zip(levels[:-2], levels[1:-1], strict=True):
        assert np.isin(a[2], b[2]).all()  # nested samples
    # the 25 600-row sample (of 30 000) is over half of every row: dropped
    assert [lv[2].size for lv in levels[:-1]] == [100, 400, 1600, 6400]


def test_levels_past_the_held_bound_jump_to_every_row():
    """The first sampled level over ``held_rows`` is the last sampled one;
    below the bound, and without one, the schedule is unchanged."""
    opts = SolverOptions(primal_start_rows=100)
    sizes = [50, 30_000]
    full = primal_levels(sizes, seed=5, opts=opts)
    assert [lv[1].size for lv in full[:-1]] == [100, 400, 1600, 6400]
    for held in (30_050, 10**9):  # the whole problem fits: nothing changes
        same = primal_levels(sizes, seed=5, held_rows=held, opts=opts)
        assert len(same) == len(full)
    # 50 + 1600 rows > 1000: the 1 600-row level is the last sampled one
    cut = primal_levels(sizes, seed=5, held_rows=1000, opts=opts)
    assert [lv[1].size for lv in cut[:-1]] == [100, 400, 1600]
    assert all(i is None for i in cut[-1])
    for a, b in zip(cut[:-1], full[:3], strict=True):
        np.testing.assert_array_equal(a[1], b[1])  # the same nested prefixes
    # a bound below level 0 keeps level 0, then every row
    assert len(primal_levels(sizes, seed=5, held_rows=10, opts=opts)) == 2


def test_a_sample_near_every_row_is_not_a_level():
    """A sampled level of more than ``primal_merge_fraction`` of the next
    one's rows is dropped; the others keep their nested prefixes."""
    def sampled(sizes, opts=DEFAULT):
        return [_dsg.level_rows(sizes, lv)
                for lv in primal_levels(sizes, seed=1, opts=opts)]

    assert sampled([200, 4_800]) == [5_000]  # 4 296 of 5 000 rows: one level
    assert sampled([1_000, 8_000]) == [9_000]  # 5 096 of 9 000
    assert sampled([1_000, 10_000]) == [5_096, 11_000]  # 46 %: kept
    assert sampled([50, 70_000]) == [4_146, 16_434, 70_050]  # 65 586 dropped
    assert sampled([4_096]) == [4_096]
    every = SolverOptions(primal_merge_fraction=1.0)  # keep every level
    assert sampled([200, 4_800], every) == [4_296, 5_000]
    assert sampled([50, 70_000], every) == [4_146, 16_434, 65_586, 70_050]
    kept = primal_levels([50, 70_000], seed=1, opts=every)
    merged = primal_levels([50, 70_000], seed=1)  # the default, 0.5
    for a, b in zip(merged[:2], kept[:2], strict=True):
        np.testing.assert_array_equal(a[1], b[1])  # the same nested prefixes


def test_an_annealed_fit_on_held_features_is_one_level(monkeypatch):
    """TSGS3VM (annealed) on a set whose features are all held runs on every
    row at once; past the held bound, and for a fit with nothing annealed in
    (``anneal=0``, ``C_star=0``), the sample levels stay.
    ``selection=None``: the levels of one fit, not of the folds
    the default's choice of C* runs on a set this small."""
    opts = SolverOptions(primal_start_rows=128)
    X, _, y_semi = _data(n=900)  # 60 labeled, 840 unlabeled rows
    calls, real = [], _dsg.primal_levels
    entered = []

    def spy(sizes, seed, held_rows=None, opts=DEFAULT):
        levels = real(sizes, seed, held_rows, opts)
        calls.append(len(levels))
        return levels

    class Level(_dsg.Whitening):  # built once per level entered
        def __init__(self, spec):
            entered.append(1)
            super().__init__(spec)

    monkeypatch.setattr(_primal, "primal_levels", spy)
    monkeypatch.setattr(_primal, "Whitening", Level)
    kw = dict(C=1.0, random_state=0, selection=None)
    one = TSGS3VM(**kw, solver_options=opts).fit(X, y_semi)
    # 188 rows, all 900 (572 dropped, primal_merge_fraction): all only
    assert calls == [2] and len(entered) == 1
    D = one.n_features_model_
    for flag, held in ((False, None), (True, 4 * D * 100)):
        calls.clear(), entered.clear()
        changed = replace(opts, primal_anneal_every_row=flag)
        if held:  # 100 rows held: level 0 (188 rows) streams
            changed = replace(changed, held_feature_bytes=held)
        TSGS3VM(**kw, solver_options=changed).fit(X, y_semi)
        assert len(entered) == calls[0] > 1
    for more in ({"anneal": 0.0}, {"C_star": 0.0}):  # nothing annealed in
        calls.clear(), entered.clear()
        TSGS3VM(**kw, **more, solver_options=opts).fit(X, y_semi)
        assert len(entered) == calls[0] == 2
    # the one level is the old schedule's last: every row
    ref = TSGS3VM(**kw, solver_options=SolverOptions(primal_start_rows=1 << 40)
                  ).fit(X, y_semi)
    np.testing.assert_array_equal(ref.coef_, one.coef_)


def test_fit_cuts_its_levels_at_the_held_bound(small_levels, monkeypatch):
    """The solver hands primal_levels the rows whose features fit
    ``held_feature_bytes`` (the bound enter() calls large): 188 rows on level 0
    over a 100-row bound leave level 0, then every row.
    ``selection=None``: the levels of one fit, not of the folds
    the default's choice of C* runs on a set this small."""
    X, _, y_semi = _data(n=900)  # 60 labeled, 840 unlabeled rows
    calls, real = [], _dsg.primal_levels

    def spy(sizes, seed, held_rows=None, opts=DEFAULT):
        levels = real(sizes, seed, held_rows, opts)
        calls.append((held_rows, len(levels)))
        return levels

    monkeypatch.setattr(_primal, "primal_levels", spy)
    kw = dict(C=1.0, random_state=0, selection=None)
    est = TSGS3VM(**kw, solver_options=small_levels).fit(X, y_semi)
    D = est.n_features_model_
    assert calls == [(small_levels.held_feature_bytes // (4 * D), 3)]  # 128, 512, all
    calls.clear()
    bound = replace(small_levels, held_feature_bytes=4 * D * 100)
    TSGS3VM(**kw, solver_options=bound).fit(X, y_semi)
    assert calls == [(100, 2)]


def test_default_fit_reads_every_row(small_levels, monkeypatch):
    """Regression: the default solver touches every labeled and unlabeled row
    (the old one held a seeded sample of at most 4 096 per set)."""
    X, _, y_semi = _data(n=900)
    seen = []
    real_rows = Problem.rows

    def rows(self, s, idx, dtype):
        source, index = self.sets[s]
        pick = index if idx is None else (idx if index is None else index[idx])
        seen.append((s, np.arange(source.shape[0]) if pick is None else pick))
        return real_rows(self, s, idx, dtype)

    monkeypatch.setattr(Problem, "rows", rows)
    TSGS3VM(C=1.0, random_state=0, solver_options=small_levels).fit(X, y_semi)
    def read(s):
        return np.unique(np.concatenate([p for t, p in seen if t == s]))

    # set 0: the labeled rows (a copy, XL); set 1: the unlabeled rows of X
    np.testing.assert_array_equal(read(0), np.arange((y_semi >= 0).sum()))
    np.testing.assert_array_equal(read(1), np.flatnonzero(y_semi == -1))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="needs 2 numba threads")
# selection=None here and below: one fit's levels, not the default's
# cross-validation of C* on a set this small (five folds of the same levels)
@pytest.mark.parametrize("est", [
    TSGS3VM(C=1.0, random_state=0, selection=None),
    FRS3VM(C=1.0, random_state=0, selection=None)])
def test_one_and_two_threads_give_bit_identical_models(small_levels, est):
    X, _, y_semi = _data(n=900)
    old = numba.get_num_threads()
    models = []
    try:
        est.set_params(solver_options=small_levels)
        for threads in (1, 2):
            numba.set_num_threads(threads)
            est.fit(X, y_semi)
            models.append((est.coef_.copy(), est.intercept_.copy()))
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(models[0][0], models[1][0])
    np.testing.assert_array_equal(models[0][1], models[1][1])


@pytest.mark.parametrize("method", ["lbfgs", "newton"])
def test_streamed_features_equal_held_features(small_levels, method):
    """With no memory budget every product regenerates its chunk from the
    seeds: the same model, bit for bit, with either minimiser."""
    X, _, y_semi = _data(n=900)
    kw = dict(C=1.0, random_state=0, selection=None)
    small_levels = replace(small_levels, primal_method=method)
    held = TSGS3VM(**kw, solver_options=small_levels).fit(X, y_semi)
    no_cache = replace(small_levels, primal_cache_max_bytes=0)
    streamed = TSGS3VM(**kw, solver_options=no_cache).fit(X, y_semi)
    np.testing.assert_array_equal(held.coef_, streamed.coef_)
    np.testing.assert_array_equal(held.intercept_, streamed.intercept_)


def test_memmap_fit_equals_in_memory_fit(small_levels, tmp_path):
    X, _, y_semi = _data(n=900)
    X32 = X.astype(np.float32)
    np.save(tmp_path / "X.npy", X32)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    a = TSGS3VM(C=1.0, random_state=0, solver_options=small_levels).fit(X32, y_semi)
    b = TSGS3VM(C=1.0, random_state=0, solver_options=small_levels).fit(mm, y_semi)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_clipped_balance_holds_on_every_unlabeled_row(small_levels):
    """The default constraint mean_U clip(f, -1, 1) = mean_L y holds on all the
    unlabeled rows the solver read, not on a sample."""
    X, _, y_semi = _data(n=900)
    est = TSGS3VM(C=1.0, random_state=0, selection=None,
                  solver_options=small_levels).fit(X, y_semi)
    f = est.decision_function(X[y_semi == -1])
    r = np.where(y_semi[y_semi >= 0] == 1, 1.0, -1.0).mean()
    assert abs(np.clip(f, -1, 1).mean() - r) < 1e-5


def test_tsgsu_reads_every_row(small_levels):
    """The SU estimator runs on the same chunked levels (smoke: fits, and its
    decision values are finite on every row)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 4))
    y = np.full(700, -1)
    y[:200] = 1
    est = TSGSU(random_state=0, solver_options=small_levels).fit(X, y)
    assert np.isfinite(est.decision_function(X)).all()


def test_default_features_grow_with_the_data():
    sizes = [550, 2_200, 4_296, 20_000, 50_000, 61_000, 262_144, 10**6, 10**7]
    D = [primal_features(n, 32, 28) for n in sizes]
    assert D[:3] == [4096, 1888, 1024]  # small sets: the cost rule, unchanged
    assert D[4] >= 3500 and D[5] >= 3900  # ijcnn1-, MNIST-sized: ~16 sqrt(n)
    assert max(D) <= 8192 and D[6] == 2048  # 2 GiB of held features binds
    # past the held bound: streamed, STREAMED_FEATURES from there on
    assert D[7] == D[8] == DEFAULT.streamed_features == 2048
    assert primal_features(300_000, 32, 28) == 2048  # held would allow 1 789
    assert primal_features(10**7, 32, 20_000) == 1024  # the frequency budget
    assert primal_features(61_000, 32, 784) == D[5]
    assert primal_features(61_000, 32, 20_000) == 1024  # the frequency budget


def test_level_noise_estimate_matches_the_sampling_error():
    """The noise a level's tolerance is scaled to (``level_gtol`` with
    ``fraction = 1``), estimated from the gradient change between two nested
    levels, against the true max-norm error of the finer level's
    scaled-to-full sample sum (NumPy; a whole small set and a sampled one)."""
    rng = np.random.default_rng(0)
    sizes = [300, 40_000]
    rows = [rng.normal(1.0, 2.0, size=(n, 400)) for n in sizes]
    full = sum(r.sum(axis=0) for r in rows)

    def sample_sum(level):
        return sum(r.sum(axis=0) if i is None else r[i].sum(axis=0) * (n / i.size)
                   for r, i, n in zip(rows, level, sizes, strict=True))

    ratios = []
    for seed in range(8):
        levels = primal_levels(sizes, seed)  # 4096, 16384, every row
        assert len(levels) == 3 and levels[1][0] is None
        g_start = np.abs(sample_sum(levels[1]) - sample_sum(levels[0])).max()
        estimate = _dsg.level_gtol(0.0, g_start, sizes, levels[0], levels[1], 1.0)
        ratios.append(estimate / np.abs(sample_sum(levels[1]) - full).max())
    assert 0.85 < np.mean(ratios) < 1.15, ratios


def test_level_tolerance_leaves_the_last_level_and_small_sets():
    levels = primal_levels([300, 40_000], seed=0)
    sizes = [300, 40_000]
    # the last level (every row) and fraction 0 keep the final tolerance
    assert _dsg.level_gtol(1e-3, 5.0, sizes, levels[1], levels[2], 0.5) == 1e-3
    assert _dsg.level_gtol(1e-3, 5.0, sizes, levels[0], levels[1], 0.0) == 1e-3
    # never tighter than the final tolerance
    assert _dsg.level_gtol(1e-3, 1e-9, sizes, levels[0], levels[1], 0.5) == 1e-3
    assert _dsg.level_gtol(1e-3, 5.0, sizes, levels[0], levels[1], 0.5) > 1e-3
    # a set whole from the finer level on: its share of the start's gradient
    # was sampling error that is gone, so the noise left is not known
    two = [10_000, 1_000_000]
    levels = primal_levels(two, seed=0)
    assert levels[0][0] is not None and levels[1][0] is None
    assert _dsg.level_gtol(1e-3, 5.0, two, levels[0], levels[1], 0.5) == 1e-3
    assert _dsg.level_gtol(1e-3, 5.0, two, levels[1], levels[2], 0.5) > 1e-3


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_sets_within_level_zero_do_not_move(fraction):
    """Sets of at most ``primal_start_rows`` rows (the pipeline's) are solved
    on level 0 only: the level rule leaves their model bit for bit."""
    X, _, y_semi = _data(n=900)
    ref = TSGS3VM(C=1.0, random_state=0).fit(X, y_semi)
    opts = SolverOptions(primal_level_noise_fraction=fraction)
    est = TSGS3VM(C=1.0, random_state=0, solver_options=opts).fit(X, y_semi)
    np.testing.assert_array_equal(ref.coef_, est.coef_)
    np.testing.assert_array_equal(ref.intercept_, est.intercept_)


def test_looser_intermediate_levels_cost_fewer_iterations(small_levels):
    """Stopping the intermediate levels at their sampling noise saves
    iterations; the last level's tolerance keeps the machine."""
    X, _, y_semi = _data(n=3000)
    fits = {}
    for fraction in (0.0, 0.5):
        opts = replace(small_levels, primal_level_noise_fraction=fraction)
        est = TSGS3VM(C=1.0, random_state=0, selection=None,
                      solver_options=opts).fit(X, y_semi)
        fits[fraction] = (est.n_iter_, est.predict(X))
    assert fits[0.5][0] < fits[0.0][0]
    assert np.mean(fits[0.5][1] != fits[0.0][1]) < 0.01


def _stage_models(X, y_semi, opts):
    """(n_iter, coef_) after every L-BFGS stage of a small Fourier fit."""
    seen = []

    def keep(est, n_iter):
        seen.append((n_iter, est.coef_.copy()))

    TSGS3VM(C=1.0, random_state=0, features="fourier", max_features=64,
            callback=keep, solver_options=opts).fit(X, y_semi)
    return seen


@pytest.mark.parametrize("streamed", [True, False])
def test_last_held_level_is_solved_to_the_tolerance(small_levels, streamed):
    """Levels of 188 / 572 / 2 108 / 3 000 rows. With a held bound of 1 000
    rows the last two stream and stop at ``primal_large_level_max_iter``, so the
    572-row level is the last one solved: it keeps the final tolerance
    however loose the noise rule is (bit for bit the model of fraction 0).
    Without the bound the same level stops at its noise (a fraction of 1e12:
    no iteration)."""
    X, _, y_semi = _data(n=3000)
    base = (replace(small_levels, held_feature_bytes=4 * 64 * 1000) if streamed
            else small_levels)
    runs = {}
    for fraction in (0.0, 1e12):
        opts = replace(base, primal_level_noise_fraction=fraction)
        runs[fraction] = _stage_models(X, y_semi, opts)
    (it0, first), (it1, second) = runs[0.0][3], runs[1e12][3]  # level 1
    assert len(runs[0.0]) == len(runs[1e12]) == 6  # 3 annealing stages + 3 levels
    if streamed:
        assert it0 == it1 and it1 > runs[1e12][2][0]
        np.testing.assert_array_equal(first, second)
    else:
        assert it1 == runs[1e12][2][0]  # stopped where it started
        assert not np.array_equal(first, second)


def test_majorised_loss_keeps_the_final_tolerance(small_levels):
    """The concave-convex procedure re-linearises before every solve, so its
    levels keep the final tolerance: the rule leaves it bit for bit."""
    X, _, y_semi = _data(n=3000)
    coefs = []
    for fraction in (0.0, 0.5):
        opts = replace(small_levels, primal_level_noise_fraction=fraction)
        est = TSGS3VM(C=1.0, random_state=0, unlabeled_loss="ramp_cccp",
                      selection=None, solver_options=opts)
        coefs.append(est.fit(X, y_semi).coef_.copy())
    np.testing.assert_array_equal(coefs[0], coefs[1])


@pytest.mark.parametrize("how", ["held_bound", "cost"])
def test_folded_whitening_levels_give_the_row_whitened_model(small_levels,
                                                              monkeypatch, how):
    """A Nyström level past the held bound, or of ``primal_fold_min_rows``
    rows or more (off by default), streams k(X, Z) and applies L^-T to the
    coefficients per evaluation; a smaller one streams whitened rows
    (``NystromSpec.row_whitened``). Same objective, other arithmetic: with
    every level folded -- by a held bound of 0 (no iteration cap, the same
    levels: the bound would otherwise also cut the schedule short), or by
    the row rule at 0 -- the float64 model matches the row-whitened one to
    1e-6 of its decision values."""
    X, _, y_semi = _data(n=900)
    kw = dict(C=1.0, random_state=0, dtype="float64", tol=1e-10)
    rows = TSGS3VM(**kw, solver_options=small_levels).fit(X, y_semi)  # whitened rows
    assert rows.features_ == "nystroem"
    if how == "held_bound":
        opts = replace(small_levels, primal_large_level_max_iter=10**6,
                       held_feature_bytes=0)
        levels = _dsg.primal_levels
        monkeypatch.setattr(_primal, "primal_levels",
                            lambda sizes, seed, held_rows=None, opts=DEFAULT:
                            levels(sizes, seed, opts=opts))
    else:
        opts = replace(small_levels, primal_fold_min_rows=0)
    folded = TSGS3VM(**kw, solver_options=opts).fit(X, y_semi)
    f_rows, f_folded = rows.decision_function(X), folded.decision_function(X)
    assert np.abs(f_rows - f_folded).max() <= 1e-6 * np.abs(f_rows).max()


def test_levels_fold_from_the_row_rule_on(small_levels, monkeypatch):
    """Levels of 188 / 572 / 900 rows: with the rule at 500 rows the first
    streams whitened rows, the larger two fold; the default (None) keeps
    all three whitened.
    ``selection=None``: the levels of one fit, not of the folds
    the default's choice of C* runs on a set this small."""
    X, _, y_semi = _data(n=900)
    seen, real = [], _dsg.Whitening

    def spy(spec):
        seen.append(spec.whitening() is not None)
        return real(spec)

    monkeypatch.setattr(_primal, "Whitening", spy)
    kw = dict(C=1.0, random_state=0, selection=None)
    TSGS3VM(**kw, solver_options=small_levels).fit(X, y_semi)
    assert seen == [False, False, False]
    seen.clear()
    folding = replace(small_levels, primal_fold_min_rows=500)
    TSGS3VM(**kw, solver_options=folding).fit(X, y_semi)
    assert seen == [False, True, True]
