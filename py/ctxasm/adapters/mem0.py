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
| `search` | the caller's newest MAX_FACT_ROWS memories (as `get_all`) ranked by meaning: cosine similarity |
| `get_all`, `get` | the caller's active facts (and, with a run_id, the thread's turns): CTX_MEMORY.read_facts |
| `update` | a new version of the fact (the old one stays in history) |
| `delete`, `delete_all` | `Session.retract`: no longer in effect, history kept (`forget` erases) |
| `history` | the row's versions as ADD / UPDATE / DELETE events |

Every result is Mem0's shape: `{"results": [...]}` of `{"id", "memory", ...}`; `history` a list of events.
get, update, delete and history take the ids add returned for facts; any other id is refused (ValueError).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm import api
from ctxasm.adapters.ranking import by_meaning
from ctxasm.contract_constants import MAX_FACT_ROWS
from ctxasm.errors import InvalidClaim
from ctxasm.services import memory_spans as spans

#: The subject prefix of the facts this facade writes: get_all lists these, not the tenant's other facts.
SUBJECT_PREFIX = "mem0:"
TENANT_ENV = "CTXASM_TENANT"
DEFAULT_TENANT = "default"
#: How ctxasm names a thread's turns (ctxasm.services.turns): an id a run's add returned.
TURN_PREFIX = "turn_"


