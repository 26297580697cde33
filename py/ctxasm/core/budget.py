"""The context_budget guideline: parsed, validated, and turned into per-slice token allowances.

Pure functions only. The arithmetic, in the order the assembler applies it:

1. `allowance_before_fixed`: usable_context minus the output, tool and request-overhead reserves. The tool
   reserve is shared by every tool round; it is not multiplied by max_rounds.
2. `allocate`: charge the fixed slices (guidelines, persona, tools, question, in that order) at their real
   cost, failing with `FixedSliceOverflow` on the first that does not fit (a policy is never truncated), then
   split what is left by the intent's shares, flooring each slice to whole tokens.
3. `fit_order` and `pass_overflow`: the assembler fits the dynamic slices one at a time in `fit_order` and
   hands each slice's unused tokens to the next slice of overflow_order.

Field paths in errors are relative to the guideline's content_json ("shares.fact_check.evidence"; "$" is
the object itself).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from ctxasm import contract_constants, errors
from ctxasm.errors import InvalidBudget

#: Slices whose size the budget sets by share, in layout order.
DYNAMIC_SLICES: tuple[str, ...] = ("durable_facts", "evidence", "recalled_history", "volatile_tail")
#: Slices charged at their real cost before any share is computed, in charging order.
FIXED_SLICES: tuple[str, ...] = ("guidelines", "persona", "tools", "question")
#: Tool results have no share: they are paid from tool_reserve.
TOOL_RESULTS = "tool_results"

#: Shares and weights may overshoot 1 by float noise at most.
TOLERANCE = 1e-9

_TOKEN_FIELDS = ("usable_context", "output_reserve", "tool_reserve", "request_overhead_reserve",
                 "max_rounds", "max_tool_result_tokens")
_REQUIRED = _TOKEN_FIELDS + ("weights", "recency_days", "shares", "overflow_order")
_OPTIONAL = ("require_current_facts", "tier_limits", "reclaim_unused", "candidate_limits", "compression")
#: The most candidates a budget may let one slice keep after scoring (the database's limit step).
MAX_CANDIDATE_LIMIT = contract_constants.MAX_CANDIDATE_LIMIT
#: The largest whole number any other field of a budget may hold (a token count, a reserve, max_rounds, a tier
#: limit, a compression limit): above the largest context window of any model, far below what the database's
#: integer arithmetic over a budget can hold (a usable_context of 10^12 broke every window of its scope). The
#: database refuses a budget guideline whose token counts exceed it too (ctxasm.check_record, CTX_ROW_BINDER).
MAX_BUDGET_TOKENS = contract_constants.MAX_BUDGET_TOKENS
#: Tiers a budget may cap per slice; pointers are bounded by the slice's allowance alone.
LIMITED_TIERS = ("full", "summary")
_WEIGHTS = ("rerank", "confidence", "recency")


class FixedSliceOverflow(errors.CtxasmError):
    """A fixed slice (guidelines, persona, tools, question) does not fit in what the reserves leave."""

    code = "fixed_slice_overflow"

    def __init__(self, slice_name: str, needed: int, left: int):
        self.slice = slice_name
        self.needed = needed
        self.left = left
        super().__init__(
            f"fixed_slice_overflow: slice {slice_name!r} needs {needed} tokens but only {left} are left"
        )


@dataclass(frozen=True)
class Weights:
    """Priority weights: priority = rerank * sigmoid(logit) + confidence * conf + recency * rec."""

    rerank: float
    confidence: float
    recency: float


@dataclass(frozen=True)
class Compression:
    """Compression during assembly (the budget's `compression`; off unless `enabled`): a candidate that would
    seat better as a summary and has none gets one from the summarizer, within these limits per window."""

    enabled: bool = False
    #: wall-clock milliseconds all of one window's summarizer calls may take together
    time_budget_ms: int = 2000
    #: tokens one window may send to and ask from the summarizer (each call: its prompt and source text, counted
    #: with o200k_base, plus `summary_tokens`)
    token_budget: int = 4000
    #: the longest summary one call may write (the model's max_tokens)
    summary_tokens: int = 120


#: compression field -> (default, smallest allowed); `enabled` is a boolean
COMPRESSION_LIMITS: Mapping[str, tuple[int, int]] = MappingProxyType({
    "time_budget_ms": (Compression.time_budget_ms, 1), "token_budget": (Compression.token_budget, 1),
    "summary_tokens": (Compression.summary_tokens, 8)})


@dataclass(frozen=True)
class Budget:
    usable_context: int
    output_reserve: int
    tool_reserve: int
    request_overhead_reserve: int
    max_rounds: int
    max_tool_result_tokens: int
    weights: Weights
    recency_days: float
    #: intent -> dynamic slice -> share; every intent lists all DYNAMIC_SLICES (absent in the JSON = 0).
    shares: Mapping[str, Mapping[str, float]]
    overflow_order: tuple[str, ...]
    #: Admit the current version of a corrected fact as required, at full size (the article's default).
    require_current_facts: bool = True
    #: dynamic slice -> tier -> most seats at that tier ("top 3 in full, the next 2 as summaries, the rest as
    #: pointers"); a candidate over a tier's limit tries the next tier. Slices not listed are unlimited.
    tier_limits: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    #: After the pass in overflow_order, hand the tokens no slice used to the slices that left candidates out
    #: for lack of room, again in overflow_order (off: the article's budget; on: the default for new tenants).
    reclaim_unused: bool = False
    #: dynamic slice -> most candidates the database keeps after scoring (absent: sized from the share).
    candidate_limits: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: compression during assembly: off by default
    compression: Compression = Compression()

    @property
    def intents(self) -> tuple[str, ...]:
        return tuple(self.shares)

    def shares_for(self, intent: str) -> Mapping[str, float]:
        try:
            return self.shares[intent]
        except KeyError:
            raise errors.UnknownIntent.of(intent, self.intents, "an intent of this budget") from None


@dataclass(frozen=True)
class Allocation:
    """Token allowances for one window, all whole tokens."""

    intent: str
    before_fixed: int
    #: fixed slice -> tokens charged, in FIXED_SLICES order.
    fixed: Mapping[str, int]
    #: what the fixed slices leave for the dynamic ones.
    remainder: int
    #: dynamic slice -> allowance, in DYNAMIC_SLICES order.
    slices: Mapping[str, int]
    #: part of the remainder no slice received (shares summing below 1).
    unallocated: int


# -- parsing ---------------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    # bool is an int subclass in Python; a budget that says `true` for a token count is broken.
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and math.isfinite(value)


def _token_count(data: Mapping[str, Any], key: str, minimum: int, parent: str = "",
                 maximum: int = MAX_BUDGET_TOKENS) -> int:
    value = data[key]
    path = f"{parent}.{key}" if parent else key
    # Integral floats/Decimals (5000.0) are accepted: JSON has one number type and drivers differ.
    if not _is_number(value) or value != int(value):
        raise InvalidBudget.at(path, f"must be a whole number {minimum}..{maximum}, got {value!r}")
    if not minimum <= value <= maximum:
        raise InvalidBudget.at(path, f"must be {minimum}..{maximum}, got {value!r}")
    return int(value)


def _check_keys(data: Any, path: str, required: Sequence[str], optional: Sequence[str] = ()) -> None:
    if not isinstance(data, Mapping):
        raise InvalidBudget.at(path, f"must be a JSON object, got {type(data).__name__}")
    prefix = "" if path == "$" else path + "."
    for key in required:
        if key not in data:
            raise InvalidBudget.at(prefix + key, "is required")
    for key in data:
        if key not in required and key not in optional:
            raise InvalidBudget.at(prefix + str(key), f"is not a known field (known: {', '.join((*required, *optional))})")


def _parse_weights(data: Any) -> Weights:
    _check_keys(data, "weights", _WEIGHTS)
    for key in _WEIGHTS:
        value = data[key]
        if not _is_number(value) or value < 0:
            raise InvalidBudget.at(f"weights.{key}", f"must be a number >= 0, got {value!r}")
    total = sum(Fraction(str(data[key])) for key in _WEIGHTS)
    if total <= 0:
        raise InvalidBudget.at("weights", "must not all be 0")
    if total > 1 + TOLERANCE:
        raise InvalidBudget.at("weights", f"must sum to at most 1, got {float(total)}")
    return Weights(*(float(data[key]) for key in _WEIGHTS))


def _parse_shares(data: Any) -> Mapping[str, Mapping[str, float]]:
    if not isinstance(data, Mapping):
        raise InvalidBudget.at("shares", f"must be a JSON object, got {type(data).__name__}")
    if not data:
        raise InvalidBudget.at("shares", "must name at least one intent")
    parsed: dict[str, Mapping[str, float]] = {}
    for intent, per_slice in data.items():
        path = f"shares.{intent}"
        if not isinstance(intent, str) or not intent:
            raise InvalidBudget.at(path, "intent names must be non-empty strings")
        if not isinstance(per_slice, Mapping):
            raise InvalidBudget.at(path, f"must be a JSON object, got {type(per_slice).__name__}")
        for slice_name, share in per_slice.items():
            if slice_name == TOOL_RESULTS:
                raise InvalidBudget.at(f"{path}.{slice_name}", "tool results have no share; they use tool_reserve")
            if slice_name not in DYNAMIC_SLICES:
                raise InvalidBudget.at(
                    f"{path}.{slice_name}", f"is not a dynamic slice (known: {', '.join(DYNAMIC_SLICES)})"
                )
            if not _is_number(share) or not 0 <= share <= 1:
                raise InvalidBudget.at(f"{path}.{slice_name}", f"must be a number in [0, 1], got {share!r}")
        total = sum((Fraction(str(share)) for share in per_slice.values()), Fraction(0))
        if total > 1 + TOLERANCE:
            raise InvalidBudget.at(path, f"shares must sum to at most 1, got {float(total)}")
        parsed[intent] = MappingProxyType({name: float(per_slice.get(name, 0.0)) for name in DYNAMIC_SLICES})
    return MappingProxyType(parsed)


def _parse_overflow_order(data: Any) -> tuple[str, ...]:
    if not isinstance(data, (list, tuple)):
        raise InvalidBudget.at("overflow_order", f"must be a JSON array, got {type(data).__name__}")
    seen: set[str] = set()
    for index, name in enumerate(data):
        path = f"overflow_order[{index}]"
        if name not in DYNAMIC_SLICES:
            raise InvalidBudget.at(path, f"{name!r} is not a dynamic slice (known: {', '.join(DYNAMIC_SLICES)})")
        if name in seen:
            raise InvalidBudget.at(path, f"{name!r} is listed twice")
        seen.add(name)
    return tuple(data)


def _parse_tier_limits(data: Any) -> Mapping[str, Mapping[str, int]]:
    if not isinstance(data, Mapping):
        raise InvalidBudget.at("tier_limits", f"must be a JSON object, got {type(data).__name__}")
    parsed: dict[str, Mapping[str, int]] = {}
    for slice_name, limits in data.items():
        path = f"tier_limits.{slice_name}"
        if slice_name not in DYNAMIC_SLICES:
            raise InvalidBudget.at(path, f"is not a dynamic slice (known: {', '.join(DYNAMIC_SLICES)})")
        if not isinstance(limits, Mapping):
            raise InvalidBudget.at(path, f"must be a JSON object, got {type(limits).__name__}")
        for tier in limits:
            if tier not in LIMITED_TIERS:
                raise InvalidBudget.at(f"{path}.{tier}", f"is not a tier with a limit (known: {', '.join(LIMITED_TIERS)})")
        parsed[slice_name] = MappingProxyType({tier: _token_count(limits, tier, 0, path) for tier in limits})
    return MappingProxyType(parsed)


def _parse_candidate_limits(data: Any) -> Mapping[str, int]:
    if not isinstance(data, Mapping):
        raise InvalidBudget.at("candidate_limits", f"must be a JSON object, got {type(data).__name__}")
    parsed: dict[str, int] = {}
    for slice_name in data:
        path = f"candidate_limits.{slice_name}"
        if slice_name not in DYNAMIC_SLICES:
            raise InvalidBudget.at(path, f"is not a dynamic slice (known: {', '.join(DYNAMIC_SLICES)})")
        parsed[slice_name] = _token_count(data, slice_name, 1, "candidate_limits", MAX_CANDIDATE_LIMIT)
    return MappingProxyType(parsed)


def _parse_compression(data: Any) -> Compression:
    _check_keys(data, "compression", (), ("enabled", *COMPRESSION_LIMITS))
    enabled = data.get("enabled", False)
    if not isinstance(enabled, bool):
        raise InvalidBudget.at("compression.enabled", f"must be true or false, got {enabled!r}")
    limits = {key: _token_count(data, key, minimum, "compression") if key in data else default
              for key, (default, minimum) in COMPRESSION_LIMITS.items()}
    return Compression(enabled=enabled, **limits)


#: The budget's top-level whole numbers and the least each may be.
_COUNT_MINIMUM = {"usable_context": 1, "output_reserve": 0, "tool_reserve": 0, "request_overhead_reserve": 0,
                  "max_rounds": 1, "max_tool_result_tokens": 0}
_RESERVES = ("output_reserve", "tool_reserve", "request_overhead_reserve")


def _check_reserves(usable: int, reserves: Mapping[str, int]) -> None:
    if sum(reserves[key] for key in _RESERVES) >= usable:
        raise InvalidBudget.at(
            "usable_context",
            f"{usable} leaves nothing after the reserves ({' + '.join(str(reserves[key]) for key in _RESERVES)})",
        )


def _check_tool_result(max_tool_result: int, tool_reserve: int) -> None:
    if max_tool_result > tool_reserve:
        raise InvalidBudget.at("max_tool_result_tokens", f"{max_tool_result} exceeds tool_reserve ({tool_reserve})")


def parse_budget(data: Mapping[str, Any]) -> Budget:
    """Validate a context_budget content_json and return it as a Budget; raise InvalidBudget naming the field."""
    _check_keys(data, "$", _REQUIRED, _OPTIONAL)
    usable = _token_count(data, "usable_context", 1)
    reserves = {key: _token_count(data, key, 0) for key in _RESERVES}
    _check_reserves(usable, reserves)
    max_rounds = _token_count(data, "max_rounds", 1)
    max_tool_result = _token_count(data, "max_tool_result_tokens", 0)
    _check_tool_result(max_tool_result, reserves["tool_reserve"])
    weights = _parse_weights(data["weights"])
    recency_days = data["recency_days"]
    if not _is_number(recency_days) or recency_days <= 0:
        raise InvalidBudget.at("recency_days", f"must be a number > 0, got {recency_days!r}")
    shares = _parse_shares(data["shares"])
    overflow_order = _parse_overflow_order(data["overflow_order"])
    require = data.get("require_current_facts", True)
    if not isinstance(require, bool):
        raise InvalidBudget.at("require_current_facts", f"must be true or false, got {require!r}")
    reclaim = data.get("reclaim_unused", False)
    if not isinstance(reclaim, bool):
        raise InvalidBudget.at("reclaim_unused", f"must be true or false, got {reclaim!r}")
    return Budget(
        usable_context=usable,
        max_rounds=max_rounds,
        max_tool_result_tokens=max_tool_result,
        weights=weights,
        recency_days=float(recency_days),
        shares=shares,
        overflow_order=overflow_order,
        require_current_facts=require,
        tier_limits=_parse_tier_limits(data.get("tier_limits", {})),
        reclaim_unused=reclaim,
        candidate_limits=_parse_candidate_limits(data.get("candidate_limits", {})),
        compression=_parse_compression(data.get("compression", {})),
        **reserves,
    )


def budget_problems(data: Any) -> list[InvalidBudget]:
    """Every problem of a context_budget content_json at once (parse_budget stops at the first): missing and
    unknown fields, each field on its own, then, when each is sound, the checks across fields. [] when it parses."""
    if not isinstance(data, Mapping):
        return [InvalidBudget.at("$", f"must be a JSON object, got {type(data).__name__}")]
    problems: list[InvalidBudget] = []

    def attempt(check: Any, *args: Any) -> None:
        try:
            check(*args)
        except InvalidBudget as exc:
            problems.append(exc)

    known = (*_REQUIRED, *_OPTIONAL)
    problems += [InvalidBudget.at(key, "is required") for key in _REQUIRED if key not in data]
    problems += [InvalidBudget.at(str(key), f"is not a known field (known: {', '.join(known)})")
                 for key in data if key not in known]
    counts: dict[str, int] = {}
    for key, minimum in _COUNT_MINIMUM.items():
        if key in data:
            try:
                counts[key] = _token_count(data, key, minimum)
            except InvalidBudget as exc:
                problems.append(exc)
    # The checks across fields, each once the fields it compares are sound, whatever else is wrong.
    if "usable_context" in counts and all(key in counts for key in _RESERVES):
        attempt(_check_reserves, counts["usable_context"], counts)
    if "max_tool_result_tokens" in counts and "tool_reserve" in counts:
        attempt(_check_tool_result, counts["max_tool_result_tokens"], counts["tool_reserve"])
    for key, parse in (("weights", _parse_weights), ("shares", _parse_shares),
                       ("overflow_order", _parse_overflow_order), ("tier_limits", _parse_tier_limits),
                       ("candidate_limits", _parse_candidate_limits), ("compression", _parse_compression)):
        if key in data:
            attempt(parse, data[key])
    if "recency_days" in data and (not _is_number(data["recency_days"]) or data["recency_days"] <= 0):
        problems.append(InvalidBudget.at("recency_days", f"must be a number > 0, got {data['recency_days']!r}"))
    for key in ("require_current_facts", "reclaim_unused"):
        if key in data and not isinstance(data[key], bool):
            problems.append(InvalidBudget.at(key, f"must be true or false, got {data[key]!r}"))
    if not problems:
        attempt(parse_budget, data)
    return problems


# -- arithmetic ------------------------------------------------------------------------------------------------


def allowance_before_fixed(budget: Budget) -> int:
    """Tokens left for the window's contents once output, tool results and request framing are reserved."""
    return (budget.usable_context - budget.output_reserve - budget.tool_reserve
            - budget.request_overhead_reserve)


def fit_order(budget: Budget) -> tuple[str, ...]:
    """The order the assembler fits dynamic slices in: overflow_order, then any others in layout order."""
    rest = tuple(name for name in DYNAMIC_SLICES if name not in budget.overflow_order)
    return budget.overflow_order + rest


def allocate(budget: Budget, intent: str, fixed_costs: Mapping[str, int]) -> Allocation:
    """Charge the fixed slices, then split the remainder by the intent's shares.

    `fixed_costs` maps fixed slice -> real token cost; a slice left out costs 0 (a window without tools).
    Each share is floored to whole tokens; the tokens lost to flooring go to the first slice in fit_order
    with a positive share, so rounding never loses budget. Shares summing below 1 leave the rest
    `unallocated` on purpose.
    """
    shares = budget.shares_for(intent)
    unknown = set(fixed_costs) - set(FIXED_SLICES)
    if unknown:
        raise ValueError(f"not fixed slices: {', '.join(sorted(unknown))} (known: {', '.join(FIXED_SLICES)})")
    before = allowance_before_fixed(budget)
    left = before
    fixed: dict[str, int] = {}
    for name in FIXED_SLICES:
        cost = fixed_costs.get(name, 0)
        if isinstance(cost, bool) or not isinstance(cost, int) or cost < 0:
            raise ValueError(f"fixed slice {name!r}: cost must be a whole number >= 0, got {cost!r}")
        if cost > left:
            raise FixedSliceOverflow(name, cost, left)
        fixed[name] = cost
        left -= cost
    remainder = left

    # Exact decimal arithmetic: 0.29 * 100 must be 29, not 28.999999999999996 floored to 28.
    exact = {name: Fraction(str(share)) * remainder for name, share in shares.items()}
    slices = {name: math.floor(value) for name, value in exact.items()}
    shared = min(remainder, math.floor(sum(exact.values())))
    leftover = shared - sum(slices.values())
    if leftover:
        receiver = next(name for name in fit_order(budget) if shares[name] > 0)
        slices[receiver] += leftover
    return Allocation(
        intent=intent,
        before_fixed=before,
        fixed=MappingProxyType(fixed),
        remainder=remainder,
        slices=MappingProxyType(slices),
        unallocated=remainder - sum(slices.values()),
    )


def overflow_receiver(order: Sequence[str], slice_name: str) -> str | None:
    """The slice that inherits `slice_name`'s unused tokens: the next one in overflow_order, else None."""
    if slice_name not in order:
        return None  # slices outside overflow_order neither give nor receive
    position = list(order).index(slice_name)
    return order[position + 1] if position + 1 < len(order) else None


def pass_overflow(allowances: Mapping[str, int], order: Sequence[str], slice_name: str,
                  unused: int) -> dict[str, int]:
    """New allowances with `slice_name`'s unused tokens added to its overflow receiver.

    The assembler fits slices in `fit_order`, so the receiver (later in overflow_order) is never one that has
    already been fitted:

        allowances = dict(allocation.slices)
        for name in fit_order(budget):
            fit = fit_slice(candidates[name], allowances[name])
            allowances = pass_overflow(allowances, budget.overflow_order, name, fit.unused)

    The last slice of overflow_order, and any slice outside it, keeps its unused tokens (they are not spent).
    """
    if not 0 <= unused <= allowances[slice_name]:
        raise ValueError(f"slice {slice_name!r}: unused {unused} is outside 0..{allowances[slice_name]}")
    result = dict(allowances)
    receiver = overflow_receiver(order, slice_name)
    if receiver is not None and unused:
        result[receiver] = result.get(receiver, 0) + unused
    return result
