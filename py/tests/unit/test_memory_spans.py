"""The GenAI memory spans without a database: names, kind, attributes at the start, the opt-in content, the
record ids a span may carry, error.type, and a caller's operation named by asked_as."""

from __future__ import annotations

import json

import jsonschema
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from ctxasm.errors import InvalidArgument, MemoryNotFound
from ctxasm.services import memory_spans
from ctxasm.services import telemetry

from ..conftest import REPO

#: The shape the conventions give `gen_ai.memory.records` (docs/gen-ai/gen-ai-memory-records.json at the commit
#: telemetry.GENAI_CONVENTIONS names), written out here: a list of objects with a content, and an id (string),
#: a score (number) and metadata (object) where given.
MEMORY_RECORDS = {"type": "array", "items": {
    "type": "object", "required": ["content"],
    "properties": {"id": {"type": "string"}, "score": {"type": "number"}, "metadata": {"type": "object"}}}}


def write_one(record_id: str, content: str = "Ann prefers tea.") -> None:
    with memory_spans.memory_span(memory_spans.CREATE_MEMORY, "acme", "add_turn", memory_type="conversation") as span:
        memory_spans.set_records(span, 1, record_id)
        record = memory_spans.memory_record(content, record_id, score=0.5, role="user")
        memory_spans.set_content(span, query="what does Ann drink?", records=[record])


def test_a_memory_span_is_named_after_its_operation_a_client_span_with_its_store(spans):
    write_one("turn_" + "ab" * 16)
    (span,) = spans.get_finished_spans()
    assert span.name == "create_memory" and span.kind == SpanKind.CLIENT
    assert dict(span.attributes) == {"gen_ai.operation.name": "create_memory", "gen_ai.provider.name": "ctxasm",
                                     "gen_ai.memory.store.id": "acme", "ctxasm.operation": "add_turn",
                                     "ctxasm.memory_type": "conversation", "gen_ai.memory.record.count": 1,
                                     "gen_ai.memory.record.id": "turn_" + "ab" * 16}
    assert span.status.status_code == StatusCode.UNSET


def test_content_only_when_allowed(spans, monkeypatch):
    write_one("turn_" + "cd" * 16)
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "1")
    write_one("turn_" + "ef" * 16)
    quiet, told = spans.get_finished_spans()
    assert "gen_ai.memory.query.text" not in quiet.attributes and "gen_ai.memory.records" not in quiet.attributes
    assert told.attributes["gen_ai.memory.query.text"] == "what does Ann drink?"
    records = json.loads(told.attributes["gen_ai.memory.records"])
    jsonschema.validate(records, MEMORY_RECORDS)
    assert records == [{"content": "Ann prefers tea.", "id": "turn_" + "ef" * 16, "score": 0.5,
                        "metadata": {"role": "user"}}]


def test_an_id_a_caller_chose_waits_for_the_content_opt_in(spans, monkeypatch):
    """ctxasm's own ids (a prefix and random hex digits) say nothing; a chosen one can spell the content out."""
    shareable = memory_spans.shareable_id
    assert shareable("fact_" + "0123456789abcdef" * 2) and shareable("budget_" + "9f" * 8)
    assert not shareable("fact_helios_rag_beir_ndcg10") and not shareable("turn_1")
    write_one("fact_helios_rag_beir_ndcg10")
    (span,) = spans.get_finished_spans()
    assert span.attributes["gen_ai.memory.record.count"] == 1 and "gen_ai.memory.record.id" not in span.attributes
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "yes")
    assert memory_spans.shareable_id("fact_helios_rag_beir_ndcg10")


