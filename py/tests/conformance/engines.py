"""The engines the conformance suite can reach, from the package's engine registry (ctxasm.engines.registry).

PostgreSQL is always there (embedded, or CTXASM_PG_DSN). Oracle runs when CTXASM_ORACLE_DSN (the application
user) and CTXASM_ORACLE_OWNER_DSN (the schema owner, for loading and purging) are set; otherwise its cases
are skipped, saying why. Both run the same scenario files through the same Python code: only the store differs.
What is here and not in the registry is for the tests alone: counting manifests as the owner.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ctxasm.engines import registry
from ctxasm.engines.store import MemoryStore
from ctxasm.services import load

ORACLE_SKIP = ("CTXASM_ORACLE_DSN and CTXASM_ORACLE_OWNER_DSN are not set: no Oracle database is reachable, "
               "so the Oracle twin is checked statically only (scripts/test gates)")

#: Manifests of the tenant set on the owner's connection (RLS / VPD apply to the owner too).
_COUNT_MANIFESTS = {
    registry.POSTGRESQL: "SELECT count(*) FROM ctxasm.conversation_memory WHERE event_type = 'context_manifest'",
    registry.ORACLE: "select count(*) from conversation_memory where event_type = 'context_manifest'",
}


class TestEngine:
    """A registry engine with the owner's and the application's stores as context managers."""

    def __init__(self, engine: registry.Engine):
        self.engine = engine
        self.name = engine.name

    @contextmanager
    def owner(self) -> Iterator[MemoryStore]:
        with registry.connected_store(self.engine, role=registry.OWNER) as store:
            yield store

    @contextmanager
    def app(self) -> Iterator[MemoryStore]:
        with registry.connected_store(self.engine) as store:
            yield store

    def manifests(self, tenant_id: str) -> int:
        with self.owner() as store:
            store.set_tenant(tenant_id)
            cursor = store.connection.cursor()
            try:
                cursor.execute(_COUNT_MANIFESTS[self.name])
                count = int(cursor.fetchone()[0])
            finally:
                cursor.close()
            store.rollback()
        return count


def postgres_engine(target: Any) -> TestEngine:
    return TestEngine(registry.PostgresEngine(target=target))


def oracle_engine() -> TestEngine | None:
    if not registry.oracle_configured():
        return None
    return TestEngine(registry.open_engine(registry.ORACLE))


def load_fresh(engine: TestEngine, document: dict[str, Any], name: str) -> None:
    """Purge the scenario's tenants, then load it through the write API (one transaction), with the default
    memory instructions and embedded as the loader does."""
    load.add_memory_instructions(document)
    load.embed_memories(document)
    with engine.owner() as store:
        for tenant in document["tenants"]:
            store.purge_tenant(tenant["tenant_id"])
        load.load_document(store, document, name)
