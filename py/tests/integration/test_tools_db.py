"""The database half of the MCP tools (ctx_tools) on the real database, through the app role: active tools,
bounded authorized search, entity lookup with history, and expand of memories a recorded window issued."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ctxasm import errors
from ctxasm.core.compose import WindowSpec
from ctxasm.core.render import memory_id
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.ml import embedding
from ctxasm.services import load
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import SCENARIOS

AT = parse_time("2026-09-28T12:00:00")
AGENT = "research-assistant"
QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
SEARCH = "Helios-RAG BEIR nDCG@10 benchmark"
DEMO = json.loads((SCENARIOS / "acme_demo.json").read_text())


def demo_memories(tenant: str, kind: str) -> list[dict]:
    return [m for t in DEMO["tenants"] if t["tenant_id"] == tenant for m in t["memories"] if m["type"] == kind]


@pytest.fixture()
def store(demo_target) -> Iterator[PostgresStore]:
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        yield PostgresStore(connection)


def write(store: PostgresStore, tenant: str, kind: str, record: dict) -> None:
    store.set_tenant(tenant)
    store.put_memory(kind, record)
    store.commit()


def tool_row(tool_id: str, name: str, **fields) -> dict:
    return {"id": tool_id, "tool_name": name, "tool_handler": name, "content": f"{name}(): a test tool.",
            "usage_notes": "Used by the ctx_tools tests only.", "valid_from": "2026-06-01T00:00:00Z",
            "tool_schema": {"type": "object", "properties": {}}, **fields}


# ---------------------------------------------------------------------------------------------------------
# active_tools


def test_active_tools_lists_the_demo_tools_with_their_schemas(store):
    tools = store.active_tools("acme", "jane", AGENT, AT)
    expected = sorted(demo_memories("acme", "toolbox"), key=lambda m: m["tool_name"])
    assert [t["tool_name"] for t in tools] == [m["tool_name"] for m in expected]
    for tool, row in zip(tools, expected):
        assert tool["ref"] == ["toolbox", row["id"], 1]
        assert tool["tool_handler"] == row["tool_handler"]
        assert tool["tool_schema"] == row["tool_schema"]
        assert tool["usage_notes"] == row["usage_notes"]
        assert tool["access_policy"] == row.get("access_policy")
    assert store.round_trips == 1


def test_active_tools_hides_deleted_expired_future_and_other_agent_tools(store):
    write(store, "acme", "toolbox", tool_row("tool_gone", "gone_tool"))
    store.set_tenant("acme")
    store.delete_memory("toolbox", "tool_gone", "2026-07-01T00:00:00Z")
    store.commit()
    write(store, "acme", "toolbox", tool_row("tool_old", "old_tool", valid_until="2026-09-01T00:00:00Z"))
    write(store, "acme", "toolbox", tool_row("tool_later", "later_tool", valid_from="2026-10-01T00:00:00Z"))
    write(store, "acme", "toolbox", tool_row("tool_other", "other_tool", agent_id="billing-assistant"))
    write(store, "acme", "toolbox", tool_row("tool_bob", "bob_tool", user_id="bob"))
    write(store, "acme", "toolbox", tool_row("tool_jane", "jane_tool", user_id="jane", access_policy=None))

    names = [t["tool_name"] for t in store.active_tools("acme", "jane", AGENT, AT)]
    assert "jane_tool" in names and len(names) == len(demo_memories("acme", "toolbox")) + 1
    for hidden in ("gone_tool", "old_tool", "later_tool", "other_tool", "bob_tool"):
        assert hidden not in names
    # the expired tool was in effect before it expired, the future one is after it starts
    assert "old_tool" in [t["tool_name"] for t in store.active_tools("acme", "jane", AGENT, parse_time("2026-08-01"))]
    assert "later_tool" in [t["tool_name"] for t in store.active_tools("acme", "jane", AGENT,
                                                                      parse_time("2026-10-02"))]
    # the narrower of two rows with one tool name wins, as in the window's tools slice
    write(store, "acme", "toolbox", tool_row("tool_clarify_jane", "clarify", user_id="jane", agent_id=AGENT,
                                             usage_notes="Jane's own clarify."))
    clarify = next(t for t in store.active_tools("acme", "jane", AGENT, AT) if t["tool_name"] == "clarify")
    assert clarify["ref"] == ["toolbox", "tool_clarify_jane", 1] and clarify["usage_notes"] == "Jane's own clarify."


def test_active_tools_are_per_tenant_and_need_a_time(store):
    assert store.active_tools("stripe", None, AGENT, AT) == []
    # the routine needs a time; the adapter's None is the database's now
    with pytest.raises(errors.InvalidArgument, match="in_evaluation_time"):
        store._tool_call("acme", "SELECT ctx_tools.active_tools(in_user_id => %s, in_agent_id => %s, "
                         "in_evaluation_time => NULL)", ("jane", AGENT))
    assert store.active_tools("acme", "jane", AGENT, None) == store.active_tools("acme", "jane", AGENT, None)


def test_tools_need_the_tenant(store):
    with pytest.raises(errors.TenantNotSet), store._errors():
        store.connection.execute("SELECT ctx_tools.active_tools(in_user_id => 'jane', in_agent_id => %s, "
                                 "in_evaluation_time => now())", (AGENT,))
    store.rollback()


# ---------------------------------------------------------------------------------------------------------
# search_memory


@pytest.fixture()
def second_tenant(demo_target) -> str:
    """A tenant whose rows reuse Acme's ids and the query's words, with a chunk embedded like the query."""
    document = {"tenants": [{"tenant_id": "globex", "display_name": "Globex Research", "memories": [
        {"type": "kb_document", "id": "doc_helios_rag_paper", "title": "Globex Helios-RAG BEIR nDCG@10 benchmark",
         "valid_from": "2026-01-01T00:00:00Z", "content": "Globex secret: Helios-RAG BEIR nDCG@10 benchmark."},
        {"type": "kb_chunk", "id": "chunk_globex_helios", "document_id": "doc_helios_rag_paper", "chunk_index": 0,
         "valid_from": "2026-01-01T00:00:00Z", "content": "Globex secret chunk: Helios-RAG BEIR nDCG@10 benchmark.",
         "embedding": embedding.embed_one(SEARCH)},
    ]}]}
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        load.load_document(PostgresStore(connection), document, "globex")
    return "globex"


def test_search_memory_is_bounded_ordered_and_authorized(store, second_tenant):
    write(store, "acme", "kb_document", {"id": "doc_bob_notes", "user_id": "bob", "title": "Bob's Helios-RAG notes",
                                         "valid_from": "2026-06-01T00:00:00Z",
                                         "content": "Helios-RAG BEIR nDCG@10 benchmark notes for Bob only."})
    write(store, "acme", "kb_document", {"id": "doc_withdrawn", "title": "Withdrawn Helios-RAG BEIR report",
                                         "valid_from": "2026-06-01T00:00:00Z",
                                         "content": "Helios-RAG BEIR nDCG@10 benchmark, withdrawn."})
    store.set_tenant("acme")
    store.delete_memory("kb_document", "doc_withdrawn", "2026-07-01T00:00:00Z")
    store.commit()

    vector = embedding.vector_literal(embedding.embed_one(SEARCH))
    result = store.search_memory("acme", "jane", AGENT, "thread_jane_research", AT, SEARCH, vector, 20)
    assert result["retrieval"] == "hybrid-bm25-hnsw-rrf-60"
    items = result["items"]
    acme_docs = {m["id"]: m for m in demo_memories("acme", "kb_document")}
    assert {tuple(i["ref"]) for i in items} == {("kb_document", d, 1) for d in acme_docs}
    for item in items:
        row = acme_docs[item["ref"][1]]
        assert (item["title"], item["content"]) == (row["title"], row["content"])
        assert item["collection"] == row.get("collection") and item["source"] == row.get("source_uri")
        assert "Globex" not in item["content"]
        assert set(item["scores"]) == {"lexical_rank", "vector_rank", "fused"}
    fused = [i["scores"]["fused"] for i in items]
    assert fused == sorted(fused, reverse=True) and all(f > 0 for f in fused)

    one = store.search_memory("acme", "jane", AGENT, None, AT, SEARCH, None, 1)
    assert one["retrieval"] == "lexical-bm25" and len(one["items"]) == 1
    assert one["items"][0]["scores"]["vector_rank"] is None

    # the second tenant finds its own rows, the same ids with its own text, and nothing of Acme's
    theirs = store.search_memory(second_tenant, None, None, None, AT, SEARCH, vector, 20)["items"]
    assert {tuple(i["ref"]) for i in theirs} == {("kb_document", "doc_helios_rag_paper", 1),
                                                 ("kb_chunk", "chunk_globex_helios", 1)}
    assert all("Globex" in i["content"] for i in theirs)
    chunk = next(i for i in theirs if i["ref"][0] == "kb_chunk")
    assert chunk["scores"]["vector_rank"] == 1 and chunk["title"] == "Globex Helios-RAG BEIR nDCG@10 benchmark"


@pytest.mark.parametrize(("limit", "query", "embedding_text", "field"), [
    (0, SEARCH, None, "in_limit"),
    (21, SEARCH, None, "in_limit"),
    (None, SEARCH, None, "in_limit"),
    (5, "", None, "in_query"),
    (5, "   ", None, "in_query"),
    (5, "x" * 501, None, "in_query"),
    (5, None, None, "in_query"),
    (5, SEARCH, "[1, 2, 3]", "in_query_embedding"),
    (5, SEARCH, "not a vector", "in_query_embedding"),
])
def test_search_memory_rejects_bad_arguments_naming_the_field(store, limit, query, embedding_text, field):
    with pytest.raises(errors.InvalidArgument, match=rf"^invalid_argument: {field} "):
        store.search_memory("acme", "jane", AGENT, None, AT, query, embedding_text, limit)
    store.rollback()


def test_search_memory_accepts_the_bounds(store):
    query = ("Helios-RAG BEIR " * 40)[:500]
    assert len(store.search_memory("acme", "jane", AGENT, None, AT, query, None, 20)["items"]) == 2
    assert len(store.search_memory("acme", "jane", AGENT, None, AT, SEARCH, None, 1)["items"]) == 1


# ---------------------------------------------------------------------------------------------------------
# lookup_entity


def test_lookup_entity_gives_the_corrected_value_and_its_history(store):
    result = store.lookup_entity("acme", "jane", AGENT, AT, "model:helios-rag", "beir_ndcg10")
    current = result["current"]
    assert current["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 2]
    assert current["content_json"]["value"] == 0.78 and current["confidence"] == 0.78
    assert current["valid_from"].startswith("2026-08-17T10:00:00")
    history = result["history"]
    assert [h["ref"] for h in history] == [["entity", "fact_helios_rag_beir_ndcg10", 1]]
    assert history[0]["content_json"]["value"] == 0.92 and history[0]["status"] == "superseded"
    assert history[0]["valid_from"].startswith("2026-05-12T09:00:00")
    assert history[0]["valid_to"] == current["valid_from"]


def test_lookup_entity_judges_at_the_evaluation_time(store):
    before = store.lookup_entity("acme", "jane", AGENT, parse_time("2026-07-01T00:00:00"), "model:helios-rag",
                                 "beir_ndcg10")
    assert before["current"]["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 1]
    assert before["current"]["content_json"]["value"] == 0.92 and before["history"] == []


def test_lookup_entity_lists_retired_rows_of_the_same_claim(store):
    claim = {"subject": "model:helios-rag", "predicate": "beir_ndcg10"}
    write(store, "acme", "entity", {"id": "fact_helios_old_report", **claim, "valid_from": "2026-04-01T00:00:00Z",
                                    "valid_until": "2026-05-01T00:00:00Z", "content": "An early report: 0.90.",
                                    "content_json": {"value": 0.90}})
    write(store, "acme", "entity", {"id": "fact_helios_typo", **claim, "valid_from": "2026-05-20T00:00:00Z",
                                    "content": "A typo: 9.2.", "content_json": {"value": 9.2}})
    store.set_tenant("acme")
    store.delete_memory("entity", "fact_helios_typo", "2026-05-21T00:00:00Z")
    store.commit()
    write(store, "acme", "entity", {"id": "fact_helios_bob", **claim, "user_id": "bob",
                                    "valid_from": "2026-09-01T00:00:00Z", "content": "Bob's own: 0.5."})
    result = store.lookup_entity("acme", "jane", AGENT, AT, "model:helios-rag", "beir_ndcg10")
    assert result["current"]["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 2]
    assert [(h["ref"][1], h["status"]) for h in result["history"]] == [
        ("fact_helios_typo", "deleted"), ("fact_helios_rag_beir_ndcg10", "superseded"),
        ("fact_helios_old_report", "expired")]
    assert result["history"][0]["valid_to"].startswith("2026-05-21T00:00:00")


def test_lookup_entity_of_an_unknown_claim_is_empty(store):
    assert store.lookup_entity("acme", "jane", AGENT, AT, "model:helios-rag", "no_such_metric") == \
        {"current": None, "history": []}
    # another tenant's claim is unknown here
    assert store.lookup_entity("acme", "jane", AGENT, AT, "policy:refunds", "window_days") == \
        {"current": None, "history": []}
    with pytest.raises(errors.InvalidArgument, match="in_subject"):
        store.lookup_entity("acme", "jane", AGENT, AT, " ", "beir_ndcg10")
    store.rollback()
    with pytest.raises(errors.InvalidArgument, match="in_predicate"):
        store.lookup_entity("acme", "jane", AGENT, AT, "model:helios-rag", None)
    store.rollback()


# ---------------------------------------------------------------------------------------------------------
# expand


@pytest.fixture()
def window(demo_target):
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id=AGENT, thread_id="thread_jane_research",
                      intent="fact_check", question=QUESTION)
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, AT)


def entry_of(window, kind: str, row_id: str) -> dict:
    return next(m for m in window.manifest["memories"] if m["ref"][:2] == [kind, row_id])


def test_expand_returns_the_full_text_of_an_issued_memory(store, window):
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    result = store.expand("acme", window.manifest_id, fact["id"], AT)
    row = next(m for m in demo_memories("acme", "entity") if m["id"] == "fact_helios_rag_beir_ndcg10")
    current = row["versions"][-1]["content"]
    assert result == {"memory_id": fact["id"], "ref": ["entity", "fact_helios_rag_beir_ndcg10", 2],
                      "type": "entity", "title": "model:helios-rag", "content": current,
                      "tier_in_window": fact["tier"]}
    issued = [m["id"] for m in window.manifest["memories"]]
    assert fact["id"] != memory_id(fact["ref"]) and len(set(issued)) == len(issued)  # a window's own short ids
    for entry in window.manifest["memories"]:
        expanded = store.expand("acme", window.manifest_id, entry["id"], AT)
        assert (expanded["ref"], expanded["tier_in_window"]) == (entry["ref"], entry["tier"])


def test_expand_refuses_an_id_not_issued_in_the_window(store, window):
    version_1 = memory_id(["entity", "fact_helios_rag_beir_ndcg10", 1])  # excluded, so never issued
    assert version_1 not in {m["id"] for m in window.manifest["memories"]}
    with pytest.raises(errors.NotInWindow, match=version_1):
        store.expand("acme", window.manifest_id, version_1, AT)
    store.rollback()
    with pytest.raises(errors.NotInWindow, match="manifest_nope"):
        store.expand("acme", "manifest_nope", version_1, AT)
    store.rollback()


def test_expand_refuses_another_tenants_manifest(store, window):
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    with pytest.raises(errors.NotInWindow, match=fact["id"]):
        store.expand("stripe", window.manifest_id, fact["id"], AT)
    store.rollback()


def test_expand_refuses_after_the_source_is_superseded(store, window):
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    store.set_tenant("acme")
    store.supersede("entity", "fact_helios_rag_beir_ndcg10", {"content": "Helios-RAG: 0.79 after a re-run."})
    store.commit()
    with pytest.raises(errors.SourceUnavailable, match=rf"{fact['id']}.*superseded"):
        store.expand("acme", window.manifest_id, fact["id"], AT)
    store.rollback()


def test_expand_refuses_after_the_source_is_deleted(store, window):
    turn = next(m for m in window.manifest["memories"] if m["type"] == "conversation")
    store.set_tenant("acme")
    store.delete_memory(turn["ref"][0], turn["ref"][1])
    store.commit()
    with pytest.raises(errors.SourceUnavailable, match=rf"{turn['id']}.*was deleted"):
        store.expand("acme", window.manifest_id, turn["id"], AT)
    store.rollback()
    # the window's other memories are still there
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    assert store.expand("acme", window.manifest_id, fact["id"], AT)["ref"] == fact["ref"]


def test_expand_judges_the_source_at_the_evaluation_time(store, window):
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    with pytest.raises(errors.SourceUnavailable, match=rf"{fact['id']}.*not yet in effect"):
        store.expand("acme", window.manifest_id, fact["id"], parse_time("2026-08-01T00:00:00"))
    store.rollback()
    with pytest.raises(errors.InvalidArgument, match="in_evaluation_time"):
        store._tool_call("acme", "SELECT ctx_tools.expand(in_manifest_id => %s, in_memory_id => %s, "
                         "in_evaluation_time => NULL)", (window.manifest_id, fact["id"]))
    store.rollback()


def test_expand_refuses_an_erased_source(store, window):
    fact = entry_of(window, "entity", "fact_helios_rag_beir_ndcg10")
    store.set_tenant("acme")
    store.erase("entity", "fact_helios_rag_beir_ndcg10")
    store.commit()
    with pytest.raises(errors.SourceUnavailable, match=rf"{fact['id']}.*erased"):
        store.expand("acme", window.manifest_id, fact["id"], AT)
    store.rollback()
