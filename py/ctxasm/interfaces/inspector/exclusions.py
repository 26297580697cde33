"""Why a row was left out, in words: per exclusion, per slice in short, and for one row asked about. Pure.

Each exclusion explains itself from what the manifest recorded: the fitter's rules with the candidate's rank and
priority and the tokens it needed against the tokens its slice had left when it came up; the cuts of the
candidate limit with their threshold; the copy a dedup kept and the winner of a conflict; "erased" for a row
erased since the window was assembled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.core import render
from ctxasm.api import inspection as budgets  # the budget rules the inspector explains exclusions by
from ctxasm.api.inspection import Inspection, RefKey, ref_key, ref_text

LIFECYCLE = {"superseded": "superseded by a later version", "deleted": "deleted", "expired": "expired (valid_until "
             "passed)", "not_yet_effective": "not yet in effect (valid_from in the future)",
             "erased": "erased"}


def _where(inspection: Inspection, ref: Any) -> str:
    memory = inspection.memory_at(ref)
    if memory is not None:
        return f"in the window at position {memory.get('position')} ({memory.get('slice')}, {memory.get('tier')})"
    for item in inspection.manifest.get("excluded") or []:
        if ref_key(item.get("ref")) == ref_key(ref):
            return f"itself excluded by {item.get('rule')}"
    return "not in this window"


def _standing(item: Mapping[str, Any], inspection: Inspection) -> str:
    parts = []
    if item.get("rank") is not None:
        total = candidates_in(inspection, str(item.get("slice")))
        parts.append(f"rank {item['rank']}" + (f" of {total}" if total else ""))
    if item.get("priority") is not None:
        parts.append(f"priority {item['priority']}")
    return ", ".join(parts)


def candidates_in(inspection: Inspection, slice_name: str) -> int:
    """The candidates a slice fitted: those seated and those the fitter left out."""
    memories = sum(1 for m in inspection.manifest.get("memories") or [] if m.get("slice") == slice_name)
    left = sum(1 for x in inspection.manifest.get("excluded") or [] if x.get("slice") == slice_name
               and x.get("rule") in ("slice_budget", "tier_limit", "request_budget"))
    return memories + left


def explain(item: Mapping[str, Any], inspection: Inspection) -> str:
    """One exclusion in words."""
    rule = str(item.get("rule"))
    ref = item.get("ref")
    state = inspection.state(ref)
    erased = " It has been erased since." if state == "erased" else ""
    standing = _standing(item, inspection)
    standing = f" ({standing})" if standing else ""
    if rule == "lifecycle":
        detail = str(item.get("detail") or "")
        words = LIFECYCLE.get(detail, detail or "not in effect")
        current = [m for m in inspection.manifest.get("memories") or []
                   if (m.get("ref") or [None])[:2] == list(ref or [None, None])[:2] and ref_key(m.get("ref")) != ref_key(ref)]
        also = f"; version {current[0]['ref'][2]} is in the window at position {current[0].get('position')}" \
            if current else ""
        return f"{words} at the evaluation time{also}.{erased}"
    if rule == "dedup":
        kept = item.get("kept")
        return (f"the same text (case and white space folded) as {ref_text(kept)}, the more authoritative copy, "
                f"which was kept: {_where(inspection, kept)}.{erased}")
    if rule == "conflict":
        if item.get("kept"):
            return (f"the same claim as {ref_text(item['kept'])}, which wins ({_claim_winner(inspection, ref, item['kept'])}): "
                    f"{_where(inspection, item['kept'])}.{erased}")
        return f"{_fixed_conflict(inspection, ref) or item.get('detail') or 'a conflicting row wins'}.{erased}"
    if rule == "slice_budget":
        left = item.get("left")
        at = f"; {item['slice']} had {left} left when it came up" if left is not None else ""
        return (f"needed {item.get('tokens')} tokens at its smallest tier{at}{standing}.{erased}")
    if rule == "tier_limit":
        caps = (inspection.budget.get("tier_limits") or {}).get(str(item.get("slice"))) or {}
        cap = ", ".join(f"{tier} {count}" for tier, count in caps.items()) or "the budget's tier_limits"
        return (f"every tier it has was already taken up to its cap ({cap}) in {item.get('slice')}{standing}."
                f"{erased}")
    if rule == "request_budget":
        over = item.get("over")
        why = f"the complete request was {over} tokens over its limit" if over is not None else \
            "the complete request did not fit its limit"
        return (f"given back after seating ({item.get('tokens')} tokens): {why}, and the lowest-priority optional "
                f"memories go first{standing}.{erased}")
    detail = item.get("detail") or (f"kept {ref_text(item['kept'])}" if item.get("kept") else "")
    return f"{detail}.{erased}" if detail else f"excluded by {rule}.{erased}"


_KEYS = {"guideline": "guideline_key", "persona": "persona_key", "toolbox": "tool_name"}


def _scope_words(loser: Mapping[str, Any], winner: Mapping[str, Any]) -> str:
    """Why the winner of two rows of one key or claim wins on scope and time, as the selection step decides."""
    if budgets.scope_level(winner) > budgets.scope_level(loser):
        return f"the narrower scope wins: {budgets.scope_of(winner)} over {budgets.scope_of(loser)}"
    if budgets.scope_level(winner) == budgets.scope_level(loser):
        return (f"both are {budgets.scope_of(winner)}: the later valid_from wins ({winner.get('valid_from')} over "
                f"{loser.get('valid_from')}), then the row id")
    return "it ranks first"


def _claim_winner(inspection: Inspection, ref: Any, kept: Any) -> str:
    loser, winner = inspection.row(ref), inspection.row(kept)
    if not loser or not winner:
        return "a canonical fact beats a derived claim, then the narrower scope wins"
    if (kept or [None])[0] == "entity" and (ref or [None])[0] != "entity":
        return "a canonical fact beats a derived claim"
    return _scope_words(loser, winner)


def _fixed_conflict(inspection: Inspection, ref: Any) -> str | None:
    """A guideline, persona or tool left out because another row of its key is in the window: which one, and why
    it wins (narrower scope, else the later valid_from), from the rows as they were."""
    loser = inspection.row(ref)
    kind = (ref or [None])[0]
    column = _KEYS.get(str(kind))
    if not loser or not column:
        return None
    for memory in inspection.manifest.get("memories") or []:
        winner = inspection.row(memory.get("ref"))
        if memory.get("ref", [None])[0] == kind and winner and winner.get(column) == loser.get(column):
            return (f"{ref_text(memory['ref'])}, of the same {column} {loser.get(column)}, is in effect "
                    f"instead ({_scope_words(loser, winner)}): {_where(inspection, memory['ref'])}")
    return None


@dataclass(frozen=True)
class Run:
    """Consecutive left-out candidates of one slice that came up with the same tokens left."""

    slice: str
    rule: str
    left: int | None
    items: tuple[Mapping[str, Any], ...]

    @property
    def ranks(self) -> str:
        ranks = [item["rank"] for item in self.items if item.get("rank") is not None]
        if not ranks:
            return ""
        return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {min(ranks)}–{max(ranks)}"

    @property
    def needed(self) -> str:
        tokens = [int(item["tokens"]) for item in self.items if item.get("tokens") is not None]
        if not tokens:
            return "?"
        return str(tokens[0]) if min(tokens) == max(tokens) else f"{min(tokens)}–{max(tokens)}"


def runs(inspection: Inspection, slice_name: str) -> list[Run]:
    """A slice's candidates left out for lack of room, in rank order, grouped by what was left."""
    items = sorted((x for x in inspection.manifest.get("excluded") or [] if x.get("slice") == slice_name
                    and x.get("rule") in ("slice_budget", "tier_limit", "request_budget")),
                   key=lambda x: (x.get("rank") is None, x.get("rank") or 0))
    found: list[Run] = []
    for item in items:
        left = item.get("left") if item.get("rule") == "slice_budget" else None
        if found and found[-1].rule == item.get("rule") and found[-1].left == left:
            found[-1] = Run(slice_name, found[-1].rule, left, found[-1].items + (item,))
        else:
            found.append(Run(slice_name, str(item.get("rule")), left, (item,)))
    return found


