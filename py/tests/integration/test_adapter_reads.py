"""The adapters read through CTX_MEMORY.read_facts: a bounded read that names the tenant and stays on its rows.

Mem0's get_all / search / get / history and LangGraph's get / search / list_namespaces used to read every row
version of every fact of the tenant (rows_as_of) and filter in Python. Now each is one call of read_facts, on the
tenant's own partition, at most MAX_FACT_ROWS row versions. A neighbour tenant of 6,000 Mem0 memories (of a user
with the same id) changes neither the answers nor their cost, and the read opens none of the neighbour's
relations. The facade's ids are its own facts: a turn, another tenant's memory or a fact written otherwise is
refused with an error that says so.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from ctxasm.api import Memory
from ctxasm.contract_constants import MAX_FACT_ROWS
from ctxasm.engines.postgres import PostgresStore
from ctxasm.errors import InvalidArgument
from ctxasm.local import pgconn

NEIGHBOUR_FACTS = 6_000
ALEX = ["I'm vegetarian.", "I'm allergic to nuts.", "I live in Lisbon.", "I cycle to work.",
        "My sister is called Ana.", "I prefer window seats.", "I work on compilers.", "I speak Portuguese."]


@pytest.fixture()
def memory(clean_db):
    with Memory.open(database=clean_db.database) as memory:
        yield memory


def _neighbour(target) -> None:
    """6,000 Mem0 memories of another tenant's user "alex", bulk-written as the owner (RLS, constraints and
    indexes apply), then analysed so the planner knows their number."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.register_tenant("neighbour", "Neighbour")
        store.set_tenant("neighbour")
        connection.execute(
            "INSERT INTO ctxasm.entity_memory (tenant_id, id, subject, predicate, content, content_json, user_id, "
            "valid_from) SELECT 'neighbour', 'n' || g, 'mem0:alex', 'memory_n' || g, "
            "'Alex of the neighbour is allergic to nuts, note ' || g, '{\"metadata\": {}}', 'alex', "
            "'2026-01-01T00:00:00Z'::timestamptz + g * interval '1 second' FROM generate_series(1, %s) AS g",
            (NEIGHBOUR_FACTS,))
        connection.commit()
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        admin.execute("ANALYZE ctxasm.entity_memory")


def _answers(m, first: str) -> dict:
    return {"get_all": m.get_all(user_id="alex")["results"],
            "search": [(r["id"], r["score"]) for r in m.search("What can Alex not eat?", user_id="alex")["results"]],
            "get": m.get(first), "history": m.history(first)}


def _seconds(m, first: str) -> float:
    """The shortest time of the four reads over seven rounds (the least disturbed by other work on the machine)."""
    rounds = []
    for _ in range(7):
        start = time.perf_counter()
        _answers(m, first)
        rounds.append(time.perf_counter() - start)
    return min(rounds)


