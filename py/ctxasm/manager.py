"""The Memory Manager behind the MCP server and the agent loop: tools read from toolbox rows, run in the database.

The caller (tenant, user, agent, thread, roles) is fixed when the manager is made, from trusted launch
configuration; no tool argument names a tenant or a scope. Every call looks its toolbox row up again (still in
effect? still admitted by its access_policy?), validates the arguments against the row's tool_schema, and
dispatches to an allowlisted handler, which calls CTX_TOOLS in the database (ctx_tools on PostgreSQL).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import jsonschema

from .errors import InvalidArgument, ToolRefused, brief_message
from .store import MemoryStore, WindowScope, unstorable_text
from .tool_results import ToolItem, ToolOutput
from .tool_schemas import unbounded_strings

#: tool_handler -> Memory Manager method. A toolbox row naming anything else is never callable.
HANDLERS = ("search_memory", "lookup_entity", "expand", "clarify")
SEARCH_LIMIT = 8

#: clarify asks the user through the client; it returns the answer, or None when the client cannot be asked.
Asker = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class Caller:
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolRow:
    """An active toolbox row as the database returned it."""

    ref: tuple[str, str, int]
    name: str
    handler: str
    schema: Mapping[str, Any]
    description: str
    access_policy: Mapping[str, Any] | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolRow:
        ref = data["ref"]
        return cls(ref=(ref[0], ref[1], int(ref[2])), name=data["tool_name"], handler=data["tool_handler"],
                   schema=data["tool_schema"] or {"type": "object"}, description=data.get("usage_notes") or "",
                   access_policy=data.get("access_policy"))

    def admits(self, roles: tuple[str, ...]) -> bool:
        """access_policy {"roles": [...]}: the caller needs one of them; no policy admits everyone."""
        policy = self.access_policy or {}
        wanted = policy.get("roles")
        return not wanted or any(role in roles for role in wanted)


#: No argument string is longer than this, whatever a schema allows (the schemas' own maxLength is lower).
MAX_ARGUMENT_CHARS = 10_000
def _check_schema(row: ToolRow) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(row.schema)
    except jsonschema.SchemaError as exc:
        raise ToolRefused(f"tool_refused: {row.name}: its stored tool_schema is not a valid JSON Schema "
                          f"({brief_message(exc.message, exc.instance)})") from None
    unbounded = unbounded_strings(row.schema)
    if unbounded:
        raise ToolRefused(f"tool_refused: {row.name}: its stored tool_schema leaves {', '.join(unbounded[:5])} "
                          "without a maxLength; every string a tool takes must be bounded")


def _long_string(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return f"{path}: is {len(value)} characters long, at most {MAX_ARGUMENT_CHARS} are allowed" \
            if len(value) > MAX_ARGUMENT_CHARS else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((problem for key, item in items if (problem := _long_string(item, f"{path}.{key}"))), None)


def validate_arguments(row: ToolRow, arguments: Any) -> None:
    """The arguments against the row's tool_schema; the error names the tool and the failing field and quotes
    at most 200 characters of a bad value."""
    _check_schema(row)
    bad_text = unstorable_text(arguments, row.name) or _long_string(arguments, row.name)
    if bad_text:
        raise InvalidArgument(f"invalid_argument: {bad_text}")
    validator = jsonschema.Draft202012Validator(row.schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (len(e.absolute_path), list(e.absolute_path)))
    if errors:
        error = errors[0]
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        raise InvalidArgument(f"invalid_argument: {row.name}.{where}: {brief_message(error.message, error.instance)}")


class MemoryManager:
    def __init__(self, store: MemoryStore, caller: Caller, *, at: datetime | None = None,
                 manifest_id: str | None = None, embed: Callable[[str], str] | None = None):
        self.store = store
        self.caller = caller
        self._at = at
        #: the caller's current window: expand opens only ids issued in it.
        self.manifest_id = manifest_id
        self._embed = embed

    # -- the caller's view ---------------------------------------------------------------------------------

    def evaluation_time(self) -> datetime:
        return self._at or datetime.now(timezone.utc).replace(microsecond=0)

    def tools(self) -> list[ToolRow]:
        """The toolbox rows in effect for the caller, admitted by their access_policy, with known handlers."""
        c = self.caller
        rows = [ToolRow.from_json(r) for r in self.store.active_tools(c.tenant_id, c.user_id, c.agent_id,
                                                                      self.evaluation_time())]
        self.store.rollback()
        return [row for row in rows if row.handler in HANDLERS and row.admits(c.roles)]

    def tool(self, name: str) -> ToolRow:
        """The named tool's row, checked again now; ToolRefused when it is gone or not for this caller."""
        for row in self.tools():
            if row.name == name:
                return row
        raise ToolRefused(f"tool_refused: {name!r} is not a tool in effect for this caller "
                          "(unknown, retired, or its access_policy does not admit the caller's roles)")

    def fixed_sections(self) -> dict[str, list[str]]:
        """Guidelines and persona as the selection rules admit them for the caller now."""
        c = self.caller
        scope = WindowScope(c.user_id, c.agent_id, c.thread_id, self._default_intent(), self.evaluation_time(),
                            "guidelines and persona")
        selection = self.store.select_window(c.tenant_id, scope)
        self.store.rollback()
        sections: dict[str, list[str]] = {"guidelines": [], "persona": []}
        for item in selection["fixed"]:
            if item["slice"] in sections:
                sections[item["slice"]].append(item["content"])
        return sections

    def _default_intent(self) -> str:
        return "fact_check"

    # -- dispatch ------------------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any, ask: Asker | None = None) -> ToolOutput:
        row = self.tool(name)
        validate_arguments(row, arguments)
        handler = row.handler
        if handler == "clarify":
            return await self.clarify(arguments["question"], ask)
        method = getattr(self, handler)
        return method(**arguments)

    def search_memory(self, query: str) -> ToolOutput:
        from .assembler import query_embedding

        c = self.caller
        embedding = (self._embed or query_embedding)(query)
        found = self.store.search_memory(c.tenant_id, c.user_id, c.agent_id, c.thread_id, self.evaluation_time(),
                                         query, embedding, SEARCH_LIMIT)
        self.store.rollback()
        items = tuple(ToolItem(ref=_ref(i["ref"]), type=i["ref"][0], status="evidence",
                               text=_titled(i.get("title"), i["content"]),
                               extra={"scores": i.get("scores", {})})
                      for i in found["items"])
        notes = () if items else ("no authorized memory matches the query",)
        return ToolOutput("search_memory", items, notes)

    def lookup_entity(self, subject: str, predicate: str) -> ToolOutput:
        c = self.caller
        found = self.store.lookup_entity(c.tenant_id, c.user_id, c.agent_id, self.evaluation_time(), subject,
                                         predicate)
        self.store.rollback()
        current = found.get("current")
        items: list[ToolItem] = []
        if current:
            items.append(ToolItem(ref=_ref(current["ref"]), type="entity", status="current", text=current["content"],
                                  extra={"content_json": current.get("content_json")}))
        for old in found.get("history", ()):
            items.append(ToolItem(ref=_ref(old["ref"]), type="entity", status="historical", text=old["content"],
                                  extra={"content_json": old.get("content_json"), "was": old.get("status")}))
        notes = [] if current else [f"no current value for {subject} {predicate}"]
        if current and len(items) > 1:
            notes.append(f"current value first ({render_id(current['ref'])}); the others are history, "
                         "kept for explanation, not for answers")
        return ToolOutput("lookup_entity", tuple(items), tuple(notes))

    def expand(self, memory_id: str) -> ToolOutput:
        if not self.manifest_id:
            raise InvalidArgument("invalid_argument: expand: there is no current window for this caller yet")
        found = self.store.expand(self.caller.tenant_id, self.manifest_id, memory_id, self.evaluation_time())
        self.store.rollback()
        item = ToolItem(ref=_ref(found["ref"]), type=found["type"], status="expanded",
                        text=_titled(found.get("title"), found["content"]))
        return ToolOutput("expand", (item,), (f"{memory_id} in full (shown as {found.get('tier_in_window')} "
                                              "in the window)",))

    async def clarify(self, question: str, ask: Asker | None) -> ToolOutput:
        """Ask the user through the client when it can elicit; record the choice as a thread-scoped event."""
        answer = await ask(question) if ask else None
        if answer is None:
            return ToolOutput("clarify", (), (f"the client cannot ask the user; ask them in your answer: {question}",))
        event_id = self.record_event("clarification", f"asked: {question} / answered: {answer}",
                                     {"question": question, "answer": answer})
        item = ToolItem(ref=("conversation", event_id, 1), type="conversation", status="unverified",
                        text=f"The user was asked: {question}\nThe user answered: {answer}")
        return ToolOutput("clarify", (item,), ())

    # -- conversation records ------------------------------------------------------------------------------

    def record_event(self, event_type: str, content: str, content_json: Mapping[str, Any],
                     source_refs: list[dict[str, Any]] | None = None) -> str:
        """One thread-scoped event in conversation_memory, committed at once (it outlives the call)."""
        c = self.caller
        event_id = f"{event_type}_{uuid.uuid4().hex}"
        self.store.set_tenant(c.tenant_id)
        record: dict[str, Any] = {"id": event_id, "role": "event", "event_type": event_type, "user_id": c.user_id,
                                  "agent_id": c.agent_id, "thread_id": c.thread_id, "content": content,
                                  "content_json": dict(content_json)}
        if source_refs:
            record["source_refs"] = source_refs
        self.store.put_memory("conversation", record)
        self.store.commit()
        return event_id


def _ref(ref: Any) -> tuple[str, str, int]:
    return (ref[0], ref[1], int(ref[2]))


def render_id(ref: Any) -> str:
    from .render import memory_id

    return memory_id(_ref(ref))


def _titled(title: str | None, text: str) -> str:
    return f"{title}: {text}" if title else text
