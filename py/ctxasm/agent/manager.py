"""The Memory Manager behind the MCP server and the agent loop: tools read from toolbox rows, run in the database.

The caller (tenant, user, agent, thread, roles) is fixed when the manager is made, from trusted launch
configuration; no tool argument names a tenant or a scope. Every call looks its toolbox row up again (still in
effect? still admitted by its access_policy?), validates the arguments against the row's tool_schema, and
dispatches to an allowlisted handler, which calls CTX_TOOLS in the database (ctx_tools on PostgreSQL). The one
handler that writes, `remember`, goes through the caller's API session (ctxasm.api.Session.remember), the same
path as `ctxasm remember`; no tenant has it unless a toolbox row names it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import jsonschema

from ctxasm.core.refs import Ref
from ctxasm.core.budget import parse_budget
from ctxasm.core.tool_results import ToolItem, ToolLedger, ToolOutput
from ctxasm.engines.checks import unstorable_text
from ctxasm.engines.store import MemoryStore, WindowScope
from ctxasm.engines.tool_schemas import unbounded_strings
from ctxasm.errors import InvalidArgument, ToolRefused, brief_message
from ctxasm.services import memory_spans as spans
from ctxasm.services import recall
from ctxasm.services.recall import SEARCH_LIMIT, Caller

if TYPE_CHECKING:
    from ctxasm.api.session import Session
    from ctxasm.core.selection import Selection

__all__ = ["Caller", "HANDLERS", "MemoryManager", "SEARCH_LIMIT", "ToolRow", "validate_arguments"]

#: tool_handler -> Memory Manager method. A toolbox row naming anything else is never callable.
HANDLERS = ("search_memory", "lookup_entity", "expand", "clarify", "remember")

#: The arguments each handler takes (a tool_schema may offer fewer, never others): a schema that lets an
#: unknown argument through is refused naming it, not passed on.
HANDLER_ARGUMENTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # handler: (required, optional)
    "search_memory": (frozenset({"query"}), frozenset()),
    "lookup_entity": (frozenset({"subject", "predicate"}), frozenset()),
    "expand": (frozenset({"memory_id"}), frozenset()),
    "clarify": (frozenset({"question"}), frozenset()),
    "remember": (frozenset({"subject", "predicate", "content"}), frozenset({"confidence", "personal"})),
}

#: What each handler argument is, and the longest a string one may be where the database bounds it (a fact's
#: subject and predicate are columns of 256 characters); other strings are held to MAX_ARGUMENT_CHARS.
ARGUMENT_KINDS: dict[str, tuple[type, int | None]] = {
    "query": (str, None), "subject": (str, 256), "predicate": (str, 256), "content": (str, None),
    "memory_id": (str, None), "question": (str, None), "confidence": (float, None), "personal": (bool, None),
}

#: clarify asks the user through the client; it returns the answer, or None when the client cannot be asked.
Asker = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class ToolRow:
    """An active toolbox row as the database returned it."""

    ref: Ref
    name: str
    handler: str
    schema: Mapping[str, Any]
    description: str
    access_policy: Mapping[str, Any] | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolRow:
        return cls(ref=Ref.of(data["ref"]), name=data["tool_name"], handler=data["tool_handler"],
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


def _check_handler_arguments(row: ToolRow, arguments: Mapping[str, Any]) -> None:
    """What the handler takes, whatever the row's schema let through: every required argument, no other."""
    if not isinstance(arguments, Mapping):
        raise InvalidArgument(f"invalid_argument: {row.name}.arguments: must be an object")
    required, optional = HANDLER_ARGUMENTS[row.handler]
    for name in sorted(required - arguments.keys()):
        raise InvalidArgument(f"invalid_argument: {row.name}.{name}: required by the {row.handler} handler "
                              "(the tool_schema must require it)")
    for name in sorted(arguments.keys() - required - optional):
        raise InvalidArgument(f"invalid_argument: {row.name}.{name}: not an argument of the {row.handler} handler")
    # A schema may be looser than the handler (no type, no properties): each argument is checked as the
    # handler takes it, so the error names the tool's field, not a database parameter or a driver's type.
    for name in sorted(arguments.keys()):
        kind, longest = ARGUMENT_KINDS[name]
        value = arguments[name]
        if kind is str:
            if not isinstance(value, str) or not value.strip():
                raise InvalidArgument(f"invalid_argument: {row.name}.{name}: must be a non-empty string, not "
                                      f"{brief_message(repr(value), value)}")
            if longest is not None and len(value) > longest:
                raise InvalidArgument(f"invalid_argument: {row.name}.{name}: is {len(value)} characters long, at "
                                      f"most {longest} are allowed")
        elif kind is bool and not isinstance(value, bool):
            raise InvalidArgument(f"invalid_argument: {row.name}.{name}: must be true or false")
        elif kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InvalidArgument(f"invalid_argument: {row.name}.{name}: must be a number")


