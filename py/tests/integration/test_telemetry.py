"""Spans of a window, of every memory operation and of the agent loop's rounds, caught by the OpenTelemetry SDK's
in-memory exporter: the names, kinds and attributes of the OpenTelemetry GenAI memory conventions, memory content
only when it is allowed, error.type on a failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from ctxasm.api import Memory
from ctxasm.local import pgconn
from ctxasm.services.tenants import DEFAULT_BUDGET
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.engines.postgres import PostgresStore
from ctxasm.core.compose import WindowSpec

from .test_agent_loop import run_transcript

QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."


def jane(question: str = QUESTION) -> WindowSpec:
    return WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", question)


def assemble_jane(target, question: str = QUESTION):
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), jane(question), parse_time("2026-09-28T12:00:00"))


def strings_in(span) -> list[str]:
    """Every string a span carries: attribute values and event attribute values (lists flattened)."""
    values: list = list(span.attributes.values())
    for event in span.events:
        values += list(event.attributes.values())
    flat: list[str] = []
    for value in values:
        flat += [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
    return flat


def event(span, name: str) -> dict:
    (found,) = [e for e in span.events if e.name == name]
    return dict(found.attributes)


def test_a_window_span_has_its_figures_and_no_memory_content(demo_target, spans):
    """A window is a search of the tenant's memory store: span search_memory (ctxasm.operation assemble)."""
    window = assemble_jane(demo_target)
    (span,) = spans.get_finished_spans()
    manifest = window.manifest
    assert span.name == "search_memory" and span.status.status_code == StatusCode.UNSET
    assert span.kind == SpanKind.CLIENT
    attributes = dict(span.attributes)
    assert attributes["gen_ai.operation.name"] == "search_memory" and attributes["ctxasm.operation"] == "assemble"
    assert attributes["gen_ai.provider.name"] == "ctxasm" and attributes["gen_ai.memory.store.id"] == "acme"
    assert attributes["gen_ai.memory.record.count"] == len(manifest["memories"])
    assert attributes["ctxasm.manifest_id"] == window.manifest_id
    assert attributes["ctxasm.tenant_id"] == "acme"
    assert attributes["ctxasm.request.hash"] == manifest["request_hash"]
    assert attributes["ctxasm.request.tokens"] == manifest["request_tokens"]
    assert attributes["ctxasm.request.unused"] == manifest["request_limit"] - manifest["request_tokens"]
    assert attributes["ctxasm.request.model"] == manifest["model"]
    assert not {"gen_ai.memory.query.text", "gen_ai.memory.records", "gen_ai.memory.record.id"} & set(attributes)

    included = event(span, "ctxasm.included")
    assert included["count"] == len(manifest["memories"])
    assert sum(v for k, v in included.items() if k.startswith("slice.")) == len(manifest["memories"])
    assert included["slice.durable_facts"] == sum(m["slice"] == "durable_facts" for m in manifest["memories"])
    excluded = event(span, "ctxasm.excluded")
    assert excluded["rule.lifecycle"] == 1
    tokens = event(span, "ctxasm.tokens")
    allocation = manifest["allocation"]
    assert tokens["memory_instructions"] == allocation["memory_instructions"]
    assert tokens["slice.guidelines"] == allocation["fixed"]["guidelines"]
    assert tokens["slice.evidence"] == allocation["slices"]["evidence"]["used"]
    assert event(span, "ctxasm.request")["hash"] == manifest["request_hash"]

    carried = " ".join(strings_in(span))
    assert "Helios" not in carried and "jane" not in carried and "BEIR" not in carried
    for memory in manifest["memories"]:
        assert memory["id"] not in carried and memory["ref"][1] not in carried


def test_memory_content_only_when_asked_for(demo_target, spans, monkeypatch):
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "1")
    window = assemble_jane(demo_target)
    (span,) = spans.get_finished_spans()
    assert span.attributes["gen_ai.memory.query.text"] == QUESTION and span.attributes["ctxasm.user_id"] == "jane"
    rows = event(span, "ctxasm.rows")
    assert list(rows["included_ids"]) == [m["id"] for m in window.manifest["memories"]]
    assert "lifecycle entity:fact_helios_rag_beir_ndcg10:1" in rows["excluded"]
    # the rows the window shows, as the conventions' memory records: the text at its tier, ranked by priority
    records = json.loads(span.attributes["gen_ai.memory.records"])
    assert [r["metadata"]["citation"] for r in records] == [m["id"] for m in window.manifest["memories"]]
    (fact,) = [r for r in records if r["id"] == "fact_helios_rag_beir_ndcg10"]
    assert "0.78" in fact["content"] and fact["metadata"]["version"] == 2 and fact["metadata"]["tier"] == "full"
    assert fact["score"] == next(m["scores"]["priority"] for m in window.manifest["memories"]
                                 if m["ref"][1] == "fact_helios_rag_beir_ndcg10")
    assert all(r["content"] for r in records)


