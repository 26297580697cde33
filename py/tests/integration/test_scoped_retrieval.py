"""A window that can see few of its tenant's rows ranks those rows exactly, through an index that finds them.

One agent's knowledge base of a few chunks beside another agent's large one, in the same tenant: the vector
graph holds both, so a nearest-neighbour walk for the small agent would pass mostly rows its scope cannot see,
and without an index on the scope the planner reads every chunk of the partition instead (59 ms for 91 chunks
of 100,000). With the scope index (tenant, user, agent) the planner reads the few rows in scope and ranks them
exactly; the large agent's window still walks the graph.
Likewise a knowledge base ingested again and again, or mostly deleted, whose live table keeps every version:
the few rows still in effect are found through the lifecycle index (tenant, valid_until, over the rows neither
deleted nor erased).
"""

from __future__ import annotations

import psycopg
import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import COMPARISON_BUDGET

TENANT, REVISED = "agents", "revised"
LARGE, SMALL = "librarian", "helpdesk"
LARGE_CHUNKS, SMALL_CHUNKS = 3000, 6
AT = "2026-09-28T12:00:00"
#: A random vector per row (the subquery names the row, so it is drawn again for each).
_RANDOM_VECTOR = "ARRAY(SELECT random() - 0.5 + 0 * g FROM generate_series(1, 384))::vector"
#: A random question vector.
_QUESTION_VECTOR = "ARRAY(SELECT random() - 0.5 FROM generate_series(1, 384))::vector"


def _tenant_with_chunks(target, tenant: str, groups: list[tuple[str, int, str, str | None, str | None]]) -> None:
    """A tenant with its budget and, per group, `count` chunks of `agent` with `status`, `valid_until` and
    `deleted_at`."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.register_tenant(tenant, tenant.title())
        store.set_tenant(tenant)
        store.put_memory("guideline", {"id": "budget", "guideline_key": "context_budget", "content": "Budget.",
                                       "content_json": COMPARISON_BUDGET, "valid_from": "2026-01-01T00:00:00Z"})
        for agent, count, status, valid_until, deleted_at in groups:
            connection.execute(
                "INSERT INTO ctxasm.knowledge_base_chunk (tenant_id, id, agent_id, document_id, chunk_index, content,"
                "                                         embedding, status, valid_from, valid_until, deleted_at) "
                f"SELECT %s, %s || '_' || %s || '_' || g, %s, %s || '_doc', g, %s || ' manual page ' || g, "
                f"       {_RANDOM_VECTOR}, %s, '2026-01-01T00:00:00Z', %s, %s FROM generate_series(1, %s) AS g",
                (tenant, agent, status, agent, agent, agent, status, valid_until, deleted_at, count))
        connection.commit()
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        admin.execute("ANALYZE ctxasm.knowledge_base_chunk")


@pytest.fixture()
def two_knowledge_bases(clean_db):
    _tenant_with_chunks(clean_db, TENANT, [(LARGE, LARGE_CHUNKS, "active", None, None),
                                           (SMALL, SMALL_CHUNKS, "active", None, None)])
    return clean_db


@pytest.fixture(params=["superseded", "deleted"])
def revised_knowledge_base(clean_db, request):
    """A knowledge base whose live table keeps LARGE_CHUNKS rows out of effect (old versions superseded many
    times over, or chunks deleted) and SMALL_CHUNKS in effect."""
    gone = ((SMALL, LARGE_CHUNKS, "superseded", "2026-02-01T00:00:00Z", None) if request.param == "superseded"
            else (SMALL, LARGE_CHUNKS, "deleted", None, "2026-02-01T00:00:00Z"))
    _tenant_with_chunks(clean_db, REVISED, [gone, (SMALL, SMALL_CHUNKS, "active", None, None)])
    return clean_db


def _nearest_plan(target, agent: str, tenant: str = TENANT) -> tuple[str, dict[str, str]]:
    """The plan of the statement ctxasm.nearest_candidates runs for the evidence chunks of `agent` (the same
    text, executed with the same parameters), and the partition's index names by kind."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant(tenant)
        partition, predicate = connection.execute(
            "SELECT p.partition_name, p.predicate FROM ctxasm.slice_partitions(%s, 'evidence') AS p "
            "WHERE p.memory_type = 'kb_chunk'", (tenant,)).fetchone()
        indexes = dict(connection.execute(
            "SELECT CASE WHEN indexdef LIKE '%%USING hnsw%%' THEN 'vector' "
            "            WHEN indexdef LIKE '%%(tenant_id, user_id, agent_id)%%' THEN 'scope' "
            "            WHEN indexdef LIKE '%%(tenant_id, valid_until)%%' THEN 'lifecycle' ELSE indexname END, "
            "       indexname FROM pg_indexes WHERE schemaname = 'ctxasm' AND tablename = %s", (partition,)).fetchall())
        connection.execute(
            "CREATE FUNCTION pg_temp.nearest_plan(in_statement text, in_tenant varchar, in_vector vector, "
            "    in_user varchar, in_agent varchar, in_thread varchar, in_at timestamptz, in_depth integer) "
            "RETURNS text LANGUAGE plpgsql AS $$ "
            "DECLARE l_line text; l_plan text := ''; "
            "BEGIN "
            "    FOR l_line IN EXECUTE 'EXPLAIN ' || in_statement "
            "        USING in_tenant, in_vector, in_user, in_agent, in_thread, in_at, in_depth LOOP "
            "        l_plan := l_plan || l_line || chr(10); "
            "    END LOOP; "
            "    RETURN l_plan; "
            "END $$")
        statement = (f'SELECT r.id FROM ctxasm."{partition}" AS r WHERE r.embedding IS NOT NULL AND {predicate} '
                     "ORDER BY r.embedding <=> $2 LIMIT $7")
        (plan,) = connection.execute(
            f"SELECT pg_temp.nearest_plan(%s, %s, {_QUESTION_VECTOR}, 'user', %s, 't1', %s, 50)",
            (statement, tenant, agent, AT)).fetchone()
        connection.rollback()
    return plan, indexes


