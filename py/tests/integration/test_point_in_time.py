"""Point-in-time reads: a read as of a recorded snapshot returns exactly the rows visible then."""

from __future__ import annotations

import psycopg
import pytest

from ctxasm import errors, pgconn
from ctxasm.store import PostgresStore


def entity(memory_id: str, content: str, **extra) -> dict:
    return {"id": memory_id, "content": content, "subject": f"s:{memory_id}", "predicate": "p", **extra}


def snapshot_with_state(target, memory_type: str) -> tuple[str, list[dict]]:
    """Record a snapshot and, in the same REPEATABLE READ transaction, what a plain read sees (as the owner: the
    application role reads no table; RLS keeps the owner to the tenant too)."""
    with pgconn.connect(target, pgconn.owner_login()) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        store = PostgresStore(conn)
        store.set_tenant("acme")
        snapshot = store.capture_snapshot()
        table = {"entity": "entity_memory", "summary": "summarization_memory"}[memory_type]
        rows = conn.execute(
            f"SELECT to_jsonb(t) - 'created_xid' - 'search_text' FROM ctxasm.{table} t ORDER BY id, version"
        ).fetchall()
        conn.rollback()
    return snapshot, [row[0] for row in rows]


@pytest.fixture()
def acme_store(clean_db, app_conn, owner_conn):
    PostgresStore(owner_conn).register_tenant("acme", "Acme")
    owner_conn.commit()
    store = PostgresStore(app_conn)
    store.set_tenant("acme")
    return store


def test_write_record_change_delete_read_back(clean_db, acme_store, app_conn):
    acme_store.put_memory("entity", entity("helios", "Helios-RAG scores 0.92.", confidence=0.92))
    acme_store.put_memory("entity", entity("letta", "Letta evicts to recall storage."))
    acme_store.put_memory("entity", entity("stale", "A fact that will be deleted."))
    acme_store.commit()

    snapshot, state_then = snapshot_with_state(clean_db, "entity")
    assert [row["id"] for row in state_then] == ["helios", "letta", "stale"]

    acme_store.set_tenant("acme")
    assert acme_store.supersede("entity", "helios", {"content": "Helios-RAG scores 0.78 (corrected).",
                                                     "confidence": 0.78}) == 2
    acme_store.delete_memory("entity", "stale")
    acme_store.put_memory("entity", entity("new", "A fact written after the snapshot."))
    acme_store.commit()

    acme_store.set_tenant("acme")
    now = {(r["id"], r["version"]): r["status"] for r in acme_store.rows_as_of("entity", acme_store.capture_snapshot())}
    assert now == {("helios", 1): "superseded", ("helios", 2): "active", ("letta", 1): "active",
                   ("stale", 1): "deleted", ("new", 1): "active"}

    as_of = acme_store.rows_as_of("entity", snapshot)
    assert as_of == state_then
    assert {r["content"] for r in as_of} == {"Helios-RAG scores 0.92.", "Letta evicts to recall storage.",
                                             "A fact that will be deleted."}
    assert all(r["status"] == "active" for r in as_of)


def test_uncommitted_and_later_rows_are_invisible(clean_db, acme_store, app_conn):
    snapshot, state_then = snapshot_with_state(clean_db, "entity")
    assert state_then == []
    acme_store.put_memory("entity", entity("later", "Written after the snapshot."))
    assert acme_store.rows_as_of("entity", snapshot) == []
    acme_store.commit()
    acme_store.set_tenant("acme")
    assert acme_store.rows_as_of("entity", snapshot) == []


def test_rows_as_of_stays_inside_the_tenant(demo_loaded, app_conn):
    store = PostgresStore(app_conn)
    store.set_tenant("stripe")
    snapshot = store.capture_snapshot()
    rows = store.rows_as_of("entity", snapshot)
    assert rows and {r["tenant_id"] for r in rows} == {"stripe"}


def test_bad_snapshot_is_named(acme_store):
    with pytest.raises(errors.InvalidSnapshot, match="not-a-snapshot"):
        acme_store.rows_as_of("entity", "not-a-snapshot")


def test_superseded_version_is_kept_with_its_old_content(demo_loaded, owner_conn):
    store = PostgresStore(owner_conn)
    store.set_tenant("acme")
    rows = owner_conn.execute(
        "SELECT version, status, confidence, valid_until IS NOT NULL FROM ctxasm.entity_memory "
        "WHERE id = 'fact_helios_rag_beir_ndcg10' ORDER BY version"
    ).fetchall()
    assert [(v, s, float(c), closed) for v, s, c, closed in rows] == [
        (1, "superseded", 0.92, True), (2, "active", 0.78, False)]
