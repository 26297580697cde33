"""fitting: greedy per-slice tier fitting (degrade before you drop)."""

from __future__ import annotations

from typing import Any

import pytest

from ctxasm import errors
from ctxasm.core import tokens
from ctxasm.core.fitting import Candidate, RequiredDoesNotFit, SLICE_BUDGET, SliceFit, TIER_LIMIT, fit_slice


def words(n: int, word: str = "w") -> str:
    return " ".join([word] * n)


def count_words(text: str) -> int:
    """A transparent counter for tests: one token per whitespace-separated word."""
    return len(text.split())


def cand(key: str, full: int, summary: int | None = None, pointer: int | None = None, *,
         required: bool = False, slice_name: str = "evidence", **extra: Any) -> Candidate:
    tiers: dict[str, str | None] = {"full": words(full, key)}
    if summary is not None:
        tiers["summary"] = words(summary, key)
    if pointer is not None:
        tiers["pointer"] = words(pointer, key)
    return Candidate(key=key, slice=slice_name, tiers=tiers, required=required, **extra)


def layout(fit: SliceFit) -> list[tuple[str, str, int, int]]:
    return [(s.candidate.key, s.tier, s.tokens, s.position) for s in fit.seated]


def dropped(fit: SliceFit) -> list[tuple[str, str]]:
    return [(e.candidate.key, e.rule) for e in fit.excluded]


@pytest.mark.parametrize(("allowance", "tier", "tokens"), [
    (10, "full", 10),
    (9, "summary", 4),
    (4, "summary", 4),
    (3, "pointer", 1),
    (1, "pointer", 1),
])
def test_degrades_full_then_summary_then_pointer(allowance: int, tier: str, tokens: int) -> None:
    fit = fit_slice([cand("a", 10, 4, 1)], allowance, count_words)
    assert layout(fit) == [("a", tier, tokens, 0)]
    assert (fit.used, fit.unused) == (tokens, allowance - tokens)


def test_tier_limits_cap_seats_per_tier_and_say_so() -> None:
    fit = fit_slice([cand(k, 10, 4, 1) for k in "abcd"], 100, count_words, tier_limits={"full": 1, "summary": 2})
    assert layout(fit) == [("a", "full", 10, 0), ("b", "summary", 4, 1), ("c", "summary", 4, 2),
                           ("d", "pointer", 1, 3)]
    assert [s.degraded_by for s in fit.seated] == [None, TIER_LIMIT, TIER_LIMIT, TIER_LIMIT]


def test_a_budget_refusal_is_named_before_a_later_tier_limit() -> None:
    fit = fit_slice([cand("a", 10, 4, 1), cand("b", 10, 4, 1)], 11, count_words, tier_limits={"summary": 0})
    assert layout(fit) == [("a", "full", 10, 0), ("b", "pointer", 1, 1)]
    assert fit.seated[1].degraded_by == SLICE_BUDGET


def test_required_candidates_ignore_tier_limits_but_count_towards_them() -> None:
    fit = fit_slice([cand("r", 5, required=True), cand("a", 10, 4, 1)], 100, count_words, tier_limits={"full": 1})
    assert layout(fit) == [("r", "full", 5, 0), ("a", "summary", 4, 1)]


def test_capped_at_every_tier_it_has_is_excluded_with_tier_limit() -> None:
    fit = fit_slice([cand("a", 3), cand("b", 3)], 100, count_words, tier_limits={"full": 1})
    assert dropped(fit) == [("b", TIER_LIMIT)]
    assert fit.excluded[0].smallest_tokens == 3


def test_fits_at_no_tier_is_excluded_with_slice_budget() -> None:
    fit = fit_slice([cand("a", 10, 4, 2)], 1, count_words)
    assert fit.seated == ()
    assert dropped(fit) == [("a", SLICE_BUDGET)]
    assert fit.excluded[0].smallest_tokens == 2
    assert (fit.used, fit.unused) == (0, 1)


def test_greedy_a_smaller_later_candidate_fits_after_a_larger_one_is_skipped() -> None:
    candidates = [cand("big", 20, 15, 12), cand("small", 8), cand("medium", 5, 3, 1)]
    fit = fit_slice(candidates, 10, count_words)
    assert layout(fit) == [("small", "full", 8, 0), ("medium", "pointer", 1, 1)]
    assert dropped(fit) == [("big", SLICE_BUDGET)]
    assert (fit.used, fit.unused) == (9, 1)


def test_an_exclusion_records_what_was_left_when_it_came_up() -> None:
    fit = fit_slice([cand("a", 6), cand("b", 7, 5, 4), cand("c", 1), cand("d", 9, 8, 3)], 9, count_words)
    assert layout(fit) == [("a", "full", 6, 0), ("c", "full", 1, 1)]
    # (tokens of its smallest tier, tokens the slice had left when it came up)
    assert {e.candidate.key: (e.smallest_tokens, e.left) for e in fit.excluded} == {"b": (4, 3), "d": (3, 2)}


def test_selection_order_decides_who_gets_full_size() -> None:
    fit = fit_slice([cand("first", 6, 2), cand("second", 6, 2)], 8, count_words)
    assert layout(fit) == [("first", "full", 6, 0), ("second", "summary", 2, 1)]


