"""The terminal view of a manifest (and of a diff between two). Stored text is shown on one line, shortened,
with control characters made visible, so a hostile row cannot move the cursor or recolour the terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ctxasm.interfaces.inspector.diff import ManifestDiff
from ctxasm.services.inspection import (FIXED, RESERVE_ORDER, REQUEST_LAYOUT, Inspection, annotation_notes,
                                        exclusions_by_rule, ordered, overflow_order, overflow_receivers, ref_text,
                                        slices_in_request_order)

BAR_WIDTH = 72
EXCERPT = 110
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")


def safe_line(text: Any, limit: int | None = EXCERPT) -> str:
    """One terminal-safe line: white space folded, control characters shown as \\xNN, cut at `limit`."""
    line = _SPACE.sub(" ", _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))).strip()
    if limit is not None and len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def scores_text(scores: Mapping[str, Any] | None) -> str:
    if not scores:
        return "no scores (fixed slice)"
    parts = []
    if "priority" in scores:
        parts.append(f"priority {scores['priority']}")
    if "rerank" in scores:
        logit = f" (logit {scores['rerank_logit']})" if "rerank_logit" in scores else ""
        parts.append(f"rerank {scores['rerank']}{logit}")
    for name in ("confidence", "recency"):
        if name in scores:
            parts.append(f"{name} {scores[name]}")
    parts += [f"{k} {v}" for k, v in scores.items() if k not in {"priority", "rerank", "rerank_logit",
                                                                "confidence", "recency"}]
    return ", ".join(parts)


def _letters(names: list[str]) -> dict[str, str]:
    letters: dict[str, str] = {}
    for name in names:
        for char in name.upper() + "ABCDEFGHIJKLMNPQSTUWXYZ":
            if char.isalpha() and char not in letters.values() and char not in "O":
                letters[name] = char
                break
    return letters


def budget_bar(inspection: Inspection, width: int = BAR_WIDTH) -> list[str]:
    """The budget as a bar of characters: `o` reserves, `=` fixed slices, a letter per dynamic slice (capital for
    the tokens used, small for its unused share), `.` unallocated."""
    manifest = inspection.manifest
    allocation = manifest.get("allocation") or {}
    usable = allocation.get("usable_context") or 0
    if not usable:
        return ["budget: no allocation recorded"]
    reserves = ordered(allocation.get("reserves"), RESERVE_ORDER)
    fixed = ordered(allocation.get("fixed"), REQUEST_LAYOUT)
    raw = allocation.get("slices") or {}
    slices = [(name, raw[name] or {}) for name in overflow_order(manifest, inspection.budget_row)]
    letters = _letters([name for name, _ in slices])
    receivers = overflow_receivers(manifest, inspection.budget_row)

    def cells(tokens: float) -> int:
        return max(1, round(tokens / usable * width)) if tokens > 0 else 0

    bar = "o" * cells(sum(v for _, v in reserves)) + "=" * cells(sum(v for _, v in fixed))
    for name, part in slices:
        share = part.get("share") or 0
        used = min(part.get("used") or 0, share) if share else 0
        total = cells(share)
        full = min(total, round(used / share * total)) if share else 0
        bar += letters[name] * full + letters[name].lower() * (total - full)
    bar += "." * cells(allocation.get("unallocated") or 0)

    out = [f"budget: {usable} tokens of usable context",
           f"  [{bar}]",
           f"  o reserves {sum(v for _, v in reserves)}: " + ", ".join(f"{k} {v}" for k, v in reserves),
           f"  = fixed slices {sum(v for _, v in fixed)}: " + ", ".join(f"{k} {v}" for k, v in fixed),
           "    dynamic slices in overflow order; unused tokens pass to the next:"]
    for name, part in slices:
        passed = part.get("passed_on") or 0
        onward = f" -> {receivers[name]}" if receivers.get(name) else ""
        out.append(f"  {letters[name]} {name:<17} share {part.get('share', 0):>5}  allowance "
                   f"{part.get('allowance', 0):>5}  used {part.get('used', 0):>5}  passed on {passed:>5}{onward}")
    out.append(f"  . unallocated {allocation.get('unallocated', 0)}")
    tokens, limit = manifest.get("request_tokens"), manifest.get("request_limit")
    if tokens is not None and limit:
        filled = min(20, round(tokens / limit * 20))
        out.append(f"request: {tokens} of {limit} tokens [{'#' * filled}{'-' * (20 - filled)}] "
                   f"{tokens / limit:.0%}")
    return out


def _position_of(inspection: Inspection, ref: Any) -> str:
    memory = inspection.memory_at(ref)
    return f" (in this window at position {memory.get('position')})" if memory else " (not in this window)"


def describe_manifest(inspection: Inspection) -> str:
    manifest = inspection.manifest
    scope = manifest.get("scope") or {}
    out = [f"== manifest {inspection.manifest_id} (tenant {inspection.tenant_id}) ==",
           f"question: {safe_line(manifest.get('question'), None)}",
           f"intent {manifest.get('intent')}  model {manifest.get('model')}  user {scope.get('user_id')}  "
           f"agent {scope.get('agent_id')}  thread {scope.get('thread_id')}",
           f"evaluation time {manifest.get('evaluation_time')}  engine {manifest.get('mode')}",
           f"SCN / snapshot: {manifest.get('scn')}",
           f"request hash: {manifest.get('request_hash')}",
           f"versions: renderer {manifest.get('renderer_version')}, selection {manifest.get('selection_version')}, "
           f"tokenizer {manifest.get('tokenizer')}, scorer {manifest.get('scorer')}, code {manifest.get('code_hash')}",
           f"budget guideline: {ref_text(manifest.get('budget_ref'))}",
           "required current facts: " + (", ".join(ref_text(r) for r in manifest.get("required_refs") or [])
                                         or "none"),
           ""]
    out += budget_bar(inspection)
    out.append("")
    out.append("window, slice by slice in request order:")
    allocation = manifest.get("allocation") or {}
    for name, memories in slices_in_request_order(manifest):
        if name in FIXED:
            cost = (allocation.get("fixed") or {}).get(name)
            out.append(f"-- {name} (fixed slice, {cost if cost is not None else '?'} tokens) --")
        else:
            part = (allocation.get("slices") or {}).get(name) or {}
            out.append(f"-- {name} (used {part.get('used', '?')} of allowance {part.get('allowance', '?')}, "
                       f"share {part.get('share', '?')}) --")
        if name == "question":
            out.append(f"       {safe_line(manifest.get('question'))}")
        if not memories and name != "question":
            out.append("       (nothing)")
        for memory in memories:
            out.append(f"  {memory.get('position', '?'):>3}  {memory.get('id')}  {ref_text(memory.get('ref'))}")
            out.append(f"       {memory.get('status')} | tier {memory.get('tier')} | {memory.get('tokens')} tokens"
                       f" | {scores_text(memory.get('scores'))}")
            if memory.get("summary_ref"):
                out.append(f"       summary from {ref_text(memory['summary_ref'])}")
            text, what = inspection.seen_text(memory)
            out.append(f"       text: {safe_line(text)}" if text is not None else f"       text: ({what})")
            for note in annotation_notes(memory):
                source = ref_text(note.get("source"))
                if note.get("current"):
                    out.append(f"       annotation: cites {source}, no longer in effect; current fact "
                               f"{ref_text(note['current'])}{_position_of(inspection, note['current'])}")
                else:
                    out.append(f"       annotation: cites {source}, withdrawn (no current version)")
    out.append("")
    groups = exclusions_by_rule(manifest)
    out.append(f"excluded, by rule ({sum(len(items) for _, items in groups)}):")
    if not groups:
        out.append("  (nothing excluded)")
    for rule, items in groups:
        out.append(f"-- {rule} ({len(items)}) --")
        for item in items:
            why = [safe_line(item["detail"]) if item.get("detail") else ""]
            if item.get("kept"):
                why.append(f"kept {ref_text(item['kept'])}")
            if item.get("slice"):
                why.append(f"slice {item['slice']}")
            if item.get("tokens") is not None:
                why.append(f"smallest tier {item['tokens']} tokens")
            out.append(f"  {ref_text(item.get('ref'))}: " + "; ".join(w for w in why if w))
    for note in inspection.notes:
        out.append(f"note: {note}")
    return "\n".join(out)


def _value(value: Any) -> str:
    if isinstance(value, list) and len(value) == 3 and not isinstance(value[0], list):
        return ref_text(value)
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return safe_line(value, 80)


def describe_diff(diff: ManifestDiff) -> str:
    out = [f"== diff: {diff.old_id} -> {diff.new_id} ==",
           "request hash: " + ("equal" if diff.request_hash_equal
                               else f"differs ({diff.old_hash[:16]} -> {diff.new_hash[:16]})")]
    if diff.asked:
        out.append("asked / produced by:")
        out += [f"  {c.what}: {_value(c.old)} -> {_value(c.new)}" for c in diff.asked]
    out.append(f"memories added ({len(diff.added)}):")
    out += [f"  + {ref_text(m.get('ref'))}  {m.get('status')}, {m.get('tier')}, {m.get('tokens')} tokens, "
            f"slice {m.get('slice')}" for m in diff.added] or ["  (none)"]
    out.append(f"memories removed ({len(diff.removed)}):")
    out += [f"  - {ref_text(m.get('ref'))}  {m.get('status')}, {m.get('tier')}, {m.get('tokens')} tokens, "
            f"slice {m.get('slice')}" for m in diff.removed] or ["  (none)"]
    out.append(f"memories changed ({len(diff.changed)}):")
    out += [f"  ~ {ref_text(c.ref)}  " + "; ".join(f"{x.what} {x.old} -> {x.new}" for x in c.changes)
            for c in diff.changed] or ["  (none)"]
    if diff.versions:
        out.append("same row, other version:")
        out += [f"  {v.kind} / {v.row_id}: version {', '.join(map(str, v.old_versions))} -> "
                f"{', '.join(map(str, v.new_versions))}" for v in diff.versions]
    out.append(f"exclusions added ({len(diff.excluded_added)}):")
    out += [f"  + {e.get('rule')}: {ref_text(e.get('ref'))}" for e in diff.excluded_added] or ["  (none)"]
    out.append(f"exclusions removed ({len(diff.excluded_removed)}):")
    out += [f"  - {e.get('rule')}: {ref_text(e.get('ref'))}" for e in diff.excluded_removed] or ["  (none)"]
    out.append(f"allocation changes ({len(diff.allocation)}):")
    out += [f"  {c.what}: {c.old} -> {c.new}" for c in diff.allocation] or ["  (none)"]
    return "\n".join(out)
