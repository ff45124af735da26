"""What is served moves only on purpose, on a real DVC project.

One project copy (``test_pipeline_e2e.build_project``: cod-rna, one model,
two seeds, its settings pinned through ``tune.space`` so each step's model is
known), then, in order:

1. ``dvc repro`` -- the first model of the data set becomes ``champion``;
2. ``dvc exp run --temp -S tune.n_trials=2`` with a better model -- a version
   tagged with the experiment's name gets ``challenger``; ``champion`` stays;
3. a main-line ``dvc repro`` of a worse model -- not resolved better: a
   ``challenger`` with the comparison in its tags; ``champion`` stays;
4. a main-line ``dvc repro`` of a better one -- resolved better on the same
   test splits: ``champion`` moves to it, with the evidence.

The settings (200 labels, 1 000 test points a seed) are ordered by their test
errors on these splits, by margins of several pp (``WORSE`` > ``FIRST`` >
``EXPERIMENT`` > ``BETTER``).  Step 4 is not the experiment's model: DVC's run
cache would restore that evaluate stage's outputs instead of running it.
"""

from __future__ import annotations

import shutil
import sys

import pytest
import yaml

from test_pipeline_e2e import MIRROR, ROOT, _run, build_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists(), reason="needs ../shared/data/raw"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy"),
]

NAME = "weakkernels-cod-rna"
FIRST = {"C": 3.0, "c_star_scale": 1.0, "sigma_rel": 1.0}
EXPERIMENT = {"C": 30.0, "c_star_scale": 1.0, "sigma_rel": 0.5}
WORSE = {"C": 0.3, "c_star_scale": 1.0, "sigma_rel": 1.0}
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


def _repro_with(project: dict, space: dict) -> None:
    root = project["root"]
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["tune"]["space"] = {"tsgs3vm": dict(space)}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run([sys.executable, "-m", "dvc", "repro", "evaluate"], root, project["env"],
         timeout=900)


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """The registry after each step: ``{step: (champion, {version: mv})}``."""
    import mlflow

    proj = build_project(tmp_path_factory.mktemp("wkchamp"), models=["tsgs3vm"],
                         n_trials=1, su=False, copy_package=False, edit=_small)
    root, env = proj["root"], proj["env"]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root}/mlflow.db")
    out = {"repro": (_champion(client), _versions(client))}
    # `dvc exp run` runs a commit: the project's files, not its stores
    shutil.copy(ROOT / ".gitignore", root / ".gitignore")
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "project"], root, env)
    sets = [f"tune.space.tsgs3vm.{k}={v}" for k, v in EXPERIMENT.items()]
    _run([sys.executable, "-m", "dvc", "exp", "run", "--temp", "-n", "better",
          "-S", "tune.n_trials=2", *(a for s in sets for a in ("-S", s))],
         root, env, timeout=900)
    out["exp"] = (_champion(client), _versions(client))
    _repro_with(proj, WORSE)
    out["worse"] = (_champion(client), _versions(client))
    _repro_with(proj, BETTER)
    out["better"] = (_champion(client), _versions(client))
    return out


def test_first_repro_sets_the_champion(steps):
    champion, versions = steps["repro"]
    assert champion == "1" and list(versions) == ["1"]
    assert versions["1"].tags["compare.decision"] == "first champion"


def test_experiment_registers_a_challenger_and_leaves_the_champion(steps):
    champion, versions = steps["exp"]
    assert champion == "1"
    (new,) = set(versions) - {"1"}
    assert versions[new].aliases == ["challenger"]
    assert versions[new].tags["dvc.exp_name"] == "better"
    assert "compare.decision" not in versions[new].tags  # nothing was compared


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
