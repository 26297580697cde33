"""Finding 5: unbounded work. No length limit on the question in Python or in select_window and no
statement_timeout for the application role (a 10,000-word question against 3,000 recalled turns held
select_window for 176 s); lookup_entity.subject had no maxLength, and a refused 100,000-character argument was
echoed back whole in the error.

Now the question is at most 8,000 characters on both sides, the application role's statements end after 30 s
(CTXASM_APP_STATEMENT_TIMEOUT), every string a tool takes is bounded, and errors quote at most ~200 characters."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastmcp import Client

from ctxasm import errors, loader, pgconn
from ctxasm.assembler import assemble, parse_time
from ctxasm.manager import Caller, MemoryManager
from ctxasm.mcp_server import build_server
from ctxasm.store import PostgresStore
from ctxasm.window import WindowSpec

from ..conftest import REPO, SCENARIOS
from .helpers import app_session, become, refusal

AT = parse_time("2026-09-28T12:00:00")
LONG = "helios " * 1500  # 10,500 characters


def test_a_question_over_8000_characters_is_refused_in_python_naming_it(demo_target):
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", LONG)
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        with pytest.raises(errors.InvalidQuestion, match="question is 10500 characters long, at most 8000"):
            assemble(PostgresStore(connection), spec, AT)


def test_select_window_refuses_a_question_over_8000_characters(demo_target):
    with app_session(demo_target) as app:
        become(app, "acme")
        answer = refusal(app, "SELECT ctx_assembly.select_window('jane', 'research-assistant', NULL, 'fact_check', "
                              "%s, %s)", (AT, LONG))
    assert answer is not None and answer[0] == "CX113" and "in_question" in answer[1] and len(answer[1]) < 200


def test_the_application_role_has_a_statement_timeout(demo_target):
    with app_session(demo_target) as app:
        assert app.execute("SHOW statement_timeout").fetchone()[0] == "30s"


def shipped_tool_schemas():
    for path in sorted((REPO / "db" / "tests").rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        stack = [document]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if "tool_schema" in node:
                    yield f"{path.name}:{node.get('id')}", node["tool_schema"]
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)


def test_every_string_of_every_shipped_tool_schema_has_a_max_length():
    from ctxasm.tool_schemas import unbounded_strings

    schemas = list(shipped_tool_schemas())
    assert schemas
    assert {name: unbounded_strings(schema) for name, schema in schemas if unbounded_strings(schema)} == {}


def test_the_loader_refuses_a_tool_schema_with_an_unbounded_string(tmp_path):
    document = json.loads((SCENARIOS / "acme_demo.json").read_text())
    tool = next(m for t in document["tenants"] for m in t["memories"] if m["type"] == "toolbox")
    tool["tool_schema"] = {"type": "object", "properties": {"query": {"type": "string"}}}
    path = tmp_path / "unbounded.json"
    path.write_text(json.dumps(document))
    with pytest.raises(errors.ScenarioError, match=r"tool_schema: string query has no maxLength"):
        loader.read_scenario(path)


def call(manager: MemoryManager, name: str, arguments: dict):
    async def go():
        async with Client(build_server(manager), mode="legacy") as client:
            return await client.call_tool(name, arguments, raise_on_error=False)
    return asyncio.run(go())


def test_a_refused_argument_is_not_echoed_back_whole(demo_target):
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        manager = MemoryManager(PostgresStore(connection), Caller("acme", "jane", "research-assistant",
                                                                  "thread_jane_research", ("researcher",)), at=AT)
        result = call(manager, "lookup_entity", {"subject": "x" * 100_000, "predicate": "beir_ndcg10"})
    text = result.content[0].text
    assert result.is_error and text.startswith("invalid_argument: lookup_entity.subject")
    assert len(text) < 600


def test_the_manager_refuses_a_stored_tool_whose_schema_leaves_a_string_unbounded(demo_target):
    with pgconn.connect(demo_target, pgconn.owner_login()) as owner:
        store = PostgresStore(owner)
        store.set_tenant("acme")
        store.supersede("toolbox", "tool_lookup_entity", {"tool_schema": {
            "type": "object", "properties": {"subject": {"type": "string"}, "predicate": {"type": "string"}}},
            "valid_from": "2026-09-01T00:00:00Z"})
        store.commit()
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        manager = MemoryManager(PostgresStore(connection), Caller("acme", "jane", "research-assistant",
                                                                  "thread_jane_research", ("researcher",)), at=AT)
        result = call(manager, "lookup_entity", {"subject": "x", "predicate": "y"})
    assert result.is_error and "tool_refused: lookup_entity" in result.content[0].text
    assert "without a maxLength" in result.content[0].text


def test_the_database_bounds_lookup_arguments_and_quotes_little(demo_target):
    with app_session(demo_target) as app:
        become(app, "acme")
        answer = refusal(app, "SELECT ctx_tools.lookup_entity('jane', 'research-assistant', %s, %s, 'p')",
                         (AT, "s" * 100_000))
        assert answer is not None and answer[0] == "CX108" and "in_subject" in answer[1] and len(answer[1]) < 200
        become(app, "acme")
        answer = refusal(app, "SELECT ctx_memory.supersede('entity', %s, '{}'::jsonb)", ("i" * 100_000,))
        assert answer is not None and answer[0] == "CX106" and len(answer[1]) < 400
