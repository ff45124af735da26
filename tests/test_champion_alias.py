"""What is served moves only on purpose, on a real DVC project.

One project copy (``test_pipeline_e2e.build_project``: cod-rna, one model,
two seeds, its settings pinned through ``tune.space`` so each step's model is
known), then, in order:

1. the stages up to ``evaluate``, then ``dvc commit`` (what ``dvc repro
   evaluate`` leaves: ``dvc.lock`` and the cache) -- the first model of the
   data set becomes ``champion``;
2. ``dvc exp run --temp -S tune.n_trials=2 evaluate`` with a better model -- a
   version tagged with the experiment's name gets ``challenger``;
   ``champion`` stays;
3. a main-line run of a worse model -- not resolved better: a ``challenger``
   with the comparison in its tags; ``champion`` stays;
4. a main-line run of a better one -- resolved better on the same test
   splits: ``champion`` moves to it, with the evidence.

The main-line runs are the stages of ``dvc.yaml``, run in this process with
their ``dvc.yaml`` arguments, as ``tests/test_mlflow_ui.py`` does (no Python
start-up per stage; DVC only runs the experiment); the report stage never runs
(it reads, never registers).

The settings (200 labels, 1 000 test points a seed) are ordered by their test
errors on these splits, by margins of several pp (``WORSE`` > ``FIRST`` >
``EXPERIMENT`` > ``BETTER``).  Step 4 is not the experiment's model: DVC's run
cache would restore that evaluate stage's outputs instead of running it.
"""

from __future__ import annotations

import runpy
import shlex
import shutil
import sys

import numpy as np
import pytest
import yaml

from test_pipeline_e2e import MIRROR, ROOT, _run, build_project

pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")
needs_mirror = pytest.mark.skipif(not MIRROR.exists(),
                                  reason="needs ../shared/data/raw")

NAME = "weakkernels-cod-rna"
FIRST = {"C": 1.0, "c_star_scale": 1.0, "sigma_rel": 0.1}
EXPERIMENT = {"C": 30.0, "c_star_scale": 1.0, "sigma_rel": 0.5}
WORSE = {"C": 0.3, "c_star_scale": 1.0, "sigma_rel": 0.3}
BETTER = {"C": 10.0, "c_star_scale": 1.0, "sigma_rel": 0.3}


def _small(params: dict) -> None:
    params["data"]["datasets"] = ["cod-rna"]
    params["split"]["seeds"] = [0, 1, 2]
    params["split"]["ssl"].update(n_labeled=200, n_unlabeled=[300], n_val=100,
                                  n_test=1000)
    params["train"]["seeds"] = [1, 2]
    params["tune"]["space"] = {"tsgs3vm": dict(FIRST)}


def _versions(client) -> dict[str, object]:
    return {str(v.version): client.get_model_version(NAME, v.version)
            for v in client.search_model_versions(f"name='{NAME}'")}


def _champion(client) -> str:
    return str(client.get_model_version_by_alias(NAME, "champion").version)


def _documented_exp_show() -> list[str]:
    """The README's ``dvc exp show`` command (section "Bigger experiments")."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Bigger experiments"):]
    line = next(ln for ln in section.splitlines() if ln.startswith("dvc exp show"))
    return shlex.split(line, comments=True)[1:]


def _main_line(root, space: dict,
               names=("tune", "train", "evaluate")) -> None:
    """The stages ``names`` with ``space`` pinned, in order."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["tune"]["space"] = {"tsgs3vm": dict(space)}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for var in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID",
                    "DVC_EXP_NAME"):
            mp.delenv(var, raising=False)
        for name in names:
            argv = shlex.split(stages[name]["cmd"])  # sh pipelines/python <script>
            main = runpy.run_path(str(root / argv[2]), run_name=f"stage_{name}")
            assert main["main"](argv[3:]) == 0, name


def _wrong(n: int, errors: list[int]) -> np.ndarray:
    out = np.zeros(n, bool)
    out[errors] = True
    return out


