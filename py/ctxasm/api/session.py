"""A caller's session: one tenant (named by its claim), an optional user, agent and thread. Every call borrows a
pooled connection for itself and gives it back rolled back or committed; a session holds no connection between
calls, so sessions are cheap and many may share one Memory. AsyncSession runs the same calls in a worker
thread, for asyncio code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ctxasm.claims import ClaimSigner, ClaimSource
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import DuplicateMemory, InvalidArgument, InvalidClaim, MemoryNotFound
from ctxasm.services import memory_spans as spans
from ctxasm.services import recall
from ctxasm.services.budgets import (TENANT_BUDGET_ID, BudgetView, Scope, budget_record, budget_scope,
                                     effective_budget, same_scope_budget)
from ctxasm.services.assemble import AssembledWindow, assemble, parse_time, query_embedding
from ctxasm.services.inspection import Inspection, load_inspection
from ctxasm.services.inventory import tenant_inventory
from ctxasm.services.records import Record, load_by_id, rows_then
from ctxasm.services.replay import ReplayResult, replay
from ctxasm.services.turns import Turn, add_turn

if TYPE_CHECKING:
    from ctxasm.core.tool_results import ToolOutput
    from ctxasm.ml.summarizer import Summarizer
    from ctxasm.services.episodes import EpisodeRun, Thresholds
    from ctxasm.engines.pool import ConnectionPool
    from ctxasm.engines.registry import Engine

DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_INTENT = "fact_check"


def refused_own_claim(exc: InvalidClaim, source: ClaimSource, tenant_id: str) -> InvalidClaim:
    """The database's one refusal (it reveals nothing to a caller holding a claim), said plainly when this process
    minted the claim itself with the deployment's key: then the signature and the times are its own, and what is
    left is a tenant the database does not have, or a key it was not deployed with."""
    if not isinstance(source, ClaimSigner):
        return exc
    return InvalidClaim(f"invalid_claim: the database refused the claim this process minted for tenant "
                        f"{tenant_id[:64]!r}: no such tenant is registered (create it: `ctxasm tenant create "
                        f"{tenant_id[:64]}` or Memory.create_tenant; `ctxasm load` registers a file's tenants), or "
                        "the claim key here is not the one this database was deployed with (`ctxasm db deploy` "
                        "installs it)")


def _when(at: datetime | str | None) -> datetime | None:
    """A caller's time; None is now, as the database's clock reads it."""
    if at is not None and not isinstance(at, (datetime, str)):
        raise InvalidArgument(f"invalid_argument: at must be a datetime or an ISO 8601 text, not "
                              f"{type(at).__name__}")
    return at if isinstance(at, datetime) else parse_time(at, name="at")


def require_text(**arguments: Any) -> None:
    """InvalidArgument naming the first argument that is not a string: a caller's int or None would otherwise
    reach the database as another type and come back as a driver's error."""
    for name, value in arguments.items():
        if not isinstance(value, str):
            raise InvalidArgument(f"invalid_argument: {name} must be a string, not {type(value).__name__}")


