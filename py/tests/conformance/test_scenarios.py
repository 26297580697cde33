"""The conformance suite: every scenario file under db/tests/scenarios, on every engine that is reachable."""

from __future__ import annotations

import json

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.errors import CtxasmError
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import SCENARIOS
from .checks import check_window
from .engines import ORACLE_SKIP, load_fresh, oracle_engine, postgres_engine

CASES = [
    pytest.param(path, number, case, id=f"{path.stem}:{case['name']}")
    for path in sorted(SCENARIOS.glob("*.json"))
    for number, case in enumerate(json.loads(path.read_text()).get("expect", {}).get("cases", []))
]


@pytest.fixture(params=["postgresql", "oracle"])
def engine(request):
    if request.param == "postgresql":
        return postgres_engine(request.getfixturevalue("pg_target"))
    found = oracle_engine()
    if found is None:
        pytest.skip(ORACLE_SKIP)
    return found


def spec_of(case: dict) -> WindowSpec:
    return WindowSpec(tenant_id=case["tenant"], user_id=case.get("user"), agent_id=case.get("agent"),
                      thread_id=case.get("thread"), intent=case["intent"], question=case["question"])


def test_there_are_enough_scenarios():
    assert len({path for path, _, _ in (p.values for p in CASES)}) >= 20


@pytest.mark.parametrize("path, number, case", CASES)
def test_scenario(engine, path, number, case):
    document = json.loads(path.read_text())
    load_fresh(engine, document, str(path))
    expect = case["expect"]
    before = engine.manifests(case["tenant"])
    with engine.app() as store:
        if "error" in expect:
            with pytest.raises(CtxasmError) as caught:
                assemble(store, spec_of(case), parse_time(case["at"]), case.get("scores"))
            assert caught.value.code == expect["error"]["code"], str(caught.value)
            assert expect["error"]["contains"] in str(caught.value)
            assert engine.manifests(case["tenant"]) == before, "a failed assembly must record no manifest"
            return
        window = assemble(store, spec_of(case), parse_time(case["at"]), case.get("scores"))
    check_window(expect, window.request, window.manifest)
    assert engine.manifests(case["tenant"]) == before + 1
