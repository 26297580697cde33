"""What is deployed in a PostgreSQL database: for `ctxasm db status`."""

from __future__ import annotations

import psycopg

from ctxasm.local import pgconn


def deployment_summary(target: pgconn.Target) -> str:
    try:
        with pgconn.connect(target, pgconn.owner_login()) as conn:
            applied, last = conn.execute(  # type: ignore[misc]  # an aggregate: always one row
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


def databases(target: pgconn.Target) -> list[tuple[str, bool]]:
    """The server's databases (not templates, not the admin database), each with whether ctxasm is deployed in it:
    `db status` names them, so a database filled by scripts/demo (ctxasm_demo) is found."""
    names = pgconn.database_names(target) or []
    found = []
    for name in names:
        try:
            with psycopg.connect(target.conninfo(target.admin, name), connect_timeout=10) as conn:
                (deployed,) = conn.execute("SELECT to_regclass('ctxasm.ctx_tenant') IS NOT NULL").fetchone()  # type: ignore[misc]
        except psycopg.Error:
            deployed = False
        found.append((name, bool(deployed)))
    return found