class Session:
    def __init__(self, engine: Engine, pool: ConnectionPool, tenant_id: str, user_id: str | None, agent_id: str | None,
                 thread_id: str | None, roles: tuple[str, ...], claims: ClaimSource, shared_claims: ClaimSource):
        self.engine, self.pool = engine, pool
        self.caller = recall.Caller(tenant_id, user_id, agent_id, thread_id, roles)
        self._claims, self._shared_claims = claims, shared_claims
        #: the window this session assembled last: what `expand` opens by default
        self.manifest_id: str | None = None

    @property
    def tenant_id(self) -> str:
        return self.caller.tenant_id

    @contextmanager
    def _store(self, claims: ClaimSource | None = None) -> Iterator[MemoryStore]:
        source = claims or self._claims
        with self.pool.connection() as connection:
            try:
                yield self.engine.store(connection, source)
            except InvalidClaim as exc:
                raise refused_own_claim(exc, source, self.tenant_id) from None

    def store(self, *, shared: bool = False) -> AbstractContextManager[MemoryStore]:
        """A store on one pooled connection, held until the block ends: for a layer that runs many calls over one
        connection (the MCP server, the agent loop). `shared` uses the tenant-wide claim instead of the caller's."""
        return self._store(self._shared_claims if shared else None)

    # -- windows -------------------------------------------------------------------------------------------

    def assemble(self, question: str, *, intent: str = DEFAULT_INTENT, at: datetime | str | None = None,
                 model: str = DEFAULT_MODEL, scores: dict[str, float] | None = None,
                 summarizer: Summarizer | None = None) -> AssembledWindow:
        """Assemble and record one window for the caller's question; returns the request, the manifest and its id.
        A budget that turns compression on asks `summarizer` (default: the deployment's) for the summaries the
        window lacks (docs/summaries.md)."""
        require_text(question=question, intent=intent, model=model)
        c = self.caller
        spec = WindowSpec(tenant_id=c.tenant_id, user_id=c.user_id, agent_id=c.agent_id, thread_id=c.thread_id,
                          intent=intent, question=question, model=model)
        with self._store() as store:
            window = assemble(store, spec, _when(at), scores, summarizer=summarizer)
        self.manifest_id = window.manifest_id
        return window

    def replay(self, manifest_id: str) -> ReplayResult:
        """Rebuild a recorded window and check it: status match, mismatch or unavailable."""
        with self._store() as store:
            return replay(store, self.tenant_id, manifest_id)

    def inspect(self, manifest_id: str, *, with_request: bool = True) -> Inspection:
        """A recorded manifest with the row versions it names, as they were when the window was assembled (and,
        `with_request`, the literal request rebuilt by replay)."""
        with self._store() as store:
            return load_inspection(store, self.tenant_id, manifest_id, with_request=with_request)

    def show(self, some_id: str) -> Inspection | Record:
        """A manifest, or a record of the agent loop by its id: a provider request opens the window it was sent
        for; a model response or a tool result comes as it was stored."""
        with self._store() as store:
            return load_by_id(store, self.tenant_id, some_id)

    def rows_at(self, memory_type: str, snapshot: str) -> list[Mapping[str, Any]]:
        """The tenant's rows of one memory type as of a snapshot (a manifest's `scn`): what a window assembled
        then could have selected ([] when the type is unknown or the snapshot no longer readable)."""
        with self._store() as store:
            return rows_then(store, self.tenant_id, memory_type, snapshot)

    def inventory(self) -> list[tuple[str, str, int]]:
        """(memory type, status, rows) of the tenant, as the caller's claim lets the application role see them."""
        with self._store() as store:
            return tenant_inventory(store, self.tenant_id)

    # -- writing -------------------------------------------------------------------------------------------

    def add_turn(self, role: str, content: str, *, at: datetime | str | None = None,
                 source_refs: list[dict[str, Any]] | None = None, speaker: str | None = None) -> Turn:
        """The thread's next turn (role user or assistant); the database gives it the next turn_index. `speaker`
        names who said it (a person of a group conversation, a named agent; at most 64 characters): a recalled
        turn's line shows the name in place of the role."""
        require_text(role=role, content=content)
        if speaker is not None:
            require_text(speaker=speaker)
            if not speaker.strip():  # as a scenario file's speaker: a name, or none at all
                raise InvalidArgument("invalid_argument: speaker is blank; leave it out when the turn names nobody")
        with self._store() as store:
            return add_turn(store, self.caller, role, content, _when(at), source_refs, speaker)

    def remember(self, subject: str, predicate: str, content: str, *, content_json: dict[str, Any] | None = None,
                 confidence: float | None = None, at: datetime | str | None = None,
                 source_refs: list[dict[str, Any]] | None = None, personal: bool = False) -> tuple[str, str, int]:
        """A fact, by its identity (subject, predicate) in its scope: the current value of that scope is
        superseded by this one, or a new fact is written when the scope has none. A shared fact (the default)
        belongs to the whole tenant and needs a claim for the tenant; `personal` keeps it to the caller's user and
        agent (the session names at least one), beside any shared value, which it then outranks for the caller.
        Concurrent calls for one identity leave one current fact: a new fact's id is derived from its identity
        (fact_id), so a second writer finds the first one's row and supersedes it instead of writing another.
        Returns the new row version's (type, id, version)."""
        require_text(subject=subject, predicate=predicate, content=content)
        c = self.caller
        if personal and not (c.user_id or c.agent_id):
            raise InvalidArgument("invalid_argument: personal: a personal fact belongs to the caller's user and "
                                  "agent, and this session names neither (without personal the fact is the tenant's)")
        record: dict[str, Any] = {"content": content}
        for key, value in (("content_json", content_json), ("confidence", confidence), ("source_refs", source_refs),
                           ("valid_from", _when(at))):
            if value is not None:
                record[key] = value
        at_time = record.get("valid_from")
        owner = (c.user_id, c.agent_id) if personal else (None, None)
        claims = self._claims if personal else self._shared_claims
        # Its span is an upsert: the caller names the fact, this call finds whether it is new.
        with spans.memory_span(spans.UPSERT_MEMORY, c.tenant_id, "remember", memory_type="entity") as span, \
                self._store(claims) as store:
            memory_id, version = _remember(store, c.tenant_id, owner, subject, predicate, record, at_time)
            spans.set_records(span, 1, memory_id)
            span.set_attribute("ctxasm.version", int(version))
            spans.set_content(span, records=[spans.memory_record(content, memory_id, subject=subject,
                                                                 predicate=predicate, version=int(version))])
        return ("entity", memory_id, int(version))

    def retract(self, memory_type: str, memory_id: str, *, at: datetime | str | None = None) -> None:
        """End a memory's current version at `at` (default now): windows from then on leave it out (rule
        lifecycle, `deleted`), while every version stays in history, so windows assembled before still replay.
        Nothing is erased: for a fact whose latest value was wrong, `remember` the right one instead (it
        supersedes); to remove every trace of a memory, `forget` it."""
        when = _when(at)
        with spans.memory_span(spans.DELETE_MEMORY, self.tenant_id, "retract", memory_type=memory_type) as span, \
                self._store(self._shared_claims) as store:
            spans.set_records(span, 1, memory_id)
            store.set_tenant(self.tenant_id)
            store.delete_memory(memory_type, memory_id, when.isoformat() if when else None)
            store.commit()

    def summarize_threads(self, *, thresholds: Thresholds | None = None, summarizer: Summarizer | None = None,
                          at: datetime | str | None = None) -> EpisodeRun:
        """Write an episode summary for each thread that has grown or gone quiet since its last one (a new version
        of that summary when it had one): the caller's user's and agent's threads when the session names them,
        else every thread of the tenant. `summarizer` defaults to the deployment's, with bounded retries; `at`
        (default now) is when "quiet" is measured from. Returns what was written and what failed."""
        from ctxasm.ml.summarizer import configured_summarizer
        from ctxasm.services.episodes import Thresholds as Defaults, summarize_threads

        c = self.caller
        with self._store() as store:
            return summarize_threads(store, c.tenant_id, summarizer or configured_summarizer(retries=2),
                                     now=_when(at) or datetime.now(timezone.utc), thresholds=thresholds or Defaults(),
                                     user_id=c.user_id, agent_id=c.agent_id)

    def forget(self, memory_type: str, memory_id: str) -> dict[str, Any]:
        """Erase a memory: every version of it (not only the latest) and every copy made from it, so the windows
        that showed any of them can no longer be replayed; returns what went, per table (CTX_MEMORY.erase_report).
        To stop using a memory and keep its history, `retract` it; to correct a fact, `remember` the new value."""
        with spans.memory_span(spans.DELETE_MEMORY, self.tenant_id, "forget", memory_type=memory_type) as span, \
                self._store(self._shared_claims) as store:
            spans.set_records(span, 1, memory_id)
            store.set_tenant(self.tenant_id)
            report = store.erase_report(memory_type, memory_id)
            store.commit()
            # what went: the memory and every copy made from it, in all their versions
            span.set_attributes({"ctxasm.erased_memories": len(report.get("erased") or ()),
                                 "ctxasm.erased_row_versions": int(report.get("total") or 0)})
        return report

    # -- the context budget ----------------------------------------------------------------------------------

    def budget(self, *, intent: str = DEFAULT_INTENT, at: datetime | str | None = None) -> BudgetView:
        """The context budget the database picks for this session's user, agent and thread at `at` (default now),
        with every budget row of the tenant and why each other one is not in effect (`describe()`, `as_json()`).
        Records nothing."""
        c = self.caller
        with self._store(self._shared_claims) as store:
            return effective_budget(store, c.tenant_id, Scope(c.user_id, c.agent_id, c.thread_id), _when(at),
                                    intent)

    def set_budget(self, budget: Mapping[str, Any], *, scope: str | Sequence[str] = "tenant",
                   at: datetime | str | None = None, description: str | None = None) -> BudgetView:
        """Write a context budget (the content_json of a context_budget guideline, docs/scenario-format.md) and
        return the budget now in effect for this session, explained. `scope` is "tenant" (every window of the
        tenant) or any of "user", "agent", "thread", taken from this session: the narrowest budget in effect
        wins. A budget already in effect for exactly that scope gets a new version (the old one stays in history,
        so earlier windows replay); else a new row is written. Every problem of the budget is reported at once,
        naming its field (InvalidBudget); nothing is written then. `at` (default now): when it starts to apply."""
        target = budget_scope(self.caller, scope)
        when = _when(at)
        record = budget_record(budget, target, description=description, at=when)
        # Its span is an upsert: a new version of the scope's budget or a new row, as this call finds.
        with spans.memory_span(spans.UPSERT_MEMORY, self.tenant_id, "set_budget", memory_type="guideline") as span, \
                self._store(self._shared_claims) as store:
            store.set_tenant(self.tenant_id)
            current = same_scope_budget(store.rows_as_of("guideline", store.capture_snapshot()), target)
            if current is not None:
                budget_id = current["id"]
                spans.set_records(span, 1, budget_id)
                store.supersede("guideline", budget_id, {k: v for k, v in record.items()
                                                         if k in ("content", "content_json", "valid_from")})
            else:
                if target == Scope():
                    record["id"] = TENANT_BUDGET_ID
                budget_id = record["id"]
                spans.set_records(span, 1, budget_id)
                store.put_memory("guideline", record)
            store.commit()
            spans.set_content(span, records=[spans.memory_record(record.get("content_json"), budget_id,
                                                                 description=record.get("content"))])
        return self.budget(at=when)

    # -- reading outside a window --------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = recall.SEARCH_LIMIT,
               at: datetime | str | None = None) -> ToolOutput:
        require_text(query=query)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgument(f"invalid_argument: limit must be a whole number, not {limit!r}"[:200])
        with self._store() as store:
            return recall.search(store, self.caller, _when(at), query, query_embedding, limit)

    def lookup(self, subject: str, predicate: str, *, at: datetime | str | None = None) -> ToolOutput:
        require_text(subject=subject, predicate=predicate)
        with self._store() as store:
            return recall.lookup(store, self.caller, _when(at), subject, predicate)

    def expand(self, memory_id: str, *, manifest_id: str | None = None,
               at: datetime | str | None = None) -> ToolOutput:
        """A record of a window in full, by the id the window gave it (default: this session's last window)."""
        with self._store() as store:
            return recall.expand(store, self.caller, _when(at), manifest_id or self.manifest_id, memory_id)

    def aio(self) -> AsyncSession:
        return AsyncSession(self)


