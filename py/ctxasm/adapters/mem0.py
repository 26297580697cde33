"""A Mem0-compatible facade over ctxasm.api: code written for Mem0's `Memory` switches by changing its import.

    from ctxasm.adapters.mem0 import Memory      # was: from mem0 import Memory

    m = Memory()                                  # the tenant: CTXASM_TENANT, else "default" (created if new)
    m.add([{"role": "user", "content": "I'm vegetarian."}], user_id="alice")
    m.search("what does alice eat?", user_id="alice")["results"][0]["memory"]

What each call maps to (docs/adapters.md says the same, and what is lost):

| Mem0 | ctxasm |
|---|---|
| `user_id`, `agent_id` | the session's user and agent (a memory is personal: only that user and agent see it) |
| `run_id` | the session's thread: `add` with a run_id writes each message as the thread's next turn |
| `add(messages)` without run_id | each message a personal fact (`Session.remember`, subject `mem0:<user or agent>`, a predicate of its own), written as given: no model extracts facts (`infer` is ignored) |
| `search` | the caller's memories (as `get_all`) ranked by meaning: cosine similarity of the embeddings |
| `get_all`, `get` | the caller's active facts (and, with a run_id, the thread's turns) |
| `update` | a new version of the fact (the old one stays in history) |
| `delete`, `delete_all` | `Session.retract`: no longer in effect, history kept (`forget` erases) |
| `history` | the row's versions as ADD / UPDATE / DELETE events |

Every result is Mem0's shape: `{"results": [...]}` of `{"id", "memory", ...}`; `history` a list of events.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm import api
from ctxasm.adapters.ranking import by_meaning
from ctxasm.errors import InvalidClaim
from ctxasm.services import memory_spans as spans

#: The subject prefix of the facts this facade writes: get_all lists these, not the tenant's other facts.
SUBJECT_PREFIX = "mem0:"
TENANT_ENV = "CTXASM_TENANT"
DEFAULT_TENANT = "default"


def _messages(messages: str | Mapping[str, Any] | Sequence[Any]) -> list[dict[str, str]]:
    """Mem0 takes a string, one message or a list of them."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        return [{"role": str(messages.get("role", "user")), "content": str(messages["content"])}]
    return [_messages(m)[0] for m in messages]


def _scope_required(user_id: str | None, agent_id: str | None, run_id: str | None) -> None:
    if not (user_id or agent_id or run_id):
        raise ValueError("One of the filters: user_id, agent_id or run_id is required!")


