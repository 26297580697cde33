"""Hypothesis profile for the property tests: modest example counts so the default suite stays fast,
no example database written into the checkout, no per-example deadline (the database sets the pace).
CTXASM_HYPOTHESIS_PROFILE=thorough runs ten times as many examples."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from ..conftest import SCENARIOS, empty_database  # noqa: F401  (SCENARIOS: the property tests import it from here)

_COMMON = dict(deadline=None, database=None, derandomize=True, print_blob=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                      HealthCheck.data_too_large])
settings.register_profile("ctxasm", max_examples=25, **_COMMON)
settings.register_profile("thorough", max_examples=250, **_COMMON)
settings.load_profile(os.environ.get("CTXASM_HYPOTHESIS_PROFILE", "ctxasm"))


#: A second tenant with the same user, agent and thread ids as Acme's Jane, whose every text carries this
#: marker: it must never appear in an Acme window, whatever the input.
MARKER = "GLOBEX-PRIVATE-7f3a9c"
SCOPE = dict(user_id="jane", agent_id="research-assistant", thread_id="thread_jane_research")


def _globex(store) -> None:
    store.register_tenant("globex", "Globex (isolation marker)")
    store.set_tenant("globex")
    for kind, record in [
        ("entity", {"id": "fact_marker", "subject": "model:helios-rag", "predicate": "beir_ndcg10",
                    "content": f"{MARKER}: Helios-RAG scored 0.99 on BEIR.", "user_id": "jane"}),
        ("kb_document", {"id": "doc_marker", "title": f"{MARKER} report", "collection": "research",
                         "content": f"{MARKER} Helios-RAG BEIR evaluation contamination eviction Letta."}),
        ("summary", {"id": "sum_marker", "summary_key": "july", "user_id": "jane", "agent_id": "research-assistant",
                     "content": f"{MARKER} summary of the July evaluation of Helios-RAG."}),
        ("conversation", {"id": "turn_marker", "role": "user", "turn_index": 1, **SCOPE,
                          "content": f"{MARKER} is Helios-RAG still the one to beat?"}),
    ]:
        store.put_memory(kind, record)
    store.commit()


@pytest.fixture(scope="module")
def two_tenants(pg_target, embedded_files):
    """Acme (the demo) and Globex (the marker tenant), loaded once; reloaded if another module emptied them (checked
    per module: under pytest-xdist a worker may run another folder's tests, which empty the database, in between)."""
    import psycopg

    from ctxasm.services import load
    from ctxasm.local import pgconn
    from ctxasm.engines.postgres import PostgresStore

    with psycopg.connect(pg_target.conninfo(pg_target.admin), autocommit=True) as admin:
        present = admin.execute("SELECT count(*) FROM ctxasm.ctx_tenant WHERE tenant_id IN ('acme', 'globex')"
                                ).fetchone()[0]
        if present != 2:
            empty_database(pg_target)
            load.load_file(pg_target, embedded_files["demo"])
            with pgconn.connect(pg_target, pgconn.owner_login()) as connection:
                _globex(PostgresStore(connection))
    return pg_target
