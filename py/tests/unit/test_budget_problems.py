"""`load` checks budget guidelines fully: every problem of every budget at once, and two budgets of one scope
in effect at the same time are refused, naming both."""

from __future__ import annotations

import copy
import json

import pytest

from ctxasm.core.budget import budget_problems
from ctxasm.errors import ScenarioError
from ctxasm.services import load
from ctxasm.services.tenants import DEFAULT_BUDGET, new_tenant_document
from ctxasm.services.assemble import parse_time


def test_every_problem_of_a_budget_is_listed_with_its_field():
    broken = dict(DEFAULT_BUDGET, usable_context="lots", recency_days=0, reclaim_unused="yes", colour="blue")
    del broken["overflow_order"]
    fields = [p.field for p in budget_problems(broken)]
    assert set(fields) == {"usable_context", "recency_days", "reclaim_unused", "colour", "overflow_order"}, fields


def test_a_sound_budget_has_no_problem_and_cross_field_checks_still_apply():
    assert budget_problems(DEFAULT_BUDGET) == []
    assert [p.field for p in budget_problems(dict(DEFAULT_BUDGET, max_tool_result_tokens=5000))] == \
        ["max_tool_result_tokens"]


def write(tmp_path, document) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    return str(path)


def document_with(*budgets) -> dict:
    document = new_tenant_document("newco", "NewCo", parse_time("2026-01-01T00:00:00"))
    document["tenants"][0]["memories"] = list(budgets)
    return document


def budget_row(row_id: str, content_json: dict, **extra) -> dict:
    return {"type": "guideline", "id": row_id, "guideline_key": "context_budget", "valid_from": "2026-01-01T00:00:00Z",
            "content": "budget", "content_json": content_json, **extra}


def test_load_reports_every_budget_problem_at_once(tmp_path):
    first = dict(DEFAULT_BUDGET, usable_context=-1)
    second = dict(DEFAULT_BUDGET, weights={"rerank": 2, "confidence": 0, "recency": 0}, recency_days="soon")
    path = write(tmp_path, document_with(budget_row("budget_a", first, agent_id="a"),
                                         budget_row("budget_b", second, agent_id="b")))
    with pytest.raises(ScenarioError) as caught:
        load.read_scenario(path)
    message = str(caught.value)
    assert "3 budget problems" in message
    assert "$.tenants[0].memories[0].content_json.usable_context" in message
    assert "$.tenants[0].memories[1].content_json.weights: must sum to at most 1" in message
    assert "$.tenants[0].memories[1].content_json.recency_days" in message


def test_two_budgets_of_one_scope_in_effect_at_once_are_refused_naming_both(tmp_path):
    path = write(tmp_path, document_with(budget_row("budget_a", DEFAULT_BUDGET, agent_id="a"),
                                         budget_row("budget_b", DEFAULT_BUDGET, agent_id="a")))
    with pytest.raises(ScenarioError) as caught:
        load.read_scenario(path)
    assert "budget_a and budget_b" in str(caught.value) and "agent_id a" in str(caught.value)


def test_budgets_one_after_the_other_or_of_other_scopes_load(tmp_path):
    ended = budget_row("budget_a", DEFAULT_BUDGET, deleted_at="2026-03-01T00:00:00Z")
    later = budget_row("budget_b", DEFAULT_BUDGET, valid_from="2026-03-01T00:00:00Z")
    other = budget_row("budget_c", copy.deepcopy(DEFAULT_BUDGET), thread_id="t1")
    assert load.read_scenario(write(tmp_path, document_with(ended, later, other)))


def test_a_token_count_above_the_bound_is_refused_naming_the_field_and_the_range():
    from ctxasm.core.budget import MAX_BUDGET_TOKENS, parse_budget
    from ctxasm.errors import InvalidBudget

    huge = dict(DEFAULT_BUDGET, usable_context=10**12)
    problems = budget_problems(huge)
    assert [(p.field, p.problem) for p in problems] == \
        [("usable_context", f"must be 1..{MAX_BUDGET_TOKENS}, got {10**12}")]
    with pytest.raises(InvalidBudget, match=r"usable_context: must be 1\.\.10000000"):
        parse_budget(huge)
    at_the_bound = dict(DEFAULT_BUDGET, usable_context=MAX_BUDGET_TOKENS)
    assert budget_problems(at_the_bound) == []
    for field in ("output_reserve", "max_rounds"):
        assert [p.field for p in budget_problems(dict(DEFAULT_BUDGET, **{field: MAX_BUDGET_TOKENS + 1}))] == [field]
    assert [p.field for p in budget_problems(dict(DEFAULT_BUDGET, tier_limits={"evidence": {"full": 10**12}}))] == \
        ["tier_limits.evidence.full"]


def test_a_load_refuses_a_budget_above_the_bound(tmp_path):
    path = write(tmp_path, document_with(budget_row("budget_a", dict(DEFAULT_BUDGET, usable_context=1e12))))
    with pytest.raises(ScenarioError) as caught:
        load.read_scenario(path)
    assert "$.tenants[0].memories[0].content_json.usable_context: must be 1..10000000" in str(caught.value)


def test_a_cross_field_problem_is_named_beside_a_field_problem():
    """usable_context below the reserves and max_rounds 0: both, not max_rounds alone."""
    broken = dict(DEFAULT_BUDGET, usable_context=100, max_rounds=0, max_tool_result_tokens=5000)
    assert {p.field for p in budget_problems(broken)} == {"usable_context", "max_rounds", "max_tool_result_tokens"}


def test_a_load_counts_every_problem_of_one_budget(tmp_path):
    path = write(tmp_path, document_with(budget_row("budget_a", dict(DEFAULT_BUDGET, usable_context=100,
                                                                     max_rounds=0))))
    with pytest.raises(ScenarioError) as caught:
        load.read_scenario(path)
    message = str(caught.value)
    assert "2 budget problems" in message, message
    assert "content_json.usable_context: 100 leaves nothing after the reserves" in message
    assert "content_json.max_rounds: must be 1..10000000, got 0" in message
