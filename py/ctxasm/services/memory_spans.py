"""Memory operations as spans of the OpenTelemetry GenAI conventions (docs/telemetry.md has the table).

The conventions: telemetry.GENAI_CONVENTIONS, docs/gen-ai/gen-ai-spans.md (section Memory, span type
gen_ai.memory.client, and Retrievals) and the attribute registry docs/registry/attributes/gen-ai.md.

- One span per memory operation, named after its `gen_ai.operation.name`: create_memory_store, search_memory,
  create_memory, update_memory, upsert_memory, delete_memory, delete_memory_store. The name says what the caller
  asked for, not what happened: `remember` supersedes the current value or writes a new fact as it finds, the
  caller does not choose, so it is an upsert (a layer above the API that knows better says so: `asked_as`).
- Kind CLIENT: the memory lives in the database, a process of its own (the conventions keep INTERNAL for a
  memory system that runs in its caller's process).
- `gen_ai.provider.name` is `ctxasm`, the service that handles the memory; the `ctxasm.*` attributes are its own.
  `ctxasm.operation` names ctxasm's call (assemble, add_turn, remember, ...), several of which share an operation.
- `gen_ai.memory.store.id` is the tenant id: a tenant's memory is one store (its rows in every memory table,
  apart from every other tenant's).
- The knowledge-base search (the search_memory tool, Session.search) is a retrieval: span `retrieval
  {gen_ai.data_source.id}`, the data source the tenant's knowledge base, named by the tenant id.

Privacy, ctxasm's rule (stricter than the conventions' opt-in attributes): without CTXASM_TELEMETRY_CONTENT no
query text, no record content, no user, agent or thread id, and a record's id only when ctxasm minted it (a
prefix and random hex digits, which say nothing of the record): an id a caller or a scenario file chose can
spell out content (`fact_helios_rag_beir_ndcg10`), so it waits for the opt-in like the text. The record count is
always there, so a delete without an id does not read as "every record of the store".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry.trace import Span, SpanKind

from ctxasm.core.refs import Ref
from ctxasm.core.selection import Selection, Tiers
from ctxasm.services.telemetry import GEN_AI_OPERATION, content_allowed, in_span

PROVIDER = "ctxasm"

# gen_ai.operation.name
CREATE_MEMORY_STORE = "create_memory_store"
SEARCH_MEMORY = "search_memory"
CREATE_MEMORY = "create_memory"
UPDATE_MEMORY = "update_memory"
UPSERT_MEMORY = "upsert_memory"
DELETE_MEMORY = "delete_memory"
DELETE_MEMORY_STORE = "delete_memory_store"
RETRIEVAL = "retrieval"
MEMORY_OPERATIONS = (CREATE_MEMORY_STORE, SEARCH_MEMORY, CREATE_MEMORY, UPDATE_MEMORY, UPSERT_MEMORY, DELETE_MEMORY,
                     DELETE_MEMORY_STORE)

# attributes of the registry
PROVIDER_NAME = "gen_ai.provider.name"
STORE_ID = "gen_ai.memory.store.id"
RECORD_ID = "gen_ai.memory.record.id"
RECORD_COUNT = "gen_ai.memory.record.count"
QUERY_TEXT = "gen_ai.memory.query.text"
RECORDS = "gen_ai.memory.records"
DATA_SOURCE_ID = "gen_ai.data_source.id"
TOP_K = "gen_ai.request.top_k"
RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
# ctxasm's own
CALL = "ctxasm.operation"
MEMORY_TYPE = "ctxasm.memory_type"

#: An id ctxasm mints: a prefix and at least 16 random hex digits (turn_..., fact_..., budget_..., tool_result_...).
_MINTED_ID = re.compile(r"[a-z][a-z_]*_[0-9a-f]{16,}")

#: The operation a layer above the API asked for (asked_as), for the next memory span.
_asked: ContextVar[str | None] = ContextVar("ctxasm_asked_memory_operation", default=None)


def shareable_id(record_id: Any) -> bool:
    """Whether a record's id may go into a span: always with content allowed, else only an id ctxasm minted."""
    return content_allowed() or bool(_MINTED_ID.fullmatch(str(record_id)))


@contextmanager
def asked_as(operation: str) -> Iterator[None]:
    """Name the memory spans opened in the block (not those nested in them) `operation`: for a layer above the
    API that knows what its caller asked for better than the API call it makes (the Mem0 facade's `add` creates
    a fact and its `update` updates one, both through Session.remember, an upsert)."""
    if operation not in MEMORY_OPERATIONS:
        raise ValueError(f"{operation!r} is not a memory operation of the GenAI conventions")
    token = _asked.set(operation)
    try:
        yield
    finally:
        _asked.reset(token)


