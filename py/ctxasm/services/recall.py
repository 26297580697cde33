"""Reading memory outside a window: search, look a fact up, open one record of a window in full.

Each is one CTX_TOOLS routine for the caller's scope, read and rolled back; the result is a ToolOutput, the
shape a tool result is fitted and rendered in (ctxasm.core.tool_results), so the MCP tools, the agent loop and
the Python API show the same items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ctxasm.core.render import memory_id as render_memory_id
from ctxasm.core.tool_results import ToolItem, ToolOutput
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import InvalidArgument

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


def search(store: MemoryStore, caller: Caller, at: datetime, query: str, embed: Callable[[str], str],
           limit: int = SEARCH_LIMIT) -> ToolOutput:
    """The authorised memories that match `query` best (hybrid: lexical and the query's embedding)."""
    c = caller
    found = store.search_memory(c.tenant_id, c.user_id, c.agent_id, c.thread_id, at, query, embed(query), limit)
    store.rollback()
    items = tuple(ToolItem(ref=i["ref"], type=i["ref"][0], status="evidence",
                           text=_titled(i.get("title"), i["content"]), extra={"scores": i.get("scores", {})})
                  for i in found["items"])
    notes = () if items else ("no authorized memory matches the query",)
    return ToolOutput("search_memory", items, notes)


def lookup(store: MemoryStore, caller: Caller, at: datetime, subject: str, predicate: str) -> ToolOutput:
    """A fact's current value first, then its history (kept for explanation, not for answers)."""
    c = caller
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


def expand(store: MemoryStore, caller: Caller, at: datetime, manifest_id: str | None, memory_id: str) -> ToolOutput:
    """One record of the window `manifest_id` in full (only ids that window issued can be opened)."""
    if not manifest_id:
        raise InvalidArgument("invalid_argument: expand: there is no current window for this caller yet")
    found = store.expand(caller.tenant_id, manifest_id, memory_id, at)
    store.rollback()
    item = ToolItem(ref=found["ref"], type=found["type"], status="expanded",
                    text=_titled(found.get("title"), found["content"]))
    return ToolOutput("expand", (item,), (f"{memory_id} in full (shown as {found.get('tier_in_window')} "
                                          "in the window)",))