def test_a_failure_sets_error_type_to_the_error_code(spans):
    sent = "fact_" + "x"  # a value the caller sent, quoted by the error (not a literal of the raising line)
    with pytest.raises(MemoryNotFound):
        with memory_spans.memory_span(memory_spans.DELETE_MEMORY, "acme", "retract"):
            raise MemoryNotFound(f"memory_not_found: entity {sent}")
    with pytest.raises(KeyError):
        with memory_spans.memory_span(memory_spans.SEARCH_MEMORY, "acme", "lookup"):
            raise KeyError("x")
    coded, plain = spans.get_finished_spans()
    assert coded.attributes["error.type"] == "memory_not_found" and coded.status.status_code == StatusCode.ERROR
    assert plain.attributes["error.type"] == "KeyError"
    assert [e.name for e in coded.events] == ["exception"]
    # without content capture, the event carries no text of the error: it may quote what the caller sent
    event = coded.events[0].attributes
    assert event["exception.message"] == "memory_not_found" and "fact_x" not in event["exception.stacktrace"]


def test_with_content_capture_the_exception_event_has_the_errors_text(spans, monkeypatch):
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "1")
    with pytest.raises(MemoryNotFound):
        with memory_spans.memory_span(memory_spans.DELETE_MEMORY, "acme", "retract"):
            raise MemoryNotFound("memory_not_found: entity fact_x")
    (span,) = spans.get_finished_spans()
    assert span.events[0].attributes["exception.message"] == "memory_not_found: entity fact_x"


def test_error_type_names_a_class_by_its_module_unless_it_is_pythons():
    class Refused(Exception):
        pass

    assert telemetry.error_type(InvalidArgument("invalid_argument: x")) == "invalid_argument"
    assert telemetry.error_type(ValueError()) == "ValueError"
    assert telemetry.error_type(Refused()) == f"{__name__}.test_error_type_names_a_class_by_its_module_unless_it_" \
                                              "is_pythons.<locals>.Refused"


def test_asked_as_names_the_next_memory_span_not_those_inside_it(spans):
    with memory_spans.asked_as(memory_spans.UPDATE_MEMORY):
        with memory_spans.memory_span(memory_spans.UPSERT_MEMORY, "acme", "remember"):
            with memory_spans.memory_span(memory_spans.SEARCH_MEMORY, "acme", "lookup"):
                pass
    with memory_spans.memory_span(memory_spans.UPSERT_MEMORY, "acme", "remember"):
        pass
    inner, outer, after = spans.get_finished_spans()
    assert (outer.name, outer.attributes["gen_ai.operation.name"]) == ("update_memory", "update_memory")
    assert inner.name == "search_memory" and after.name == "upsert_memory"
    with pytest.raises(ValueError, match="not a memory operation"):
        with memory_spans.asked_as("retrieval"):
            pass


def test_a_retrieval_span_is_named_after_its_data_source(spans, monkeypatch):
    from ctxasm.core.tool_results import ToolItem, ToolOutput

    found = ToolOutput("search_memory", (ToolItem(ref=("kb_chunk", "chunk_1", 2), type="kb_chunk", status="evidence",
                                                  text="Helios-RAG", extra={"scores": {"fused": 0.032}}),), ())
    for allowed in ("", "1"):
        monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", allowed)
        with memory_spans.retrieval_span("acme", "search", top_k=8) as span:
            memory_spans.describe_retrieval(span, "helios", found)
    quiet, told = spans.get_finished_spans()
    assert quiet.name == "retrieval acme" and quiet.kind == SpanKind.CLIENT
    assert dict(quiet.attributes) == {"gen_ai.operation.name": "retrieval", "gen_ai.provider.name": "ctxasm",
                                      "gen_ai.data_source.id": "acme", "ctxasm.operation": "search",
                                      "gen_ai.request.top_k": 8.0, "ctxasm.documents": 1}
    assert told.attributes["gen_ai.retrieval.query.text"] == "helios"
    assert json.loads(told.attributes["gen_ai.retrieval.documents"]) == [
        {"id": "chunk_1", "score": 0.032, "type": "kb_chunk", "version": 2}]


def test_the_conventions_followed_are_the_ones_the_docs_name():
    commit = telemetry.GENAI_CONVENTIONS.rpartition("@")[2]
    assert len(commit) == 40 and commit in (REPO / "docs" / "telemetry.md").read_text()