def test_compare_resolves_a_win_over_seeds_and_points():
    from weakkernels.pipeline.promotion import RESOLVED_SE, compare

    old = {s: _wrong(1000, list(range(100))) for s in (1, 2)}  # 10 % each
    # 5 pp better on both seeds: resolved
    new = {s: _wrong(1000, list(range(50))) for s in (1, 2)}
    verdict = compare(new, old)
    assert verdict["wins"] and verdict["seeds"] == [1, 2]
    assert verdict["paired_diff"] == pytest.approx(-0.05)
    assert verdict["per_seed_diff"] == pytest.approx([-0.05, -0.05])
    assert verdict["new_test_error"] == pytest.approx(0.05)
    # the per-point SE stands in for the seeds' (zero) spread
    d = np.tile(np.r_[-np.ones(50), np.zeros(950)], 2)
    assert verdict["paired_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(2000))
    # one seed resolves nothing, however large the gain
    assert not compare({1: new[1]}, {1: old[1]})["wins"]
    # two points in 2 000, the same on both seeds: within 2 SE of the points
    two = {s: _wrong(1000, list(range(99))) for s in (1, 2)}
    v = compare(two, old)
    assert not v["wins"] and -v["paired_diff"] < RESOLVED_SE * v["paired_se"]
    # a gain on one seed and a loss on the other: the seeds' spread decides
    mixed = {1: _wrong(1000, list(range(60))), 2: _wrong(1000, list(range(110)))}
    v = compare(mixed, old)
    assert not v["wins"] and v["paired_se"] == pytest.approx(0.025)
    # a worse model never wins
    assert not compare(old, new)["wins"]


@pytest.mark.parametrize("kind", ["minmax", "maxabs"])
def test_unscaled_rows_scale_back_to_the_prepared_ones(kind):
    """The champion is scored as served, on raw rows: unscale_rows undoes the
    prepare stage's scaling (CSR kept for maxabs)."""
    import scipy.sparse as sp

    from weakkernels.pipeline.preparation import fit_scaler, scale_features
    from weakkernels.pipeline.pyfunc_model import scale_rows, unscale_rows

    rng = np.random.default_rng(0)
    raw = rng.normal(size=(50, 4)) * [1.0, 10.0, 100.0, 1e3] + [0.0, 5.0, -50.0, 1e3]
    if kind == "maxabs":
        raw = sp.csr_matrix(np.where(rng.random(raw.shape) < 0.5, 0.0, raw))
    lo, span = fit_scaler(raw, kind)
    X = scale_features(raw, kind)
    back = unscale_rows(X, lo, span, kind)
    assert sp.issparse(back) == (kind == "maxabs")

    def dense(a):
        return a.toarray() if sp.issparse(a) else a

    np.testing.assert_allclose(dense(back), dense(raw), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(dense(scale_rows(back, lo, span, kind)), dense(X),
                               rtol=1e-12, atol=1e-12)


def test_experiment_name_from_dvc_or_the_temp_copy(tmp_path):
    from weakkernels.pipeline.promotion import experiment_name

    assert experiment_name({"DVC_EXP_NAME": "pucka-wyes"}, str(tmp_path)) \
        == "pucka-wyes"
    assert experiment_name({}, str(tmp_path)) is None
    copy = tmp_path / ".dvc" / "tmp" / "exps" / "tmpabc"
    copy.mkdir(parents=True)
    assert experiment_name({}, str(copy)) == "unnamed"


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """The registry after each step: ``{step: (champion, {version: mv})}``."""
    import mlflow

    proj = build_project(tmp_path_factory.mktemp("wkchamp"), models=["tsgs3vm"],
                         n_trials=1, su=False, edit=_small,
                         repro=False)
    root, env = proj["root"], proj["env"]
    _main_line(root, FIRST, ("download", "prepare", "split", "tune", "train",
                             "evaluate"))
    _run([sys.executable, "-m", "dvc", "commit", "-f", "-q", "-d", "evaluate"],
         root, env)
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    out = {"repro": (_champion(client), _versions(client))}
    # `dvc exp run` runs a commit: the project's files, not its stores
    shutil.copy(ROOT / ".gitignore", root / ".gitignore")
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "project"], root, env)
    sets = [f"tune.space.tsgs3vm.{k}={v}" for k, v in EXPERIMENT.items()]
    _run([sys.executable, "-m", "dvc", "exp", "run", "--temp", "-n", "better",
          "-S", "tune.n_trials=2", *(a for s in sets for a in ("-S", s)),
          "evaluate"],
         root, env, timeout=900)
    out["exp"] = (_champion(client), _versions(client))
    out["exp show"] = {name: _run([sys.executable, "-m", "dvc", *argv, "--no-pager"],
                                  root, {**env, "COLUMNS": "400"}).stdout
                       for name, argv in (("documented", _documented_exp_show()),
                                          ("plain", ["exp", "show",
                                                     "--only-changed"]))}
    _main_line(root, WORSE)
    out["worse"] = (_champion(client), _versions(client))
    _main_line(root, BETTER)
    out["better"] = (_champion(client), _versions(client))
    return out


