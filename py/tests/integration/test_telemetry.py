"""Spans of a window and of the agent loop's rounds, caught by the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ctxasm.local import pgconn
from ctxasm.services import telemetry
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.engines.postgres import PostgresStore
from ctxasm.core.compose import WindowSpec

from .test_agent_loop import run_transcript

QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."


@pytest.fixture()
def spans(monkeypatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv("CTXASM_TELEMETRY_CONTENT", raising=False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)
    provider.shutdown()


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
    window = assemble_jane(demo_target)
    (span,) = spans.get_finished_spans()
    manifest = window.manifest
    assert span.name == "ctxasm.assemble" and span.status.status_code == StatusCode.UNSET
    attributes = dict(span.attributes)
    assert attributes["ctxasm.manifest_id"] == window.manifest_id
    assert attributes["ctxasm.tenant_id"] == "acme"
    assert attributes["ctxasm.request.hash"] == manifest["request_hash"]
    assert attributes["ctxasm.request.tokens"] == manifest["request_tokens"]
    assert attributes["ctxasm.request.unused"] == manifest["request_limit"] - manifest["request_tokens"]
    assert attributes["gen_ai.request.model"] == manifest["model"]

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
    assert span.attributes["ctxasm.question"] == QUESTION and span.attributes["ctxasm.user_id"] == "jane"
    rows = event(span, "ctxasm.rows")
    assert list(rows["included_ids"]) == [m["id"] for m in window.manifest["memories"]]
    assert "lifecycle entity:fact_helios_rag_beir_ndcg10:1" in rows["excluded"]


def test_a_failed_assembly_is_an_error_span(demo_target, spans):
    with pytest.raises(Exception) as raised:
        assemble_jane(demo_target, question="")
    (span,) = spans.get_finished_spans()
    assert span.name == "ctxasm.assemble" and span.status.status_code == StatusCode.ERROR
    assert type(raised.value).__name__ in span.status.description
    assert [e.name for e in span.events] == ["exception"]


def test_each_round_of_the_agent_loop_is_a_span(corpus_once, spans):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        _, _, run = run_transcript(PostgresStore(connection), "missing_detail")
    finished = spans.get_finished_spans()
    (whole,) = [s for s in finished if s.name == "ctxasm.agent_run"]
    rounds = sorted((s for s in finished if s.name == "ctxasm.agent_round"), key=lambda s: s.attributes["ctxasm.round"])
    windows = [s for s in finished if s.name == "ctxasm.assemble"]
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


def test_spans_follow_the_genai_semantic_conventions(corpus_once, spans):
    """gen_ai.operation.name: a window's assembly is a memory retrieval ("retrieval"), the loop's run an agent
    invocation ("invoke_agent"); the window names its data source and how many memories it retrieved."""
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        _, _, run = run_transcript(PostgresStore(connection), "missing_detail")
    finished = spans.get_finished_spans()
    (window,) = [s for s in finished if s.name == "ctxasm.assemble"]
    (whole,) = [s for s in finished if s.name == "ctxasm.agent_run"]
    assert window.attributes["gen_ai.operation.name"] == "retrieval"
    assert window.attributes["gen_ai.data_source.id"] == "ctxasm:acme"
    assert window.attributes["gen_ai.retrieval.documents.count"] == len(run.window.manifest["memories"])
    assert "gen_ai.retrieval.query.text" not in window.attributes  # content only when asked for
    assert whole.attributes["gen_ai.operation.name"] == "invoke_agent"