def run_sentence(run: Run) -> str:
    count = len(run.items)
    who = f"{run.ranks} ({count})" if run.ranks else f"{count} candidate(s)"
    if run.rule == "slice_budget":
        left = f"came up with {run.left} tokens left" if run.left is not None else "came up"
        return f"{who} {left} and needed {run.needed}"
    if run.rule == "tier_limit":
        return f"{who}: every tier they have was capped by tier_limits"
    return f"{who} were given back when the complete request did not fit"


def cut_sentence(cut: Mapping[str, Any]) -> str:
    """A candidate_cuts entry in words: rows the limit step cut before fitting."""
    return (f"{cut.get('rows')} more were cut before fitting by the candidate limit of {cut.get('limit')} "
            f"(all below priority {cut.get('below_priority')})")


@dataclass(frozen=True)
class SliceSummary:
    """Why one slice left candidates out: a head sentence, one line per run of left-out candidates, one per cut."""

    slice: str
    head: str
    lines: tuple[str, ...]

    def text(self) -> str:
        return " ".join((self.head, *(line[0].upper() + line[1:] + "." for line in self.lines)))


def slice_summary(inspection: Inspection, slice_name: str) -> SliceSummary | None:
    """Why a slice left candidates out, or None when it left none out."""
    allocation = ((inspection.manifest.get("allocation") or {}).get("slices") or {}).get(slice_name) or {}
    seated = sum(1 for m in inspection.manifest.get("memories") or [] if m.get("slice") == slice_name)
    found = runs(inspection, slice_name)
    cuts = [cut for cut in inspection.manifest.get("candidate_cuts") or [] if cut.get("slice") == slice_name]
    if not found and not cuts:
        return None
    left_out = sum(len(run.items) for run in found)
    share, allowance = allocation.get("share") or 0, allocation.get("allowance") or 0
    received = f"{allowance - share} passed on to it" if allowance != share else "nothing passed on to it"
    head = (f"{slice_name}: {left_out} of {seated + left_out} candidates left out for lack of room. It had "
            f"{allowance} tokens (share {share}, {received}), used {allocation.get('used', '?')} and seated {seated}."
            if found else f"{slice_name}: every candidate that came up was seated ({seated}).")
    lines = [run_sentence(run) for run in found] + [cut_sentence(cut) for cut in cuts]
    return SliceSummary(slice_name, head, tuple(lines))