@pytest.mark.slow
@needs_mirror
def test_first_repro_sets_the_champion(steps):
    champion, versions = steps["repro"]
    assert champion == "1" and list(versions) == ["1"]
    assert versions["1"].tags["compare.decision"] == "first champion"


@pytest.mark.slow
@needs_mirror
def test_experiment_registers_a_challenger_and_leaves_the_champion(steps):
    champion, versions = steps["exp"]
    assert champion == "1"
    (new,) = set(versions) - {"1"}
    assert versions[new].aliases == ["challenger"]
    assert versions[new].tags["dvc.exp_name"] == "better"
    assert "compare.decision" not in versions[new].tags  # nothing was compared


@pytest.mark.slow
@needs_mirror
def test_unresolved_main_line_model_is_a_challenger(steps):
    champion, versions = steps["worse"]
    assert champion == "1"
    (new,) = set(versions) - set(steps["exp"][1])
    tags = versions[new].tags
    assert versions[new].aliases == ["challenger"]
    assert tags["compare.decision"] == "challenger"
    assert tags["compare.against_version"] == "1"
    assert float(tags["compare.paired_diff"]) > -float(tags["compare.paired_se"])
    assert tags["compare.seeds"] == "1,2"


@pytest.mark.slow
@needs_mirror
def test_resolved_main_line_win_moves_the_champion_with_its_evidence(steps):
    champion, versions = steps["better"]
    (new,) = set(versions) - set(steps["worse"][1])
    assert champion == new and versions[new].aliases == ["champion"]
    tags = versions[champion].tags
    assert tags["compare.decision"] == "champion"
    assert tags["compare.against_version"] == "1"
    diff, se = float(tags["compare.paired_diff"]), float(tags["compare.paired_se"])
    assert diff < -se < 0
    new, old = (float(tags["compare.new_test_error"]),
                float(tags["compare.champion_test_error"]))
    assert new - old == pytest.approx(diff)
    assert len(tags["compare.commit"]) == 40
    assert len(tags["compare.per_seed_diff"].split(",")) == 2


@pytest.mark.slow
@needs_mirror
def test_documented_exp_show_fits_120_columns(steps):
    """A wide terminal (COLUMNS=400) leaves the table its natural width: the
    README's command drops the hash columns that made it 300+ wide."""
    width = {k: max(len(ln) for ln in out.splitlines())
             for k, out in steps["exp show"].items()}
    assert width["documented"] <= 120, steps["exp show"]["documented"]
    assert width["plain"] > 120  # the hashes are what the pattern drops
    assert "better" in steps["exp show"]["documented"]
    assert "tune.n_trials" in steps["exp show"]["documented"]
