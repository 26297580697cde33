"""The manifest of a composed window: every entry the request shows in position order, everything left out and
why (the selection's rules, then the fitter's), the allocation and each slice's figures. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.core import budget as budgets, render
from ctxasm.core.fitting import Candidate, Seated
from ctxasm.core.selection import CandidateRow, FixedRow, Selection
from ctxasm.core.tokens import count_tokens
from ctxasm.core.window_fit import RequestBuild, SliceState
from ctxasm.core.window_records import row_of

#: Exclusion rule of a memory given back because the complete request, framing and all, did not fit.
REQUEST_BUDGET = "request_budget"


def memory_entries(fixed: Sequence[FixedRow], tool_defs: Sequence[dict[str, Any]], built: RequestBuild,
                   ids: Mapping[str, str]) -> list[dict[str, Any]]:
    """The request's entries in position order: the fixed rows, the thread's turns, the records."""
    memories: list[dict[str, Any]] = []
    definitions = iter(tool_defs)
    for item in fixed:
        is_tool = item.slice == "tools"
        tokens = count_tokens(render.serialize(next(definitions)) if is_tool else render.json_text(item.content))
        memories.append({"id": ids[item.ref.key], "ref": item.ref.as_json(), "type": item.type,
                         "status": "tool" if is_tool else "policy", "slice": item.slice,
                         "tier": "full", "tokens": tokens, "origin": "query"})
    for seat in built.tail_seated:
        memories.append(_memory_entry(row_of(seat.candidate), ids, "full", seat.tokens))
    for seat in built.record_seats:
        memories.append(_memory_entry(row_of(seat.candidate), ids, seat.tier, seat.tokens, seat.degraded_by))
    for position, entry in enumerate(memories, start=1):
        entry["position"] = position
    return memories


def excluded_entries(selection: Selection, states: Mapping[str, SliceState],
                     trimmed: Sequence[tuple[Seated, int]]) -> list[Any]:
    """What the selection's rules left out, then what found no room in its slice, then what the complete
    request gave back."""
    return list(selection.excluded) + [
        {"ref": row_of(gone.candidate).ref.as_json(), "rule": gone.rule, "slice": gone.candidate.slice,
         "tokens": gone.smallest_tokens, "left": gone.left, **_standing(gone.candidate)}
        for name in budgets.DYNAMIC_SLICES for gone in states[name].excluded
    ] + [
        {"ref": row_of(seat.candidate).ref.as_json(), "rule": REQUEST_BUDGET, "slice": seat.candidate.slice,
         "tokens": seat.tokens, "over": over, **_standing(seat.candidate)}
        for seat, over in trimmed
    ]


def slice_report(states: Mapping[str, SliceState]) -> dict[str, dict[str, int]]:
    return {
        name: {"share": state.share, "allowance": state.allowance, "used": state.used,
               "passed_on": state.passed_on, "reclaimed": state.reclaimed}
        for name, state in states.items()
    }


def _standing(candidate: Candidate) -> dict[str, Any]:
    """Where a left-out candidate stood: its rank in its slice (selection order, 1 = best) and its priority."""
    row = row_of(candidate)
    standing: dict[str, Any] = {"rank": row.selection_rank}
    if row.priority is not None:
        standing["priority"] = row.priority
    return standing


def _memory_entry(row: CandidateRow, ids: Mapping[str, str], tier: str, tokens: int,
                  degraded_by: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": ids[row.ref.key], "ref": row.ref.as_json(), "type": row.type, "status": row.status,
        "slice": row.slice, "tier": tier, "tokens": tokens, "origin": "query", "scores": dict(row.scores),
    }
    if degraded_by:
        entry["tier_rule"] = degraded_by
    if row.annotations:
        entry["annotation_refs"] = [{"current": note.current.as_json() if note.current else None,
                                     "source": note.source.as_json()} for note in row.annotations]
    if tier == "summary" and row.summary_ref:
        entry["summary_ref"] = row.summary_ref.as_json()
        if row.summary_by:
            entry["summary_by"] = row.summary_by.as_json()
        if row.summary_written:
            entry["summary_written"] = True
    if row.generated_by:
        entry["generated_by"] = row.generated_by.as_json()
    return entry