class AsyncSession:
    """The same calls as Session, awaitable: each runs in a worker thread with its own pooled connection."""

    def __init__(self, session: Session):
        self.session = session

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.session, name)
        if name not in _IO_CALLS:
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        call.__name__ = name
        call.__doc__ = method.__doc__
        return call


_IO_CALLS = frozenset({"assemble", "replay", "inspect", "show", "rows_at", "inventory", "add_turn", "remember",
                       "forget", "retract", "search", "lookup", "expand", "budget", "set_budget",
                       "summarize_threads"})


#: How often remember looks again after a concurrent writer of the same fact got there first.
_REMEMBER_ATTEMPTS = 8


def fact_id(tenant_id: str, owner: tuple[str | None, str | None], subject: str, predicate: str,
            generation: int = 0) -> str:
    """The id a new fact of this identity (tenant, owner user and agent, subject, predicate) is written under:
    the same for every writer, so two concurrent writers of one new fact meet on one row. `generation` moves
    past an id a retired fact of the same identity still holds."""
    import hashlib

    key = "\x1f".join((tenant_id, owner[0] or "", owner[1] or "", subject, predicate, str(generation)))
    return "fact_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _current_fact(store: MemoryStore, tenant_id: str, owner: tuple[str | None, str | None], at: Any, subject: str,
                  predicate: str) -> str | None:
    """The id of the fact's current value in the owner's scope exactly, or None. lookup_entity gives the
    narrowest value the scope sees, which for a personal fact may be a shared one: that one is not the caller's
    to supersede (the owner's own versions are the ones read_facts lists under the caller's claim)."""
    found = store.lookup_entity(tenant_id, owner[0], owner[1], at, subject, predicate)
    current = (found or {}).get("current")
    if not current:
        return None
    memory_id = current["ref"][1]
    if owner != (None, None) and not any(
            row.get("user_id") == owner[0] and row.get("agent_id") == owner[1]
            for row in store.read_facts(tenant_id, subject, predicate, memory_id, 1)):
        return None
    return str(memory_id)


