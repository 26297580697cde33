"""The MCP server over the Memory Manager, through FastMCP's in-memory client and over real stdio."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest
from fastmcp import Client

from ctxasm import errors
from ctxasm.agent.manager import Caller, MemoryManager
from ctxasm.agent.mcp_server import build_server
from ctxasm.core.compose import WindowSpec
from ctxasm.core.render import memory_id
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import REPO, SCENARIOS, TEST_DATABASE, jane_mcp_over_stdio, read_as_owner

AT = parse_time("2026-09-28T12:00:00")
JANE = Caller("acme", "jane", "research-assistant", "thread_jane_research", ("researcher",))
STRIPE_MARKER = "zebracorn refund ledger"


def demo_rows() -> dict[str, dict]:
    data = json.loads((SCENARIOS / "acme_demo.json").read_text())
    return {m["id"]: m for t in data["tenants"] if t["tenant_id"] == "acme" for m in t["memories"]}


@pytest.fixture()
def store(corpus_once):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        yield PostgresStore(connection)


def call(manager: MemoryManager, name: str, arguments: dict, **client_options):
    async def go():
        async with Client(build_server(manager), mode="legacy", **client_options) as client:
            return await client.call_tool(name, arguments, raise_on_error=False)
    return asyncio.run(go())


def listing(manager: MemoryManager):
    async def go():
        async with Client(build_server(manager), mode="legacy") as client:
            return await client.list_tools(), await client.list_resources(), \
                (await client.read_resource("ctxasm://guidelines"))[0].text
    return asyncio.run(go())


def window_manager(store: PostgresStore, caller: Caller = JANE, thread: str = "thread_jane_research",
                   question: str = "compare what the Letta paper and the AgentCore docs say about memory eviction"):
    spec = WindowSpec(caller.tenant_id, caller.user_id, caller.agent_id, thread, "comparison", question)
    window = assemble(store, spec, AT)
    return window, MemoryManager(store, caller, at=AT, manifest_id=window.manifest_id)


def test_tools_and_resources_come_from_the_database_rows(store):
    tools, resources, guidelines = listing(MemoryManager(store, JANE, at=AT))
    rows = demo_rows()
    assert sorted(t.name for t in tools) == ["clarify", "expand", "lookup_entity", "search_memory"]
    for tool in tools:
        row = rows[f"tool_{tool.name}"]
        assert tool.input_schema == row["tool_schema"]
        assert tool.description == row["usage_notes"]
    assert sorted(str(r.uri) for r in resources) == ["ctxasm://guidelines", "ctxasm://persona"]
    assert rows["guideline_cite_sources"]["content"] in guidelines


def test_each_tool_answers(store, corpus_once):
    window, manager = window_manager(store)

    def fresh() -> MemoryManager:
        """A manager of its own for each tool: one manager's results share the window's tool reserve
        (test_results_are_fitted_into_the_windows_tool_reserve), and the search alone nearly spends it."""
        return MemoryManager(store, JANE, at=AT, manifest_id=window.manifest_id)

    found = call(manager, "search_memory", {"query": "AgentCore event expiry duration range"})
    assert not found.is_error
    items = found.structured_content["items"]
    assert 0 < len(items) <= 8
    assert memory_id(["kb_chunk", "chunk_agentcore_memory_03", 1]) in [i["id"] for i in items]
    assert f'<memory id="{memory_id(["kb_chunk", "chunk_agentcore_memory_03", 1])}" type="kb_chunk"' in found.content[0].text

    entity = call(fresh(), "lookup_entity", {"subject": "model:helios-rag", "predicate": "beir_ndcg10"})
    current, *history = entity.structured_content["items"]
    assert (current["status"], current["content_json"]["value"]) == ("current", 0.78)
    assert [h["content_json"]["value"] for h in history] == [0.92] and history[0]["status"] == "historical"

    degraded = [m for m in window.manifest["memories"] if m["tier"] in ("summary", "pointer")]
    target = degraded[0] if degraded else next(m for m in window.manifest["memories"] if m["slice"] == "evidence")
    expanded = call(fresh(), "expand", {"memory_id": target["id"]})
    assert not expanded.is_error, expanded.content[0].text
    assert expanded.structured_content["items"][0]["ref"] == target["ref"]

    asked = []

    async def answer(message, response_type, params, context):
        asked.append(message)
        return {"value": "the July evaluation"}

    clarified = call(fresh(), "clarify", {"question": "June or July?"}, elicitation_handler=answer)
    assert asked == ["June or July?"]
    event = clarified.structured_content["items"][0]
    assert "the July evaluation" in event["text"]
    row = store.read_event("acme", event["ref"][1])
    assert (row["event_type"], row["content_json"]) == (
        "clarification", {"question": "June or July?", "answer": "the July evaluation"})
    thread = read_as_owner(corpus_once, "acme", "SELECT thread_id FROM ctxasm.conversation_memory WHERE id = %s",
                           (event["ref"][1],))
    assert thread == [("thread_jane_research",)]

    unasked = call(fresh(), "clarify", {"question": "June or July?"})
    assert "ask them in your answer: June or July?" in unasked.content[0].text


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("search_memory", {"query": 5}, "search_memory.query"),
    ("search_memory", {}, "search_memory.arguments"),
    ("search_memory", {"query": ""}, "search_memory.query"),
    ("search_memory", {"query": "x" * 501}, "search_memory.query"),
    ("search_memory", {"query": "eviction", "tenant_id": "stripe"}, "search_memory.arguments"),
    ("lookup_entity", {"subject": "policy:refunds"}, "lookup_entity.arguments"),
    ("expand", {"memory_id": "M1' OR '1'='1"}, "expand.memory_id"),
    ("clarify", {"question": ["a"]}, "clarify.question"),
])
def test_bad_arguments_get_a_validation_error_naming_the_field(store, tool, arguments, field):
    result = call(MemoryManager(store, JANE, at=AT, manifest_id="manifest_none"), tool, arguments)
    assert result.is_error
    assert result.content[0].text.startswith(f"invalid_argument: {field}:")


def test_expand_refuses_an_id_outside_the_callers_window(store):
    window, manager = window_manager(store)
    issued = {m["id"] for m in window.manifest["memories"]}
    outside = memory_id(["kb_chunk", "chunk_retention_erasure_note_00", 1])
    assert outside not in issued
    refused = call(manager, "expand", {"memory_id": outside})
    assert refused.is_error and refused.content[0].text.startswith("not_in_window:")


def test_results_are_fitted_into_the_windows_tool_reserve(store):
    """Over MCP as in the agent loop: each result at most max_tool_result_tokens, lowest-ranked items left out
    first and named, and together at most the window's tool reserve (the demo budget: 1,000 and 1,000)."""
    window, manager = window_manager(store)
    allocation = window.manifest.allocation
    per_result, reserve = allocation["tool_rounds"]["max_tool_result_tokens"], allocation["reserves"]["tools"]
    results = [call(manager, "search_memory", {"query": question}) for question in (
        "memory eviction retention policies of agent frameworks", "how does Letta page memory in and out",
        "AgentCore event expiry duration")]
    spent = 0
    for result in results:
        fitted = result.structured_content
        text = result.content[0].text
        assert not result.is_error and count_tokens(text) == fitted["tokens"] <= per_result
        if "tool reserve exhausted" in text:  # not even a notice fitted what was left: the reserve is spent
            assert fitted["tool_reserve_left"] == 0
        else:
            spent += fitted["tokens"]
            assert fitted["tool_reserve_left"] == reserve - spent
        assert [item["id"] for item in fitted["items"]] == [line.split('"')[1] for line in text.splitlines()
                                                            if line.startswith("<memory ")]
        for left_out in fitted["dropped"]:  # a truncated result names what it left out; a notice says its size
            assert left_out not in [item["id"] for item in fitted["items"]]
            assert left_out in text or fitted["tier"] == "notice"
    tiers = [result.structured_content["tier"] for result in results]
    assert tiers[0] in ("full", "truncated") and set(tiers[1:]) & {"truncated", "notice"} and spent <= reserve


