"""A thread's turns, written back: the next turn of a thread, numbered by the database (CTX_MEMORY.add_turn gives
it the thread's next turn_index, so two writers never share one)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ctxasm.engines.store import MemoryStore
from ctxasm.services import memory_spans as spans
from ctxasm.services.recall import Caller


@dataclass(frozen=True)
class Turn:
    id: str
    turn_index: int
    role: str


def add_turn(store: MemoryStore, caller: Caller, role: str, content: str, at: datetime | None,
             source_refs: list[dict[str, Any]] | None = None, speaker: str | None = None) -> Turn:
    """The caller's thread's next turn (role user or assistant), committed; `at` None: said now, by the
    database's clock; `speaker`: who said it, by name (None: the role says it). Its span: create_memory, one
    record."""
    record: dict[str, Any] = {"id": f"turn_{uuid.uuid4().hex}", "role": role, "content": content,
                              "user_id": caller.user_id, "agent_id": caller.agent_id, "thread_id": caller.thread_id}
    if speaker is not None:
        record["speaker"] = speaker
    if at is not None:
        record["valid_from"] = at
    if source_refs:
        record["source_refs"] = source_refs
    with spans.memory_span(spans.CREATE_MEMORY, caller.tenant_id, "add_turn", memory_type="conversation") as span:
        spans.set_records(span, 1, record["id"])
        store.set_tenant(caller.tenant_id)
        index = store.add_turn(record)
        store.commit()
        spans.set_content(span, records=[spans.memory_record(content, record["id"], role=role, turn_index=index)])
    return Turn(record["id"], int(index), role)
