"""What the attacks of the security suite share: sessions as the roles the review used, and claims minted with
the test deployment's key (the trusted side's launch configuration, as `ctxasm db deploy` left it)."""

from __future__ import annotations

import psycopg

from ctxasm.local import pgconn

QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."


def app_session(target, **options) -> psycopg.Connection:
    """A raw connection as the application role: what any holder of its password can do."""
    return pgconn.connect(target, pgconn.app_login(), **options)


def admin_session(target) -> psycopg.Connection:
    return psycopg.connect(target.conninfo(target.admin), autocommit=True)


def become(connection: psycopg.Connection, tenant: str) -> None:
    """Scope the connection's transaction to `tenant` the way the application does (PostgresStore.set_tenant: a
    claim minted with the deployment's key)."""
    from ctxasm.engines.postgres import PostgresStore

    PostgresStore(connection).set_tenant(tenant)


def claim(tenant: str, user: str | None = None, agent: str | None = None, **options) -> str:
    from ctxasm import claims

    return claims.mint(claims.read_key(), tenant, user, agent, **options)


def refusal(connection: psycopg.Connection, query: str, params: tuple = ()) -> tuple[str, str] | None:
    """(SQLSTATE, primary message) of a statement the database refuses, or None when it runs; the connection is
    left usable."""
    try:
        connection.execute(query, params)
    except psycopg.Error as exc:
        connection.rollback()
        return exc.sqlstate, exc.diag.message_primary
    connection.rollback()
    return None


def every_table_containing(target, text: str) -> list[str]:
    """Every table of the database (all schemas, histories and Liquibase's included) with a row holding `text`,
    as admin, which no policy filters."""
    with admin_session(target) as admin:
        tables = admin.execute(
            "SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')").fetchall()
        return [name for (name,) in tables
                if admin.execute(f"SELECT count(*) FROM {name} AS t WHERE t::text LIKE %s",
                                 (f"%{text}%",)).fetchone()[0]]


def as_owner(target, work, tenant: str = "acme"):
    """`work(store)` through an owner store with `tenant` set, committed: how the loader and the agent loop
    write (RLS filters the owner too). Returns what `work` returned."""
    from ctxasm.engines.postgres import PostgresStore

    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant(tenant)
        result = work(store)
        store.commit()
        return result