def test_expand_follows_the_threads_latest_window(store):
    """An MCP server started before any window of its thread opens the ids of a window assembled later."""
    caller = Caller("acme", "jane", "research-assistant", "thread_jane_mcp_follow", ("researcher",))
    manager = MemoryManager(store, caller, at=AT, follow_thread=True)
    before = call(manager, "expand", {"memory_id": "M1"})
    assert before.is_error and "no current window" in before.content[0].text
    window, _ = window_manager(store, caller, thread=caller.thread_id)
    opened = call(manager, "expand", {"memory_id": window.manifest["memories"][0]["id"]})
    assert not opened.is_error and manager.current_window() == window.manifest_id


@pytest.mark.slow  # ctxasm mcp as a process
def test_a_real_stdio_round_trip_through_ctxasm_mcp(corpus_once):
    """`ctxasm mcp` as a separate process, spoken to over stdio by an MCP client."""
    transport = jane_mcp_over_stdio(TEST_DATABASE)

    async def go():
        async with Client(transport) as client:
            tools = sorted(t.name for t in await client.list_tools())
            result = await client.call_tool("lookup_entity", {"subject": "model:helios-rag",
                                                              "predicate": "beir_ndcg10"}, raise_on_error=False)
            return tools, result
    tools, result = asyncio.run(go())
    assert tools == ["clarify", "expand", "lookup_entity", "search_memory"]
    assert result.structured_content["items"][0]["content_json"]["value"] == 0.78


