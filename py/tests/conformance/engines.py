"""The engines the conformance suite can reach, behind one small interface.

PostgreSQL is always there (embedded, or CTXASM_PG_DSN). Oracle runs when CTXASM_ORACLE_DSN (the application
user) and CTXASM_ORACLE_OWNER_DSN (the schema owner, for loading and purging) are set; otherwise its cases
are skipped, saying why. Both run the same scenario files through the same Python code: only the store differs.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

from ctxasm import loader, pgconn
from ctxasm.store import MemoryStore, OracleStore, PostgresStore

ORACLE_SKIP = ("CTXASM_ORACLE_DSN and CTXASM_ORACLE_OWNER_DSN are not set: no Oracle database is reachable, "
               "so the Oracle twin is checked statically only (scripts/test gates)")


class PostgresEngine:
    name = "postgresql"

    def __init__(self, target: pgconn.Target):
        self.target = target

    @contextmanager
    def owner(self) -> Iterator[MemoryStore]:
        with pgconn.connect(self.target, pgconn.owner_login()) as connection:
            yield PostgresStore(connection)

    @contextmanager
    def app(self) -> Iterator[MemoryStore]:
        with pgconn.connect(self.target, pgconn.app_login()) as connection:
            yield PostgresStore(connection)

    def manifests(self, tenant_id: str) -> int:
        """Counted as the owner (the application role reads no table); RLS still keeps it to the tenant."""
        with self.owner() as store:
            store.set_tenant(tenant_id)
            count = store.connection.execute(
                "SELECT count(*) FROM ctxasm.conversation_memory WHERE event_type = 'context_manifest'").fetchone()[0]
            store.rollback()
        return count


class OracleEngine:
    name = "oracle"

    def __init__(self, app_dsn: str, owner_dsn: str):
        self.app_dsn, self.owner_dsn = app_dsn, owner_dsn

    @staticmethod
    def _connect(dsn: str) -> Any:
        import oracledb

        user, _, rest = dsn.partition("/")
        password, _, address = rest.partition("@")
        return oracledb.connect(user=user, password=password, dsn=address)

    @contextmanager
    def owner(self) -> Iterator[MemoryStore]:
        with self._connect(self.owner_dsn) as connection:
            yield OracleStore(connection)

    @property
    def owner_schema(self) -> str:
        """The schema that owns the packages: the user of CTXASM_ORACLE_OWNER_DSN."""
        return self.owner_dsn.partition("/")[0]

    @contextmanager
    def app(self) -> Iterator[MemoryStore]:
        with self._connect(self.app_dsn) as connection:
            # The application user owns nothing: resolve ctx_session, ctx_memory, ctx_assembly (called
            # unqualified by OracleStore) in the owner's schema, with or without synonyms in the app schema.
            connection.current_schema = self.owner_schema
            yield OracleStore(connection)

    def manifests(self, tenant_id: str) -> int:
        """Counted as the owner (the application user has no grant on any table); VPD applies to the owner too."""
        with self.owner() as store:
            store.set_tenant(tenant_id)
            with store.connection.cursor() as cursor:
                cursor.execute("select count(*) from conversation_memory "
                               "where event_type = 'context_manifest'")
                return int(cursor.fetchone()[0])


def oracle_engine() -> OracleEngine | None:
    app, owner = os.environ.get("CTXASM_ORACLE_DSN"), os.environ.get("CTXASM_ORACLE_OWNER_DSN")
    return OracleEngine(app, owner) if app and owner else None


def load_fresh(engine: PostgresEngine | OracleEngine, document: dict[str, Any], name: str) -> None:
    """Purge the scenario's tenants, then load it through the write API (one transaction), with the default
    memory instructions and embedded as the loader does."""
    loader.add_memory_instructions(document)
    loader.embed_memories(document)
    with engine.owner() as store:
        for tenant in document["tenants"]:
            store.purge_tenant(tenant["tenant_id"])
        loader.load_document(store, document, name)
