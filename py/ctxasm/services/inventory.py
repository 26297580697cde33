"""What a tenant's scoped connection can see: row counts per memory type and status."""

from __future__ import annotations

from typing import Any

from ctxasm.engines.registry import Engine, as_engine, connected_store


def tenant_inventory(engine: Engine | Any, tenant_id: str, claims: Any = None) -> list[tuple[str, str, int]]:
    """(memory type, status, rows) as the application role sees them with a claim for `tenant_id`
    (CTX_MEMORY.inventory: the application role reads no table itself)."""
    with connected_store(as_engine(engine), claims) as store:
        rows = store.inventory(tenant_id)
    return [(row["memory_type"], row["status"], row["rows"]) for row in rows]