class Memory:
    """Mem0's `Memory` API over one ctxasm tenant. `memory` is a ctxasm.api.Memory (default: `Memory.open()`,
    closed with this facade); the tenant is created with the default budget when it is new."""

    def __init__(self, tenant_id: str | None = None, *, memory: api.Memory | None = None):
        self.tenant_id = tenant_id or os.environ.get(TENANT_ENV) or DEFAULT_TENANT
        self._own = memory is None
        self.memory = memory or api.Memory.open()
        try:
            self.memory.session(self.tenant_id).inventory()
        except InvalidClaim:
            self.memory.create_tenant(self.tenant_id)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None = None) -> Memory:
        """Mem0's constructor from a config: only `tenant_id` is read (the models and stores are ctxasm's)."""
        return cls((config or {}).get("tenant_id"))

    def _session(self, user_id: str | None, agent_id: str | None, run_id: str | None) -> api.Session:
        return self.memory.session(self.tenant_id, user_id=user_id, agent_id=agent_id, thread_id=run_id)

    # -- writing ---------------------------------------------------------------------------------------------

    def add(self, messages: str | Mapping[str, Any] | Sequence[Any], *, user_id: str | None = None,
            agent_id: str | None = None, run_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            infer: bool = True, **_: Any) -> dict[str, Any]:
        """Store the messages: as the run's turns with a run_id, else each as a personal fact of the user (or
        agent). Returns Mem0's `{"results": [{"id", "memory", "event": "ADD"}]}`."""
        _scope_required(user_id, agent_id, run_id)
        session = self._session(user_id, agent_id, run_id)
        results = []
        for message in _messages(messages):
            if run_id:
                role = message["role"] if message["role"] in ("user", "assistant") else "user"
                turn = session.add_turn(role, message["content"])
                memory_id = turn.id
            else:
                owner = user_id or agent_id
                with spans.asked_as(spans.CREATE_MEMORY):  # a fact of its own, never an existing one
                    _type, memory_id, _version = session.remember(
                        f"{SUBJECT_PREFIX}{owner}", f"memory_{uuid.uuid4().hex[:12]}", message["content"],
                        content_json={"metadata": dict(metadata or {}), "role": message["role"]}, personal=True)
            results.append({"id": memory_id, "memory": message["content"], "event": "ADD"})
        return {"results": results}

    def update(self, memory_id: str, data: str) -> dict[str, str]:
        """A new version of a fact this facade wrote (the old one stays in history)."""
        row = self._row(memory_id)
        session = self._session(row.get("user_id"), row.get("agent_id"), None)
        with spans.asked_as(spans.UPDATE_MEMORY):  # the caller named an existing memory
            session.remember(row["subject"], row["predicate"], data, content_json=row.get("content_json"),
                             personal=True)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """No longer in effect from now; every version stays in history (ctxasm `retract`)."""
        kind, row = self._find(memory_id)
        self._session(row.get("user_id"), row.get("agent_id"), row.get("thread_id")).retract(kind, memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        _scope_required(user_id, agent_id, run_id)
        for item in self.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id)["results"]:
            self.delete(item["id"])
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        raise NotImplementedError("the Mem0 facade does not drop a tenant's memory: erase memories one by one "
                                  "(Session.forget), or purge the tenant as its owner (ctxasm.api.Memory"
                                  ".purge_tenant)")

    # -- reading ---------------------------------------------------------------------------------------------

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, limit: int = 100, **_: Any) -> dict[str, Any]:
        """The caller's memories (those get_all lists) ranked by meaning against the query, best first, each with
        its cosine `score` (ctxasm.adapters.ranking). Its span: search_memory."""
        with spans.memory_span(spans.SEARCH_MEMORY, self.tenant_id, "mem0.search") as span:
            items = self.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id, limit=10_000)["results"]
            ranked = by_meaning(query, [str(item["memory"]) for item in items])
            results = [{**items[i], "score": score} for i, score in ranked[:limit]]
            spans.set_records(span, len(results))
            spans.set_content(span, query=query, records=[spans.memory_record(r["memory"], r["id"], score=r["score"])
                                                          for r in results])
        return {"results": results}

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                limit: int = 100, **_: Any) -> dict[str, Any]:
        """The caller's active facts written through this facade, and with a run_id the run's turns."""
        _scope_required(user_id, agent_id, run_id)
        rows = [("entity", r) for r in self._rows("entity") if str(r.get("subject", "")).startswith(SUBJECT_PREFIX)]
        if run_id:
            rows += [("conversation", r) for r in self._rows("conversation")
                     if r.get("event_type") == "message" and r.get("thread_id") == run_id]
        wanted = [(kind, r) for kind, r in rows if r.get("status") == "active"
                  and (user_id is None or r.get("user_id") == user_id)
                  and (agent_id is None or r.get("agent_id") == agent_id)]
        # Facts in the order they were written, then the run's turns in turn order: rows written in one
        # transaction share the database's clock, so the time alone does not order them.
        wanted.sort(key=lambda item: (item[0] == "conversation", item[1].get("turn_index") or 0,
                                      str(item[1].get("valid_from") or ""), str(item[1].get("id"))))
        return {"results": [self._item(r) for _, r in wanted[:limit]]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        try:
            return self._item(self._find(memory_id)[1])
        except KeyError:
            return None

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The row's versions, oldest first, as Mem0's events: ADD, then UPDATE per later version, DELETE last
        when it was deleted."""
        kind, _ = self._find(memory_id)
        versions = sorted((r for r in self._rows(kind) if r.get("id") == memory_id), key=lambda r: r["version"])
        events, previous = [], None
        for row in versions:
            events.append({"id": f"{memory_id}:{row['version']}", "memory_id": memory_id,
                           "old_memory": previous, "new_memory": row.get("content"),
                           "event": "ADD" if previous is None else "UPDATE", "created_at": row.get("valid_from"),
                           "is_deleted": False})
            previous = row.get("content")
        if versions and versions[-1].get("status") == "deleted":
            events.append({"id": f"{memory_id}:deleted", "memory_id": memory_id, "old_memory": previous,
                           "new_memory": None, "event": "DELETE", "created_at": versions[-1].get("deleted_at"),
                           "is_deleted": True})
        return events

    # -- rows ------------------------------------------------------------------------------------------------

    def _rows(self, memory_type: str) -> list[Mapping[str, Any]]:
        session = self.memory.session(self.tenant_id)
        with session.store() as store:
            store.set_tenant(self.tenant_id)
            snapshot = store.capture_snapshot()
            store.rollback()
        return session.rows_at(memory_type, snapshot)

    def _find(self, memory_id: str) -> tuple[str, Mapping[str, Any]]:
        for kind in ("entity", "conversation"):
            rows = [r for r in self._rows(kind) if r.get("id") == memory_id]
            if rows:
                return kind, max(rows, key=lambda r: r["version"])
        raise KeyError(f"no memory {memory_id!r} in tenant {self.tenant_id!r}")

    def _row(self, memory_id: str) -> Mapping[str, Any]:
        kind, row = self._find(memory_id)
        if kind != "entity":
            raise ValueError(f"{memory_id!r} is a turn of run {row.get('thread_id')}: a turn is not updated")
        return row

    @staticmethod
    def _item(row: Mapping[str, Any]) -> dict[str, Any]:
        return {"id": row.get("id"), "memory": row.get("content"),
                "metadata": (row.get("content_json") or {}).get("metadata") or {},
                "created_at": row.get("valid_from"), "user_id": row.get("user_id"),
                "agent_id": row.get("agent_id"), "run_id": row.get("thread_id")}

    def close(self) -> None:
        if self._own:
            self.memory.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