def needed_total(inspection: Inspection) -> int:
    """What the candidates left out for lack of room need together at their smallest tier."""
    return sum(int(x.get("tokens") or 0) for x in inspection.manifest.get("excluded") or []
               if x.get("rule") in ("slice_budget", "tier_limit"))


# -- one row asked about ----------------------------------------------------------------------------------------


def parse_query(query: str) -> tuple[str | None, str | None, int | None, str | None]:
    """`entity:fact_x`, `entity:fact_x:2`, `entity/fact_x/2` or a citation id (`M17`, a window's, or a row
    version's stable `M012345678901`):
    (type, row id, version or None, citation id or None)."""
    text = query.strip()
    if text[:1] == "M" and text[1:].isdigit():
        return None, None, None, text
    for separator in (":", "/"):
        if separator in text:
            parts = [part.strip() for part in text.split(separator)]
            if len(parts) == 3 and parts[2].lstrip("v").isdigit():
                return parts[0], parts[1], int(parts[2].lstrip("v")), None
            if len(parts) == 2:
                return parts[0], parts[1], None, None
            # a row id may hold the separator: the type is the first part, the version the last if numeric
            if parts[-1].lstrip("v").isdigit():
                return parts[0], separator.join(parts[1:-1]), int(parts[-1].lstrip("v")), None
            return parts[0], separator.join(parts[1:]), None, None
    return None, text, None, None


def _refs_named(manifest: Mapping[str, Any]) -> list[RefKey]:
    found: list[RefKey | None] = []
    for memory in manifest.get("memories") or []:
        found.append(ref_key(memory.get("ref")))
    for memory in manifest.get("memories") or []:  # the compressions shown as summary tiers
        found.append(ref_key(memory.get("summary_ref")))
    for item in manifest.get("excluded") or []:
        found.append(ref_key(item.get("ref")))
    for item in (manifest.get("retrieval") or {}).get("items") or []:
        found.append(ref_key(item.get("ref")) or ref_key([item.get("type"), item.get("id"), item.get("version")]))
    return [key for key in dict.fromkeys(found) if key]


