"""What a new user meets writing their own agent, on the embedded PostgreSQL: errors that say what is wrong (an
unknown tenant, a missing agent, every problem of a file), counts that mean what they say, no rows nobody asked
for, and a turn too long to ever be seated refused at once."""

from __future__ import annotations

import json
import logging

import pytest

from ctxasm.api import Memory
from ctxasm.contract_constants import MAX_QUESTION_CHARS, MAX_TURN_CHARS
from ctxasm.errors import BudgetMissing, InvalidArgument, InvalidClaim, InvalidField, ScenarioError
from ctxasm.services.tenants import DEFAULT_BUDGET

from ..conftest import SCENARIOS


@pytest.fixture()
def memory(clean_db):
    with Memory.open(database=clean_db.database) as memory:
        yield memory


def test_an_unknown_tenant_is_named_when_this_process_minted_the_claim(memory):
    with pytest.raises(InvalidClaim) as caught:
        memory.session("nosuch").inventory()
    message = str(caught.value)
    assert "'nosuch'" in message and "ctxasm tenant create nosuch" in message


def test_a_claim_given_by_the_caller_is_still_refused_with_one_message(memory):
    from ctxasm.claims import ClaimSigner, read_key

    claim = ClaimSigner(read_key()).mint("nosuch", None, None, 600)
    with pytest.raises(InvalidClaim) as caught:
        memory.session("nosuch", claim=claim).inventory()
    assert str(caught.value) == "invalid_claim: the tenant claim was refused"


def test_inventory_counts_turns_apart_from_recorded_windows(memory):
    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper", thread_id="t1")
    for text in ("one", "two", "three"):
        session.add_turn("user", f"turn {text}")
    session.assemble("what did I say?")
    session.assemble("and then?")
    counts = {(kind, status): rows for kind, status, rows in session.inventory()}
    assert counts[("conversation", "active")] == 3
    assert counts[("event:context_manifest", "active")] == 2


def test_loading_a_budget_into_an_existing_tenant_adds_no_instructions(memory, tmp_path):
    memory.create_tenant("newco", at="2026-01-01T00:00:00")
    path = tmp_path / "budget.json"
    path.write_text(json.dumps({"format": "ctxasm-scenario/1", "name": "budget-only", "tenants": [
        {"tenant_id": "newco", "display_name": "NewCo", "memories": [
            {"type": "guideline", "id": "budget_helper", "guideline_key": "context_budget", "agent_id": "helper",
             "content": "helper budget", "content_json": DEFAULT_BUDGET}]}]}))
    report = memory.load(path)
    assert dict(report.rows) == {("newco", "guideline"): 1}
    window = memory.session("newco", user_id="u1", agent_id="helper").assemble("hello")
    assert [x for x in window.manifest["excluded"] if x["rule"] == "conflict"] == []


def test_a_new_tenant_of_a_file_still_gets_the_default_instructions(memory):
    report = memory.load(SCENARIOS / "acme_demo.json")
    assert report.rows[("acme", "guideline")] >= 1


def test_a_turn_longer_than_the_cap_is_refused_naming_the_field(memory):
    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper", thread_id="t1")
    assert MAX_TURN_CHARS == MAX_QUESTION_CHARS
    with pytest.raises(InvalidField) as caught:
        session.add_turn("user", "x" * 20_000)
    assert "conversation.content" in str(caught.value) and str(MAX_TURN_CHARS) in str(caught.value)
    assert session.add_turn("user", "y" * MAX_TURN_CHARS).turn_index == 1
    assert not [row for row in session.inventory() if row[0] == "conversation" and row[2] > 1]


def test_a_missing_agent_is_named_with_the_budget_it_would_get(memory):
    memory.create_tenant("newco")
    helper = memory.session("newco", agent_id="helper")
    helper.set_budget({**DEFAULT_BUDGET, "usable_context": 3000}, scope="agent")
    tenant = memory.session("newco")
    tenant.set_budget({**DEFAULT_BUDGET, "usable_context": 3000})
    with memory.owner_store() as store:  # leave only the agent's budget: end the tenant-wide one
        store.set_tenant("newco")
        store.delete_memory("guideline", "context_context_budget")
        store.commit()
    with pytest.raises(BudgetMissing) as caught:
        memory.session("newco", user_id="u1").assemble("hello")
    message = str(caught.value)
    assert "NULL" not in message and "for agent helper only" in message and "name its agent" in message
    # a claim for another agent sees only the tenant-wide rows, not the helper's, and is told so
    with pytest.raises(BudgetMissing) as caught:
        memory.session("newco", agent_id="nobody").assemble("hello")
    message = str(caught.value)
    assert "rows this claim can see: guideline context_context_budget" in message
    assert "agent helper" not in message and "ctxasm budget show --tenant newco" in message


