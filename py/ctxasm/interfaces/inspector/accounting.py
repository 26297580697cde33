"""Every token of a window accounted for, from the usable context to what the request left unused. Pure.

The arithmetic the assembler applies (ctxasm.core.budget, ctxasm.core.compose), read back from a manifest:

    request limit    = usable context - output reserve - tool reserve
    before fixed     = request limit - request-overhead reserve
    remainder        = before fixed - the fixed slices (guidelines with the memory instructions, persona,
                       tools, question)
                     = the dynamic slices' shares + unallocated
    request tokens   = fixed slices + what the dynamic slices used + framing (message framing and joins)
    unused           = request limit - request tokens
                     = what each slice kept unused + unallocated + the framing reserve framing did not take
                       - what the reclaim pass took back

A tool round's request may also use the tool reserve: its limit is usable context - output reserve, and the
tool reserve's ledger (assistant turns and tool results) is accounted for apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxasm.core import render
from ctxasm.core.tokens import count_tokens
from ctxasm.api.inspection import RESERVE_ORDER, REQUEST_LAYOUT, TOOL_RESULTS, Inspection, ordered, \
    overflow_order, overflow_receivers

#: What each reserve is kept for, in words.
RESERVE_PURPOSE = {"output": "the model's answer (max_completion_tokens)",
                   "tools": "tool calls and their results in later rounds",
                   "request_overhead": "message framing and joins the slices do not pay for"}
#: How each reserve is named in the views.
RESERVE_NAMES = {"output": "output reserve", "tools": "tool reserve", "request_overhead": "request-overhead reserve"}
#: Exclusion rules that mean "no room" (the fitter's), as opposed to the selection's rules.
ROOM_RULES = ("slice_budget", "tier_limit", "request_budget")


@dataclass(frozen=True)
class SliceAccount:
    name: str
    share: int
    #: tokens the slice before it in overflow order passed on to it
    received: int
    allowance: int
    used: int
    reclaimed: int
    passed_on: int
    receiver: str | None
    #: candidates this slice left out for lack of room
    left_out: int

    @property
    def kept(self) -> int:
        """Tokens of its allowance the slice neither used nor passed on (the last slice of overflow_order, or
        one outside it, keeps what it does not use)."""
        return self.allowance + self.reclaimed - self.used - self.passed_on


@dataclass(frozen=True)
class ToolLedger:
    """A tool round's account of the tool reserve: what assistant turns and tool results took of it."""

    reserve: int
    per_result: int
    max_rounds: int
    results: tuple[tuple[str, str, int, str], ...]  # (record id, tool, tokens, tier)
    assistant_tokens: int

    @property
    def used(self) -> int:
        return self.assistant_tokens + sum(tokens for _, _, tokens, _ in self.results)

    @property
    def left(self) -> int:
        return self.reserve - self.used


@dataclass(frozen=True)
class Account:
    usable: int
    reserves: tuple[tuple[str, int], ...]
    limit: int
    overhead: int
    before_fixed: int
    fixed: tuple[tuple[str, int], ...]
    instructions: int | None
    remainder: int
    slices: tuple[SliceAccount, ...]
    unallocated: int
    reclaim_unused: bool
    request_tokens: int
    #: the request limit of the window's first request (a tool round's first window)
    window_limit: int
    #: a tool round: its first window's request tokens, and the tool reserve's ledger
    first_tokens: int | None = None
    ledger: ToolLedger | None = None

    @property
    def fixed_total(self) -> int:
        return sum(tokens for _, tokens in self.fixed)

    @property
    def used_total(self) -> int:
        return sum(part.used for part in self.slices)

    @property
    def window_tokens(self) -> int:
        """The tokens of the window itself (a tool round's first request)."""
        return self.first_tokens if self.first_tokens is not None else self.request_tokens

    @property
    def framing(self) -> int:
        """What the window's request costs beyond its slices: message framing and joins between parts."""
        return self.window_tokens - self.fixed_total - self.used_total

    @property
    def unused(self) -> int:
        return self.limit - self.request_tokens

    @property
    def framing_left(self) -> int:
        return self.overhead - self.framing

    @property
    def kept_total(self) -> int:
        return sum(part.kept for part in self.slices)

    @property
    def reclaimed_total(self) -> int:
        return sum(part.reclaimed for part in self.slices)

    @property
    def window_unused(self) -> int:
        """The first window's unused tokens, part by part: kept by slices, unallocated, the framing reserve's
        rest, less what the reclaim pass took back."""
        return self.kept_total + self.unallocated + self.framing_left - self.reclaimed_total

    @property
    def round_framing(self) -> int:
        """A tool round: what its later messages cost beyond the tool reserve's ledger (tool message framing,
        the tool_choice option); negative when the ledger charged more."""
        if self.ledger is None:
            return 0
        return self.request_tokens - self.window_tokens - self.ledger.used

    @property
    def balance(self) -> int:
        """0 when the parts add up to the unused tokens; else by how much they do not (an old manifest)."""
        parts = self.window_unused
        if self.ledger is not None:
            parts += self.ledger.left - self.round_framing
        return self.unused - parts

    @property
    def left_out(self) -> int:
        return sum(part.left_out for part in self.slices)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _ledger(manifest: Mapping[str, Any], allocation: Mapping[str, Any]) -> ToolLedger:
    rounds = allocation.get("tool_rounds") or {}
    results = tuple((str(m["ref"][1]), str(m.get("origin") or "").removeprefix("tool:"), _int(m.get("tokens")),
                     str(m.get("tier")))
                    for m in manifest.get("memories") or [] if m.get("slice") == TOOL_RESULTS and m.get("ref"))
    assistant = sum(count_tokens(render.serialize(turn["assistant"])) for turn in manifest.get("turns") or []
                    if isinstance(turn, Mapping) and isinstance(turn.get("assistant"), Mapping))
    return ToolLedger(reserve=_int((allocation.get("reserves") or {}).get("tools")),
                      per_result=_int(rounds.get("max_tool_result_tokens")), max_rounds=_int(rounds.get("max_rounds")),
                      results=results, assistant_tokens=assistant)


