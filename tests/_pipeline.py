"""Pipeline test helpers: stage configurations built from the repository's
``params.yaml`` (the one source of defaults), with a test's overrides on top."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def params(**sections) -> dict:
    """The whole ``params.yaml``, each given section updated (shallow)."""
    p = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name, values in sections.items():
        p[name] = {**p[name], **values}
    return copy.deepcopy(p)


def tune_cfg(**overrides) -> dict:
    """``params.yaml``'s ``tune`` section with ``overrides`` applied."""
    return params(tune=overrides)["tune"]
