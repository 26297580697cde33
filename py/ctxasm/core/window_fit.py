"""The fitting passes of one window, across its dynamic slices. Pure.

1. The pass in overflow_order: each slice is fitted (ctxasm.core.fitting) within its share plus what the slice
   before it passed on.
2. The request is built from the seats and counted exactly; while it counts over its limit, seats are given
   back (optional memories by lowest priority, then the thread's oldest turns).
3. The reclaim pass: what the request leaves unused is offered again to the candidates left out for lack of
   room, slice by slice, and the request is built and counted again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ctxasm.core import budget as budgets, render
from ctxasm.core.fitting import SLICE_BUDGET, Candidate, Counter, Excluded, Seated, SliceFit, fit_slice
from ctxasm.core.window_records import RECORD_SLICES, LinePrices, priced, record_lines, row_of, tail_turn
from ctxasm.errors import CtxasmError


class RequestOverBudget(CtxasmError):
    """The serialized request counted more tokens than the budget allows."""

    code = "request_over_budget"

    def __init__(self, counted: int, limit: int):
        self.counted, self.limit = counted, limit
        super().__init__(f"request_over_budget: the complete request is {counted} tokens, the budget allows {limit}")


@dataclass
class SliceState:
    """One dynamic slice across the fitting passes."""

    name: str
    share: int
    allowance: int = 0
    seated: list[Seated] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    used: int = 0
    passed_on: int = 0
    reclaimed: int = 0
    open_groups: frozenset[str] = frozenset()
    taken: Mapping[str, int] = field(default_factory=dict)

    def absorb(self, fit: SliceFit, *, reclaim: bool) -> None:
        """Add one pass's seats. The reclaim pass retries only the excluded candidates: those it seats leave
        the excluded list, the others keep the latest reason."""
        self.seated += fit.seated
        self.used += fit.used
        if reclaim:
            self.reclaimed += fit.used
            retried = {gone.candidate.key: gone for gone in fit.excluded}
            seated = {seat.candidate.key for seat in fit.seated}
            self.excluded = [retried.get(gone.candidate.key, gone) for gone in self.excluded
                             if gone.candidate.key not in seated]
        else:
            self.excluded = list(fit.excluded)
        self.open_groups, self.taken = fit.open_groups, fit.taken


def fit_candidates(by_slice: Mapping[str, list[Candidate]], budget: budgets.Budget,
                   allocation: budgets.Allocation, count: Counter = priced) -> dict[str, SliceState]:
    """The pass in overflow_order: each slice fits within its share plus what the slice before it left."""
    states = {name: SliceState(name, allocation.slices[name]) for name in budgets.DYNAMIC_SLICES}
    allowances = dict(allocation.slices)
    for name in budgets.fit_order(budget):
        state = states[name]
        state.allowance = allowances[name]
        fit = fit_slice(by_slice[name], allowances[name], count, tier_limits=budget.tier_limits.get(name))
        state.absorb(fit, reclaim=False)
        allowances = budgets.pass_overflow(allowances, budget.overflow_order, name, fit.unused)
        state.passed_on = fit.unused if budgets.overflow_receiver(budget.overflow_order, name) else 0
    return states


def reclaim(states: Mapping[str, SliceState], budget: budgets.Budget, pool: int, count: Counter = priced) -> int:
    """The reclaim pass: every token the request leaves unused (slices' leftovers, unallocated shares, the
    part of the framing reserve framing did not take) is offered again, slice by slice in overflow_order,
    to the candidates each slice left out for lack of room. Returns how many it seated."""
    seated = 0
    for name in budgets.fit_order(budget):
        state = states[name]
        waiting = [gone.candidate for gone in state.excluded if gone.rule == SLICE_BUDGET]
        if pool <= 0 or not waiting:
            continue
        fit = fit_slice(waiting, pool, count, tier_limits=budget.tier_limits.get(name),
                        open_groups=state.open_groups, taken=state.taken)
        state.absorb(fit, reclaim=True)
        pool -= fit.used
        seated += len(fit.seated)
    return seated


@dataclass(frozen=True)
class Framing:
    """What the request carries besides the seats: the model, the developer message, the tool definitions, the
    question and the output reserve."""

    model: str
    developer: str
    tool_defs: list[dict[str, Any]]
    question: str
    max_output_tokens: int


class RequestBuild:
    """The request built from the seats, counted exactly; seats given back while it counts over the limit."""

    def __init__(self, framing: Framing, states: dict[str, SliceState], limit: int, ids: Mapping[str, str],
                 prices: LinePrices):
        self.framing, self.states, self.limit, self.ids, self.prices = framing, states, limit, ids, prices
        #: seats given back, each with how far over its limit the request was when it went
        self.trimmed: list[tuple[Seated, int]] = []
        self.rebuild()

    def rebuild(self) -> None:
        self.tail_seated = sorted(self.states["volatile_tail"].seated,
                                  key=lambda s: (row_of(s.candidate).turn_index or 0))
        tail = [tail_turn(row_of(s.candidate), self.ids) for s in self.tail_seated]
        lines = record_lines({name: self.states[name].seated for name in RECORD_SLICES})
        user = render.user_message([text for _, text in lines], self.framing.question)
        self.request = render.build_request(model=self.framing.model, developer=self.framing.developer,
                                            tools=self.framing.tool_defs, tail=tail, user=user,
                                            max_output_tokens=self.framing.max_output_tokens)
        self.record_seats = [seat for seat, _ in lines if seat is not None]
        self.serialized = render.serialize(self.request)
        self.counted = self.prices.request_tokens(self.serialized)

    def give_back_until_it_fits(self) -> None:
        while self.counted > self.limit:
            given = _trim_to_limit(self.states, self.counted, self.limit)
            if not given:
                raise RequestOverBudget(self.counted, self.limit)
            for seat in given:
                state = self.states[seat.candidate.slice]
                state.seated = [s for s in state.seated if s is not seat]
            for name in {seat.candidate.slice for seat in given}:
                _reprice(self.states[name], self.prices)
            self.trimmed += [(seat, self.counted - self.limit) for seat in given]
            self.rebuild()


def fit_window(by_slice: Mapping[str, list[Candidate]], budget: budgets.Budget, allocation: budgets.Allocation,
               framing: Framing, limit: int, ids: Mapping[str, str],
               prices: LinePrices | None = None) -> tuple[dict[str, SliceState], RequestBuild]:
    """Every pass: the slices in overflow_order, the request within its limit, then reclaim until no left-out
    candidate fits what the request leaves (each round seats at least one more or gives one back for good, so
    it ends). `prices`: the LinePrices the candidates were priced with (a fresh one when None)."""
    prices = prices or LinePrices()
    states = fit_candidates(by_slice, budget, allocation, prices)
    built = RequestBuild(framing, states, limit, ids, prices)
    built.give_back_until_it_fits()
    while budget.reclaim_unused and built.counted < limit:
        if not reclaim(states, budget, limit - built.counted, prices):
            break
        built.rebuild()
        built.give_back_until_it_fits()
    return states, built


def _trim_to_limit(states: Mapping[str, SliceState], counted: int, limit: int) -> list[Seated]:
    """Seats to give back when the complete request still counts more than the limit (what the line prices
    cannot see: message framing, pre-tokenizer joins at the edges): optional memories, lowest priority
    first, then the thread's oldest turns. Empty when nothing can go."""
    optional = sorted(
        (seat for name in RECORD_SLICES for seat in states[name].seated if not seat.candidate.required),
        key=lambda seat: (_priority(seat), -row_of(seat.candidate).selection_rank))
    # Then the thread's own turns, oldest first.
    optional += sorted((seat for seat in states["volatile_tail"].seated if not seat.candidate.required),
                       key=lambda seat: row_of(seat.candidate).turn_index or 0)
    over = counted - limit
    given: list[Seated] = []
    for seat in optional:
        if over <= 0:
            break
        given.append(seat)
        over -= seat.tokens
    return given


def _priority(seat: Seated) -> float:
    priority = row_of(seat.candidate).priority
    return 0 if priority is None else priority


def _reprice(state: SliceState, count: Counter) -> None:
    """After seats were given back: a shared record still open is paid by the first seat left under it."""
    opened: set[str] = set()
    repriced = []
    for seat in state.seated:
        tokens = seat.candidate.cost(seat.tier, count) + seat.candidate.opening(opened)
        opened.update(group for group, _ in seat.candidate.groups)
        repriced.append(replace(seat, tokens=tokens))
    state.seated = repriced
    state.used = sum(seat.tokens for seat in repriced)