def account(inspection: Inspection) -> Account | None:
    """The window's budget, every token of it; None when the manifest records no allocation."""
    manifest = inspection.manifest
    allocation = manifest.get("allocation") or {}
    usable = _int(allocation.get("usable_context"))
    if not usable:
        return None
    reserves = tuple((name, _int(tokens)) for name, tokens in ordered(allocation.get("reserves"), RESERVE_ORDER))
    reserve = dict(reserves)
    window_limit = usable - reserve.get("output", 0) - reserve.get("tools", 0)
    raw = allocation.get("slices") or {}
    receivers = overflow_receivers(manifest, inspection.budget_row)
    left_out: dict[str, int] = {}
    for item in manifest.get("excluded") or []:
        if item.get("rule") in ROOM_RULES and item.get("slice"):
            left_out[str(item["slice"])] = left_out.get(str(item["slice"]), 0) + 1
    slices = []
    for name in overflow_order(manifest, inspection.budget_row):
        part = raw[name] or {}
        share, allowance = _int(part.get("share")), _int(part.get("allowance"))
        slices.append(SliceAccount(name=name, share=share, received=allowance - share,
                                   allowance=allowance, used=_int(part.get("used")),
                                   reclaimed=_int(part.get("reclaimed")), passed_on=_int(part.get("passed_on")),
                                   receiver=receivers.get(name), left_out=left_out.get(name, 0)))
    request_tokens = _int(manifest.get("request_tokens"))
    limit = _int(manifest.get("request_limit")) or window_limit
    first_tokens = ledger = None
    if manifest.get("round"):
        ledger = _ledger(manifest, allocation)
        first_tokens = window_limit - _int(allocation.get("unused"))
    instructions = allocation.get("memory_instructions")
    return Account(
        usable=usable, reserves=reserves, limit=limit, overhead=reserve.get("request_overhead", 0),
        before_fixed=_int(allocation.get("before_fixed")),
        fixed=tuple((name, _int(tokens)) for name, tokens in ordered(allocation.get("fixed"), REQUEST_LAYOUT)),
        instructions=_int(instructions) if instructions is not None else None,
        remainder=_int(allocation.get("remainder")), slices=tuple(slices),
        unallocated=_int(allocation.get("unallocated")), reclaim_unused=bool(allocation.get("reclaim_unused")),
        request_tokens=request_tokens, window_limit=window_limit, first_tokens=first_tokens, ledger=ledger)


def n(value: int) -> str:
    """A token figure as people read it: 3,600."""
    return f"{value:,}"


def unused_parts(acc: Account) -> list[tuple[str, int]]:
    """(what, tokens) that add up to the unused tokens, largest first, zeros left out."""
    parts = [(f"kept by {part.name} (" + ("the last slice of overflow_order: nothing to pass on to" if
                                          part.receiver is None else "not passed on") + ")", part.kept)
             for part in acc.slices if part.kept]
    parts.append(("unallocated (the shares sum below 1)", acc.unallocated))
    parts.append(("of the request-overhead reserve that framing did not take", acc.framing_left))
    if acc.reclaimed_total:
        parts.append(("taken back by the reclaim pass", -acc.reclaimed_total))
    if acc.ledger is not None:
        parts.append(("of the tool reserve not yet spent", acc.ledger.left))
        parts.append(("taken by tool-message framing (the tool ledger does not count it)", -acc.round_framing))
    return sorted(((what, tokens) for what, tokens in parts if tokens), key=lambda p: -p[1])


def unused_sentence(acc: Account) -> str:
    """Where the unused tokens stayed, in one sentence."""
    parts = unused_parts(acc)
    return "They stayed here: " + "; ".join(part_text(what, tokens) for what, tokens in parts) + "." if parts else \
        "Nothing went unused."


def part_text(what: str, tokens: int) -> str:
    """One part of the unused tokens in words: a part that took tokens away reads "less 25 taken by ..."."""
    return f"{n(tokens)} {what}" if tokens >= 0 else f"less {n(-tokens)} {what}"


def why_unused(acc: Account, needed: int) -> str:
    """Why unused tokens were not spent on what was left out for lack of room; `needed` is what the left-out
    candidates need at their smallest tier, together."""
    if not acc.left_out:
        return "Nothing was left out for lack of room: every candidate that came up found a seat."
    flow = f"Unused tokens pass forward along overflow_order ({' → '.join(p.name for p in acc.slices)}), never back"
    if acc.reclaim_unused:
        return (f"{flow}; reclaim_unused is on, so what the request left was offered again to the {acc.left_out} "
                f"left-out candidate(s) until none fitted what remained (together they need {n(needed)} tokens at "
                "their smallest tier).")
    return (f"{flow}; reclaim_unused is off in this budget, so the {acc.left_out} candidate(s) left out for lack of "
            f"room (together {n(needed)} tokens at their smallest tier) were not offered the unused tokens.")
