"""The GenAI memory spans without a database: names, kind, attributes at the start, the opt-in content, the
record ids a span may carry, error.type, and a caller's operation named by asked_as."""

from __future__ import annotations

import json
from collections.abc import Iterator

import jsonschema
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ctxasm.errors import InvalidArgument, MemoryNotFound
from ctxasm.services import memory_spans as spans
from ctxasm.services import telemetry

from ..conftest import REPO

#: The shape the conventions give `gen_ai.memory.records` (docs/gen-ai/gen-ai-memory-records.json at the commit
#: telemetry.GENAI_CONVENTIONS names), written out here: a list of objects with a content, and an id (string),
#: a score (number) and metadata (object) where given.
MEMORY_RECORDS = {"type": "array", "items": {
    "type": "object", "required": ["content"],
    "properties": {"id": {"type": "string"}, "score": {"type": "number"}, "metadata": {"type": "object"}}}}


@pytest.fixture()
def exporter(monkeypatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv("CTXASM_TELEMETRY_CONTENT", raising=False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)
    provider.shutdown()


def write_one(record_id: str, content: str = "Ann prefers tea.") -> None:
    with spans.memory_span(spans.CREATE_MEMORY, "acme", "add_turn", memory_type="conversation") as span:
        spans.set_records(span, 1, record_id)
        spans.set_content(span, query="what does Ann drink?", records=[spans.memory_record(content, record_id,
                                                                                            score=0.5, role="user")])


def test_a_memory_span_is_named_after_its_operation_a_client_span_with_its_store(exporter):
    write_one("turn_" + "ab" * 16)
    (span,) = exporter.get_finished_spans()
    assert span.name == "create_memory" and span.kind == SpanKind.CLIENT
    assert dict(span.attributes) == {"gen_ai.operation.name": "create_memory", "gen_ai.provider.name": "ctxasm",
                                     "gen_ai.memory.store.id": "acme", "ctxasm.operation": "add_turn",
                                     "ctxasm.memory_type": "conversation", "gen_ai.memory.record.count": 1,
                                     "gen_ai.memory.record.id": "turn_" + "ab" * 16}
    assert span.status.status_code == StatusCode.UNSET


def test_content_only_when_allowed(exporter, monkeypatch):
    write_one("turn_" + "cd" * 16)
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "1")
    write_one("turn_" + "ef" * 16)
    quiet, told = exporter.get_finished_spans()
    assert "gen_ai.memory.query.text" not in quiet.attributes and "gen_ai.memory.records" not in quiet.attributes
    assert told.attributes["gen_ai.memory.query.text"] == "what does Ann drink?"
    records = json.loads(told.attributes["gen_ai.memory.records"])
    jsonschema.validate(records, MEMORY_RECORDS)
    assert records == [{"content": "Ann prefers tea.", "id": "turn_" + "ef" * 16, "score": 0.5,
                        "metadata": {"role": "user"}}]


def test_an_id_a_caller_chose_waits_for_the_content_opt_in(exporter, monkeypatch):
    """ctxasm's own ids (a prefix and random hex digits) say nothing; a chosen one can spell the content out."""
    assert spans.shareable_id("fact_" + "0123456789abcdef" * 2) and spans.shareable_id("budget_" + "9f" * 8)
    assert not spans.shareable_id("fact_helios_rag_beir_ndcg10") and not spans.shareable_id("turn_1")
    write_one("fact_helios_rag_beir_ndcg10")
    (span,) = exporter.get_finished_spans()
    assert span.attributes["gen_ai.memory.record.count"] == 1 and "gen_ai.memory.record.id" not in span.attributes
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "yes")
    assert spans.shareable_id("fact_helios_rag_beir_ndcg10")


def test_a_failure_sets_error_type_to_the_error_code(exporter):
    with pytest.raises(MemoryNotFound):
        with spans.memory_span(spans.DELETE_MEMORY, "acme", "retract"):
            raise MemoryNotFound("memory_not_found: entity fact_x")
    with pytest.raises(KeyError):
        with spans.memory_span(spans.SEARCH_MEMORY, "acme", "lookup"):
            raise KeyError("x")
    coded, plain = exporter.get_finished_spans()
    assert coded.attributes["error.type"] == "memory_not_found" and coded.status.status_code == StatusCode.ERROR
    assert plain.attributes["error.type"] == "KeyError"
    assert [e.name for e in coded.events] == ["exception"]


def test_error_type_names_a_class_by_its_module_unless_it_is_pythons():
    class Refused(Exception):
        pass

    assert telemetry.error_type(InvalidArgument("invalid_argument: x")) == "invalid_argument"
    assert telemetry.error_type(ValueError()) == "ValueError"
    assert telemetry.error_type(Refused()) == f"{__name__}.test_error_type_names_a_class_by_its_module_unless_it_" \
                                              "is_pythons.<locals>.Refused"


def test_asked_as_names_the_next_memory_span_not_those_inside_it(exporter):
    with spans.asked_as(spans.UPDATE_MEMORY):
        with spans.memory_span(spans.UPSERT_MEMORY, "acme", "remember"):
            with spans.memory_span(spans.SEARCH_MEMORY, "acme", "lookup"):
                pass
    with spans.memory_span(spans.UPSERT_MEMORY, "acme", "remember"):
        pass
    inner, outer, after = exporter.get_finished_spans()
    assert (outer.name, outer.attributes["gen_ai.operation.name"]) == ("update_memory", "update_memory")
    assert inner.name == "search_memory" and after.name == "upsert_memory"
    with pytest.raises(ValueError, match="not a memory operation"):
        with spans.asked_as("retrieval"):
            pass


def test_a_retrieval_span_is_named_after_its_data_source(exporter, monkeypatch):
    from ctxasm.core.tool_results import ToolItem, ToolOutput

    found = ToolOutput("search_memory", (ToolItem(ref=("kb_chunk", "chunk_1", 2), type="kb_chunk", status="evidence",
                                                  text="Helios-RAG", extra={"scores": {"fused": 0.032}}),), ())
    for allowed in ("", "1"):
        monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", allowed)
        with spans.retrieval_span("acme", "search", top_k=8) as span:
            spans.describe_retrieval(span, "helios", found)
    quiet, told = exporter.get_finished_spans()
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
