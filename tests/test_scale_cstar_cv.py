"""The k-fold choice of C* of benchmarks/scale_cstar_cv.py against naive fits."""

from __future__ import annotations

import numpy as np
import pytest

import scale_cstar_cv as cv
from _data import two_gaussians
from weakkernels import TSGS3VM
from weakkernels.pipeline.splits import stratified_folds


def test_cv_errors_score_every_label_once_from_a_fit_without_it():
    X, _, y = two_gaussians(n=240, d=4, n_labeled=40, sep=1.5, seed=5)
    lab = slice(40, 80)  # a replicate's block of labels, not the first rows
    factors = [0.0, 2.0]
    wrong, order, _ = cv.cv_errors(X, y, lab, factors, C=10.0, sigma=0.5,
                                   folds=4, seed=3, max_features=64,
                                   features="auto", log=lambda s: None)
    assert wrong.shape == (2, 40) and sorted(order) == list(range(40))
    # the naive reference: fold by fold, hide the fold's labels (every other
    # row is unlabeled anyway) and score them with the factor's C*
    pos = np.arange(40, 80)
    for i, f in enumerate(factors):
        ref = []
        for tr, te in stratified_folds(y[lab], 4, 3):
            y_fit = np.full(240, -1)
            y_fit[pos[tr]] = y[pos[tr]]
            c_star = f * 10.0 * tr.size / (240 - tr.size)
            est = TSGS3VM(sigma=0.5, C=10.0, C_star=c_star, random_state=3,
                          max_features=64).fit(X, y_fit)
            ref.append(est.predict(X[pos[te]]) != y[pos[te]])
        np.testing.assert_array_equal(wrong[i], np.concatenate(ref))


def test_choose_keeps_the_reference_unless_one_se_better():
    rng = np.random.default_rng(0)
    ref = rng.random(1000) < 0.10
    # 20 errors mended and 17 made: 3 fewer, inside one SE of the difference
    close = ref.copy()
    close[np.flatnonzero(ref)[:20]] = False
    close[np.flatnonzero(~ref)[:17]] = True
    far = ref.copy()
    far[np.flatnonzero(ref)[:40]] = False  # 40 fewer: well past it
    assert cv.choose(np.array([ref, close])) == (0, 1)
    assert cv.choose(np.array([ref, close, far])) == (2, 2)


# MLflow's SQLAlchemy store, first opened here (setup_mlflow silences the
# same message)
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")
def test_log_mlflow_records_the_cv(store, tmp_path):
    store.create_experiment("benchmark-scale_cstar_cv",
                            artifact_location=(tmp_path / "art").as_uri())
    argv = ["--seed", "2", "--factors", "0,3", "--out", str(tmp_path / "cv.json")]
    args = cv.parser().parse_args(argv)
    (tmp_path / "cv.json").write_text("{}")
    wrong = np.array([[True, False, True, False], [False, False, True, False]])
    run_id = cv.log_mlflow(args, argv, [0.0, 3.0], wrong, [1.5, 2.5], 1, 1,
                           tmp_path / "cv.json")
    run = store.get_run(run_id)
    assert run.data.metrics == {"cv_error_x0": 0.5, "cv_error_x3": 0.25,
                                "cv_cpu_s_x0": 1.5, "cv_cpu_s_x3": 2.5}
    assert run.data.params == {"chosen_factor": "3.0", "argmin_factor": "3.0"}
    assert run.data.tags["command"].endswith(" ".join(argv))
