"""Findings 2, 6 and 7 of the operator's-view review: advisory locks and large objects were PUBLIC (one tenant's
session could take a lock another waits on, or keep data outside every tenant's rows); partition bounds listed
every tenant id (`FOR VALUES IN ('acme')`), and pg_stat_*, pg_statio_* and pg_locks gave each partition's, so
each tenant's, row counts and activity without a claim; the shared history tables' statistics answered
questions about other tenants' ids.

Now PUBLIC may not call the functions every tenant shares (advisory locks, large objects, pg_notify, the
per-relation statistics and size functions, pg_lock_status); every partition, of the memory tables and of their
histories, is named by a keyed hash and bounded by an opaque slot, and each tenant's history has a partition
(and statistics) of its own."""

from __future__ import annotations

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn

from .helpers import admin_session, app_session, refusal

TENANTS = ("acme", "stripe", "initech")


@pytest.mark.parametrize("query", [
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_try_advisory_xact_lock(1, 2)",
    "SELECT pg_advisory_unlock_all()",
    "SELECT lo_create(0)",
    "SELECT lo_from_bytea(0, '\\x00')",
    "SELECT pg_notify('every-tenant', 'hello')",
    "SELECT count(*) FROM pg_locks",
    # The counters are what tells one partition's (one tenant's) activity: reading any of them is refused.
    "SELECT n_live_tup, n_tup_ins FROM pg_stat_user_tables",
    "SELECT heap_blks_read, heap_blks_hit FROM pg_statio_user_tables",
    "SELECT idx_scan FROM pg_stat_user_indexes",
])
def test_what_every_tenant_shares_is_refused_to_the_application(demo_target, query):
    with app_session(demo_target) as app:
        answer = refusal(app, query)
    assert answer is not None and answer[0] == "42501", answer


def test_no_statistic_or_size_of_a_tenant_partition_is_readable_by_the_application(demo_target):
    with admin_session(demo_target) as admin:
        partition = admin.execute("SELECT c.oid FROM pg_class AS c WHERE c.relispartition AND c.relkind = 'r' "
                                  "AND c.relnamespace = 'ctxasm'::regnamespace LIMIT 1").fetchone()[0]
    with app_session(demo_target) as app:
        for function in ("pg_stat_get_live_tuples", "pg_stat_get_tuples_inserted", "pg_stat_get_blocks_fetched",
                         "pg_stat_get_numscans", "pg_relation_size", "pg_total_relation_size"):
            answer = refusal(app, f"SELECT {function}(%s)", (partition,))
            assert answer is not None and answer[0] == "42501", (function, answer)


def test_no_partition_bound_or_relation_name_names_a_tenant(demo_target):
    with app_session(demo_target) as app:  # the catalog, as any role reads it
        relations = app.execute(
            "SELECT c.relname, coalesce(pg_get_expr(c.relpartbound, c.oid), '') FROM pg_class AS c "
            "WHERE c.relnamespace = 'ctxasm'::regnamespace").fetchall()
    partitions = [(name, bound) for name, bound in relations if bound]
    assert len(partitions) >= 2 * 11 * len(TENANTS), "every memory table and history has a partition per tenant"
    for tenant in TENANTS:
        assert [name for name, bound in relations if tenant in name or tenant in bound] == [], tenant
    if demo_target.embedded:  # the admin is a superuser: the slot operator class is installed
        assert all(bound.startswith("FOR VALUES WITH (modulus 8192, remainder ") for _, bound in partitions)


def test_each_tenants_history_is_a_partition_of_its_own(demo_target):
    with admin_session(demo_target) as admin:
        kinds = dict(admin.execute(
            "SELECT c.relname, c.relkind FROM pg_class AS c JOIN ctxasm.memory_type AS m "
            "ON c.relname = m.table_name || '_history' WHERE c.relnamespace = 'ctxasm'::regnamespace").fetchall())
        assert kinds and set(kinds.values()) == {"p"}, kinds
        # acme's history rows (its superseded fact) sit in a partition that holds acme's rows only.
        placed = admin.execute("SELECT tableoid::regclass::text, array_agg(DISTINCT tenant_id) "
                               "FROM ctxasm.entity_memory_history GROUP BY 1").fetchall()
    assert placed and all(len(tenants) == 1 for _, tenants in placed), placed


def test_a_tenant_registered_again_finds_its_partitions_and_their_slot(demo_target):
    with admin_session(demo_target) as admin:
        bound = lambda: admin.execute(  # noqa: E731
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_class AS c "
            "WHERE c.relname = ctxasm.tenant_partition('initech', 'entity_memory')").fetchone()
        before = bound()
        with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
            store = PostgresStore(connection)
            store.purge_tenant("initech")
            store.commit()
            store.register_tenant("initech", "Initech")
            store.commit()
        assert before is not None and bound() == before