def test_a_file_with_several_bad_memories_names_every_one(tmp_path):
    from ctxasm.services.load import read_scenario

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "ctxasm-scenario/1", "name": "bad", "tenants": [
        {"tenant_id": "x", "display_name": "X", "memories": [
            {"type": "entity", "id": "f1", "subject": "s", "predicate": "p", "content": "c", "confidence": 1.5},
            {"type": "entity", "id": "f2", "subject": "s", "predicate": "q", "content": ""},
            {"type": "guideline", "id": "g", "content": "c"}]}]}))
    with pytest.raises(ScenarioError) as caught:
        read_scenario(path)
    message = str(caught.value)
    for where in ("memories[0].confidence", "memories[1].content", "memories[2]"):
        assert where in message, message
    assert "3 problems" in message


def test_an_aborted_pipeline_adds_no_second_line_before_the_error(clean_db, caplog):
    import psycopg

    from ctxasm.engines import postgres  # noqa: F401 (installs the filter)
    from ctxasm.local import pgconn

    # A statement fails in a pipeline and the block is left by an exception before the pipeline syncs: psycopg
    # then logs that leaving the aborted pipeline failed too, a second line before the one error that matters.
    with pgconn.connect(clean_db, pgconn.app_login()) as connection, caplog.at_level(logging.WARNING):
        with pytest.raises((psycopg.Error, RuntimeError)):
            with connection.pipeline():
                connection.execute("SELECT 1 / 0")
                connection.execute("SELECT 1")
                raise RuntimeError("the block failed")
    assert not [r for r in caplog.records if "pipeline" in r.getMessage().lower()], caplog.text


def test_retract_ends_one_fact_and_keeps_its_history_where_forget_erases_every_version(memory):
    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper")
    session.remember("model:x", "score", "X scores 0.9.", at="2026-01-01T00:00:00")
    ref = session.remember("model:x", "score", "X scores 0.8.", at="2026-02-01T00:00:00")
    before = session.assemble("What does X score?")
    assert ref in [tuple(m["ref"]) for m in before.manifest["memories"]]
    session.retract("entity", ref[1])
    after = session.assemble("What does X score?")
    assert ref not in [tuple(m["ref"]) for m in after.manifest["memories"]]
    assert session.replay(before.manifest_id).status == "match"  # its history is kept
    report = session.forget("entity", ref[1])
    assert report["total"] >= 2  # every version went, the first one too
    assert session.replay(before.manifest_id).status == "unavailable"


def test_concurrent_remember_of_one_fact_leaves_one_current_value(memory):
    """Eight writers of one new fact at once: one fact, eight versions (not eight facts), none refused; and so
    again for a fact that exists."""
    from concurrent.futures import ThreadPoolExecutor

    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper")
    for subject in ("race:new", "race:new"):  # the second round supersedes an existing fact
        with ThreadPoolExecutor(8) as pool:
            refs = list(pool.map(lambda i, s=subject: session.remember(s, "colour", f"value {i}", personal=True),
                                 range(8)))
        assert len({ref[1] for ref in refs}) == 1
        with session.store() as store:
            active = store.read_facts("newco", subject, "colour", None, 100)
        assert [row["ref"][1] for row in active] == [refs[0][1]]
    assert sorted(ref[2] for ref in refs) == list(range(9, 17))


def test_a_personal_fact_is_written_beside_the_shared_one_not_over_it(memory):
    memory.create_tenant("newco")
    shared = memory.session("newco")
    jane = memory.session("newco", user_id="jane", agent_id="helper")
    shared_ref = shared.remember("model:x", "score", "X scores 0.9.")
    own = jane.remember("model:x", "score", "X scores 0.95 in Jane's run.", personal=True)
    assert own[1] != shared_ref[1] and own[2] == 1
    again = jane.remember("model:x", "score", "X scores 0.96 in Jane's rerun.", personal=True)
    assert again == ("entity", own[1], 2)
    assert shared.remember("model:x", "score", "X scores 0.91.") == ("entity", shared_ref[1], 2)
    with pytest.raises(InvalidArgument, match="personal"):
        shared.remember("model:x", "score", "nobody's", personal=True)


def test_arguments_of_the_wrong_type_are_named_not_passed_to_the_database(memory):
    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper")
    for call, named in ((lambda: session.remember(5, "p", "c"), "subject"),
                        (lambda: session.search("x", limit=1.5), "limit"),
                        (lambda: session.assemble(5), "question"),
                        (lambda: session.assemble("x", at=12345), "at"),
                        (lambda: session.add_turn("user", None), "content"),
                        (lambda: memory.session(None), "tenant_id"),
                        (lambda: memory.session("newco", roles="researcher"), "roles")):
        with pytest.raises(InvalidArgument, match=named):
            call()


def test_a_second_erase_finds_nothing_left_to_scrub(memory):
    from ctxasm.services.erase import describe_erasure

    memory.create_tenant("newco")
    session = memory.session("newco")
    ref = session.remember("model:y", "score", "Y scores 0.7.")
    session.remember("model:y", "score", "Y scores 0.8.")
    first = session.forget("entity", ref[1])
    again = session.forget("entity", ref[1])
    assert first["total"] == 2 and (again["total"], again["erased"]) == (0, [])
    assert describe_erasure("entity", ref[1], again).startswith(f"entity {ref[1]} was erased already")