def test_missing_summary_goes_straight_to_pointer() -> None:
    seen: list[str] = []

    def counting(text: str) -> int:
        seen.append(text)
        return count_words(text)

    for candidate in (cand("a", 10, None, 1),
                      Candidate("a", "evidence", {"full": words(10, "a"), "summary": None, "pointer": "a"})):
        seen.clear()
        fit = fit_slice([candidate], 5, counting)
        assert layout(fit) == [("a", "pointer", 1, 0)]
        assert seen == [words(10, "a"), "a"]  # no summary was rendered or counted


def test_required_candidates_are_seated_first_at_full_size() -> None:
    # Selection order puts the optional one first; the required one must still claim its space first.
    fit = fit_slice([cand("opt", 6, 3), cand("req", 6, 1, 1, required=True)], 10, count_words)
    assert layout(fit) == [("req", "full", 6, 0), ("opt", "summary", 3, 1)]


def test_required_that_fits_pushes_an_optional_one_out() -> None:
    fit = fit_slice([cand("opt", 6, None, 5), cand("req", 8, required=True)], 10, count_words)
    assert layout(fit) == [("req", "full", 8, 0)]
    assert dropped(fit) == [("opt", SLICE_BUDGET)]
    assert (fit.used, fit.unused) == (8, 2)


def test_required_that_does_not_fit_fails_naming_candidate_and_slice() -> None:
    # It has a summary that would fit, but a required fact is never degraded.
    candidates = [cand("fact_v2", 12, 1, 1, required=True, slice_name="durable_facts")]
    with pytest.raises(RequiredDoesNotFit) as caught:
        fit_slice(candidates, 10, count_words)
    error = caught.value
    assert (error.key, error.slice, error.needed, error.left) == ("fact_v2", "durable_facts", 12, 10)
    assert "'fact_v2'" in str(error) and "'durable_facts'" in str(error)
    assert error.code == "required_does_not_fit" and isinstance(error, errors.CtxasmError)


def test_second_required_reports_what_the_first_left() -> None:
    candidates = [cand("r1", 7, required=True, slice_name="durable_facts"),
                  cand("r2", 5, required=True, slice_name="durable_facts")]
    with pytest.raises(RequiredDoesNotFit) as caught:
        fit_slice(candidates, 10, count_words)
    assert (caught.value.key, caught.value.needed, caught.value.left) == ("r2", 5, 3)


def test_required_with_zero_allowance_fails() -> None:
    # The article's experiment: no space for durable facts while a correction is required.
    with pytest.raises(RequiredDoesNotFit):
        fit_slice([cand("fact_v2", 3, required=True, slice_name="durable_facts")], 0, count_words)


def test_exact_fit_is_a_fit() -> None:
    fit = fit_slice([cand("a", 5), cand("b", 5)], 10, count_words)
    assert [s.tier for s in fit.seated] == ["full", "full"] and fit.unused == 0


def test_cached_token_counts_are_used_instead_of_counting() -> None:
    def must_not_count(text: str) -> int:
        raise AssertionError("counted although cached")

    candidate = cand("a", 10, 4, 1, token_counts={"full": 30, "summary": 7, "pointer": 2})
    fit = fit_slice([candidate], 8, must_not_count)
    assert layout(fit) == [("a", "summary", 7, 0)]


def test_default_counter_is_o200k_base() -> None:
    candidate = Candidate("a", "evidence", {"full": "hello world " * 50, "pointer": "hello world"})
    fit = fit_slice([candidate], tokens.count_tokens("hello world"))
    assert layout(fit) == [("a", "pointer", tokens.count_tokens("hello world"), 0)]


def test_empty_slice() -> None:
    fit = fit_slice([], 42, count_words)
    assert (fit.slice, fit.seated, fit.excluded, fit.used, fit.unused) == (None, (), (), 0, 42)


def test_fit_records_slice_and_allowance() -> None:
    fit = fit_slice([cand("a", 1, slice_name="volatile_tail")], 3, count_words)
    assert (fit.slice, fit.allowance) == ("volatile_tail", 3)


def test_rejects_mixed_slices_and_repeated_keys() -> None:
    with pytest.raises(ValueError, match="one slice"):
        fit_slice([cand("a", 1), cand("b", 1, slice_name="durable_facts")], 10, count_words)
    with pytest.raises(ValueError, match="repeat"):
        fit_slice([cand("a", 1), cand("a", 2)], 10, count_words)


@pytest.mark.parametrize("allowance", [-1, 1.5, True])
def test_rejects_a_bad_allowance(allowance: Any) -> None:
    with pytest.raises(ValueError):
        fit_slice([cand("a", 1)], allowance, count_words)


@pytest.mark.parametrize("tiers", [{"summary": "s"}, {"full": None}, {"full": "f", "digest": "d"}])
def test_candidate_needs_full_text_and_known_tiers(tiers: dict[str, str | None]) -> None:
    with pytest.raises(ValueError):
        Candidate("a", "evidence", tiers)


def test_candidate_rejects_bad_cached_counts() -> None:
    with pytest.raises(ValueError):
        Candidate("a", "evidence", {"full": "f"}, token_counts={"full": -1})
