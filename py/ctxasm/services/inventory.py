"""What a tenant's scoped connection can see: row counts per memory type (and, for conversation rows, per event
type) and status."""

from __future__ import annotations

from ctxasm.engines.store import MemoryStore

#: The event type of a conversation row that is a turn; every other one is an event of the agent loop.
MESSAGE = "message"


def kind_of(row: dict) -> str:
    """The row's kind as the inventory lists it: the memory type, or `event:<event type>` for a conversation row
    that is not a turn (a recorded window, provider request, model response or tool result)."""
    event = row.get("event_type")
    return row["memory_type"] if event in (None, MESSAGE) else f"event:{event}"


def tenant_inventory(store: MemoryStore, tenant_id: str) -> list[tuple[str, str, int]]:
    """(kind, status, rows) as the application role sees them with a claim for `tenant_id` (CTX_MEMORY.inventory:
    the application role reads no table itself). A kind is a memory type, or `event:<type>` for the events of the
    conversation table, so the turns of a thread are counted on their own."""
    rows = store.inventory(tenant_id)
    store.rollback()
    return [(kind_of(row), row["status"], row["rows"]) for row in rows]
