"""Budgets through the API and the CLI, on the embedded PostgreSQL: a budget written a moment ago is in effect for
the next window (one clock, the database's), set_budget / `ctxasm budget set|show` validate and explain, and
`inspect --why` gives the true reason a budget row was not a window's."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from ctxasm.api import Memory
from ctxasm.errors import InvalidBudget
from ctxasm.services.tenants import DEFAULT_BUDGET

SMALL = {**DEFAULT_BUDGET, "usable_context": 2000, "output_reserve": 200, "tool_reserve": 300,
         "request_overhead_reserve": 200, "max_tool_result_tokens": 300}


def budget_file(tmp_path, tenant: str, **row) -> str:
    path = tmp_path / "budget.json"
    path.write_text(json.dumps({"format": "ctxasm-scenario/1", "name": "one-budget", "tenants": [
        {"tenant_id": tenant, "display_name": tenant, "memories": [
            {"type": "guideline", "id": "budget_small", "guideline_key": "context_budget", "content": "small",
             "content_json": SMALL, **row}]}]}))
    return str(path)


def start_of_a_second() -> None:
    """Wait until just after a whole second, so what follows runs within that second."""
    time.sleep(1 - datetime.now(timezone.utc).microsecond / 1e6 + 0.01)


@pytest.fixture()
def memory(clean_db):
    with Memory.open(database=clean_db.database, warm=True) as memory:
        yield memory


def test_a_budget_loaded_a_moment_ago_is_in_effect_for_the_next_window(memory, tmp_path):
    memory.create_tenant("newco", at="2026-01-01T00:00:00")
    helper = memory.session("newco", user_id="u1", agent_id="helper")
    path = budget_file(tmp_path, "newco", agent_id="helper")  # no valid_from: the load's time
    start_of_a_second()
    memory.load(path, upsert=True)
    window = helper.assemble("What changed?")  # no `at`: now, in the same second as the load
    assert window.manifest["budget_ref"] == ["guideline", "budget_small", 1], window.manifest["evaluation_time"]
    assert window.manifest["request_limit"] == 2000 - 200 - 300


def test_a_turn_added_a_moment_ago_is_in_the_next_window(memory):
    memory.create_tenant("newco")
    session = memory.session("newco", user_id="u1", agent_id="helper", thread_id="t1")
    start_of_a_second()
    turn = session.add_turn("user", "My favourite colour is teal.")
    window = session.assemble("What is my favourite colour?")
    assert ["conversation", turn.id, 1] in [m["ref"] for m in window.manifest["memories"]]


def test_set_budget_for_an_agent_wins_over_the_tenant_budget_and_says_why(memory):
    memory.create_tenant("newco")
    helper = memory.session("newco", user_id="u1", agent_id="helper")
    shown = helper.set_budget(SMALL, scope="agent")
    assert shown.chosen["agent_id"] == "helper" and shown.content["usable_context"] == 2000
    reasons = dict(zip((r["id"] for r in shown.rows), shown.standings))
    assert reasons["context_context_budget"].startswith("a narrower budget wins")
    assert helper.assemble("hello").manifest["request_limit"] == 1500
    other = memory.session("newco", user_id="u1", agent_id="other").budget()
    assert other.chosen["id"] == "context_context_budget"
    assert "for agent helper only" in dict(zip((r["id"] for r in other.rows), other.standings))[shown.chosen["id"]]


def test_set_budget_again_supersedes_the_one_of_its_scope(memory):
    memory.create_tenant("newco")
    session = memory.session("newco")
    first = session.set_budget(SMALL)
    second = session.set_budget({**SMALL, "usable_context": 3000})
    assert first.chosen["id"] == second.chosen["id"] == "context_context_budget"
    assert (first.chosen["version"], second.chosen["version"]) == (2, 3)  # version 1: the tenant's default
    assert second.content["usable_context"] == 3000


def test_set_budget_names_every_problem_and_writes_nothing(memory):
    memory.create_tenant("newco")
    session = memory.session("newco")
    with pytest.raises(InvalidBudget) as caught:
        session.set_budget({**SMALL, "usable_context": -1, "weights": {"rerank": 2, "confidence": 0, "recency": 0},
                            "colour": "teal"})
    message = str(caught.value)
    assert "usable_context" in message and "weights" in message and "colour" in message
    assert session.budget().chosen["version"] == 1


def test_why_says_a_budget_row_was_not_yet_in_effect(memory, tmp_path):
    from ctxasm.interfaces import inspector

    memory.create_tenant("newco", at="2026-01-01T00:00:00")
    later = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
    memory.load(budget_file(tmp_path, "newco", valid_from=later), upsert=True)
    session = memory.session("newco", user_id="u1", agent_id="helper")
    window = session.assemble("hello")
    assert window.manifest["budget_ref"][1] == "context_context_budget"
    inspection = session.inspect(window.manifest_id, with_request=False)
    lines = inspector.why_not(inspection, "guideline:budget_small",
                              session.rows_at("guideline", str(window.manifest["scn"])))
    text = " ".join(lines)
    assert "not yet in effect" in text and later[:19] in text, text
    assert "scope step" not in text


def test_budget_cli_sets_from_the_budget_in_effect_and_shows(clean_db, memory, capsys, monkeypatch):
    from ctxasm.interfaces.cli import main

    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    memory.create_tenant("newco")
    assert main(["budget", "set", "--tenant", "newco", "--agent", "helper", "--field", "usable_context=2500",
                 "--field", "shares.fact_check.evidence=0.2"]) == 0
    out = capsys.readouterr().out
    assert "usable_context 2500" in out and "(agent helper)" in out
    assert main(["--engine", "postgresql", "budget", "show", "--tenant", "newco", "--agent", "helper",
                 "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["budget"]["usable_context"] == 2500 and shown["budget"]["shares"]["fact_check"]["evidence"] == 0.2
    assert shown["budget"]["output_reserve"] == 400 and shown["budget_ref"][1] != "context_context_budget"


def test_engine_and_database_go_before_or_after_the_command(clean_db, memory, capsys, monkeypatch):
    from ctxasm.interfaces.cli import main

    monkeypatch.delenv("CTXASM_PG_DATABASE", raising=False)
    memory.create_tenant("newco")
    for argv in (["--engine", "postgresql", "--database", clean_db.database, "inventory", "--tenant", "newco"],
                 ["inventory", "--tenant", "newco", "--engine", "postgresql", "--database", clean_db.database]):
        assert main(argv) == 0, argv
        assert "guideline" in capsys.readouterr().out


def test_a_huge_budget_is_refused_by_the_cli_and_the_api_and_nothing_is_written(clean_db, memory, capsys,
                                                                                 monkeypatch):
    from ctxasm.interfaces.cli import main

    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    memory.create_tenant("newco")
    assert main(["budget", "set", "--tenant", "newco", "--agent", "tiny", "--field", "usable_context=1e12"]) == 1
    err = capsys.readouterr().err
    assert "invalid_budget: usable_context: must be 1..10000000" in err and "Traceback" not in err
    assert main(["budget", "set", "--tenant", "newco", "--agent", "tiny", "--field", "usable_context=100",
                 "--field", "max_rounds=0"]) == 1
    err = capsys.readouterr().err
    assert "max_rounds" in err and "usable_context: 100 leaves nothing after the reserves" in err
    with pytest.raises(InvalidBudget, match="usable_context"):
        memory.session("newco", agent_id="tiny").set_budget({**SMALL, "usable_context": 10**12})
    # the scope's windows still work: nothing was written
    assert main(["budget", "show", "--tenant", "newco", "--agent", "tiny", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"]["usable_context"] == DEFAULT_BUDGET["usable_context"]


def test_the_database_refuses_a_huge_budget_from_a_writer_that_skips_python(clean_db, memory):
    """put_memory and supersede (whose record names no guideline_key: the stored version's is kept) check a
    budget's token counts themselves: the bound of ctxasm.check_record (CTX_ROW_BINDER on Oracle)."""
    from ctxasm.engines.postgres import PostgresStore
    from ctxasm.local import pgconn

    memory.create_tenant("newco")
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("newco")
        with pytest.raises(InvalidBudget, match=r"guideline\.content_json\.usable_context: must be 0\.\.10000000"):
            store.put_memory("guideline", {"id": "budget_huge", "guideline_key": "context_budget", "agent_id": "tiny",
                                           "content": "huge", "content_json": {**SMALL, "usable_context": 10**12}})
        store.rollback()
        store.set_tenant("newco")
        with pytest.raises(InvalidBudget, match="tool_reserve"):
            store.supersede("guideline", "context_context_budget", {"content_json": {**SMALL, "tool_reserve": -10**12}})
        store.rollback()
        store.set_tenant("newco")
        # another guideline's content_json is not a budget; a budget at the bound is written
        store.put_memory("guideline", {"id": "notes", "guideline_key": "house_style", "content": "notes",
                                       "content_json": {"usable_context": 10**12}})
        assert store.supersede("guideline", "context_context_budget",
                               {"content_json": {**SMALL, "usable_context": 10_000_000}}) == 2
        store.rollback()
