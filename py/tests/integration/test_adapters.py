"""The framework adapters end to end on the embedded PostgreSQL: the Mem0 facade run through Mem0's documented
quickstart calls (add, search, get_all, get, update, history, delete with user_id / agent_id / run_id), and the
LangGraph store run through the documented BaseStore calls side by side with LangGraph's own InMemoryStore (the
package ships no store conformance suite: langgraph-checkpoint-conformance covers checkpointers only)."""

from __future__ import annotations

import pytest

from ctxasm.api import Memory

ALEX = [{"role": "user", "content": "Hi, I'm Alex. I'm a vegetarian and I'm allergic to nuts."},
        {"role": "assistant", "content": "Hello Alex! I've noted that you're a vegetarian and have a nut allergy."}]


@pytest.fixture()
def memory(clean_db):
    with Memory.open(database=clean_db.database) as memory:
        yield memory


def test_mem0_quickstart_through_the_facade(memory):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)  # a new tenant: created with the default budget
    added = m.add(ALEX, user_id="alex", metadata={"food": "vegan"})
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    m.add("I like hiking in the Alps.", user_id="sam")

    found = m.search("What can Alex not eat?", user_id="alex")["results"]
    assert found and "allergic to nuts" in found[0]["memory"]
    assert not [r for r in found if "hiking" in r["memory"]]  # sam's memory is not alex's

    everything = m.get_all(user_id="alex")["results"]
    assert {r["memory"] for r in everything} == {ALEX[0]["content"], ALEX[1]["content"]}
    assert everything[0]["metadata"] == {"food": "vegan"}

    first = added["results"][0]["id"]
    assert m.get(first)["memory"] == ALEX[0]["content"]
    m.update(first, "Alex is vegetarian, allergic to nuts, and likes spicy food.")
    assert "spicy" in m.get(first)["memory"]
    history = m.history(first)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_memory"] == ALEX[0]["content"] and "spicy" in history[1]["new_memory"]

    m.delete(first)
    assert m.get(first) is None or first not in {r["id"] for r in m.get_all(user_id="alex")["results"]}
    assert [h["event"] for h in m.history(first)][-1] == "DELETE"

    with pytest.raises(ValueError):
        m.get_all()  # Mem0 needs one of user_id, agent_id, run_id


def test_mem0_run_id_writes_the_runs_turns_and_agent_id_scopes(memory):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    m.add([{"role": "user", "content": "I'm planning a trip to Japan next month."},
           {"role": "assistant", "content": "Would you like vegetarian restaurants in Tokyo?"}],
          user_id="alex", agent_id="planner", run_id="trip-1")
    turns = m.get_all(user_id="alex", run_id="trip-1")["results"]
    assert [t["memory"][:24] for t in turns if t["run_id"] == "trip-1"] == ["I'm planning a trip to J",
                                                                           "Would you like vegetaria"]
    window = memory.session("newco", user_id="alex", agent_id="planner", thread_id="trip-1").assemble(
        "Which city did I mention?")
    assert sum(1 for x in window.manifest["memories"] if x["ref"][0] == "conversation") == 2
    m.add("Prefers window seats.", agent_id="planner")
    assert [r["memory"] for r in m.get_all(agent_id="planner")["results"]] == ["Prefers window seats."]


def test_mem0_a_message_s_name_is_its_turn_s_speaker(memory):
    from ctxasm.adapters.mem0 import Memory as Mem0Memory

    m = Mem0Memory("newco", memory=memory)
    m.add([{"role": "user", "name": "Maya", "content": "The greenhouse heater is broken."},
           {"role": "user", "content": "Since when?"}], user_id="alex", agent_id="planner", run_id="garden")
    window = memory.session("newco", user_id="alex", agent_id="planner", thread_id="garden").assemble(
        "What is broken?")
    contents = [x["content"] for x in window.request["messages"]]
    assert "Maya: The greenhouse heater is broken." in contents and "Since when?" in contents


DOCUMENTED_CALLS = [
    ("put", ("users", "123"), "prefs", {"theme": "dark", "language": "en"}),
    ("put", ("users", "123"), "food", {"diet": "vegetarian", "allergy": "nuts"}),
    ("put", ("users", "456"), "prefs", {"theme": "light", "language": "fr"}),
    ("put", ("users", "123"), "prefs", {"theme": "light", "language": "en"}),  # a new value of the same key
]


def run_documented_calls(store) -> dict:
    for _, namespace, key, value in DOCUMENTED_CALLS:
        store.put(namespace, key, value)
    seen = {
        "get": store.get(("users", "123"), "prefs").value,
        "missing": store.get(("users", "123"), "nothing"),
        "search": sorted((i.namespace, i.key) for i in store.search(("users",))),
        "filter": sorted((i.namespace, i.key) for i in store.search(("users",), filter={"theme": "light"})),
        "namespaces": store.list_namespaces(prefix=("users",)),
        "depth": store.list_namespaces(max_depth=1),
    }
    store.delete(("users", "123"), "food")
    seen["deleted"] = store.get(("users", "123"), "food")
    seen["after"] = sorted((i.namespace, i.key) for i in store.search(("users", "123")))
    return seen


def test_langgraph_store_behaves_as_langgraphs_own_store(memory):
    pytest.importorskip("langgraph.store.base")
    from langgraph.store.memory import InMemoryStore

    from ctxasm.adapters.langgraph_store import CtxasmStore

    memory.create_tenant("newco")
    ours = CtxasmStore("newco", memory=memory)
    assert run_documented_calls(ours) == run_documented_calls(InMemoryStore())


def test_langgraph_namespaces_with_a_slash_in_a_label_stay_apart(memory):
    pytest.importorskip("langgraph.store.base")
    from ctxasm.adapters.langgraph_store import CtxasmStore

    memory.create_tenant("newco")
    store = CtxasmStore("newco", memory=memory)
    store.put(("jane", "x/y"), "k", {"v": 1})
    store.put(("jane", "x", "y"), "k", {"v": 2})
    store.put(("jane", "x%2Fy"), "k", {"v": 3})
    assert [store.get(ns, "k").value["v"] for ns in (("jane", "x/y"), ("jane", "x", "y"), ("jane", "x%2Fy"))] \
        == [1, 2, 3]
    assert set(store.list_namespaces(prefix=("jane",))) == {("jane", "x/y"), ("jane", "x", "y"), ("jane", "x%2Fy")}


def test_langgraph_store_search_by_query_and_users_apart(memory):
    pytest.importorskip("langgraph.store.base")
    from ctxasm.adapters.langgraph_store import CtxasmStore

    memory.create_tenant("newco")
    store = CtxasmStore("newco", memory=memory)
    store.put(("jane", "memories"), "m1", {"text": "Jane prefers the Helios retriever for BEIR."})
    store.put(("jane", "memories"), "m2", {"text": "Jane's cat is called Pixel."})
    store.put(("joe", "memories"), "m1", {"text": "Joe prefers the Helios retriever too."})
    found = store.search(("jane", "memories"), query="Which retriever does she prefer?")
    assert found and found[0].key == "m1" and all(i.namespace == ("jane", "memories") for i in found)
    item = store.get(("jane", "memories"), "m1")
    assert item.created_at <= item.updated_at
    # the item is Jane's personal fact: Joe's session does not see it
    joe = memory.session("newco", user_id="joe").search("Pixel cat")
    assert not [i for i in joe.items if "Pixel" in i.text]
