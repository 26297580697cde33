"""select_window's real documents against contract/schemas/selection.schema.json (jsonschema itself, not the
compiled checker the adapters use): Jane's window over the demo and the research corpus, and every case of every
conformance scenario, on PostgreSQL; each parses into the typed classes."""

from __future__ import annotations

import json

import pytest

from ctxasm.core import schemas
from ctxasm.core.selection import Selection
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn
from ctxasm.services.assemble import parse_time, query_embedding

from ..conformance.engines import load_fresh, postgres_engine
from ..conftest import SCENARIOS

JANE = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."


def problems(document: dict) -> list[str]:
    return [f"{e.json_path}: {e.message[:200]}" for e in schemas.validator(schemas.SELECTION).iter_errors(document)]


def documents(target, tenant_id: str, scopes: list[WindowScope]) -> list[dict]:
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        found = []
        for scope in scopes:
            found.append(store.select_window_document(tenant_id, scope))
            connection.rollback()
    return found


def test_jane_s_selection_over_the_demo_and_corpus_is_a_selection_document(corpus_once):
    scope = WindowScope("jane", "research-assistant", "thread_jane_research", "fact_check",
                        parse_time("2026-09-28T12:00:00"), JANE, query_embedding=query_embedding(JANE))
    [document] = documents(corpus_once, "acme", [scope])
    assert problems(document) == []
    parsed = Selection.parse(document)
    assert {c.slice for c in parsed.candidates} == {"durable_facts", "evidence", "recalled_history", "volatile_tail"}
    assert any(c.annotations for c in parsed.candidates) and any(c.summary_ref for c in parsed.candidates)
    assert parsed.required_refs and parsed.excluded and parsed.candidate_cuts
    assert {f.slice for f in parsed.fixed} == {"guidelines", "persona", "tools"}


SCENARIO_FILES = sorted(path for path in SCENARIOS.glob("*.json")
                        if json.loads(path.read_text()).get("expect", {}).get("cases"))


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_every_conformance_case_selects_a_selection_document(pg_target, path):
    scenario = json.loads(path.read_text())
    load_fresh(postgres_engine(pg_target), scenario, str(path))
    checked = 0
    for case in scenario["expect"]["cases"]:
        if "error" in case["expect"]:
            continue  # the selection refuses: no document
        scope = WindowScope(case.get("user"), case.get("agent"), case.get("thread"), case["intent"],
                            parse_time(case["at"]), case["question"], case.get("scores"),
                            query_embedding=query_embedding(case["question"]))
        [document] = documents(pg_target, case["tenant"], [scope])
        assert problems(document) == [], case["name"]
        Selection.parse(document)
        checked += 1
    assert checked or all("error" in case["expect"] for case in scenario["expect"]["cases"])
