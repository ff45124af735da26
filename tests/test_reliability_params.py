"""``params.yaml`` names checked against the registries at ``load_params``
(RELIABILITY.md, section "Sparse structure", cause J)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from weakkernels.pipeline.params_schema import ParamsError, load_params

_PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def _write(tmp_path, edit):
    params = yaml.safe_load(_PARAMS.read_text(encoding="utf-8"))
    edit(params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params), encoding="utf-8")
    return path


def test_the_repository_params_load():
    params = load_params(_PARAMS)
    assert params["models"]["names"]


@pytest.mark.parametrize(
    "bad, match",
    [
        # Before: passed validation, then KeyError: 'nosuchmodel' in a stage.
        ("nosuchmodel", r"models.names: 'nosuchmodel' is not in the model registry;"),
        ("tsgs3vn", r"'tsgs3vn' is not in the model registry \(did you mean "
                    r"'tsgs3vm'\?\)"),
    ],
)
def test_unknown_model_name_is_refused_with_the_nearest_name(tmp_path, bad, match):
    path = _write(tmp_path, lambda p: p["models"]["names"].append(bad))
    with pytest.raises(ParamsError, match=match):
        load_params(path)


def test_unknown_model_and_dataset_are_both_reported(tmp_path):
    def edit(p):
        p["models"]["names"] = ["cccp_tsvn"]
        p["data"]["datasets"] = ["g5O"]

    with pytest.raises(ParamsError, match="2 problem") as info:
        load_params(_write(tmp_path, edit))
    msg = str(info.value)
    assert "models.names: 'cccp_tsvn'" in msg and "did you mean" in msg
    assert "data.datasets: 'g5O' is not in the dataset manifest" in msg