class MemoryManager:
    def __init__(self, store: MemoryStore, caller: Caller, *, at: datetime | None = None,
                 manifest_id: str | None = None, embed: Callable[[str], str] | None = None,
                 session: Session | None = None, follow_thread: bool = False):
        self.store = store
        self.caller = caller
        #: the caller's API session: what `remember` writes through (without one, remember is refused)
        self.session = session
        self._at = at
        #: the caller's current window: expand opens only ids issued in it.
        self.manifest_id = manifest_id
        #: whether the current window is the thread's latest manifest at each call (an MCP server started
        #: without a window of its own: the client assembles as it goes) rather than the one set here
        self.follow_thread = follow_thread
        self._embed = embed
        #: the tool reserve of the current window: (its manifest id, the ledger)
        self._ledger: tuple[str | None, ToolLedger] | None = None

    @classmethod
    @contextmanager
    def over(cls, session: Session, *, at: datetime | None = None, manifest_id: str | None = None,
             embed: Callable[[str], str] | None = None) -> Iterator[MemoryManager]:
        """The Memory Manager of an API session's caller, on one pooled connection of the session held until the
        block ends (the MCP server's whole run); its writing tools go through the session."""
        with session.store() as store:
            yield cls(store, session.caller, at=at, manifest_id=manifest_id, embed=embed, session=session)

    # -- the caller's view ---------------------------------------------------------------------------------

    def current_window(self) -> str | None:
        """The manifest id of the caller's current window: the thread's latest when following the thread (a
        window assembled since the server started counts at once), else the one set."""
        if self.follow_thread:
            c = self.caller
            self.manifest_id = self.store.latest_manifest_id(c.tenant_id, c.user_id, c.agent_id,
                                                             c.thread_id) or self.manifest_id
        return self.manifest_id

    def tool_ledger(self) -> ToolLedger:
        """The tool reserve the caller's results are fitted into: the current window's (its allocation's tool
        reserve and max_tool_result_tokens), fresh for each new window; before any window, the budget in effect
        now. Results are charged to it as they are returned, so together they stay within the reserve."""
        window = self.current_window()
        if self._ledger is None or self._ledger[0] != window:
            self._ledger = (window, self._window_ledger(window))
        return self._ledger[1]

    def _window_ledger(self, window: str | None) -> ToolLedger:
        manifest = self.store.read_manifest(self.caller.tenant_id, window) if window else None
        allocation = (manifest or {}).get("allocation") or {}
        if allocation.get("reserves") and allocation.get("tool_rounds"):
            return ToolLedger(reserve=int(allocation["reserves"]["tools"]),
                              per_result=int(allocation["tool_rounds"]["max_tool_result_tokens"]))
        budget = parse_budget(self._probe().budget.content_json)
        return ToolLedger(reserve=budget.tool_reserve, per_result=budget.max_tool_result_tokens)

    def _probe(self) -> Selection:
        """The selection the rules make for the caller now (nothing recorded): its fixed slices and budget."""
        c = self.caller
        scope = WindowScope(c.user_id, c.agent_id, c.thread_id, self._default_intent(), self.evaluation_time(),
                            "guidelines and persona")
        try:
            return self.store.select_window(c.tenant_id, scope)
        finally:
            self.store.rollback()

    def evaluation_time(self) -> datetime | None:
        """The time the caller's calls are evaluated at; None: now, by the database's clock."""
        return self._at

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
        sections: dict[str, list[str]] = {"guidelines": [], "persona": []}
        for row in self._probe().fixed:
            if row.slice in sections:
                sections[row.slice].append(row.content)
        return sections

    def _default_intent(self) -> str:
        return "fact_check"

    # -- dispatch ------------------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any, ask: Asker | None = None) -> ToolOutput:
        row = self.tool(name)
        validate_arguments(row, arguments)
        handler = row.handler
        _check_handler_arguments(row, arguments)
        if handler == "clarify":
            return await self.clarify(arguments["question"], ask)
        method = getattr(self, handler)
        return method(**arguments)

    def search_memory(self, query: str) -> ToolOutput:
        from ctxasm.services.assemble import query_embedding

        return recall.search(self.store, self.caller, self.evaluation_time(), query, self._embed or query_embedding)

    def lookup_entity(self, subject: str, predicate: str) -> ToolOutput:
        return recall.lookup(self.store, self.caller, self.evaluation_time(), subject, predicate)

    def expand(self, memory_id: str) -> ToolOutput:
        return recall.expand(self.store, self.caller, self.evaluation_time(), self.current_window(), memory_id)

    def remember(self, subject: str, predicate: str, content: str, confidence: float | None = None,
                 personal: bool = False) -> ToolOutput:
        """A fact by its identity (subject, predicate), as `ctxasm remember` writes it: the current value in its
        scope is superseded, or a new fact written. Tenant-wide unless `personal` (the caller's user and
        agent); a tenant that allows only personal facts says so in the row's tool_schema (`"const": true`)."""
        if self.session is None:
            raise ToolRefused("tool_refused: remember: this Memory Manager was made without an API session to "
                              "write through")
        if self.session.tenant_id != self.caller.tenant_id:
            raise ToolRefused("tool_refused: remember: the session is for another tenant than the caller")
        kind, memory_id, version = self.session.remember(subject, predicate, content, confidence=confidence,
                                                         at=self.evaluation_time(), personal=bool(personal))
        item = ToolItem(ref=Ref(kind, memory_id, version), type=kind, status="current",
                        text=f"({subject}, {predicate}): {content}",
                        extra={"memory_id": memory_id, "version": version,
                               "scope": "personal" if personal else "tenant"})
        how = f"superseded: version {version}" if version > 1 else "a new fact, version 1"
        return ToolOutput("remember", (item,), (f"remembered as {kind} {memory_id} ({how})",))

    async def clarify(self, question: str, ask: Asker | None) -> ToolOutput:
        """Ask the user through the client when it can elicit; record the choice as a thread-scoped event."""
        answer = await ask(question) if ask else None
        if answer is None:
            return ToolOutput("clarify", (), (f"the client cannot ask the user; ask them in your answer: {question}",))
        event_id = self.record_event("clarification", f"asked: {question} / answered: {answer}",
                                     {"question": question, "answer": answer})
        item = ToolItem(ref=Ref("conversation", event_id, 1), type="conversation", status="unverified",
                        text=f"The user was asked: {question}\nThe user answered: {answer}")
        return ToolOutput("clarify", (item,), ())

    # -- conversation records ------------------------------------------------------------------------------

    def record_event(self, event_type: str, content: str, content_json: Mapping[str, Any],
                     source_refs: list[dict[str, Any]] | None = None) -> str:
        """One thread-scoped event in conversation_memory, committed at once (it outlives the call). Its span:
        create_memory, one record, with the event type."""
        c = self.caller
        event_id = f"{event_type}_{uuid.uuid4().hex}"
        record: dict[str, Any] = {"id": event_id, "role": "event", "event_type": event_type, "user_id": c.user_id,
                                  "agent_id": c.agent_id, "thread_id": c.thread_id, "content": content,
                                  "content_json": dict(content_json)}
        if source_refs:
            record["source_refs"] = source_refs
        with spans.memory_span(spans.CREATE_MEMORY, c.tenant_id, "record_event", memory_type="conversation") as span:
            span.set_attribute("ctxasm.event_type", event_type)
            spans.set_records(span, 1, event_id)
            self.store.set_tenant(c.tenant_id)
            self.store.put_memory("conversation", record)
            self.store.commit()
            spans.set_content(span, records=[spans.memory_record(content, event_id, event_type=event_type)])
        return event_id
