"""Reading memory outside a window: search, look a fact up, open one record of a window in full.

Each is one CTX_TOOLS routine for the caller's scope, read and rolled back; the result is a ToolOutput, the
shape a tool result is fitted and rendered in (ctxasm.core.tool_results), so the MCP tools, the agent loop and
the Python API show the same items. Each is a span (ctxasm.services.memory_spans): the search a retrieval from
the tenant's knowledge base, a lookup and an expand a search of its memory store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ctxasm.core.render import memory_id as render_memory_id
from ctxasm.core.tool_results import ToolItem, ToolOutput
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import InvalidArgument
from ctxasm.services import memory_spans as spans

SEARCH_LIMIT = 8


@dataclass(frozen=True)
class Caller:
    """Who is asking: fixed from trusted configuration (a verified claim names the tenant), never from a tool
    argument. `roles` are checked against each tool's access_policy."""

    tenant_id: str
    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    roles: tuple[str, ...] = ()


def _titled(title: str | None, text: str) -> str:
    return f"{title}: {text}" if title else text


def search(store: MemoryStore, caller: Caller, at: datetime | None, query: str, embed: Callable[[str], str],
           limit: int = SEARCH_LIMIT) -> ToolOutput:
    """The authorised memories that match `query` best (hybrid: lexical and the query's embedding)."""
    c = caller
    with spans.retrieval_span(c.tenant_id, "search", top_k=limit) as span:
        found = store.search_memory(c.tenant_id, c.user_id, c.agent_id, c.thread_id, at, query, embed(query), limit)
        store.rollback()
        items = tuple(ToolItem(ref=i["ref"], type=i["ref"][0], status="evidence",
                               text=_titled(i.get("title"), i["content"]), extra={"scores": i.get("scores", {})})
                      for i in found["items"])
        notes = () if items else ("no authorized memory matches the query",)
        output = ToolOutput("search_memory", items, notes)
        spans.describe_retrieval(span, query, output)
        return output


def lookup(store: MemoryStore, caller: Caller, at: datetime | None, subject: str, predicate: str) -> ToolOutput:
    """A fact's current value first, then its history (kept for explanation, not for answers)."""
    c = caller
    with spans.memory_span(spans.SEARCH_MEMORY, c.tenant_id, "lookup", memory_type="entity") as span:
        output = _lookup(store, c, at, subject, predicate)
        spans.set_records(span, len(output.items))
        spans.set_content(span, query=f"{subject} {predicate}", records=spans.tool_records(output))
        return output


def _lookup(store: MemoryStore, c: Caller, at: datetime | None, subject: str, predicate: str) -> ToolOutput:
    found = store.lookup_entity(c.tenant_id, c.user_id, c.agent_id, at, subject, predicate)
    store.rollback()
    current = found.get("current")
    items: list[ToolItem] = []
    if current:
        items.append(ToolItem(ref=current["ref"], type="entity", status="current", text=current["content"],
                              extra={"content_json": current.get("content_json")}))
    for old in found.get("history", ()):
        items.append(ToolItem(ref=old["ref"], type="entity", status="historical", text=old["content"],
                              extra={"content_json": old.get("content_json"), "was": old.get("status")}))
    notes = [] if current else [f"no current value for {subject} {predicate}"]
    if current and len(items) > 1:
        notes.append(f"current value first ({render_memory_id(current['ref'])}); the others are history, "
                     "kept for explanation, not for answers")
    return ToolOutput("lookup_entity", tuple(items), tuple(notes))


def expand(store: MemoryStore, caller: Caller, at: datetime | None, manifest_id: str | None, memory_id: str) -> ToolOutput:
    """One record of the window `manifest_id` in full (only ids that window issued can be opened)."""
    with spans.memory_span(spans.SEARCH_MEMORY, caller.tenant_id, "expand") as span:
        output = _expand(store, caller, at, manifest_id, memory_id)
        spans.set_records(span, 1, output.items[0].ref.id)
        spans.set_content(span, records=spans.tool_records(output))
        return output


def _expand(store: MemoryStore, caller: Caller, at: datetime | None, manifest_id: str | None, memory_id: str) -> ToolOutput:
    if not manifest_id:
        raise InvalidArgument("invalid_argument: expand: there is no current window for this caller yet")
    found = store.expand(caller.tenant_id, manifest_id, memory_id, at)
    store.rollback()
    item = ToolItem(ref=found["ref"], type=found["type"], status="expanded",
                    text=_titled(found.get("title"), found["content"]))
    return ToolOutput("expand", (item,), (f"{memory_id} in full (shown as {found.get('tier_in_window')} "
                                          "in the window)",))