def _messages(messages: str | Mapping[str, Any] | Sequence[Any]) -> list[dict[str, str]]:
    """Mem0 takes a string, one message or a list of them."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        message = {"role": str(messages.get("role", "user")), "content": str(messages["content"])}
        if isinstance(messages.get("name"), str) and messages["name"].strip():
            message["name"] = messages["name"]  # a chat message's speaker (OpenAI's `name`)
        return [message]
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
                turn = session.add_turn(role, message["content"], speaker=message.get("name"))
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
        row = self._current(memory_id)
        session = self._session(row.get("user_id"), row.get("agent_id"), None)
        with spans.asked_as(spans.UPDATE_MEMORY):  # the caller named an existing memory
            session.remember(row["subject"], row["predicate"], data, content_json=row.get("content_json"),
                             personal=True)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """No longer in effect from now; every version stays in history (ctxasm `retract`)."""
        row = self._current(memory_id)
        self._session(row.get("user_id"), row.get("agent_id"), None).retract("entity", memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        """Retract the caller's memories (and with a run_id the run's turns), a bounded page at a time."""
        _scope_required(user_id, agent_id, run_id)
        session = self._session(user_id, agent_id, run_id)
        while True:
            listed = self._listed(session, run_id, MAX_FACT_ROWS)
            if not listed:
                return {"message": "Memories deleted successfully!"}
            for kind, row in listed:
                session.retract(kind, row["ref"][1])

    def reset(self) -> None:
        raise NotImplementedError("the Mem0 facade does not drop a tenant's memory: erase memories one by one "
                                  "(Session.forget), or purge the tenant as its owner (ctxasm.api.Memory"
                                  ".purge_tenant)")

    # -- reading ---------------------------------------------------------------------------------------------

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, limit: int = 100, threshold: float | None = None,
               **_: Any) -> dict[str, Any]:
        """The caller's memories (those get_all lists) ranked by meaning against the query, best first, each with
        its cosine `score` (ctxasm.adapters.ranking), none under `threshold` when given. Its span: search_memory."""
        with spans.memory_span(spans.SEARCH_MEMORY, self.tenant_id, "mem0.search") as span:
            items = self.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id, limit=MAX_FACT_ROWS)["results"]
            ranked = by_meaning(query, [str(item["memory"]) for item in items])
            results = [{**items[i], "score": score} for i, score in ranked
                       if threshold is None or score >= threshold][:limit]
            spans.set_records(span, len(results))
            spans.set_content(span, query=query, records=[spans.memory_record(r["memory"], r["id"], score=r["score"])
                                                          for r in results])
        return {"results": results}

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                limit: int = 100, **_: Any) -> dict[str, Any]:
        """The caller's active facts written through this facade (the newest `limit`, at most MAX_FACT_ROWS), in
        the order they were written, and with a run_id the run's turns after them."""
        _scope_required(user_id, agent_id, run_id)
        listed = self._listed(self._session(user_id, agent_id, run_id), run_id, limit)
        return {"results": [self._item(row, run_id if kind == "conversation" else None) for kind, row in listed]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory's current value, or None when it was deleted or this facade never wrote it."""
        versions = self._versions(memory_id)
        return self._item(versions[-1]) if versions and versions[-1].get("status") == "active" else None

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The fact's versions, oldest first, as Mem0's events: ADD, then UPDATE per later version, DELETE last
        when it was deleted."""
        versions = self._versions(memory_id)
        if not versions:
            raise ValueError(self._unknown(memory_id))
        events, previous = [], None
        for row in versions:
            version = row["ref"][2]
            events.append({"id": f"{memory_id}:{version}", "memory_id": memory_id,
                           "old_memory": previous, "new_memory": row.get("content"),
                           "event": "ADD" if previous is None else "UPDATE", "created_at": row.get("valid_from"),
                           "is_deleted": False})
            previous = row.get("content")
        if versions[-1].get("status") == "deleted":
            events.append({"id": f"{memory_id}:deleted", "memory_id": memory_id, "old_memory": previous,
                           "new_memory": None, "event": "DELETE", "created_at": versions[-1].get("deleted_at"),
                           "is_deleted": True})
        return events

    # -- rows: every read is CTX_MEMORY.read_facts (or thread_turns for a run), bounded and on the tenant's rows

    def _listed(self, session: api.Session, run_id: str | None, limit: int) -> list[tuple[str, Mapping[str, Any]]]:
        """(kind, row) of the caller's active facts, oldest first, then the run's turns in turn order: `limit`
        rows at most, the newest facts when there are more."""
        limit = max(1, min(int(limit), MAX_FACT_ROWS))
        caller = session.caller
        with session.store() as store:
            # A run's memories are its turns: a run_id alone lists them, not every user's facts.
            facts = store.read_facts(self.tenant_id, SUBJECT_PREFIX, None, None, limit) \
                if caller.user_id or caller.agent_id else []
            turns = store.thread_turns(self.tenant_id, run_id, 0, limit) if run_id else []
        listed = [("entity", row) for row in reversed(facts)] + [("conversation", row) for row in turns]
        return listed[:limit]

    def _versions(self, memory_id: str) -> list[dict[str, Any]]:
        """Every version of a fact this facade wrote, oldest first ([] when it wrote none of that id)."""
        if not isinstance(memory_id, str) or not memory_id:
            raise ValueError(f"a memory id is a non-empty string, not {memory_id!r}")
        if memory_id.startswith(TURN_PREFIX):
            raise ValueError(f"{memory_id!r} is a message of a run (a turn of its thread), not a memory with "
                             "versions: get_all(run_id=...) lists a run's messages and delete_all(run_id=...) "
                             "retracts them; get, update, delete and history take the ids add gave without a run_id")
        with self.memory.session(self.tenant_id).store() as store:
            return store.read_facts(self.tenant_id, SUBJECT_PREFIX, None, memory_id, MAX_FACT_ROWS)

    def _current(self, memory_id: str) -> Mapping[str, Any]:
        versions = self._versions(memory_id)
        if not versions:
            raise ValueError(self._unknown(memory_id))
        if versions[-1].get("status") != "active":
            raise ValueError(f"memory {memory_id!r} was deleted: history({memory_id!r}) shows its versions")
        return versions[-1]

    def _unknown(self, memory_id: str) -> str:
        return (f"no memory {memory_id!r} in tenant {self.tenant_id!r}: this facade takes the ids its add returned "
                "(another tenant's memory, or a fact written otherwise, is not one)")

    @staticmethod
    def _item(row: Mapping[str, Any], run_id: str | None = None) -> dict[str, Any]:
        return {"id": row["ref"][1], "memory": row.get("content"),
                "metadata": (row.get("content_json") or {}).get("metadata") or {},
                "created_at": row.get("valid_from"), "user_id": row.get("user_id"),
                "agent_id": row.get("agent_id"), "run_id": run_id}

    def close(self) -> None:
        if self._own:
            self.memory.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
