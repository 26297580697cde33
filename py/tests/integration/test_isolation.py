"""Tenant isolation is enforced by PostgreSQL (verified claims, contract routines only, ENABLE + FORCE RLS), not by
the Python layer. The attacks of the security review are in tests/security/."""

from __future__ import annotations

import psycopg
import pytest

from ctxasm import errors
from ctxasm.store import PostgresStore


def memory_tables(conn) -> list[str]:
    rows = conn.execute("SELECT table_name FROM ctxasm.memory_type ORDER BY ordinal").fetchall()
    return [name for (table,) in rows for name in (table, f"{table}_history")]


def rows_per_tenant(conn, table: str, where: str = "true") -> dict[str, int]:
    return dict(conn.execute(f"SELECT tenant_id, count(*) FROM ctxasm.{table} WHERE {where} GROUP BY 1").fetchall())


def test_every_table_and_history_has_forced_rls(owner_conn):
    rows = owner_conn.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, count(p.polname) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_policy p ON p.polrelid = c.oid "
        "WHERE n.nspname = 'ctxasm' AND c.relkind IN ('r', 'p') GROUP BY 1, 2, 3"
    ).fetchall()
    by_name = {name: (enabled, forced, policies) for name, enabled, forced, policies in rows}
    for table in memory_tables(owner_conn):
        assert by_name[table] == (True, True, 1), table


def test_the_app_role_has_no_privilege_on_any_table_or_view(demo_loaded, owner_conn):
    granted = owner_conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'ctxasm' AND c.relkind IN ('r', 'v', 'm', 'p') "
        "AND (has_table_privilege('ctxasm_app', c.oid, 'SELECT') OR has_table_privilege('ctxasm_app', c.oid, 'INSERT') "
        "  OR has_table_privilege('ctxasm_app', c.oid, 'UPDATE') OR has_table_privilege('ctxasm_app', c.oid, 'DELETE'))"
    ).fetchall()
    assert granted == []
    assert owner_conn.execute("SELECT has_schema_privilege('ctxasm_app', 'ctxasm', 'USAGE')").fetchone()[0] is False


def test_a_tenant_scoped_session_counts_only_its_rows(demo_loaded, app_conn, owner_conn):
    store = PostgresStore(app_conn)
    tables = [t for t in memory_tables(owner_conn) if not t.endswith("_history")]
    for tenant in ("acme", "stripe", "initech"):
        seen = sum(row["rows"] for row in store.inventory(tenant))
        PostgresStore(owner_conn).set_tenant(tenant)
        held = [rows_per_tenant(owner_conn, table) for table in tables]
        owner_conn.rollback()
        assert all(set(counts) <= {tenant} for counts in held), tenant
        assert seen == sum(counts.get(tenant, 0) for counts in held) > 0, tenant


def test_no_tenant_no_rows(demo_loaded, app_conn):
    for call in ("SELECT ctx_memory.inventory()", "SELECT ctx_assembly.read_manifest('m')",
                 "SELECT ctx_memory.read_event('e')"):
        with pytest.raises(errors.TenantNotSet):
            PostgresStore(app_conn)._scalar(call)


def test_tenant_setting_cannot_be_forged(demo_loaded, app_conn):
    app_conn.execute("SELECT set_config('ctxasm.tenant_id', 'acme', true)")
    app_conn.execute("SELECT set_config('ctxasm.tenant_sig', repeat('0', 64), true)")
    assert PostgresStore(app_conn).current_tenant() is None
    with pytest.raises(errors.TenantNotSet):
        PostgresStore(app_conn)._scalar("SELECT ctx_memory.inventory()")


def test_tenant_lasts_one_transaction(demo_loaded, app_conn):
    store = PostgresStore(app_conn)
    store.set_tenant("acme")
    assert store.current_tenant() == "acme"
    app_conn.commit()
    assert store.current_tenant() is None


def test_unknown_tenant_is_refused(clean_db, app_conn):
    with pytest.raises(errors.InvalidClaim, match="^invalid_claim: the tenant claim was refused$"):
        PostgresStore(app_conn).set_tenant("nobody")


def test_app_cannot_write_tables_directly(demo_loaded, app_conn):
    PostgresStore(app_conn).set_tenant("acme")
    statements = [
        "INSERT INTO ctxasm.entity_memory (tenant_id, id, content, subject, predicate) VALUES ('acme','x','y','s','p')",
        "UPDATE ctxasm.entity_memory SET content = 'changed'",
        "DELETE FROM ctxasm.entity_memory",
        "ALTER TABLE ctxasm.entity_memory NO FORCE ROW LEVEL SECURITY",
        "SELECT * FROM ctxasm.ctx_hmac_key",
        "SELECT * FROM ctxasm.ctx_tenant",
        "SELECT * FROM ctxasm.entity_memory",
        "SELECT * FROM ctxasm.memory_row",
        "SELECT * FROM ctxasm.memory_rows(NULL)",
        "SELECT ctx_admin.register_tenant('evil', 'Evil')",
        "SET ROLE ctxasm_owner",
    ]
    for statement in statements:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app_conn.execute(statement)
        app_conn.rollback()


def test_app_role_owns_nothing_and_cannot_bypass(clean_db, owner_conn):
    role = owner_conn.execute(
        "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, oid FROM pg_roles WHERE rolname = 'ctxasm_app'"
    ).fetchone()
    assert role[:4] == (False, False, False, False)
    owned = owner_conn.execute(
        "SELECT (SELECT count(*) FROM pg_class WHERE relowner = %(r)s) + "
        "(SELECT count(*) FROM pg_proc WHERE proowner = %(r)s) + "
        "(SELECT count(*) FROM pg_namespace WHERE nspowner = %(r)s)",
        {"r": role[4]},
    ).fetchone()[0]
    assert owned == 0
    owner = owner_conn.execute("SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = 'ctxasm_owner'").fetchone()
    assert owner == (False, False)


def test_owner_is_filtered_too(demo_loaded, owner_conn):
    """FORCE RLS: even the table owner sees one tenant at a time."""
    PostgresStore(owner_conn).set_tenant("stripe")
    assert set(rows_per_tenant(owner_conn, "guideline_memory")) == {"stripe"}


def test_writes_cannot_target_another_tenant(demo_loaded, app_conn):
    store = PostgresStore(app_conn)
    store.set_tenant("acme")
    with pytest.raises(errors.InvalidField, match="tenant_id"):
        store.put_memory("entity", {"id": "x", "tenant_id": "stripe", "content": "c", "subject": "s", "predicate": "p"})
    app_conn.rollback()
    store.set_tenant("acme")
    # Stripe's row ids are not reachable from acme: superseding one is "not found", not a cross-tenant write.
    with pytest.raises(errors.MemoryNotFound):
        store.supersede("entity", "fact_refund_window", {"content": "The window is 365 days."})
