"""A user's own table (``data.local``): every schema error names its key path
and the file, the cheap ones at ``params.yaml`` load, the content ones when the
``local@<name>`` stage reads the file; and a generated CSV and Parquet table
run end to end through ``dvc repro`` of the real dvc.yaml, with the file's hash
in ``dvc.lock``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from _pipeline import params as project_params
from weakkernels.pipeline.local_data import LocalDataError, import_local, read_local
from weakkernels.pipeline.params_schema import ParamsError, validate_params
from weakkernels.pipeline.preparation import encode_labels
from weakkernels.pipeline.splits import pool_split


def _table(n: int = 400, n_unlabeled: int = 160, seed: int = 0):
    """Two Gaussian classes in 4 features; the last ``n_unlabeled`` rows
    unlabeled, half with an empty label and half with -1."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4)) + 1.5 * y[:, None]
    label = y.astype(float)
    label[n - n_unlabeled:] = np.nan
    label[n - n_unlabeled // 2:] = -1
    df = pd.DataFrame(X, columns=["f0", "f1", "f2", "f3"])
    df.insert(2, "target", label)
    return df


def _csv(tmp_path: Path, df=None, name: str = "t.csv") -> Path:
    path = tmp_path / name
    (_table() if df is None else df).to_csv(path, index=False)
    return path


def _with_local(tmp_path: Path, entry: dict, name: str = "mine") -> dict:
    p = project_params()
    p["data"]["local"] = {name: entry}
    p["data"]["datasets"] = [*p["data"]["datasets"], name]
    return p


def _refused(p: dict, root: Path) -> str:
    with pytest.raises(ParamsError) as info:
        validate_params(p, root=root)
    return str(info.value)


# ------------------------------------------------------------- at params load


def test_a_valid_entry_passes_and_its_name_joins_the_data_sets(tmp_path):
    _csv(tmp_path)
    p = _with_local(tmp_path, {"path": "t.csv", "format": "csv", "label": "target"})
    assert validate_params(p, root=tmp_path) is p
    # absolute paths too
    p["data"]["local"]["mine"]["path"] = str(tmp_path / "t.csv")
    validate_params(p, root=tmp_path / "elsewhere")


@pytest.mark.parametrize(("entry", "named", "word"), [
    ({"path": "nosuch.csv", "format": "csv", "label": "target"},
     "data.local.mine.path", "no such file"),
    ({"path": "t.csv", "format": "xlsx", "label": "target"},
     "data.local.mine.format", "not a known format"),
    ({"path": "t.csv", "format": "csv"}, "data.local.mine.label", "required"),
    ({"format": "csv", "label": "target"}, "data.local.mine.path", "required"),
    ({"path": "t.csv", "format": "csv", "label": ""}, "data.local.mine.label",
     "label column"),
    ({"path": "t.csv", "format": "libsvm", "label": "target"},
     "data.local.mine.label", "null"),
    ({"path": "t.csv", "format": "csv", "label": "target", "sep": ";"},
     "data.local.mine.sep", "unknown key"),
    ("t.csv", "data.local.mine", "expected a map"),
], ids=["missing file", "unknown format", "no label key", "no path key",
        "empty label", "libsvm label", "unknown key", "not a map"])
def test_a_bad_entry_is_refused_at_load_naming_its_key(tmp_path, entry, named, word):
    _csv(tmp_path)
    msg = _refused(_with_local(tmp_path, entry), tmp_path)
    assert f"{named}:" in msg and word in msg, msg


def test_names_are_checked_against_the_shipped_sets_and_the_splits(tmp_path):
    _csv(tmp_path)
    entry = {"path": "t.csv", "format": "csv", "label": "target"}
    p = project_params()
    p["data"]["local"] = {"g50c": entry}
    assert "data.local.g50c: 'g50c' is a shipped data set" in _refused(p, tmp_path)
    p = _with_local(tmp_path, entry, name="my.set")
    assert "data.local.my.set: a data set name" in _refused(p, tmp_path)
    p = _with_local(tmp_path, entry)
    p["split"]["su"]["datasets"] = ["mine"]
    assert "split.su.datasets: 'mine' is a data.local table" in _refused(p, tmp_path)
    p = _with_local(tmp_path, entry)
    p["split"]["official"] = ["g50c", "mine"]
    assert "split.official: 'mine' is a data.local table" in _refused(p, tmp_path)
    p = project_params()
    p["data"]["datasets"] = ["g50c", "mine"]  # listed, not declared
    assert "data.datasets: 'mine' is not in the dataset manifest" \
        in _refused(p, tmp_path)


def test_local_must_be_a_map_for_dvcs_foreach(tmp_path):
    for value in (None, [], ["t.csv"]):
        p = project_params()
        p["data"]["local"] = value
        assert "data.local: expected a mapping" in _refused(p, tmp_path)


def test_make_repro_checks_the_params_before_dvc_parses_them(tmp_path):
    """``make repro`` runs the schema check first: DVC's templating of a
    broken entry (no ``path``) would stop with "Could not find 'item.path'"."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    recipe = (root / "Makefile").read_text().split("\nrepro:", 1)[1]
    check, dvc = (recipe.index("-m weakkernels.pipeline.params_schema params.yaml"),
                  recipe.index("-m weakkernels.pipeline.dvc_repro"))
    assert check < dvc
    _csv(tmp_path)
    p = _with_local(tmp_path, {"format": "csv", "label": "target"})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    cmd = [sys.executable, "-m", "weakkernels.pipeline.params_schema", "params.yaml"]
    bad = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == ""
    assert "data.local.mine.path: required key missing" in bad.stderr
    p["data"]["local"]["mine"]["path"] = "t.csv"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    good = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert (good.returncode, good.stdout, good.stderr) == (0, "", "")


# ------------------------------------------------------------------ at read


def _read(tmp_path, df, **entry):
    path = _csv(tmp_path, df)
    return read_local({"path": path.name, "format": "csv", "label": "target",
                       **entry}, tmp_path, name="mine")


def test_read_marks_missing_and_minus_one_labels_unlabeled(tmp_path):
    out = _read(tmp_path, _table())
    assert out["X"].shape == (400, 4) and out["features"] == ["f0", "f1", "f2", "f3"]
    assert np.isnan(out["y"][240:]).all() and not np.isnan(out["y"][:240]).any()
    codes, classes = encode_labels(out["y"])
    assert classes.tolist() == [0.0, 1.0]
    assert (codes[240:] == -1).all() and set(codes[:240]) == {0, 1}


@pytest.mark.parametrize(("edit", "key", "words"), [
    (lambda df: df.drop(columns="target"), "data.local.mine.label",
     ["no column 'target'", "f0"]),
    (lambda df: df.assign(f1=["a"] * len(df), city=["x"] * len(df)),
     "data.local.mine", ["must be numeric", "'f1'", "'city'"]),
    (lambda df: df.assign(target=np.where(df.target.isna() | (df.target == -1),
                                          df.target, 1.0)),
     "data.local.mine", ["at least two classes", "[1.0]"]),
    (lambda df: df.assign(target=np.where(df.target.isna() | (df.target == -1),
                                          0.0, df.target)),
     "data.local.mine", ["no unlabeled row"]),
    (lambda df: df.assign(f3=np.where(np.arange(len(df)) == 5, np.nan, df.f3)),
     "data.local.mine", ["non-finite", "'f3'"]),
    (lambda df: df.assign(target=["yes"] * len(df)), "data.local.mine.label",
     ["must hold numbers"]),
], ids=["no label column", "text features", "one class", "no unlabeled row",
        "missing feature", "text labels"])
def test_bad_content_is_refused_at_read_naming_key_and_file(tmp_path, edit, key,
                                                            words):
    with pytest.raises(LocalDataError) as info:
        _read(tmp_path, edit(_table()))
    msg = str(info.value)
    assert msg.startswith(f"{key}: t.csv:"), msg
    for w in words:
        assert w in msg, msg


def test_a_minus_one_class_is_named_in_the_one_class_error(tmp_path):
    df = _table()
    df["target"] = np.where(df.target == 0, -1.0, df.target)  # classes -1 / +1
    df.loc[390:, "target"] = np.nan
    with pytest.raises(LocalDataError, match=r"found \[1.0\] .* rows labeled -1 "
                                             r"count as unlabeled: recode"):
        _read(tmp_path, df)


def test_parquet_libsvm_and_npz_read_as_the_csv(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    df = _table()
    ref = _read(tmp_path, df)
    df.to_parquet(tmp_path / "t.parquet")
    pq = read_local({"path": "t.parquet", "format": "parquet", "label": "target"},
                    tmp_path, name="mine")
    np.testing.assert_array_equal(pq["X"], ref["X"])
    np.testing.assert_array_equal(pq["y"], ref["y"])
    X = df.drop(columns="target").to_numpy()
    y = np.nan_to_num(df.target.to_numpy(), nan=-1.0)
    np.savez(tmp_path / "t.npz", X=X, label=y)
    nz = read_local({"path": "t.npz", "format": "npz", "label": "label"},
                    tmp_path, name="mine")
    np.testing.assert_array_equal(nz["y"], ref["y"])
    dump_svmlight_file(X, y, str(tmp_path / "t.svm"))
    sv = read_local({"path": "t.svm", "format": "libsvm", "label": None},
                    tmp_path, name="mine")
    np.testing.assert_allclose(sv["X"].toarray(), X, rtol=1e-12)
    np.testing.assert_array_equal(sv["y"], ref["y"])
    with pytest.raises(LocalDataError, match=r"data.local.mine: t.npz: no array"):
        read_local({"path": "t.npz", "format": "npz", "label": "y"}, tmp_path,
                   name="mine")


def test_import_records_the_files_sha256(tmp_path):
    path = _csv(tmp_path)
    rec = import_local("mine", {"path": "t.csv", "format": "csv", "label": "target"},
                       tmp_path, tmp_path / "out")
    assert rec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (rec["n_labeled"], rec["n_unlabeled"]) == (240, 160)
    assert json.loads((tmp_path / "out/source.json").read_text()) == rec


# ------------------------------------------------------------------ the split


def test_pool_split_takes_the_own_unlabeled_rows_as_the_pool():
    y = np.r_[np.zeros(60, int), np.ones(60, int), -np.ones(80, int)]
    sp = pool_split(y, n_labeled=10, n_unlabeled=[40, 80], n_val=20, n_test=30,
                    seed=3)
    assert (y[sp["unlabeled"]] == -1).all() and len(sp["unlabeled"]) == 80
    for key in ("labeled", "val", "test"):
        assert (y[sp[key]] >= 0).all()
    used = np.concatenate([sp["labeled"], sp["val"], sp["test"], sp["unlabeled"]])
    assert len(np.unique(used)) == len(used) == 140
    tr = pool_split(y, n_labeled=10, n_unlabeled=[40, 80], n_val=20, n_test=30,
                    seed=3, transductive=True)
    np.testing.assert_array_equal(tr["unlabeled"][:30], tr["test"])
    with pytest.raises(ValueError, match=r"split.ssl.n_unlabeled: 100 unlabeled "
                                         r"rows asked, the set has 80"):
        pool_split(y, n_labeled=10, n_unlabeled=[100], n_val=20, n_test=30, seed=0)
    with pytest.raises(ValueError, match=r"split.ssl.n_labeled \+ n_val \+ n_test: "
                                         r"50 \+ 20 \+ 60 = 130 labeled rows needed, "
                                         r"the set has 120"):
        pool_split(y, n_labeled=50, n_unlabeled=[40], n_val=20, n_test=60, seed=0)


def test_the_readme_example_is_accepted_and_its_sizes_fit(tmp_path, monkeypatch):
    """The README's "Your own data": its code writes the table, its params
    pass the schema, its split sizes fit the table."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Your own data", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    conf = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    p = project_params()
    p["data"].update(conf["data"])
    p["split"]["ssl"].update(conf["split"]["ssl"])
    validate_params(p, root=tmp_path)
    (name, entry), = conf["data"]["local"].items()
    y, _ = encode_labels(read_local(entry, tmp_path, name=name)["y"])
    ssl = p["split"]["ssl"]
    for seed in p["split"]["seeds"]:
        pool_split(y, n_labeled=ssl["n_labeled"], n_unlabeled=ssl["n_unlabeled"],
                   n_val=ssl["n_val"], n_test=ssl["n_test"], seed=seed,
                   transductive=ssl["transductive"])


# ------------------------------------------------------------- end to end


@pytest.mark.slow
def test_csv_and_parquet_tables_run_end_to_end_through_dvc_repro(tmp_path):
    from test_pipeline_e2e import MIRROR, _run, build_project

    if not MIRROR.exists():
        pytest.skip("needs ../shared/data/raw")
    df = _table()

    def edit(params):
        params["data"]["local"] = {
            "mine_csv": {"path": "tables/mine.csv", "format": "csv",
                         "label": "target"},
            "mine_pq": {"path": str(tmp_path / "mine.parquet"), "format": "parquet",
                        "label": "target"}}
        params["data"]["datasets"] = ["mine_csv", "mine_pq"]
        params["split"].update(seeds=[0, 1], official=[])
        params["split"]["ssl"].update(n_labeled=20, n_unlabeled=[80, 160], n_val=40,
                                      n_test=100)
        params["tune"].update(n_trials=2, n_startup_trials=2, cv_folds=2)

    (tmp_path / "proj").mkdir()
    proj = build_project(tmp_path / "proj", models=["svc", "tsgs3vm"], su=False,
                         edit=edit, repro=False)
    root, env = proj["root"], proj["env"]
    (root / "tables").mkdir()
    df.to_csv(root / "tables/mine.csv", index=False)
    df.to_parquet(tmp_path / "mine.parquet")
    _run([sys.executable, "-m", "dvc", "repro"], root, env, timeout=600)

    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    for name, file in (("mine_csv", root / "tables/mine.csv"),
                       ("mine_pq", tmp_path / "mine.parquet")):
        dep = {d["path"]: d for d in lock[f"local@{name}"]["deps"]}
        given = proj["params"]["data"]["local"][name]["path"]
        assert dep[given]["md5"] == hashlib.md5(file.read_bytes()).hexdigest()
        src = json.loads((root / f"data/local/{name}/source.json").read_text())
        assert src["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()
        prepared = np.load(root / f"data/prepared/{name}.npz")
        y = prepared["y"]
        assert (y[240:] == -1).all() and set(y[:240].tolist()) == {0, 1}
        for seed in (0, 1):
            sp = np.load(root / f"data/splits/{name}/ssl_seed{seed}.npz")
            assert (y[sp["unlabeled"]] == -1).all() and len(sp["unlabeled"]) == 160
            assert all((y[sp[k]] >= 0).all() for k in ("labeled", "val", "test"))
    summary = json.loads((root / "results/evaluate/summary.json").read_text())
    for model in ("svc", "tsgs3vm"):
        for name in ("mine_csv", "mine_pq"):
            for nu in ("nu80", "nu160"):
                assert 0.0 <= summary[model][name][nu]["test_error_mean"] <= 0.5
    head = json.loads((root / "metrics/test.json").read_text())
    assert set(head) == {"mine_csv", "mine_pq"}
    assert "mine_csv" in (root / "reports/summary.md").read_text()
    # an edited table is a changed dependency: its stage and those after it rerun
    df.iloc[:5, 0] += 1.0
    df.to_csv(root / "tables/mine.csv", index=False)
    status = _run([sys.executable, "-m", "dvc", "status", "local@mine_csv"], root,
                  env).stdout
    assert "tables/mine.csv" in status and "modified" in status