def test_a_failed_assembly_is_an_error_span(demo_target, spans):
    with pytest.raises(Exception) as raised:
        assemble_jane(demo_target, question="")
    (span,) = spans.get_finished_spans()
    assert span.name == "search_memory" and span.status.status_code == StatusCode.ERROR
    assert type(raised.value).__name__ in span.status.description
    assert span.attributes["error.type"] == "invalid_question" == raised.value.code
    assert span.attributes["gen_ai.memory.store.id"] == "acme"  # set at the start: a failed span has it too
    assert [e.name for e in span.events] == ["exception"]


# -- every memory operation through the API ----------------------------------------------------------------------

LAUNCH_FILE = {"format": "ctxasm-scenario/1", "name": "launch", "tenants": [{
    "tenant_id": "newco", "display_name": "NewCo Research", "memories": [
        {"type": "entity", "id": "fact_launch_city", "subject": "product:launch", "predicate": "city",
         "content": "The launch is in Oslo."}]}]}
#: What the calls below write or ask: none of it may reach a span unless content is allowed.
CONTENT = ("March", "Oslo", "launch date", "When is the launch", "fact_launch_city")
PEOPLE = ("ann", "helper", "launch")


@pytest.fixture()
def memory(clean_db) -> Iterator[Memory]:
    with Memory.open(database=clean_db.database) as memory:
        yield memory


def every_operation(memory: Memory, tmp_path: Path) -> dict:
    """Each memory operation of the API once, on a new tenant; what they returned."""
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(LAUNCH_FILE))
    memory.create_tenant("newco", "NewCo Research")
    ann = memory.session("newco", user_id="ann", agent_id="helper", thread_id="launch")
    budget = ann.set_budget({**DEFAULT_BUDGET, "usable_context": 3000}, scope="agent")
    ann.set_budget({**DEFAULT_BUDGET, "usable_context": 3200}, scope="agent")  # a new version of that row
    memory.load(path)
    memory.load(path, upsert=True)
    turn = ann.add_turn("user", "Our launch moved to March 3.")
    _, fact, _ = ann.remember("product:launch", "date", "The launch is on March 3.")
    ann.remember("product:launch", "date", "The launch is on March 10.")
    looked = ann.lookup("product:launch", "date")
    window = ann.assemble("When is the launch?")
    found = ann.search("launch date")
    ann.retract("entity", "fact_launch_city")
    erased = ann.forget("conversation", turn.id)
    purged = memory.purge_tenant("newco")
    return {"turn": turn, "fact": fact, "looked": looked, "window": window, "found": found, "erased": erased,
            "purged": purged, "budget": budget.chosen}


def test_every_memory_operation_is_a_span_of_the_genai_memory_conventions(memory, spans, tmp_path):
    done = every_operation(memory, tmp_path)
    finished = spans.get_finished_spans()
    assert [(s.name, s.attributes["ctxasm.operation"]) for s in finished] == [
        ("create_memory_store", "tenant_create"), ("upsert_memory", "set_budget"), ("upsert_memory", "set_budget"),
        ("create_memory", "load"), ("upsert_memory", "load"),
        ("create_memory", "add_turn"), ("upsert_memory", "remember"), ("upsert_memory", "remember"),
        ("search_memory", "lookup"), ("search_memory", "assemble"), ("retrieval newco", "search"),
        ("delete_memory", "retract"), ("delete_memory", "forget"), ("delete_memory_store", "tenant_purge")]
    for span in finished:
        assert span.kind == SpanKind.CLIENT and span.status.status_code == StatusCode.UNSET
        assert span.attributes["gen_ai.provider.name"] == "ctxasm"
        assert span.attributes["gen_ai.operation.name"] == span.name.split()[0]
        store = "gen_ai.data_source.id" if span.name.startswith("retrieval") else "gen_ai.memory.store.id"
        assert span.attributes[store] == "newco"
    (tenant, budget, new_budget, load, upsert, turn, first, second, lookup, window, search, retract, forget,
     purge) = [dict(s.attributes) for s in finished]
    # record.id: the ids ctxasm minted (turn_..., fact_..., budget_...), never one a file or a caller chose
    assert turn["gen_ai.memory.record.id"] == done["turn"].id and turn["ctxasm.memory_type"] == "conversation"
    assert first["gen_ai.memory.record.id"] == second["gen_ai.memory.record.id"] == done["fact"]
    assert (first["ctxasm.version"], second["ctxasm.version"]) == (1, 2)
    assert budget["gen_ai.memory.record.id"] == new_budget["gen_ai.memory.record.id"] == done["budget"]["id"]
    assert done["budget"]["id"].startswith("budget_")
    assert forget["gen_ai.memory.record.id"] == done["turn"].id
    assert forget["ctxasm.erased_memories"] == len(done["erased"]["erased"])
    assert "gen_ai.memory.record.id" not in retract  # fact_launch_city: the file chose it
    # record.count: what the operation returned, or tried to write or delete
    assert [a["gen_ai.memory.record.count"] for a in (budget, load, upsert, turn, first, retract, forget)] == [1] * 7
    assert lookup["gen_ai.memory.record.count"] == len(done["looked"].items) == 2
    assert window["gen_ai.memory.record.count"] == len(done["window"].manifest["memories"])
    assert search["ctxasm.documents"] == len(done["found"].items) and search["gen_ai.request.top_k"] == 8.0
    assert (upsert["ctxasm.unchanged"], upsert["ctxasm.changed"]) == (1, 0)
    assert purge["ctxasm.purged_rows"] == done["purged"] > 0
    assert "gen_ai.memory.record.count" not in tenant and "gen_ai.memory.record.count" not in purge

    carried = [value for span in finished for value in strings_in(span)]
    assert not [text for text in CONTENT if any(text in value for value in carried)]
    assert not set(PEOPLE) & set(carried)
    assert not any(key.endswith(("query.text", "memory.records", "retrieval.documents"))
                   for span in finished for key in span.attributes)