def _source(manifest: Mapping[str, Any], key: RefKey) -> Mapping[str, Any] | None:
    for item in (manifest.get("retrieval") or {}).get("items") or []:
        if (ref_key(item.get("ref")) or ref_key([item.get("type"), item.get("id"), item.get("version")])) == key:
            return item
    return None


def _source_text(item: Mapping[str, Any]) -> str:
    figures = [f"origin {item.get('origin')}"]
    if item.get("next_to") is not None:
        figures.append(f"next to {item['next_to']} in its thread")
    for name in ("lexical_rank", "vector_rank", "logit", "adjacent_logit", "bm25", "similarity"):
        if item.get(name) is not None:
            figures.append(f"{name.replace('_', ' ')} {item[name]}")
    return ", ".join(figures)


def why_not(inspection: Inspection, query: str, rows_then: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """Answer "why not X?" (or "where is X?") for one row of the tenant, from the manifest and its rows.
    `rows_then` are the rows of X's type as of the window's snapshot, for a row the window does not name."""
    manifest = inspection.manifest
    kind, row_id, version, cid = parse_query(query)
    named = _refs_named(manifest)
    if cid is not None:
        keys = [key for key in named if cid in (inspection.cited_as(key), render.memory_id(key))]
        if not keys:
            return [f"{cid}: no row version this window names has that citation id (a citation id stands for one "
                    "row version)."]
    else:
        keys = [key for key in named if (kind is None or key[0] == kind) and key[1] == row_id
                and (version is None or key[2] == version)]
    if not keys:
        # Another version of the row may be in the window: say which, and answer for it.
        others = sorted(key for key in named if (kind is None or key[0] == kind) and key[1] == row_id)
        if version is not None and others:
            return ([f"{query.strip()}: this window names no version {version} of it, only "
                     + ", ".join(ref_text(key) for key in others) + "."]
                    + [line for key in others for line in why_not(inspection, f"{key[0]}:{key[1]}:{key[2]}",
                                                                  rows_then)])
        return _not_named(inspection, query.strip(), row_id, rows_then)
    out = []
    for key in sorted(keys, key=lambda k: (k[0], k[1], k[2])):
        memory = inspection.memory_at(key)
        head = f"{ref_text(key)} ({inspection.cited_as(key)})"
        summarized = next((m for m in inspection.manifest.get("memories") or []
                           if ref_key(m.get("summary_ref")) == key), None)
        if memory is None and summarized is not None:
            out.append(f"{ref_text(key)}: the stored compression shown as the summary tier of "
                       f"{ref_text(summarized.get('ref'))} ({summarized.get('id')}), at position "
                       f"{summarized.get('position')}, {summarized.get('tokens')} tokens.")
            continue
        if memory is not None:
            why = f", below full because of {memory['tier_rule']}" if memory.get("tier_rule") else ""
            priority = (memory.get("scores") or {}).get("priority")
            score = f", priority {priority}" if priority is not None else ""
            out.append(f"{head}: in the window at position {memory.get('position')}, slice {memory.get('slice')}, "
                       f"tier {memory.get('tier')}{why}, {memory.get('tokens')} tokens{score}.")
            continue
        exclusions = [x for x in manifest.get("excluded") or [] if ref_key(x.get("ref")) == key]
        for item in exclusions:
            out.append(f"{head}: excluded by {item.get('rule')}: {explain(item, inspection)}")
        if exclusions:
            continue
        source = _source(manifest, key)
        cuts = [c for c in manifest.get("candidate_cuts") or [] if source and c.get("slice") == source.get("slice")]
        if source is not None and cuts:
            out.append(f"{head}: a source of this window ({_source_text(source)}), but not among the "
                       f"{cuts[0].get('limit')} candidates {cuts[0].get('slice')} kept after scoring: "
                       f"{cut_sentence(cuts[0])}.")
        elif source is not None:
            out.append(f"{head}: a source of this window ({_source_text(source)}), "
                       + _unrendered_source(inspection, key, rows_then))
    return out


def _window_scope(manifest: Mapping[str, Any]) -> budgets.Scope:
    scope = manifest.get("scope") or {}
    return budgets.Scope(scope.get("user_id"), scope.get("agent_id"), scope.get("thread_id"))


def budget_standing(inspection: Inspection, row: Mapping[str, Any], rows_then: Sequence[Mapping[str, Any]]) -> str:
    """Why a budget row is or is not this window's budget, from the rows as they were (the budget step's
    conditions in its order: lifecycle at the evaluation time, scope, then the narrowest and latest wins)."""
    manifest = inspection.manifest
    chosen_key = ref_key(manifest.get("budget_ref"))
    chosen = inspection.budget_row or next(
        (r for r in rows_then if chosen_key and (str(r.get("id")), int(r.get("version") or 0)) == chosen_key[1:]),
        None) or ({"id": chosen_key[1], "version": chosen_key[2]} if chosen_key else None)
    return budgets.standing(row, chosen, _window_scope(manifest), manifest.get("evaluation_time"))


def _unrendered_source(inspection: Inspection, key: tuple, rows_then: Sequence[Mapping[str, Any]]) -> str:
    """Why a source the window read is neither in it nor excluded by a rule: a budget guideline is read, not
    rendered (and only the one the budget step picked counts); a tool's memory instruction waits for its tool;
    anything else was out of the window's scope or not in effect, as its row shows."""
    if ref_key(inspection.manifest.get("budget_ref")) == key:
        return "read as the budget guideline: it sets the allocation and is not rendered into the request."
    row = inspection.row(key) or next((r for r in rows_then if str(r.get("id")) == key[1]
                                       and int(r.get("version") or 0) == key[2]), None) or {}
    if budgets.is_budget(row):
        return "a context budget guideline, not this window's: " + budget_standing(inspection, row, rows_then)
    guideline_key = str(row.get("guideline_key") or "")
    if guideline_key.startswith(render.TOOL_INSTRUCTION_PREFIX):
        handler = guideline_key[len(render.TOOL_INSTRUCTION_PREFIX):]
        return (f"a tool's memory instruction ({guideline_key}): rendered only when a tool with handler {handler} "
                "is in the window, and none was.")
    if not row:
        return "left out before fitting; its row is not readable here to say why."
    scope = _window_scope(inspection.manifest)
    for name in budgets.SCOPE_FIELDS:
        if row.get(name) is not None and row.get(name) != getattr(scope, name):
            return (f"left out before fitting by the scope step: it is for {name.removesuffix('_id')} {row[name]}, "
                    f"and this window is for {scope.text()}.")
    return "left out before fitting: it is in this window's scope, and no rule recorded why."


def _not_named(inspection: Inspection, label: str, row_id: str | None,
               rows_then: Sequence[Mapping[str, Any]]) -> list[str]:
    retrieval = inspection.manifest.get("retrieval") or {}
    out = [f"{label}: not named by this window: it is none of its {len(retrieval.get('items') or [])} sources, "
           "its memories or its exclusions."]
    versions = sorted((row for row in rows_then if str(row.get("id")) == str(row_id)),
                      key=lambda row: int(row.get("version") or 0))
    if not versions:
        out.append("No version of it was readable at the window's snapshot: it did not exist yet, was erased, or is "
                   "not this tenant's.")
        return out
    out.append("At the snapshot it had " + ", ".join(f"version {row.get('version')} ({row.get('status')})"
                                                     for row in versions) + ".")
    key = str(versions[-1].get("guideline_key") or "")
    if budgets.is_budget(versions[-1]):
        out += [f"Version {row.get('version')} is a context budget guideline, not this window's: "
                + budget_standing(inspection, row, rows_then) for row in versions]
    elif key.startswith(render.TOOL_INSTRUCTION_PREFIX):
        handler = key[len(render.TOOL_INSTRUCTION_PREFIX):]
        out.append(f"It is a tool's memory instruction: rendered only when a tool with handler {handler} is in the "
                   "window, and none was.")
    elif retrieval.get("depth"):
        out.append(f"Retrieval ({retrieval.get('method')}, depth {retrieval.get('depth')} per retriever) did not rank "
                   "it among the best matches of the question, and it is not enumerated by scope (guidelines, "
                   "persona, tools, the thread's latest turns, the durable facts of a small scope) nor cited by "
                   "recalled history; a row out of the window's scope (another user, agent or thread) is never a "
                   "source.")
    return out
