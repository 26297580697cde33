"""The `remember` MCP tool: offered only when a toolbox row names its handler (the demo's rows do not), it writes a
fact through the caller's API session as `ctxasm remember` does (put, or supersede by the claim's identity) and
answers with the new row's id and version; bad arguments are refused naming the field."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastmcp import Client

from ctxasm.agent.manager import MemoryManager
from ctxasm.agent.mcp_server import build_server
from ctxasm.api import Memory
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import parse_time

from ..conftest import jane_mcp_over_stdio, read_as_owner

AT = parse_time("2026-09-28T12:00:00")
JANE = dict(user_id="jane", agent_id="research-assistant", thread_id="thread_jane_research", roles=("researcher",))

REMEMBER_ROW = {
    "id": "tool_remember", "tool_name": "remember", "tool_handler": "remember", "agent_id": "research-assistant",
    "valid_from": "2026-06-01T00:00:00Z",
    "usage_notes": "Remember a fact the user stated or corrected, by its subject and predicate.",
    "content": "remember(subject, predicate, content, confidence): write or supersede a canonical fact.",
    "tool_schema": {"type": "object", "properties": {
        "subject": {"type": "string", "minLength": 1, "maxLength": 256},
        "predicate": {"type": "string", "minLength": 1, "maxLength": 256},
        "content": {"type": "string", "minLength": 1, "maxLength": 2000},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["subject", "predicate", "content"], "additionalProperties": False},
    "access_policy": {"roles": ["researcher"]},
}


def add_toolbox_row(target, row: dict) -> None:
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        store.put_memory("toolbox", row)
        store.commit()


def mcp(target, *calls: tuple[str, dict]):
    """The tool names the server lists for Jane, and the result of each call, over FastMCP's in-memory client."""
    async def go(manager):
        async with Client(build_server(manager), mode="legacy") as client:
            names = sorted(t.name for t in await client.list_tools())
            return names, [await client.call_tool(name, arguments, raise_on_error=False) for name, arguments in calls]

    with Memory.open(database=target.database, pool_size=3) as memory:
        session = memory.session("acme", **JANE)
        with session.store() as store:
            return asyncio.run(go(MemoryManager(store, session.caller, at=AT, session=session)))


def helios_versions(target) -> list[tuple]:
    return read_as_owner(target, "acme", "SELECT version, status, content FROM ctxasm.entity_memory "
                         "WHERE tenant_id = 'acme' AND id = 'fact_helios_rag_beir_ndcg10' ORDER BY version")


def test_remember_is_absent_unless_a_toolbox_row_enables_it(demo_target):
    names, (result,) = mcp(demo_target, ("remember", {"subject": "model:helios-rag", "predicate": "beir_ndcg10",
                                                      "content": "Helios-RAG scores 0.81 nDCG@10 on BEIR."}))
    assert names == ["clarify", "expand", "lookup_entity", "search_memory"]
    assert result.is_error and "remember" in result.content[0].text, result.content[0].text
    assert [v for v, _, _ in helios_versions(demo_target)] == [1, 2]


def test_remember_supersedes_by_identity_or_writes_a_new_fact(demo_target):
    add_toolbox_row(demo_target, REMEMBER_ROW)
    corrected = "Helios-RAG scores 0.81 nDCG@10 on BEIR (rerun of 2026-09-27)."
    names, (superseded, new, looked_up) = mcp(
        demo_target,
        ("remember", {"subject": "model:helios-rag", "predicate": "beir_ndcg10", "content": corrected,
                      "confidence": 0.9}),
        ("remember", {"subject": "team:research", "predicate": "retriever_in_use",
                      "content": "The research team uses Helios-RAG 2."}),
        ("lookup_entity", {"subject": "model:helios-rag", "predicate": "beir_ndcg10"}))
    assert "remember" in names
    assert not superseded.is_error, superseded.content[0].text
    item = superseded.structured_content["items"][0]
    assert (item["ref"], item["memory_id"], item["version"]) == \
        (["entity", "fact_helios_rag_beir_ndcg10", 3], "fact_helios_rag_beir_ndcg10", 3)
    assert "fact_helios_rag_beir_ndcg10" in superseded.content[0].text
    assert [(v, s) for v, s, _ in helios_versions(demo_target)] == [(1, "superseded"), (2, "superseded"),
                                                                     (3, "active")]
    assert helios_versions(demo_target)[-1][2] == corrected

    assert not new.is_error, new.content[0].text
    fresh = new.structured_content["items"][0]
    assert fresh["version"] == 1 and fresh["memory_id"].startswith("fact_")
    stored = read_as_owner(demo_target, "acme", "SELECT subject, predicate, user_id, content FROM ctxasm.entity_memory "
                           "WHERE tenant_id = 'acme' AND id = %s", (fresh["memory_id"],))
    assert stored == [("team:research", "retriever_in_use", None, "The research team uses Helios-RAG 2.")]
    # the memory tools read what remember wrote
    assert looked_up.structured_content["items"][0]["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 3]


@pytest.mark.parametrize("arguments, field", [
    ({"subject": "model:helios-rag", "predicate": "beir_ndcg10"}, "content"),
    ({"subject": "model:helios-rag", "predicate": "beir_ndcg10", "content": "x", "confidence": 1.5}, "confidence"),
    ({"subject": "", "predicate": "beir_ndcg10", "content": "x"}, "subject"),
    ({"subject": "s", "predicate": "p", "content": "x", "tenant_id": "stripe"}, "tenant_id"),
])
def test_bad_remember_arguments_are_refused_naming_the_field(demo_target, arguments, field):
    add_toolbox_row(demo_target, REMEMBER_ROW)
    _, (result,) = mcp(demo_target, ("remember", arguments))
    assert result.is_error and result.structured_content["error"] == "invalid_argument"
    assert field in result.content[0].text
    assert [v for v, _, _ in helios_versions(demo_target)] == [1, 2]


def test_a_schema_that_lets_an_unknown_argument_through_is_refused(demo_target):
    schema = json.loads(json.dumps(REMEMBER_ROW["tool_schema"]))
    schema["properties"]["source"] = {"type": "string", "maxLength": 100}
    add_toolbox_row(demo_target, {**REMEMBER_ROW, "tool_schema": schema})
    _, (result,) = mcp(demo_target, ("remember", {"subject": "s", "predicate": "p", "content": "x",
                                                  "source": "the user"}))
    assert result.is_error
    assert "invalid_argument: remember.source: not an argument of the remember handler" in result.content[0].text


@pytest.mark.slow  # ctxasm mcp as a process
def test_remember_over_stdio_through_ctxasm_mcp(demo_target):
    """`ctxasm mcp` as a separate process: its manager writes through the command's API session."""
    add_toolbox_row(demo_target, REMEMBER_ROW)
    transport = jane_mcp_over_stdio(demo_target.database)

    async def go():
        async with Client(transport) as client:
            return await client.call_tool("remember", {"subject": "model:helios-rag", "predicate": "beir_ndcg10",
                                                       "content": "Helios-RAG scores 0.80 nDCG@10 on BEIR."},
                                          raise_on_error=False)
    result = asyncio.run(go())
    assert not result.is_error, result.content[0].text
    assert result.structured_content["items"][0]["version"] == 3
    assert helios_versions(demo_target)[-1][1:] == ("active", "Helios-RAG scores 0.80 nDCG@10 on BEIR.")
