"""Finding 3: the shared HNSW index was a channel between tenants. A caller could set hnsw.ef_search and the
planner's enable_* settings, which SECURITY DEFINER routines inherit: with a tiny candidate list and the index
forced, another tenant's vectors near the query fill the list, so one tenant crowds another's hits out, and
the number of one's own hits tells whether another tenant holds a document near a given embedding.

Now every definer routine pins the planner and pgvector settings (and the scan continues until enough of the
session tenant's rows are found): what one tenant's search returns does not depend on the caller's settings
nor on another tenant's vectors."""

from __future__ import annotations

import pytest

from ctxasm import pgconn
from ctxasm.assembler import parse_time, query_embedding
from ctxasm.store import PostgresStore

from .helpers import app_session

AT = parse_time("2026-09-28T12:00:00")
QUERY = "retention policy for archived conversation memory"
#: What the review set in its own session before calling the routines.
ATTACKER_SETTINGS = ("SET hnsw.ef_search = 1", "SET hnsw.iterative_scan = off", "SET enable_seqscan = off",
                     "SET enable_bitmapscan = off", "SET enable_sort = off", "SET random_page_cost = 0.0001")


def search(target, tenant: str, embedded: str, settings: tuple[str, ...] = ()) -> list[tuple]:
    with app_session(target) as app:
        for statement in settings:
            app.execute(statement)
        found = PostgresStore(app).search_memory(tenant, None, None, None, AT, QUERY, embedded, 20)
    return [tuple(item["ref"]) + (item["scores"]["vector_rank"],) for item in found["items"]]


def crowd(target, tenant: str, embedded: list[float], count: int) -> None:
    """`count` chunks of `tenant` lying on the query's embedding, as the loader would write them."""
    with pgconn.connect(target, pgconn.owner_login()) as owner:
        store = PostgresStore(owner)
        store.register_tenant(tenant, "a tenant that crowds the index")
        store.set_tenant(tenant)
        for n in range(count):
            vector = list(embedded)
            vector[n % len(vector)] += 0.001 * (1 + n // len(vector))
            store.put_memory("kb_chunk", {"id": f"crowd_{n}", "document_id": "crowd", "chunk_index": n,
                                          "title": "crowd", "content": f"filler text number {n}",
                                          "valid_from": "2026-01-01T00:00:00Z", "embedding": vector})
        store.commit()


@pytest.fixture()
def corpus(corpus_once):
    yield corpus_once
    with pgconn.connect(corpus_once, pgconn.owner_login()) as owner:
        PostgresStore(owner).purge_tenant("crowd")
        owner.commit()


def test_the_callers_settings_do_not_change_what_a_search_returns(corpus):
    embedded = query_embedding(QUERY)
    plain = search(corpus, "acme", embedded)
    assert any(rank is not None for *_, rank in plain), "the vector half must find something, or this proves nothing"
    assert search(corpus, "acme", embedded, ATTACKER_SETTINGS) == plain


def test_another_tenants_vectors_neither_crowd_out_nor_reveal(corpus):
    from ctxasm import embedding

    embedded = query_embedding(QUERY)
    before = search(corpus, "acme", embedded, ATTACKER_SETTINGS)
    crowd(corpus, "crowd", embedding.embed_one(QUERY), 60)
    after = search(corpus, "acme", embedded, ATTACKER_SETTINGS)
    assert after == before
    # The other direction: what the crowding tenant finds does not tell it that acme holds nearby documents.
    own = search(corpus, "crowd", embedded, ATTACKER_SETTINGS)
    assert len([ref for ref in own if ref[-1] is not None]) == 20