@contextmanager
def memory_span(operation: str, store_id: str | None, call: str, *,
                memory_type: str | None = None) -> Iterator[Span]:
    """The span of one memory operation on the store `store_id` (a tenant; None when a call spans several), named
    after the operation (the one `asked_as` gave, if any); `call` is ctxasm's name for what ran. The attributes a
    sampler may use are set at its start; a failure ends it with `error.type` (telemetry.in_span)."""
    name = _asked.get() or operation
    attributes: dict[str, Any] = {GEN_AI_OPERATION: name, PROVIDER_NAME: PROVIDER, CALL: call}
    if store_id is not None:
        attributes[STORE_ID] = str(store_id)
    if memory_type is not None:
        attributes[MEMORY_TYPE] = memory_type
    token = _asked.set(None)
    try:
        with in_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
            yield span
    finally:
        _asked.reset(token)


def set_records(span: Span, count: int, record_id: Any = None) -> None:
    """How many records the operation returned or tried to write or delete, and the one record's id when it
    applies to one (and may be shown: shareable_id)."""
    if not span.is_recording():
        return
    span.set_attribute(RECORD_COUNT, int(count))
    if record_id is not None and shareable_id(record_id):
        span.set_attribute(RECORD_ID, str(record_id))


def memory_record(content: Any, record_id: Any = None, *, score: float | None = None,
                  **metadata: Any) -> dict[str, Any]:
    """One record of `gen_ai.memory.records` (the conventions' memory records JSON schema: content, id, score,
    metadata)."""
    record: dict[str, Any] = {"content": content}
    if record_id is not None:
        record["id"] = str(record_id)
    if score is not None:
        record["score"] = float(score)
    kept = {key: value for key, value in metadata.items() if value is not None}
    if kept:
        record["metadata"] = kept
    return record


def set_content(span: Span, *, query: str | None = None, records: Iterable[Mapping[str, Any]] | None = None) -> None:
    """The opt-in attributes, only with content allowed: the query text and the records (JSON text, as the
    conventions allow where a span cannot hold structured values)."""
    if not span.is_recording() or not content_allowed():
        return
    if query is not None:
        span.set_attribute(QUERY_TEXT, query)
    if records is not None:
        span.set_attribute(RECORDS, json.dumps(list(records), ensure_ascii=False, sort_keys=True, default=str))


def tool_records(output: Any) -> list[dict[str, Any]]:
    """A tool's result (ctxasm.core.tool_results.ToolOutput) as memory records."""
    return [memory_record(item.text, item.ref.id, type=item.type, version=item.ref.version, status=item.status)
            for item in output.items]


# -- the knowledge base: retrieval ---------------------------------------------------------------------------------


@contextmanager
def retrieval_span(data_source_id: str, call: str, *, top_k: int | None = None) -> Iterator[Span]:
    """The span of a knowledge-base search: `retrieval {gen_ai.data_source.id}`, kind CLIENT."""
    attributes: dict[str, Any] = {GEN_AI_OPERATION: RETRIEVAL, PROVIDER_NAME: PROVIDER,
                                  DATA_SOURCE_ID: data_source_id, CALL: call}
    if top_k is not None:
        attributes[TOP_K] = float(top_k)
    with in_span(f"{RETRIEVAL} {data_source_id}", kind=SpanKind.CLIENT, attributes=attributes) as span:
        yield span


def describe_retrieval(span: Span, query: str, output: Any) -> None:
    """How many documents came back; with content allowed the query and the documents ({id, score, type,
    version}: the conventions' retrieval documents, the fused rank score)."""
    if not span.is_recording():
        return
    span.set_attribute("ctxasm.documents", len(output.items))
    if content_allowed():
        documents = [{"id": item.ref.id, "score": float((item.extra.get("scores") or {}).get("fused") or 0.0),
                      "type": item.type, "version": item.ref.version} for item in output.items]
        span.set_attributes({RETRIEVAL_QUERY_TEXT: query, RETRIEVAL_DOCUMENTS: json.dumps(documents)})


# -- a window: search_memory ---------------------------------------------------------------------------------------


def _by_slice_tokens(manifest: Mapping[str, Any]) -> dict[str, int]:
    allocation = manifest.get("allocation") or {}
    tokens = {f"slice.{name}": int(value) for name, value in (allocation.get("fixed") or {}).items()}
    if allocation.get("memory_instructions") is not None:
        tokens["memory_instructions"] = int(allocation["memory_instructions"])
    for name, part in (allocation.get("slices") or {}).items():
        tokens[f"slice.{name}"] = int((part or {}).get("used") or 0)
    tool_results = [m for m in manifest.get("memories") or [] if m.get("slice") == "tool_results"]
    if tool_results:
        tokens["slice.tool_results"] = sum(int(m.get("tokens") or 0) for m in tool_results)
    return tokens


