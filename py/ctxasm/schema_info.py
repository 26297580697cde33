"""What is deployed, and what a tenant's scoped connection can see: for `ctxasm db status` and the demo."""

from __future__ import annotations

from typing import Any

import psycopg

from . import pgconn
from .store import PostgresStore


def deployment_summary(target: pgconn.Target) -> str:
    try:
        with pgconn.connect(target, pgconn.owner_login()) as conn:
            applied, last = conn.execute(
                f"SELECT count(*), max(dateexecuted) FROM {pgconn.LIQUIBASE_SCHEMA}.databasechangelog"
            ).fetchone()
            tables = conn.execute(
                "SELECT m.memory_type, m.table_name FROM ctxasm.memory_type m ORDER BY m.ordinal"
            ).fetchall()
            tenants = [t for (t,) in conn.execute("SELECT tenant_id FROM ctxasm.ctx_tenant ORDER BY 1")]
    except psycopg.errors.UndefinedTable:
        return f"database {target.database}: not deployed (run `ctxasm db deploy`)"
    except Exception as exc:  # a database that does not exist yet, or unreachable: say so, do not crash status
        return f"database {target.database}: not reachable as {pgconn.OWNER_ROLE} ({exc.__class__.__name__})"
    lines = [f"database {target.database}: {applied} changesets applied, last at {last:%Y-%m-%d %H:%M:%S}",
             f"memory tables: {', '.join(f'{table} ({kind})' for kind, table in tables)}",
             f"tenants: {', '.join(tenants) or 'none'}"]
    return "\n".join(lines)


def tenant_inventory(target: pgconn.Target, tenant_id: str, claims: Any = None) -> list[tuple[str, str, int]]:
    """(memory type, status, rows) as the application role sees them with a claim for `tenant_id`
    (CTX_MEMORY.inventory: the application role reads no table itself)."""
    with pgconn.connect(target, pgconn.app_login()) as conn:
        rows = PostgresStore(conn, claims).inventory(tenant_id)
    return [(row["memory_type"], row["status"], row["rows"]) for row in rows]