def test_memory_content_goes_into_the_spans_only_when_allowed(memory, spans, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "1")
    done = every_operation(memory, tmp_path)
    spans_by = {(s.name, s.attributes["ctxasm.operation"]): s for s in spans.get_finished_spans()}
    turn = spans_by[("create_memory", "add_turn")].attributes
    assert json.loads(turn["gen_ai.memory.records"]) == [
        {"content": "Our launch moved to March 3.", "id": done["turn"].id,
         "metadata": {"role": "user", "turn_index": done["turn"].turn_index}}]
    (fact,) = json.loads(spans_by[("upsert_memory", "remember")].attributes["gen_ai.memory.records"])
    assert fact["content"] == "The launch is on March 10." and fact["metadata"]["version"] == 2
    lookup = spans_by[("search_memory", "lookup")].attributes
    assert lookup["gen_ai.memory.query.text"] == "product:launch date"
    assert [r["content"] for r in json.loads(lookup["gen_ai.memory.records"])] == [
        "The launch is on March 10.", "The launch is on March 3."]
    window = spans_by[("search_memory", "assemble")].attributes
    assert window["gen_ai.memory.query.text"] == "When is the launch?" and window["ctxasm.user_id"] == "ann"
    assert "The launch is on March 10." in window["gen_ai.memory.records"]
    assert spans_by[("retrieval newco", "search")].attributes["gen_ai.retrieval.query.text"] == "launch date"
    assert spans_by[("delete_memory", "retract")].attributes["gen_ai.memory.record.id"] == "fact_launch_city"


def test_a_failing_write_ends_its_span_with_error_type(memory, spans):
    from ctxasm.errors import InvalidClaim, MemoryNotFound

    memory.create_tenant("newco")
    ann = memory.session("newco", user_id="ann")
    with pytest.raises(MemoryNotFound) as missing:
        ann.retract("entity", "fact_nobody_wrote")
    with pytest.raises(InvalidClaim) as refused:
        memory.session("nobody", user_id="ann", thread_id="t").add_turn("user", "hello")
    _, retract, turn = spans.get_finished_spans()
    assert (retract.name, retract.attributes["error.type"]) == ("delete_memory", missing.value.code) \
        == ("delete_memory", "memory_not_found")
    assert retract.attributes["gen_ai.memory.record.count"] == 1 and retract.status.status_code == StatusCode.ERROR
    assert (turn.name, turn.attributes["error.type"]) == ("create_memory", refused.value.code) \
        == ("create_memory", "invalid_claim")
    assert turn.attributes["gen_ai.memory.store.id"] == "nobody"


def test_the_adapters_calls_are_named_as_their_callers_asked(memory, spans):
    """Mem0's add creates and its update updates (both through Session.remember, an upsert); LangGraph's put is
    an upsert; their searches rank the caller's memories: search_memory."""
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    added = m.add("I'm vegetarian and allergic to nuts.", user_id="alex")["results"][0]["id"]
    m.update(added, "Alex is vegetarian.")
    found = m.search("What can Alex eat?", user_id="alex")["results"]
    m.delete(added)
    calls = [(s.name, s.attributes["ctxasm.operation"]) for s in spans.get_finished_spans()]
    assert calls == [("create_memory_store", "tenant_create"), ("create_memory", "remember"),
                     ("update_memory", "remember"), ("search_memory", "mem0.search"), ("delete_memory", "retract")]
    search = spans.get_finished_spans()[3]
    assert search.attributes["gen_ai.memory.record.count"] == len(found) == 1

    pytest.importorskip("langgraph.store.base")
    from ctxasm.adapters.langgraph_store import CtxasmStore

    spans.clear()
    store = CtxasmStore("newco", memory=memory)
    store.put(("alex", "preferences"), "food", {"diet": "vegetarian"})
    store.put(("alex", "preferences"), "food", {"diet": "vegan"})
    store.search(("alex",), query="what does alex eat?")
    store.delete(("alex", "preferences"), "food")
    calls = [(s.name, s.attributes["ctxasm.operation"]) for s in spans.get_finished_spans()]
    assert calls == [("upsert_memory", "remember"), ("upsert_memory", "remember"),
                     ("search_memory", "langgraph.search"), ("delete_memory", "retract")]


