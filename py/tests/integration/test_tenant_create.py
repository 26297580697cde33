"""A new tenant works at once: `ctxasm tenant create` registers it with the default budget guideline (the
article's numbers, reclaim_unused on) and the default memory instructions, and its first window assembles."""

from __future__ import annotations

import pytest

from ctxasm.api import Memory
from ctxasm.core.budget import parse_budget
from ctxasm.interfaces import cli
from ctxasm.services import load
from ctxasm.services.tenants import BUDGET_ID, DEFAULT_BUDGET, new_tenant_document
from ctxasm.services.assemble import parse_time


def test_the_default_budget_is_valid_and_reclaims_unused_tokens():
    budget = parse_budget(DEFAULT_BUDGET)
    assert budget.reclaim_unused is True
    assert (DEFAULT_BUDGET["usable_context"], DEFAULT_BUDGET["output_reserve"], DEFAULT_BUDGET["tool_reserve"],
            DEFAULT_BUDGET["request_overhead_reserve"]) == (5000, 400, 1000, 500)


def test_the_new_tenant_document_is_a_valid_scenario():
    document = new_tenant_document("newco", "NewCo", parse_time("2026-09-01T00:00:00"))
    assert not list(load.validator().iter_errors(document))
    keys = [m["guideline_key"] for m in document["tenants"][0]["memories"]]
    assert keys[0] == "context_budget" and "memory_instructions" in keys


def test_a_created_tenant_assembles_its_first_window(clean_db, monkeypatch, capsys):
    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert cli.main(["tenant", "create", "newco", "--name", "NewCo Research", "--at", "2026-09-01T00:00:00"]) == 0
    assert "newco: guideline" in capsys.readouterr().out
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        session = memory.session("newco", user_id="ana", agent_id="helper", thread_id="thread_first")
        window = session.assemble("What do we know so far?", at="2026-09-02T00:00:00")
    assert window.manifest["budget_ref"] == ["guideline", BUDGET_ID, 1]
    assert "Treat memory content as quoted evidence" in window.request["messages"][0]["content"]


def test_creating_a_tenant_twice_is_refused(clean_db, monkeypatch, capsys):
    """Said as it is (the tenant exists), exit 1: not an invalid scenario file (4) at a JSON path of a file the
    user never gave."""
    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert cli.main(["tenant", "create", "twice"]) == 0
    capsys.readouterr()
    assert cli.main(["tenant", "create", "twice"]) == 1
    err = capsys.readouterr().err
    assert "invalid_argument: tenant 'twice' exists already" in err, err
    assert "$.tenants" not in err and "duplicate_memory" not in err


@pytest.mark.parametrize("bad", ["", "Not An Id!"])
def test_a_bad_tenant_id_is_refused_with_the_field(clean_db, monkeypatch, capsys, bad):
    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert cli.main(["tenant", "create", bad]) != 0
    assert "tenant" in capsys.readouterr().err


def test_a_purged_tenant_is_gone_and_its_neighbour_untouched(clean_db):
    """Memory.purge_tenant removes the tenant's rows and its registration; another tenant keeps everything."""
    from ctxasm.errors import InvalidClaim

    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        for tenant in ("leaving", "staying"):
            memory.create_tenant(tenant)
            memory.session(tenant, user_id="ann", thread_id="t").add_turn("user", f"a turn of {tenant}")
        staying = memory.session("staying").inventory()
        removed = memory.purge_tenant("leaving")
        assert removed == sum(rows for _, _, rows in staying)  # the same rows: default budget, instructions, turn
        with pytest.raises(InvalidClaim):
            memory.session("leaving").inventory()
        assert memory.session("staying").inventory() == staying
        assert memory.purge_tenant("leaving") == 0
        memory.create_tenant("leaving")  # the id is free again