def test_ctxasm_mcp_settles_its_start_up_heap_before_it_serves(corpus_once):
    """The served process freezes what start-up made (ctxasm.interfaces.heap): a full collection, which Python
    runs now and then in the middle of some window, would otherwise walk all of it."""
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE, FASTMCP_CHECK_FOR_UPDATES="off")
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxasm.cli", "mcp", "--tenant", "acme", "--user", "jane", "--agent",
         "research-assistant", "--thread", "thread_jane_research", "--role", "researcher"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        assert process.stderr is not None
        started = ""
        while "serving tenant" not in started:
            line = process.stderr.readline()
            assert line, f"ctxasm mcp ended before serving: {started}"
            started += line
    finally:
        process.kill()
        process.wait()
    settled = re.search(r"start-up heap settled \((\d+) objects\)", started)
    assert settled, started
    assert int(settled.group(1)) > 10_000  # the imports alone: modules, classes, schemas


# -- the tests below write; they run last ----------------------------------------------------------------


def test_no_argument_reaches_another_tenant(store):
    store.set_tenant("stripe")
    store.put_memory("kb_document", {"id": "doc_stripe_secret", "title": "Stripe refunds", "collection": "policy",
                                     "source_uri": "stripe://refunds", "valid_from": "2026-01-01T00:00:00Z",
                                     "content": f"Stripe internal: the {STRIPE_MARKER}."})
    budget = demo_rows()["context_context_budget"]
    store.put_memory("guideline", {**{k: v for k, v in budget.items() if k != "type"}, "agent_id": "support-agent"})
    store.put_memory("kb_chunk", {"id": "chunk_stripe_secret", "document_id": "doc_stripe_secret",
                                  "document_version": 1, "chunk_index": 0, "valid_from": "2026-01-01T00:00:00Z",
                                  "content": f"Stripe internal: the {STRIPE_MARKER} for annual plans, eviction."})
    store.commit()
    stripe_window, _ = window_manager(store, Caller("stripe", None, "support-agent", None, ()), thread="t",
                                      question="What is the refund window for annual plans?")
    _, manager = window_manager(store)
    attempts = [
        ("search_memory", {"query": STRIPE_MARKER}),
        ("search_memory", {"query": "refund window annual plans"}),
        ("search_memory", {"query": "' OR tenant_id = 'stripe' --"}),
        ("lookup_entity", {"subject": "policy:refunds", "predicate": "window_days"}),
        ("expand", {"memory_id": stripe_window.manifest["memories"][0]["id"]}),
        ("search_memory", {"query": "refund", "tenant_id": "stripe"}),
    ]
    for tool, arguments in attempts:
        result = call(manager, tool, arguments)
        text = result.content[0].text
        assert STRIPE_MARKER not in text and "30 days after renewal" not in text, (tool, arguments)
        for item in (result.structured_content or {}).get("items", []):
            assert item["ref"][1] != "chunk_stripe_secret"


def test_retired_tool_and_missing_role_are_refused(store):
    store.set_tenant("acme")
    store.delete_memory("toolbox", "tool_expand", "2026-09-01T00:00:00Z")
    store.commit()
    manager = MemoryManager(store, JANE, at=AT, manifest_id="manifest_none")
    tools, _, _ = listing(manager)
    assert "expand" not in [t.name for t in tools]
    # FastMCP looks the tool up again for each call, so it never reaches a retired row; the manager refuses too.
    retired = call(manager, "expand", {"memory_id": "M012345678901"})
    assert retired.is_error and retired.content[0].text.startswith("tool_refused: 'expand'")
    with pytest.raises(errors.ToolRefused, match="tool_refused: 'expand'"):
        asyncio.run(manager.call("expand", {"memory_id": "M012345678901"}))

    no_role = MemoryManager(store, Caller("acme", "jane", "research-assistant", "thread_jane_research", ()), at=AT)
    assert listing(no_role)[0] == []
    refused = call(no_role, "search_memory", {"query": "eviction"})
    assert refused.is_error and refused.content[0].text.startswith("tool_refused:")
    with pytest.raises(errors.ToolRefused, match="access_policy"):
        asyncio.run(no_role.call("search_memory", {"query": "eviction"}))
