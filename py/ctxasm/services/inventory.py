"""What a tenant's scoped connection can see: row counts per memory type and status."""

from __future__ import annotations

from ctxasm.engines.store import MemoryStore


def tenant_inventory(store: MemoryStore, tenant_id: str) -> list[tuple[str, str, int]]:
    """(memory type, status, rows) as the application role sees them with a claim for `tenant_id`
    (CTX_MEMORY.inventory: the application role reads no table itself)."""
    rows = store.inventory(tenant_id)
    store.rollback()
    return [(row["memory_type"], row["status"], row["rows"]) for row in rows]
