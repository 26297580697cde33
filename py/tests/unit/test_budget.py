"""budget: parsing the context_budget guideline, and the allowance arithmetic."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ctxasm import errors
from ctxasm.core.budget import (DYNAMIC_SLICES, Compression, FixedSliceOverflow, allocate,
                                allowance_before_fixed, fit_order, overflow_receiver, parse_budget, pass_overflow)
from ctxasm.errors import InvalidBudget, UnknownIntent

# The companion's policy as the article prints it.
ARTICLE: dict[str, Any] = {
    "usable_context": 5000,
    "output_reserve": 400,
    "tool_reserve": 1000,
    "request_overhead_reserve": 500,
    "max_rounds": 3,
    "max_tool_result_tokens": 1000,
    "weights": {"rerank": 0.60, "confidence": 0.25, "recency": 0.15},
    "recency_days": 60,
    "shares": {
        "comparison": {"durable_facts": 0.15, "evidence": 0.60, "recalled_history": 0.05, "volatile_tail": 0.20},
        "fact_check": {"durable_facts": 0.40, "evidence": 0.25, "recalled_history": 0.10, "volatile_tail": 0.25},
    },
    "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
}


def article(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(ARTICLE)
    data.update(changes)
    return data


def with_(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation setting a dotted path (e.g. "shares.fact_check.evidence")."""

    def mutate(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


def without(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


# -- parsing ---------------------------------------------------------------------------------------------------


def test_article_budget_parses() -> None:
    budget = parse_budget(ARTICLE)
    assert budget.usable_context == 5000
    assert (budget.output_reserve, budget.tool_reserve, budget.request_overhead_reserve) == (400, 1000, 500)
    assert (budget.max_rounds, budget.max_tool_result_tokens) == (3, 1000)
    assert (budget.weights.rerank, budget.weights.confidence, budget.weights.recency) == (0.60, 0.25, 0.15)
    assert budget.recency_days == 60
    assert budget.intents == ("comparison", "fact_check")
    assert dict(budget.shares_for("fact_check")) == ARTICLE["shares"]["fact_check"]
    assert budget.overflow_order == ("evidence", "durable_facts", "volatile_tail", "recalled_history")
    assert budget.require_current_facts is True


def test_budget_is_immutable() -> None:
    budget = parse_budget(ARTICLE)
    with pytest.raises(AttributeError):
        budget.usable_context = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        budget.shares["fact_check"]["evidence"] = 1.0  # type: ignore[index]


def test_parsing_does_not_keep_references_to_the_input() -> None:
    data = article()
    budget = parse_budget(data)
    data["shares"]["fact_check"]["evidence"] = 0.0
    assert budget.shares_for("fact_check")["evidence"] == 0.25


def test_require_current_facts_can_be_disabled() -> None:
    assert parse_budget(article(require_current_facts=False)).require_current_facts is False


def test_integral_float_token_counts_are_accepted_as_ints() -> None:
    budget = parse_budget(article(usable_context=5000.0))
    assert budget.usable_context == 5000 and isinstance(budget.usable_context, int)


def test_omitted_share_slice_is_zero() -> None:
    budget = parse_budget(article(shares={"lookup": {"evidence": 0.5}}))
    assert dict(budget.shares_for("lookup")) == {
        "durable_facts": 0.0, "evidence": 0.5, "recalled_history": 0.0, "volatile_tail": 0.0}


@pytest.mark.parametrize("shares", [
    {"durable_facts": 0.1, "evidence": 0.2, "recalled_history": 0.3, "volatile_tail": 0.4},  # float sum 1.0000000000000002
    {"evidence": 1},
    {"durable_facts": 0.5, "evidence": 0.5},
])
def test_shares_summing_to_exactly_one_are_accepted(shares: dict[str, float]) -> None:
    assert parse_budget(article(shares={"x": shares})).shares_for("x")["evidence"] == shares["evidence"]


def test_weights_below_one_are_accepted() -> None:
    weights = parse_budget(article(weights={"rerank": 0.5, "confidence": 0.2, "recency": 0.0})).weights
    assert (weights.rerank, weights.confidence, weights.recency) == (0.5, 0.2, 0.0)


def test_reserves_may_leave_a_single_token() -> None:
    assert allowance_before_fixed(parse_budget(article(usable_context=1901))) == 1


def test_max_tool_result_tokens_may_equal_tool_reserve() -> None:
    assert parse_budget(article(max_tool_result_tokens=1000)).max_tool_result_tokens == 1000


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    *[(f"missing {key}", without(key), key) for key in (
        "usable_context", "output_reserve", "tool_reserve", "request_overhead_reserve", "max_rounds",
        "max_tool_result_tokens", "weights", "recency_days", "shares", "overflow_order")],
    ("unknown top-level key", with_("usable_contxt", 5000), "usable_contxt"),
    ("bool token count", with_("usable_context", True), "usable_context"),
    ("string token count", with_("usable_context", "5000"), "usable_context"),
    ("fractional token count", with_("output_reserve", 399.5), "output_reserve"),
    ("null token count", with_("tool_reserve", None), "tool_reserve"),
    ("negative reserve", with_("request_overhead_reserve", -1), "request_overhead_reserve"),
    ("zero usable_context", with_("usable_context", 0), "usable_context"),
    ("usable_context above the bound", with_("usable_context", 10**12), "usable_context"),
    ("reserve above the bound", with_("tool_reserve", 10_000_001), "tool_reserve"),
    ("reserves leave nothing", with_("usable_context", 1900), "usable_context"),
    ("reserves exceed", with_("tool_reserve", 4200), "usable_context"),
    ("zero rounds", with_("max_rounds", 0), "max_rounds"),
    ("bool rounds", with_("max_rounds", True), "max_rounds"),
    ("tool result above tool reserve", with_("max_tool_result_tokens", 1001), "max_tool_result_tokens"),
    ("negative tool result", with_("max_tool_result_tokens", -5), "max_tool_result_tokens"),
    ("weights not an object", with_("weights", [0.6, 0.25, 0.15]), "weights"),
    ("weight missing", without("weights.recency"), "weights.recency"),
    ("weight unknown", with_("weights.novelty", 0.0), "weights.novelty"),
    ("weight negative", with_("weights.rerank", -0.1), "weights.rerank"),
    ("weight string", with_("weights.confidence", "high"), "weights.confidence"),
    ("weight bool", with_("weights.recency", False), "weights.recency"),
    ("weight NaN", with_("weights.rerank", float("nan")), "weights.rerank"),
    ("weights all zero", with_("weights", {"rerank": 0, "confidence": 0, "recency": 0}), "weights"),
    ("weights above one", with_("weights.rerank", 0.7), "weights"),
    ("recency_days zero", with_("recency_days", 0), "recency_days"),
    ("recency_days negative", with_("recency_days", -5), "recency_days"),
    ("recency_days bool", with_("recency_days", True), "recency_days"),
    ("recency_days infinite", with_("recency_days", float("inf")), "recency_days"),
    ("shares not an object", with_("shares", [0.5]), "shares"),
    ("shares empty", with_("shares", {}), "shares"),
    ("intent not an object", with_("shares.fact_check", 0.5), "shares.fact_check"),
    ("share above one", with_("shares.fact_check.evidence", 1.5), "shares.fact_check.evidence"),
    ("share negative", with_("shares.comparison.recalled_history", -0.05), "shares.comparison.recalled_history"),
    ("share bool", with_("shares.fact_check.volatile_tail", True), "shares.fact_check.volatile_tail"),
    ("share string", with_("shares.fact_check.durable_facts", "40%"), "shares.fact_check.durable_facts"),
    ("share for tool results", with_("shares.fact_check.tool_results", 0.0), "shares.fact_check.tool_results"),
    ("share for a fixed slice", with_("shares.comparison.guidelines", 0.0), "shares.comparison.guidelines"),
    ("share for unknown slice", with_("shares.comparison.evidenc", 0.0), "shares.comparison.evidenc"),
    ("shares sum above one", with_("shares.comparison.evidence", 0.61), "shares.comparison"),
    ("shares sum barely above one", with_("shares.fact_check.evidence", 0.250001), "shares.fact_check"),
    ("overflow_order not a list", with_("overflow_order", "evidence"), "overflow_order"),
    ("overflow_order unknown slice", with_("overflow_order", ["evidence", "facts"]), "overflow_order[1]"),
    ("overflow_order tool results", with_("overflow_order", ["tool_results"]), "overflow_order[0]"),
    ("overflow_order duplicate", with_("overflow_order", ["evidence", "durable_facts", "evidence"]),
     "overflow_order[2]"),
    ("require_current_facts string", with_("require_current_facts", "yes"), "require_current_facts"),
    ("require_current_facts int", with_("require_current_facts", 1), "require_current_facts"),
    ("tier_limits list", with_("tier_limits", [3]), "tier_limits"),
    ("tier_limits unknown slice", with_("tier_limits", {"tools": {"full": 1}}), "tier_limits.tools"),
    ("tier_limits pointer", with_("tier_limits", {"evidence": {"pointer": 1}}), "tier_limits.evidence.pointer"),
    ("tier_limits negative", with_("tier_limits", {"evidence": {"full": -1}}), "tier_limits.evidence.full"),
    ("tier_limits fraction", with_("tier_limits", {"evidence": {"summary": 1.5}}), "tier_limits.evidence.summary"),
    ("compression not an object", with_("compression", True), "compression"),
    ("compression unknown field", with_("compression", {"enabled": True, "budget_ms": 500}), "compression.budget_ms"),
    ("compression enabled string", with_("compression", {"enabled": "yes"}), "compression.enabled"),
    ("compression zero time", with_("compression", {"time_budget_ms": 0}), "compression.time_budget_ms"),
    ("compression fractional tokens", with_("compression", {"token_budget": 10.5}), "compression.token_budget"),
    ("compression tiny summary", with_("compression", {"summary_tokens": 4}), "compression.summary_tokens"),
]


def test_compression_is_off_by_default_and_takes_its_limits_from_the_budget() -> None:
    assert parse_budget(article()).compression == Compression(enabled=False)
    on = parse_budget(article(compression={"enabled": True, "time_budget_ms": 800, "summary_tokens": 60}))
    assert on.compression == Compression(enabled=True, time_budget_ms=800, token_budget=4000, summary_tokens=60)


def test_tier_limits_parse_per_slice_and_default_to_none() -> None:
    assert parse_budget(article()).tier_limits == {}
    limits = parse_budget(article(tier_limits={"evidence": {"full": 3, "summary": 2}})).tier_limits
    assert limits == {"evidence": {"full": 3, "summary": 2}}


@pytest.mark.parametrize(("mutate", "field"), [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_broken_budget_names_the_field(mutate: Callable[[dict[str, Any]], None], field: str) -> None:
    data = article()
    mutate(data)
    with pytest.raises(InvalidBudget) as caught:
        parse_budget(data)
    assert caught.value.field == field
    assert f"{field}:" in str(caught.value)
    # One class for the failure, whichever layer raised it.
    assert isinstance(caught.value, errors.InvalidBudget)
    assert caught.value.code == "invalid_budget"


@pytest.mark.parametrize("data", [None, [ARTICLE], "budget"])
def test_non_object_budget_is_rejected_at_the_root(data: Any) -> None:
    with pytest.raises(InvalidBudget) as caught:
        parse_budget(data)
    assert caught.value.field == "$"


def test_unknown_intent_names_the_intent_and_the_known_ones() -> None:
    budget = parse_budget(ARTICLE)
    with pytest.raises(UnknownIntent) as caught:
        budget.shares_for("summarize")
    message = str(caught.value)
    assert "'summarize'" in message and "comparison" in message and "fact_check" in message
    assert (caught.value.value, caught.value.known) == ("summarize", ("comparison", "fact_check"))
    assert caught.value.code == "unknown_intent"


# -- arithmetic ------------------------------------------------------------------------------------------------


def test_article_leaves_3100_before_fixed_slices() -> None:
    # The article: 5,000 - 400 output - 1,000 tool results - 500 framing = 3,100.
    assert allowance_before_fixed(parse_budget(ARTICLE)) == 3100


def test_tool_reserve_is_not_multiplied_by_rounds() -> None:
    budget = parse_budget(article(max_rounds=10))
    assert allowance_before_fixed(budget) == 3100


def test_allocate_with_no_fixed_costs_splits_3100_by_comparison_shares() -> None:
    allocation = allocate(parse_budget(ARTICLE), "comparison", {})
    # 15%, 60%, 5%, 20% of 3100, all whole already.
    assert dict(allocation.slices) == {"durable_facts": 465, "evidence": 1860, "recalled_history": 155,
                                       "volatile_tail": 620}
    assert allocation.remainder == 3100 and allocation.unallocated == 0
    assert dict(allocation.fixed) == {"guidelines": 0, "persona": 0, "tools": 0, "question": 0}


def test_allocate_charges_fixed_slices_then_floors_and_gives_the_rounding_to_the_first_overflow_slice() -> None:
    costs = {"guidelines": 100, "persona": 50, "tools": 333, "question": 20}
    allocation = allocate(parse_budget(ARTICLE), "fact_check", costs)
    assert allocation.before_fixed == 3100
    assert dict(allocation.fixed) == costs
    assert allocation.remainder == 2597  # 3100 - 503
    # 40% = 1038.8 -> 1038; 25% = 649.25 -> 649 (twice); 10% = 259.7 -> 259; the 2 tokens floored away
    # go to evidence, first in overflow_order.
    assert dict(allocation.slices) == {"durable_facts": 1038, "evidence": 651, "recalled_history": 259,
                                       "volatile_tail": 649}
    assert allocation.unallocated == 0
    assert all(isinstance(v, int) for v in allocation.slices.values())


def test_rounding_leftover_skips_a_zero_share_slice() -> None:
    budget = parse_budget(article(
        usable_context=1910,  # 10 tokens after reserves
        shares={"x": {"durable_facts": 0.25, "evidence": 0.25, "volatile_tail": 0.5}},
        overflow_order=["recalled_history", "durable_facts", "evidence", "volatile_tail"],
    ))
    allocation = allocate(budget, "x", {})
    # 2.5 -> 2, 2.5 -> 2, 5; recalled_history (share 0) is first in the order but gets nothing.
    assert dict(allocation.slices) == {"durable_facts": 3, "evidence": 2, "recalled_history": 0,
                                       "volatile_tail": 5}


def test_flooring_is_exact_on_decimal_shares() -> None:
    # 0.29 * 100 is 28.999999999999996 in binary floats; the allowance must still be 29.
    budget = parse_budget(article(usable_context=2000, shares={"x": {"durable_facts": 0.29, "evidence": 0.71}}))
    allocation = allocate(budget, "x", {})
    # (evidence receives any rounding leftover, so a wrongly floored 28 would show up as evidence 72)
    assert allocation.slices["durable_facts"] == 29 and allocation.slices["evidence"] == 71


def test_shares_below_one_leave_tokens_unallocated() -> None:
    budget = parse_budget(article(usable_context=2000, shares={"x": {"evidence": 0.5}}))
    allocation = allocate(budget, "x", {})
    assert allocation.slices["evidence"] == 50
    assert allocation.unallocated == 50
    assert sum(allocation.slices.values()) + allocation.unallocated == allocation.remainder


def test_fixed_slices_that_fill_the_allowance_exactly_fit() -> None:
    allocation = allocate(parse_budget(ARTICLE), "comparison",
                          {"guidelines": 1000, "persona": 1000, "tools": 1000, "question": 100})
    assert allocation.remainder == 0
    assert set(allocation.slices.values()) == {0}


@pytest.mark.parametrize(("costs", "slice_name", "needed", "left"), [
    ({"guidelines": 3101}, "guidelines", 3101, 3100),
    ({"guidelines": 3000, "persona": 101}, "persona", 101, 100),
    ({"guidelines": 1000, "persona": 1000, "tools": 1101, "question": 5}, "tools", 1101, 1100),
    ({"guidelines": 1000, "persona": 1000, "tools": 1000, "question": 101}, "question", 101, 100),
    # Charged in layout order: the first slice that does not fit is named, not the biggest.
    ({"guidelines": 3100, "persona": 0, "tools": 0, "question": 9999}, "question", 9999, 0),
])
def test_fixed_slice_overflow_names_the_slice(costs: dict[str, int], slice_name: str, needed: int,
                                              left: int) -> None:
    with pytest.raises(FixedSliceOverflow) as caught:
        allocate(parse_budget(ARTICLE), "fact_check", costs)
    assert caught.value.slice == slice_name
    assert (caught.value.needed, caught.value.left) == (needed, left)
    assert repr(slice_name) in str(caught.value) and str(needed) in str(caught.value)
    assert caught.value.code == "fixed_slice_overflow" and isinstance(caught.value, errors.CtxasmError)


def test_allocate_rejects_an_unknown_intent() -> None:
    with pytest.raises(UnknownIntent):
        allocate(parse_budget(ARTICLE), "chitchat", {})


@pytest.mark.parametrize("costs", [{"evidence": 10}, {"question": -1}, {"tools": 1.5}, {"persona": True}])
def test_allocate_rejects_bad_fixed_costs(costs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        allocate(parse_budget(ARTICLE), "fact_check", costs)


# -- overflow --------------------------------------------------------------------------------------------------


def test_fit_order_follows_overflow_order_then_layout() -> None:
    assert fit_order(parse_budget(ARTICLE)) == ("evidence", "durable_facts", "volatile_tail", "recalled_history")
    partial = parse_budget(article(overflow_order=["volatile_tail", "evidence"]))
    assert fit_order(partial) == ("volatile_tail", "evidence", "durable_facts", "recalled_history")
    assert set(fit_order(parse_budget(article(overflow_order=[])))) == set(DYNAMIC_SLICES)


def test_unused_tokens_pass_to_the_next_slice_in_overflow_order() -> None:
    order = ARTICLE["overflow_order"]
    allowances = {"durable_facts": 100, "evidence": 500, "recalled_history": 50, "volatile_tail": 200}
    passed = pass_overflow(allowances, order, "evidence", 120)
    assert passed == {"durable_facts": 220, "evidence": 500, "recalled_history": 50, "volatile_tail": 200}
    assert allowances["durable_facts"] == 100  # input untouched


def test_last_slice_and_unlisted_slices_keep_their_unused_tokens() -> None:
    allowances = {"durable_facts": 100, "evidence": 500, "recalled_history": 50, "volatile_tail": 200}
    order = ["evidence", "volatile_tail"]
    assert pass_overflow(allowances, order, "volatile_tail", 200) == allowances
    assert pass_overflow(allowances, order, "durable_facts", 100) == allowances
    assert overflow_receiver(order, "evidence") == "volatile_tail"
    assert overflow_receiver(order, "volatile_tail") is None
    assert overflow_receiver(order, "recalled_history") is None


@pytest.mark.parametrize("unused", [-1, 501])
def test_unused_outside_the_allowance_is_a_programming_error(unused: int) -> None:
    with pytest.raises(ValueError):
        pass_overflow({"evidence": 500, "durable_facts": 0}, ["evidence", "durable_facts"], "evidence", unused)


def test_overflow_chain_through_a_whole_window() -> None:
    budget = parse_budget(ARTICLE)
    allocation = allocate(budget, "fact_check", {"guidelines": 100, "persona": 50, "tools": 333, "question": 20})
    needs = {"evidence": 300, "durable_facts": 1500, "volatile_tail": 100, "recalled_history": 900}
    allowances = dict(allocation.slices)  # evidence 651, durable 1038, volatile 649, recalled 259
    granted: dict[str, int] = {}
    for name in fit_order(budget):
        granted[name] = allowances[name]
        used = min(needs[name], allowances[name])
        allowances = pass_overflow(allowances, budget.overflow_order, name, allowances[name] - used)
    # evidence leaves 351 -> durable 1389 (uses all); volatile leaves 549 -> recalled 808.
    assert granted == {"evidence": 651, "durable_facts": 1389, "volatile_tail": 649, "recalled_history": 808}
