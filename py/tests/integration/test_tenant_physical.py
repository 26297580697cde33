"""Multi-tenant is physical: a small tenant beside a large one gets the same retrieval, through its own rows.

Every memory table is partitioned by tenant, so a tenant's vector and text indexes hold its rows only. A tenant
of 20 chunks next to a neighbour whose 100,000 chunks all sit right at the question's embedding (the worst
case for a shared index, which would return the neighbour's rows and filter them away) still gets all 20 of
its chunks vector-ranked, and the same window it gets alone.
"""

from __future__ import annotations

import math
import random

import psycopg
import pytest
from psycopg import sql

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.ml import embedding
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import COMPARISON_BUDGET, read_as_owner

NEIGHBOUR_CHUNKS = 100_000
QUESTION = "Which retriever should the team build on after the benchmark correction?"
AT = "2026-09-28T12:00:00"
BUDGET = {**COMPARISON_BUDGET, "weights": {"rerank": 0.6, "confidence": 0.25, "recency": 0.15},
          "candidate_limits": {"evidence": 40}}


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [round(x / norm, 6) for x in vector]


def _small_tenant(store: PostgresStore, question: list[float]) -> None:
    store.register_tenant("small", "Small")
    store.set_tenant("small")
    store.put_memory("guideline", {"id": "budget", "guideline_key": "context_budget", "content": "Budget.",
                                   "content_json": BUDGET, "valid_from": "2026-01-01T00:00:00Z"})
    rng = random.Random(20)
    for index in range(20):
        # Each chunk points away from the question: every neighbour chunk is nearer to it than any of these.
        away = _unit([-q + rng.uniform(-0.3, 0.3) for q in question])
        store.put_memory("kb_chunk", {"id": f"chunk_{index:02d}", "document_id": "doc", "chunk_index": index,
                                      "content": f"Small tenant note {index} about its own retriever choice.",
                                      "embedding": away, "valid_from": "2026-01-01T00:00:00Z"})
    store.commit()