def window_attributes(manifest: Mapping[str, Any], manifest_id: str) -> dict[str, Any]:
    """A window's span attributes: ids, hash, figures and versions, the records it returned; the scope only with
    content allowed."""
    allocation = manifest.get("allocation") or {}
    limit, used = manifest.get("request_limit"), manifest.get("request_tokens")
    memories = manifest.get("memories") or []
    attributes: dict[str, Any] = {
        "ctxasm.tenant_id": str(manifest.get("tenant_id")),
        "ctxasm.manifest_id": manifest_id,
        "ctxasm.intent": str(manifest.get("intent")),
        "ctxasm.engine": str(manifest.get("mode")),
        "ctxasm.snapshot": str(manifest.get("scn")),
        "ctxasm.renderer_version": str(manifest.get("renderer_version")),
        "ctxasm.selection_version": str(manifest.get("selection_version")),
        "ctxasm.request.model": str(manifest.get("model")),
        "ctxasm.request.hash": str(manifest.get("request_hash")),
        "ctxasm.request.tokens": int(used or 0),
        "ctxasm.request.limit": int(limit or 0),
        "ctxasm.request.unused": int((limit or 0) - (used or 0)),
        "ctxasm.usable_context": int(allocation.get("usable_context") or 0),
        "ctxasm.included": len(memories),
        "ctxasm.excluded": len(manifest.get("excluded") or []),
        RECORD_COUNT: len(memories),  # search_memory: the records the operation returned
    }
    if content_allowed():
        scope = manifest.get("scope") or {}
        attributes.update({f"ctxasm.{k}": str(v) for k, v in scope.items() if v is not None})
    return attributes


def window_events(span: Span, manifest: Mapping[str, Any]) -> None:
    """Events of a window: included rows by slice, excluded rows by rule (candidate cuts among them), tokens by
    slice, the request hash; with content allowed, the citation ids and refs in and out."""
    memories = manifest.get("memories") or []
    included = Counter(f"slice.{m.get('slice')}" for m in memories)
    span.add_event("ctxasm.included", {"count": len(memories), **included})
    excluded = Counter(f"rule.{x.get('rule')}" for x in manifest.get("excluded") or [])
    for cut in manifest.get("candidate_cuts") or []:
        excluded[f"rule.{cut.get('rule') or 'candidate_limit'}"] += int(cut.get("rows") or 0)
    span.add_event("ctxasm.excluded", {"count": sum(excluded.values()), **excluded})
    span.add_event("ctxasm.tokens", _by_slice_tokens(manifest))
    span.add_event("ctxasm.request", {"hash": str(manifest.get("request_hash")),
                                      "tokens": int(manifest.get("request_tokens") or 0)})
    if content_allowed():
        span.add_event("ctxasm.rows", {
            "included": [Ref.of(m["ref"]).key for m in memories],
            "included_ids": [str(m.get("id")) for m in memories],
            "excluded": [f"{x.get('rule')} {':'.join(str(p) for p in x.get('ref') or [])}"
                         for x in manifest.get("excluded") or []]})


def window_records(manifest: Mapping[str, Any], selection: Selection) -> list[dict[str, Any]]:
    """The window's rows as memory records: the text at the tier the window shows, the priority it was ranked
    by, and where it sits (citation id, type, version, slice, tier, status)."""
    texts: dict[str, Tiers] = {f.ref.key: Tiers(f.content) for f in selection.fixed}
    texts.update({c.ref.key: c.tiers for c in selection.candidates})
    records = []
    for memory in manifest.get("memories") or []:
        ref = Ref.of(memory["ref"])
        tiers = texts.get(ref.key, Tiers(""))
        records.append(memory_record(
            tiers.text(memory.get("tier")) or tiers.full, ref.id,
            score=(memory.get("scores") or {}).get("priority"), citation=memory.get("id"), type=ref.memory_type,
            version=ref.version, slice=memory.get("slice"), tier=memory.get("tier"), status=memory.get("status")))
    return records


def describe_window(span: Span, window: Any, selection: Selection) -> None:
    """A window's span (search_memory, ctxasm.operation assemble): its attributes and events; with content
    allowed the question and the rows it shows."""
    if not span.is_recording():
        return
    span.set_attributes(window_attributes(window.manifest, window.manifest_id))
    window_events(span, window.manifest)
    if content_allowed():
        set_content(span, query=str(window.manifest.get("question")),
                    records=window_records(window.manifest, selection))