def _relations_of_the_neighbour(target) -> set[int]:
    """The neighbour's entity partition and its indexes (the partition that holds its rows)."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant("neighbour")
        partition = connection.execute("SELECT tableoid FROM ctxasm.entity_memory LIMIT 1").fetchone()[0]
        connection.rollback()
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        indexes = admin.execute("SELECT indexrelid FROM pg_index WHERE indrelid = %s", (partition,)).fetchall()
    return {int(partition), *(int(i) for (i,) in indexes)}


def _relations_read_facts_opens(target, calls: int) -> set[int]:
    """The relations a read_facts call holds locks on at its end, after `calls` calls in the same session (past
    the five after which PL/pgSQL may switch a statement to a generic plan)."""
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        for _ in range(calls):
            store.read_facts("newco", "mem0:", None, None, 100)
        store.set_tenant("newco")
        connection.execute("SELECT ctx_memory.read_facts(in_subject_prefix => 'mem0:', in_predicate => NULL, "
                           "in_id => NULL, in_limit => 100)").fetchone()
        with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
            held = admin.execute("SELECT relation FROM pg_locks WHERE pid = %s AND locktype = 'relation'",
                                 (connection.info.backend_pid,)).fetchall()
        connection.rollback()
    return {int(r) for (r,) in held}


@pytest.mark.slow  # writes a neighbour tenant of 6,000 facts and ranks by meaning
def test_mem0_reads_are_the_tenants_own_beside_a_large_neighbour(memory, clean_db):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    for text in ALEX:
        m.add(text, user_id="alex")
    first = m.get_all(user_id="alex")["results"][0]["id"]
    m.update(first, "I'm vegetarian, and vegan on weekdays.")
    alone = _answers(m, first)
    alone_seconds = _seconds(m, first)

    _neighbour(clean_db)
    beside = _answers(m, first)
    beside_seconds = _seconds(m, first)

    assert beside == alone, "the neighbour's memories changed this tenant's answers"
    assert len(alone["get_all"]) == len(ALEX) and [h["event"] for h in alone["history"]] == ["ADD", "UPDATE"]
    # Reading the neighbour's 6,000 rows (and ranking them by meaning) would take seconds, not a small multiple
    # of the eight rows of this tenant; the bound leaves room for a loaded machine.
    assert beside_seconds <= 3 * alone_seconds + 0.1, f"{alone_seconds:.3f} s alone, {beside_seconds:.3f} s beside"
    opened = _relations_read_facts_opens(clean_db, calls=8)
    assert opened and not opened & _relations_of_the_neighbour(clean_db), "read_facts opened the neighbour's rows"


def test_read_facts_is_bounded_and_scoped(memory):
    memory.create_tenant("newco")
    jane = memory.session("newco", user_id="jane")
    joe = memory.session("newco", user_id="joe")
    for index in range(5):
        jane.remember("mem0:jane", f"memory_{index}", f"Jane's memory {index}", personal=True)
    joe.remember("mem0:joe", "memory_0", "Joe's memory", personal=True)
    jane.remember("acct:jane", "plan", "Jane is on the team plan", personal=True)
    _type, fact_id, _version = jane.remember("mem0:jane", "memory_0", "Jane's memory 0, corrected", personal=True)

    with jane.store() as store:
        listed = store.read_facts("newco", "mem0:", None, None, 3)
        versions = store.read_facts("newco", "mem0:", None, fact_id, MAX_FACT_ROWS)
        named = store.read_facts("newco", "mem0:jane", "memory_2", None, MAX_FACT_ROWS)
        for limit in (0, MAX_FACT_ROWS + 1):
            with pytest.raises(InvalidArgument, match="in_limit"):
                store.read_facts("newco", "mem0:", None, None, limit)
        for prefix in (None, ""):  # '' is NULL on Oracle: refused on both engines
            with pytest.raises(InvalidArgument, match="in_subject_prefix"):
                store.read_facts("newco", prefix, None, None, 10)  # type: ignore[arg-type]
    # the newest three active facts of Jane's, under the prefix only; Joe's and the other subject's are not read
    assert [r["content"] for r in listed] == ["Jane's memory 0, corrected", "Jane's memory 4", "Jane's memory 3"]
    assert [(r["ref"][2], r["status"]) for r in versions] == [(1, "superseded"), (2, "active")]
    assert versions[1]["first_valid_from"] == versions[0]["valid_from"]
    assert [r["content"] for r in named] == ["Jane's memory 2"]
    with joe.store() as store:
        assert [r["content"] for r in store.read_facts("newco", "mem0:", None, None, 10)] == ["Joe's memory"]


def test_mem0_ids_are_the_facades_own_facts(memory):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    other = Mem0Memory("otherco", memory=memory)
    fact = m.add("I'm vegetarian.", user_id="alex")["results"][0]["id"]
    turn = m.add([{"role": "user", "content": "Book a table for two."}], user_id="alex", run_id="r1")["results"][0]["id"]
    theirs = other.add("I'm vegan.", user_id="alex")["results"][0]["id"]
    _type, written_otherwise, _version = memory.session("newco", user_id="alex").remember(
        "account", "plan", "Alex is on the team plan", personal=True)

    for unknown in (theirs, written_otherwise, "no-such-memory"):
        assert m.get(unknown) is None
        for call in (m.history, m.delete, lambda i: m.update(i, "changed")):
            with pytest.raises(ValueError, match="this facade takes the ids its add returned"):
                call(unknown)
    for call in (m.get, m.history, m.delete, lambda i: m.update(i, "changed")):
        with pytest.raises(ValueError, match="is a message of a run"):
            call(turn)
    with pytest.raises(ValueError, match="non-empty string"):
        m.get("")
    # nothing of the above touched a memory: the neighbour's and the other fact are still in effect
    assert other.get(theirs)["memory"] == "I'm vegan."
    assert [i.text for i in memory.session("newco", user_id="alex").lookup("account", "plan").items] == [
        "Alex is on the team plan"]
    m.delete(fact)
    with pytest.raises(ValueError, match="was deleted"):
        m.update(fact, "I eat fish now.")
    assert [h["event"] for h in m.history(fact)] == ["ADD", "DELETE"]
    # a run_id alone names the run's turns, not every user's facts; delete_all(run_id=...) retracts them
    kept = m.add("I like trains.", user_id="alex")["results"][0]["id"]
    assert [r["id"] for r in m.get_all(run_id="r1")["results"]] == [turn]
    m.delete_all(run_id="r1")
    assert [r["id"] for r in m.get_all(user_id="alex", run_id="r1")["results"]] == [kept]


def test_mem0_search_leaves_out_matches_under_the_threshold(memory):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    for text in ALEX:
        m.add(text, user_id="alex")
    everything = m.search("What can Alex not eat?", user_id="alex")["results"]
    cut = everything[1]["score"]
    above = m.search("What can Alex not eat?", user_id="alex", threshold=cut)["results"]
    assert [r["id"] for r in above] == [r["id"] for r in everything if r["score"] >= cut] and 2 <= len(above) < 8


def test_langgraph_reads_keep_namespaces_that_share_a_prefix_apart(memory):
    pytest.importorskip("langgraph.store.base")
    from ctxasm.adapters.langgraph_store import CtxasmStore

    memory.create_tenant("newco")
    store = CtxasmStore("newco", memory=memory, user_index=None)
    store.put(("users", "12"), "prefs", {"theme": "dark"})
    store.put(("users", "123"), "prefs", {"theme": "light"})
    store.put(("users2", "1"), "prefs", {"theme": "blue"})
    assert store.get(("users", "12"), "prefs").value == {"theme": "dark"}
    assert [i.namespace for i in store.search(("users", "12"))] == [("users", "12")]
    assert sorted(i.namespace for i in store.search(("users",))) == [("users", "12"), ("users", "123")]
    assert store.list_namespaces(prefix=("users",)) == [("users", "12"), ("users", "123")]
    store.delete(("users", "12"), "prefs")
    assert store.get(("users", "12"), "prefs") is None
    assert store.get(("users", "123"), "prefs").value == {"theme": "light"}