def test_each_round_of_the_agent_loop_is_a_span(corpus_once, spans):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        _, _, run = run_transcript(PostgresStore(connection), "missing_detail")
    finished = spans.get_finished_spans()
    (whole,) = [s for s in finished if s.name == "ctxasm.agent_run"]
    rounds = sorted((s for s in finished if s.name == "ctxasm.agent_round"), key=lambda s: s.attributes["ctxasm.round"])
    windows = [s for s in finished if s.attributes.get("ctxasm.operation") == "assemble"]
    assert len(windows) == 1 and windows[0].parent.span_id == whole.context.span_id
    assert [s.parent.span_id for s in rounds] == [whole.context.span_id] * 2
    assert whole.attributes["ctxasm.status"] == run.status and whole.attributes["ctxasm.rounds"] == 2
    assert whole.attributes["ctxasm.tool_reserve.used"] == run.tool_tokens_used

    first, second = rounds
    assert first.attributes["ctxasm.manifest_id"] == run.window.manifest_id
    assert second.attributes["ctxasm.manifest_id"] == run.rounds[1].manifest_id
    assert second.attributes["ctxasm.request.hash"] == run.rounds[1].request_hash
    assert first.attributes["ctxasm.tool_calls"] == 1 and second.attributes["ctxasm.tool_calls"] == 0
    (call,) = run.rounds[0].tool_calls
    tool_call = event(first, "ctxasm.tool_call")
    assert tool_call == {"tool": "search_memory", "call_id": call["call_id"], "tokens": call["tokens"],
                         "tier": call["tier"], "items": len(call["items"]), "dropped": len(call["dropped"])}
    assert first.attributes["ctxasm.tool_reserve.used"] + first.attributes["ctxasm.tool_reserve.left"] == \
        run.manifests[0]["allocation"]["reserves"]["tools"]
    assert "AgentCore" not in " ".join(s for span in finished for s in strings_in(span))


def test_the_agent_loop_s_memory_operations_follow_the_genai_conventions(corpus_once, spans):
    """The run is an agent invocation (invoke_agent); its window a search_memory; the search tool a retrieval from
    the tenant's knowledge base; each request, response and tool result it records, and the turns it writes back,
    a create_memory of one record, named by the id ctxasm minted for it."""
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        _, _, run = run_transcript(PostgresStore(connection), "missing_detail")
    finished = spans.get_finished_spans()
    (whole,) = [s for s in finished if s.name == "ctxasm.agent_run"]
    assert whole.attributes["gen_ai.operation.name"] == "invoke_agent"
    (window,) = [s for s in finished if s.attributes.get("ctxasm.operation") == "assemble"]
    assert window.name == "search_memory" and window.attributes["gen_ai.memory.store.id"] == "acme"

    (search,) = [s for s in finished if s.attributes.get("gen_ai.operation.name") == "retrieval"]
    (call,) = run.rounds[0].tool_calls
    assert search.name == "retrieval acme" and search.kind == SpanKind.CLIENT
    assert search.attributes["gen_ai.data_source.id"] == "acme" and search.attributes["gen_ai.request.top_k"] == 8.0
    assert search.attributes["ctxasm.documents"] == len(call["items"]) + len(call["dropped"])
    assert "gen_ai.retrieval.query.text" not in search.attributes  # content only when asked for

    written = [s for s in finished if s.name == "create_memory"]
    assert {s.attributes["ctxasm.operation"] for s in written} == {"record_event", "add_turn"}
    recorded = {s.attributes["gen_ai.memory.record.id"]: s.attributes.get("ctxasm.event_type") for s in written}
    for current in run.rounds:
        assert recorded[current.request_record] == "provider_request"
        assert recorded[current.response_record] == "model_response"
    assert [recorded[t.id] for t in run.turns] == [None, None] and len(run.turns) == 2
    assert all(s.attributes["gen_ai.memory.record.count"] == 1 and s.attributes["gen_ai.memory.store.id"] == "acme"
               for s in written)
