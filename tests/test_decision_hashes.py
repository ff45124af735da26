"""Every estimator bit for bit as before issue 52's restructuring.

The table ``tests/fixtures/decision_hashes.json`` holds the SHA-256 of each
case's float64 decision values, written by ``python -m tests._decision_hashes
--write`` before the first move; a refit must reproduce every hash.
"""

from __future__ import annotations

import json

import pytest
from tests._decision_hashes import CASES, TABLE, dask_client, decision_hash

RECORDED = json.loads(TABLE.read_text())


@pytest.fixture(scope="module")
def client():
    with dask_client() as c:
        yield c


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(case[0] for case in CASES)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_decision_values_unchanged(case, request):
    if case[3] == "dask":
        request.getfixturevalue("client")
    assert decision_hash(case) == RECORDED[case[0]]
