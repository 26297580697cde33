"""Rows nobody asked for, and conflicts worded as they are decided, on the embedded PostgreSQL.

Loading a file that holds a budget row (and two guidelines) into an existing tenant writes those rows and nothing
else: no default memory instructions come with it, so no window shows conflicts nobody made. A conflict somebody
did make (a tenant-wide guideline and an agent's guideline of one key) is explained by naming the row in effect
and why it wins, in the manifest's own exclusion, by the inspector and by `ctxasm inspect --why`."""

from __future__ import annotations

import json

import pytest

from ctxasm.api import Memory
from ctxasm.interfaces import cli
from ctxasm.interfaces.inspector.exclusions import explain
from ctxasm.services.tenants import DEFAULT_BUDGET

TENANT_TONE, AGENT_TONE = "guideline_tone_tenant", "guideline_tone_helper"


@pytest.fixture()
def memory(clean_db):
    with Memory.open(database=clean_db.database) as memory:
        yield memory


def _guidelines(session) -> int:
    return sum(rows for kind, status, rows in session.inventory() if kind == "guideline" and status == "active")


def test_a_loaded_budget_adds_no_rows_and_a_real_conflict_names_the_row_in_effect_and_why(
        memory, clean_db, tmp_path, capsys, monkeypatch):
    memory.create_tenant("newco", at="2026-01-01T00:00:00")
    tenant = memory.session("newco")
    before = _guidelines(tenant)
    path = tmp_path / "budget_and_tone.json"
    path.write_text(json.dumps({"format": "ctxasm-scenario/1", "name": "budget-and-tone", "tenants": [
        {"tenant_id": "newco", "display_name": "NewCo", "memories": [
            {"type": "guideline", "id": "budget_helper", "guideline_key": "context_budget", "agent_id": "helper",
             "content": "helper budget", "content_json": DEFAULT_BUDGET, "valid_from": "2026-01-01T00:00:00Z"},
            {"type": "guideline", "id": TENANT_TONE, "guideline_key": "tone", "valid_from": "2026-01-01T00:00:00Z",
             "content": "Answer formally."},
            {"type": "guideline", "id": AGENT_TONE, "guideline_key": "tone", "agent_id": "helper",
             "valid_from": "2026-01-01T00:00:00Z", "content": "Answer in one short paragraph."}]}]}))
    report = memory.load(path)
    assert dict(report.rows) == {("newco", "guideline"): 3}
    assert _guidelines(tenant) == before + 3, "the load wrote rows the file does not hold"

    window = memory.session("newco", user_id="u1", agent_id="helper").assemble("hello",
                                                                                at="2026-09-28T12:00:00")
    conflicts = [x for x in window.manifest["excluded"] if x["rule"] == "conflict"]
    assert [x["ref"][1] for x in conflicts] == [TENANT_TONE], conflicts  # the only conflict is the one made
    # the manifest itself names the row in effect and the reason, as the engine ranked them
    assert conflicts[0]["detail"] == (f"guideline {AGENT_TONE} version 1 with key tone is in effect: "
                                      "the narrower scope wins"), conflicts
    assert AGENT_TONE in [m["ref"][1] for m in window.manifest["memories"]]

    inspection = memory.session("newco", user_id="u1", agent_id="helper").inspect(window.manifest_id,
                                                                                  with_request=False)
    words = explain(conflicts[0], inspection)
    assert f"guideline / {AGENT_TONE} / version 1, of the same guideline_key tone, is in effect instead" in words
    assert "(the narrower scope wins: agent helper over tenant-wide)" in words, words

    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert cli.main(["inspect", window.manifest_id, "--tenant", "newco", "--why",
                     f"guideline:{TENANT_TONE}"]) == 0
    printed = capsys.readouterr().out
    assert AGENT_TONE in printed and "agent helper over tenant-wide" in printed, printed


def test_a_conflict_of_one_scope_is_worded_by_time_not_as_narrower(memory, tmp_path):
    memory.create_tenant("newco", at="2026-01-01T00:00:00")
    path = tmp_path / "two_tones.json"
    path.write_text(json.dumps({"format": "ctxasm-scenario/1", "name": "two-tones", "tenants": [
        {"tenant_id": "newco", "display_name": "NewCo", "memories": [
            {"type": "guideline", "id": "tone_old", "guideline_key": "tone", "valid_from": "2026-01-01T00:00:00Z",
             "content": "Answer formally."},
            {"type": "guideline", "id": "tone_new", "guideline_key": "tone", "valid_from": "2026-03-01T00:00:00Z",
             "content": "Answer in one short paragraph."}]}]}))
    memory.load(path)
    session = memory.session("newco", user_id="u1", agent_id="helper")
    window = session.assemble("hello", at="2026-09-28T12:00:00")
    (conflict,) = [x for x in window.manifest["excluded"] if x["rule"] == "conflict"]
    assert conflict["ref"][1] == "tone_old"
    assert conflict["detail"] == "guideline tone_new version 1 with key tone is in effect: the later valid_from wins"
    words = explain(conflict, session.inspect(window.manifest_id, with_request=False))
    assert "guideline / tone_new / version 1" in words and "both are tenant-wide: the later valid_from wins" in words
    assert "narrower" not in words, words