def test_a_small_scope_is_ranked_through_the_scope_index_and_a_large_one_through_the_graph(two_knowledge_bases):
    small, indexes = _nearest_plan(two_knowledge_bases, SMALL)
    scope = indexes.get("scope", "(no scope index)")
    assert scope in small and indexes["vector"] not in small and "Seq Scan" not in small, small
    large, _ = _nearest_plan(two_knowledge_bases, LARGE)
    assert indexes["vector"] in large, large


def _vector_ranked(target, tenant: str, agent: str) -> list[str]:
    spec = WindowSpec(tenant_id=tenant, user_id="user", agent_id=agent, thread_id="t1", intent="comparison",
                      question="Where is the manual page about resetting a password?")
    with pgconn.connect(target, pgconn.app_login()) as connection:
        window = assemble(PostgresStore(connection), spec, parse_time(AT))
    return sorted(i["ref"][1] for i in window.manifest["retrieval"]["items"]
                  if i["slice"] == "evidence" and i.get("vector_rank") is not None)


def test_the_small_agent_gets_every_chunk_of_its_own_and_none_of_the_other(two_knowledge_bases):
    assert _vector_ranked(two_knowledge_bases, TENANT, SMALL) == sorted(
        f"{SMALL}_active_{n}" for n in range(1, SMALL_CHUNKS + 1))


def test_the_few_versions_in_effect_are_ranked_through_the_lifecycle_index(revised_knowledge_base):
    plan, indexes = _nearest_plan(revised_knowledge_base, SMALL, REVISED)
    lifecycle = indexes.get("lifecycle", "(no lifecycle index)")
    assert lifecycle in plan and indexes["vector"] not in plan and "Seq Scan" not in plan, plan
    assert _vector_ranked(revised_knowledge_base, REVISED, SMALL) == sorted(
        f"{SMALL}_active_{n}" for n in range(1, SMALL_CHUNKS + 1))
