"""Compression during assembly, the pure part: which candidates to ask a summary for, and a selection with the
compressions written for it. No model call and no database here (ctxasm.services.compress does those).

A candidate is worth compressing when the composed window had to show it below the summary tier for lack of
room (a pointer, or left out), it has no summary tier (no compression, or only a stale one: the database
refuses a compression whose source hash no longer matches the row), and its text is longer than a summary may
be. Required facts are seated in full or not at all, and recalled turns are shown whole or as a pointer line,
so neither is compressed. The best-ranked go first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ctxasm.core.fitting import SLICE_BUDGET
from ctxasm.core.refs import Ref
from ctxasm.core.selection import Authorship, CandidateRow, Selection
from ctxasm.core.tokens import count_tokens

#: the slices whose records have a summary tier
COMPRESSIBLE_SLICES = ("durable_facts", "evidence", "recalled_history")
#: exclusion rules that mean "no room": the slice's budget, or the complete request's
NO_ROOM = (SLICE_BUDGET, "request_budget")


@dataclass(frozen=True)
class Target:
    """A candidate to compress: its row reference, its full text, that text's token count, and when the row
    version took effect (its compression is in effect from then: a window evaluated at any time that version was
    in effect may show it)."""

    ref: Ref
    text: str
    tokens: int
    valid_from: str | None = None


@dataclass(frozen=True)
class Stored:
    """A compression as stored: what the selection needs to show it at the summary tier."""

    ref: Ref
    content: str
    content_tokens: int
    model: str
    prompt_version: str


def _short_of_room(manifest: Mapping[str, Any]) -> set[str]:
    """The refs the window showed as a pointer, or left out, for lack of room."""
    keys = {Ref.of(m["ref"]).key for m in manifest.get("memories", ())
            if m.get("tier") == "pointer" and m.get("tier_rule") == SLICE_BUDGET}
    keys |= {Ref.of(x["ref"]).key for x in manifest.get("excluded", ()) if x.get("rule") in NO_ROOM}
    return keys


def targets(selection: Selection, manifest: Mapping[str, Any], summary_tokens: int) -> list[Target]:
    """The candidates of `selection` that the window composed from it (`manifest`) would seat better as a
    summary and that have none, best priority first."""
    wanted = _short_of_room(manifest)
    found: list[tuple[float, int, Target]] = []
    for candidate in selection.candidates:
        if (candidate.ref.key not in wanted or candidate.slice not in COMPRESSIBLE_SLICES or candidate.required
                or candidate.type == "conversation" or candidate.tiers.summary is not None):
            continue
        text = candidate.tiers.full
        tokens = candidate.content_tokens
        tokens = tokens if isinstance(tokens, int) else count_tokens(text)
        if tokens <= summary_tokens:
            continue
        priority = candidate.priority or 0
        found.append((-float(priority), int(candidate.selection_rank or 0), Target(candidate.ref, text, tokens,
                                                                                   candidate.valid_from)))
    found.sort(key=lambda item: (item[0], item[1], item[2].ref.key))
    return [target for _, _, target in found]


def with_compressions(selection: Selection, stored: Mapping[str, Stored]) -> Selection:
    """`selection` whose candidates (by "type:id:version") have the stored compressions as their summary tier,
    named (summary_ref, summary_by) and marked as written during this window (summary_written)."""
    return replace(selection, candidates=tuple(_compressed(candidate, stored.get(candidate.ref.key))
                                               for candidate in selection.candidates))


def _compressed(candidate: CandidateRow, compression: Stored | None) -> CandidateRow:
    if compression is None:
        return candidate
    return replace(candidate, tiers=replace(candidate.tiers, summary=compression.content),
                   summary_ref=compression.ref, summary_tokens=compression.content_tokens,
                   summary_by=Authorship(compression.model, compression.prompt_version), summary_written=True)


def written_refs(manifest: Mapping[str, Any]) -> list[tuple[Ref, Ref]]:
    """(source, compression) of every compression the window wrote during its assembly."""
    report = manifest.get("compression") or {}
    return [(Ref.of(item["ref"]), Ref.of(item["summary_ref"])) for item in report.get("written", ())]


def report(summarizer: str, asked: Iterable[Target], written: Mapping[str, Stored],
           failed: Iterable[tuple[Ref, str]], skipped: Iterable[tuple[Ref, str]], tokens: int,
           elapsed_ms: int) -> dict[str, Any]:
    """The manifest's `compression` record: what was asked of which summarizer, what it cost, what came of it."""
    return {
        "summarizer": summarizer,
        "asked": len(list(asked)),
        "written": [{"ref": Ref.of(key).as_json(), "summary_ref": item.ref.as_json()}
                    for key, item in written.items()],
        "failed": [{"ref": ref.as_json(), "problem": problem[:300]} for ref, problem in failed],
        "skipped": [{"ref": ref.as_json(), "reason": reason} for ref, reason in skipped],
        "tokens": tokens,
        "elapsed_ms": elapsed_ms,
    }