def _neighbour(target, question: list[float]) -> None:
    """100,000 chunks of another tenant, every one within a hair of the question's embedding, loaded the way a
    tenant's partition is made (ctxasm.add_tenant_partition: a table of its own, then attached), with the rows
    in it before the attach: the parent's indexes (HNSW, GIN, btree) are then built over them at once, as a
    deployment builds an index, where 100,000 inserts into the HNSW index cost about a minute of CPU. The
    partition's constraints and generated columns apply to every row, and the attach checks its bound."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.register_tenant("neighbour", "Neighbour")
        (name,) = connection.execute("SELECT ctxasm.tenant_partition('neighbour', 'knowledge_base_chunk')").fetchone()
        partition = sql.Identifier("ctxasm", name)
        connection.execute(sql.SQL("ALTER TABLE ctxasm.knowledge_base_chunk DETACH PARTITION {}").format(partition))
        connection.execute(sql.SQL("DROP TABLE {}").format(partition))
        connection.execute(sql.SQL(
            "CREATE TABLE {} (LIKE ctxasm.knowledge_base_chunk INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            "INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION)").format(partition))
        connection.execute(sql.SQL(
            "INSERT INTO {} (tenant_id, id, document_id, chunk_index, content, embedding, valid_from) "
            "SELECT 'neighbour', 'n' || g, 'ndoc', g, 'Neighbour retriever benchmark correction note ' || g, "
            "       %s::vector, '2026-01-01T00:00:00Z' FROM generate_series(1, %s) AS g").format(partition),
            (embedding.vector_literal(question), NEIGHBOUR_CHUNKS))
        # the graph of 100,000 vectors is built in memory when it fits (the default 64 MB does not)
        connection.execute("SET maintenance_work_mem = '512MB'")
        connection.execute("SELECT ctxasm.add_tenant_partition('knowledge_base_chunk', 'neighbour')")
        connection.commit()
        store.set_tenant("neighbour")
        (reached,) = connection.execute("SELECT count(*) FROM ctxasm.knowledge_base_chunk").fetchone()
        assert reached == NEIGHBOUR_CHUNKS, "the neighbour's rows are read through the parent, under its policy"
        connection.rollback()
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        admin.execute("ANALYZE ctxasm.knowledge_base_chunk")


def _vector_ranked(target, question: list[float]) -> tuple[list[str], dict]:
    spec = WindowSpec(tenant_id="small", user_id="jane", agent_id=None, thread_id="t1", intent="comparison",
                      question=QUESTION)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        selection_store = _FixedEmbedding(store, embedding.vector_literal(question))
        window = assemble(selection_store, spec, parse_time(AT))
    items = [i for i in window.manifest["retrieval"]["items"]
             if i["slice"] == "evidence" and i.get("vector_rank") is not None]
    return sorted(i["ref"][1] for i in items), window.manifest


class _FixedEmbedding:
    """The store with the question's embedding fixed (the test places the neighbour's rows at it)."""

    def __init__(self, store: PostgresStore, literal: str):
        self._store, self._literal = store, literal

    def select_window(self, tenant_id, scope):
        from dataclasses import replace

        return self._store.select_window(tenant_id, replace(scope, query_embedding=self._literal))

    def __getattr__(self, name):
        return getattr(self._store, name)


@pytest.mark.slow  # loads a large neighbour tenant
def test_a_small_tenant_keeps_its_full_k_beside_a_crowding_neighbour(clean_db):
    question = _unit([math.sin(i) for i in range(embedding.DIMENSIONS)])
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        _small_tenant(PostgresStore(connection), question)
    alone, window_alone = _vector_ranked(clean_db, question)
    assert len(alone) == 20

    _neighbour(clean_db, question)
    beside, window_beside = _vector_ranked(clean_db, question)
    assert beside == alone, "the neighbour changed the small tenant's vector results"
    rendered = lambda m: [(e["ref"], e["tier"]) for e in m["memories"]]  # noqa: E731
    assert rendered(window_beside) == rendered(window_alone)
    assert not any("neighbour" in str(e) for e in window_beside["memories"] + window_beside["excluded"])


#: Selections a session makes before the one whose locks are read: past the five custom plans after which
#: PostgreSQL's plan cache may switch a statement to a generic plan, which would hold every tenant's partitions.
_SELECTIONS_BEFORE = 7


def _relation_locks_of_one_selection(target, question: list[float]) -> int:
    """Relation locks one selection for the small tenant holds at its end (they last until the transaction
    ends): every table, partition and index the statements opened, in a session that has made selections
    before (as a pooled connection has)."""
    from ctxasm.engines.store import WindowScope

    scope = WindowScope("jane", None, "t1", "comparison", parse_time(AT), QUESTION,
                        query_embedding=embedding.vector_literal(question))
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        for _ in range(_SELECTIONS_BEFORE):
            store.select_window("small", scope)
            connection.rollback()
        store.set_tenant("small")
        store.select_window("small", scope)
        # pg_locks is the admin's to read (the application role may not see other sessions' locks).
        with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
            held = admin.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype = 'relation'",
                                 (connection.info.backend_pid,)).fetchone()[0]
        connection.rollback()
    return held


def test_an_assembly_opens_its_own_tenants_partitions_only(clean_db):
    """Reads filtered by a constant type or slice over the union views would open (and lock) every tenant's
    partitions, about forty per registered tenant; an assembly's cost must not grow with the tenants there are."""
    question = _unit([math.sin(i) for i in range(embedding.DIMENSIONS)])
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        _small_tenant(PostgresStore(connection), question)
    before = _relation_locks_of_one_selection(clean_db, question)
    added = 12
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        for index in range(added):
            store.register_tenant(f"other_{index:02d}", "another tenant")
        store.commit()
    after = _relation_locks_of_one_selection(clean_db, question)
    assert after - before <= added, f"{before} relation locks with one tenant, {after} with {added} more"


def test_a_rows_text_tsvector_and_vector_stay_in_its_heap_page(clean_db):
    """A knowledge-base chunk of about 1,500 characters with its tsvector and vector is about 4 kB: past the 2 kB
    at which PostgreSQL moves values out of line by default, each value a read of the lexical probe or of the
    candidate rows would look up in the TOAST table. The tenant's partitions keep such a row whole."""
    question = _unit([math.sin(i) for i in range(embedding.DIMENSIONS)])
    rng = random.Random(7)
    words = [f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{index}"
             for index in range(220)]
    content = " ".join(words)
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        _small_tenant(store, question)
        store.set_tenant("small")
        store.put_memory("kb_chunk", {"id": "wide", "document_id": "doc", "chunk_index": 99, "content": content,
                                      "embedding": question, "valid_from": "2026-01-01T00:00:00Z"})
        store.commit()
    (row,) = read_as_owner(clean_db, "small",
                           "SELECT pg_column_size(c.*), pg_column_toast_chunk_id(c.content), "
                           "pg_column_toast_chunk_id(c.search_text), pg_column_toast_chunk_id(c.embedding) "
                           "FROM ctxasm.knowledge_base_chunk AS c WHERE c.tenant_id = 'small' AND c.id = 'wide'")
    size, *out_of_line = row
    assert size > 3000, f"the row is {size} bytes: too small to test anything"
    assert out_of_line == [None, None, None], f"a {size}-byte row has values out of line: {out_of_line}"