def _remember(store: MemoryStore, tenant_id: str, owner: tuple[str | None, str | None], subject: str,
              predicate: str, record: dict[str, Any], at: Any) -> tuple[str, int]:
    """Supersede the owner's current value of the fact, or write it new under its identity's id; when a
    concurrent writer got there first (the version to supersede is gone, or the id is taken), look again."""
    generation = 0
    for attempt in range(1, _REMEMBER_ATTEMPTS + 1):
        current = _current_fact(store, tenant_id, owner, at, subject, predicate)
        # The write starts a transaction of its own, after the read: its "now" (a version's default valid_from)
        # is then later than that of any version the read found, a concurrent writer's included.
        store.rollback()
        store.set_tenant(tenant_id)
        try:
            if current:
                version = store.supersede("entity", current, record)
                memory_id = current
            else:
                memory_id = fact_id(tenant_id, owner, subject, predicate, generation)
                scope = {"user_id": owner[0], "agent_id": owner[1]} if owner != (None, None) else {}
                store.put_memory("entity", {"id": memory_id, "subject": subject, "predicate": predicate,
                                            **scope, **record})
                version = 1
            store.commit()
            return memory_id, int(version)
        except (MemoryNotFound, DuplicateMemory) as exc:
            # Superseded meanwhile (its newer version is the one to supersede), written meanwhile (found next
            # time), or the id is held by a retired fact of this identity (the next generation's id).
            store.rollback()
            if attempt == _REMEMBER_ATTEMPTS:
                raise
            generation += isinstance(exc, DuplicateMemory)
    raise AssertionError("unreachable")
