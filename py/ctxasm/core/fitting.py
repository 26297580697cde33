"""Greedy tier fitting of one slice: degrade before you drop.

Candidates arrive in selection order (priority desc, valid_from desc, source table, row id). Required
candidates (current versions of corrected facts) are seated first and only at full size; if one does not
fit, assembly fails rather than answer from the stale claim. Optional candidates then try full, summary and
pointer in turn and take the first tier that fits. The fit is greedy: a candidate that fits at no tier is
excluded with rule "slice_budget" and the next, possibly smaller, candidate still gets its chance.

A budget may cap how many seats a tier takes in a slice (`tier_limits`); a candidate past the cap tries the
next tier. Each seat below full says why: "slice_budget" (the better tier did not fit) or "tier_limit".

Candidates may share records of their own (recalled turns share one section, and a heading line per
conversation and date): the first candidate seated under such a group also pays the group's cost, later
ones only their line. A slice can be fitted again with more tokens (the reclaim pass): the groups it already
opened and the seats it already took per tier carry over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ctxasm.core.tokens import count_tokens
from ctxasm.errors import CtxasmError

TIERS: tuple[str, ...] = ("full", "summary", "pointer")
SLICE_BUDGET = "slice_budget"
TIER_LIMIT = "tier_limit"

Counter = Callable[[str], int]

_KNOWN_TIERS = frozenset(TIERS)


def _is_count(value: Any) -> bool:
    """A whole number >= 0, not a bool (an int, mostly: tested first, a window makes hundreds of candidates)."""
    return (type(value) is int or (isinstance(value, int) and not isinstance(value, bool))) and value >= 0


class RequiredDoesNotFit(CtxasmError):
    """A required candidate does not fit its slice at full size."""

    code = "required_does_not_fit"

    def __init__(self, key: str, slice_name: str, needed: int, left: int):
        self.key = key
        self.slice = slice_name
        self.needed = needed
        self.left = left
        super().__init__(
            f"required_does_not_fit: {key!r} in slice {slice_name!r} needs {needed} tokens at full size "
            f"but only {left} are left"
        )


@dataclass(frozen=True)
class Candidate:
    """One memory competing for a slice.

    `key` identifies it in errors and the manifest; `ref` carries whatever the caller needs to trace it back
    (row reference, citation id). `tiers` maps tier name -> rendered text; "full" is mandatory, a missing or
    None "summary"/"pointer" is skipped. `token_counts` may hold cached counts per tier, used instead of
    counting the text.
    """

    key: str
    slice: str
    tiers: Mapping[str, str | None]
    required: bool = False
    token_counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    ref: Any = None
    #: the shared records this candidate's line sits under, outermost first, each with what opening it costs
    #: (paid once, by the first candidate seated under it)
    groups: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        tiers = self.tiers
        if not _KNOWN_TIERS.issuperset(tiers):
            unknown = [tier for tier in tiers if tier not in _KNOWN_TIERS]
            raise ValueError(f"candidate {self.key!r}: unknown tiers {sorted(unknown)} (known: {', '.join(TIERS)})")
        if tiers.get("full") is None:
            raise ValueError(f"candidate {self.key!r}: the full tier is required")
        for tier, tokens in self.token_counts.items():
            if tier not in _KNOWN_TIERS or not _is_count(tokens):
                raise ValueError(f"candidate {self.key!r}: bad token count {tokens!r} for tier {tier!r}")
        for group, cost in self.groups:
            if not _is_count(cost):
                raise ValueError(f"candidate {self.key!r}: bad cost {cost!r} of group {group!r}")
        # Worked out once: the fitting passes ask for every candidate in every pass.
        object.__setattr__(self, "_available", ("full",) if self.required else
                           tuple([tier for tier in TIERS if tiers.get(tier) is not None]))

    def opening(self, open_groups: frozenset[str] | set[str]) -> int:
        """What seating this candidate costs beyond its own line: the groups it would be the first under."""
        if not self.groups:
            return 0
        return sum(cost for group, cost in self.groups if group not in open_groups)

    def available_tiers(self) -> tuple[str, ...]:
        """The tiers this candidate may be seated at, best first."""
        return self._available  # type: ignore[attr-defined]  # set in __post_init__

    def cost(self, tier: str, count: Counter) -> int:
        cached = self.token_counts.get(tier)
        if cached is not None:
            return cached
        text = self.tiers.get(tier)
        if text is None:
            raise ValueError(f"candidate {self.key!r} has no {tier!r} tier")
        return count(text)


@dataclass(frozen=True)
class Seated:
    candidate: Candidate
    tier: str
    tokens: int
    #: 0-based place in the slice: required candidates first, then optional ones, each in selection order.
    position: int
    #: why the seat is below full: None at full, else SLICE_BUDGET or TIER_LIMIT (the first better tier refused).
    degraded_by: str | None = None


@dataclass(frozen=True)
class Excluded:
    candidate: Candidate
    rule: str
    #: tokens of the smallest tier tried, for the manifest.
    smallest_tokens: int
    #: tokens the slice had left when the candidate came up (what it did not fit in).
    left: int = 0


@dataclass(frozen=True)
class SliceFit:
    slice: str | None
    allowance: int
    seated: tuple[Seated, ...]
    excluded: tuple[Excluded, ...]
    used: int
    unused: int
    #: the groups with a seated line, and the seats taken per tier: what a later pass of the slice continues
    open_groups: frozenset[str] = frozenset()
    taken: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


def fit_slice(candidates: Iterable[Candidate], allowance: int, count: Counter = count_tokens,
              tier_limits: Mapping[str, int] | None = None, *, open_groups: frozenset[str] = frozenset(),
              taken: Mapping[str, int] | None = None) -> SliceFit:
    """Seat `candidates` (one slice, in selection order) within `allowance` tokens, at most
    `tier_limits[tier]` of them at each limited tier (required candidates count towards the full limit but
    are never refused by it). `open_groups` and `taken` continue an earlier pass of the same slice."""
    if isinstance(allowance, bool) or not isinstance(allowance, int) or allowance < 0:
        raise ValueError(f"allowance must be a whole number >= 0, got {allowance!r}")
    ordered = list(candidates)
    slices = {c.slice for c in ordered}
    if len(slices) > 1:
        raise ValueError(f"fit_slice fits one slice at a time, got {sorted(slices)}")
    keys = [c.key for c in ordered]
    if len(set(keys)) != len(keys):
        raise ValueError(f"candidate keys repeat: {sorted({k for k in keys if keys.count(k) > 1})}")
    slice_name = ordered[0].slice if ordered else None

    limits = dict(tier_limits or {})
    left = allowance
    seated: list[Seated] = []
    excluded: list[Excluded] = []
    counts = {tier: (taken or {}).get(tier, 0) for tier in TIERS}
    groups = set(open_groups)
    # Stable partition: required ones claim their space before any optional candidate can.
    for candidate in [c for c in ordered if c.required] + [c for c in ordered if not c.required]:
        opening = candidate.opening(groups)
        cost = 0
        degraded_by = None
        for tier in candidate.available_tiers():
            if limits and not candidate.required and tier in limits and counts[tier] >= limits[tier]:
                degraded_by = degraded_by or TIER_LIMIT
                continue
            cost = candidate.cost(tier, count) + opening
            if cost <= left:
                seated.append(Seated(candidate, tier, cost, len(seated), degraded_by))
                counts[tier] += 1
                left -= cost
                if candidate.groups:
                    groups.update(group for group, _ in candidate.groups)
                break
            degraded_by = degraded_by or SLICE_BUDGET
        else:
            if candidate.required:
                raise RequiredDoesNotFit(candidate.key, candidate.slice, cost, left)
            if degraded_by == TIER_LIMIT and not cost:  # every tier it has was capped, none was too big
                smallest = candidate.cost(candidate.available_tiers()[-1], count) + opening
                excluded.append(Excluded(candidate, TIER_LIMIT, smallest, left))
            else:
                excluded.append(Excluded(candidate, SLICE_BUDGET, cost, left))
    return SliceFit(
        slice=slice_name,
        allowance=allowance,
        seated=tuple(seated),
        excluded=tuple(excluded),
        used=allowance - left,
        unused=left,
        open_groups=frozenset(groups),
        taken=MappingProxyType(counts),
    )
