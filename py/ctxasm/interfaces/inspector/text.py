"""The terminal view of a manifest (and of a diff between two). Stored text is shown on one line, shortened,
with control characters made visible, so a hostile row cannot move the cursor or recolour the terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ctxasm.interfaces.inspector.accounting import RESERVE_NAMES, RESERVE_PURPOSE, account, n, unused_parts, \
    why_unused
from ctxasm.interfaces.inspector.diff import ManifestDiff, sentences
from ctxasm.interfaces.inspector.exclusions import cut_sentence, explain, needed_total, slice_summary
from ctxasm.interfaces.inspector.request_view import request_view
from ctxasm.api.inspection import FIXED, INSTRUCTIONS, TOOL_RESULTS, Inspection, annotation_notes, \
    exclusions_by_rule, overflow_order, ref_text, slices_in_request_order

BAR_WIDTH = 72
EXCERPT = 110
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")


def safe_line(text: Any, limit: int | None = EXCERPT) -> str:
    """One terminal-safe line: white space folded, control characters shown as \\xNN, cut at `limit`."""
    line = _SPACE.sub(" ", _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))).strip()
    if limit is not None and len(line) > limit:
        cut = line[: limit - 1]
        space = cut.rfind(" ")
        line = (cut[:space] if space >= limit * 3 // 4 else cut).rstrip() + "…"  # at a word boundary if near
    return line


def generator_text(generated_by: Mapping[str, Any]) -> str:
    """A summarizer's model and prompt version, as one phrase."""
    return f"{generated_by.get('model')} (prompt {generated_by.get('prompt_version')})"


def written_by(memory: Mapping[str, Any]) -> str:
    """What a summary-tier entry adds about its compression: who wrote it, and whether during this window."""
    by = memory.get("summary_by")
    text = f", written by {generator_text(by)}" if by else ""
    return text + (" during this window's assembly" if memory.get("summary_written") else "")


def scores_text(scores: Mapping[str, Any] | None) -> str:
    if not scores:
        return "no scores (fixed slice)"
    parts = []
    if "priority" in scores:
        parts.append(f"priority {scores['priority']}")
    if "rerank" in scores:
        neighbour = ", its thread neighbour's less the margin" if "adjacent_logit" in scores else ""
        logit = f" (logit {scores['rerank_logit']}{neighbour})" if "rerank_logit" in scores else ""
        parts.append(f"rerank {scores['rerank']}{logit}")
    for name in ("confidence", "recency"):
        if name in scores:
            parts.append(f"{name} {scores[name]}")
    parts += [f"{k} {v}" for k, v in scores.items() if k not in {"priority", "rerank", "rerank_logit",
                                                                "adjacent_logit", "confidence", "recency"}]
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
    """The budget as a bar and the arithmetic under it, every token accounted for: `o` reserves (output, tools),
    `=` fixed slices, a capital letter per dynamic slice for the tokens it used, `~` framing, `.` unused."""
    acc = account(inspection)
    if acc is None:
        return ["budget: no allocation recorded"]
    letters = _letters([part.name for part in acc.slices])
    held = sum(tokens for name, tokens in acc.reserves if name != "request_overhead")

    def cells(tokens: float) -> int:
        return max(1, round(tokens / acc.usable * width)) if tokens > 0 else 0

    bar = "o" * cells(held) + "=" * cells(acc.fixed_total)
    bar += "".join(letters[part.name] * cells(part.used) for part in acc.slices)
    bar += "~" * cells(max(0, acc.framing))
    bar += "." * max(0, width - len(bar))
    reserve = dict(acc.reserves)
    rounds = (inspection.manifest.get("allocation") or {}).get("tool_rounds") or {}

    def line(label: str, tokens: int, note: str = "") -> str:
        return f"  {label:<34}{n(tokens):>7}  {note}".rstrip()

    out = [f"budget: {acc.usable} tokens of usable context",
           f"  [{bar}]",
           "  o reserves (output, tools)  = fixed slices  " + "  ".join(f"{letters[p.name]} {p.name}"
                                                                      for p in acc.slices)
           + "  ~ framing  . unused",
           line("usable context", acc.usable)]
    for name in ("output", "tools"):
        if name in reserve:
            extra = f", shared by up to {rounds.get('max_rounds')} rounds" if name == "tools" and rounds else ""
            out.append(line(f"- {RESERVE_NAMES[name]}", reserve[name], RESERVE_PURPOSE[name] + extra))
    out.append(line("= request limit", acc.window_limit))
    out.append(line("- request-overhead reserve", acc.overhead, RESERVE_PURPOSE["request_overhead"]))
    out.append(line("= before the fixed slices", acc.before_fixed))
    for name, tokens in acc.fixed:
        out.append(line(f"- {name} (fixed)", tokens))
        if name == "guidelines" and acc.instructions:
            out.append(line("    of which memory instructions", acc.instructions,
                            "guideline rows keyed memory_instructions, charged to guidelines"))
    out.append(line("= remainder", acc.remainder, f"split by the {inspection.manifest.get('intent')} shares"))
    out.append("    dynamic slices in overflow order; unused tokens pass to the next:")
    for part in acc.slices:
        onward = f"passed on {n(part.passed_on)} -> {part.receiver}" if part.receiver else ""
        kept = (f"kept {n(part.kept)} unused" + (" (last: nothing to pass on to)" if part.receiver is None else "")
                if part.kept else "")
        extra = "; ".join(x for x in (onward, kept, f"reclaimed {n(part.reclaimed)}" if part.reclaimed else "",
                                      f"{part.left_out} left out" if part.left_out else "") if x)
        out.append(f"  {letters[part.name]} {part.name:<17} share {n(part.share):>6} + {n(part.received):>6} = "
                   f"allowance {n(part.allowance):>6}  used {n(part.used):>6}  {extra}".rstrip())
    if acc.unallocated:
        out.append(line("  unallocated", acc.unallocated, "the shares sum below 1"))
    out.append(line("request (first window)" if acc.ledger else "request as sent", acc.window_tokens,
                    f"= fixed {n(acc.fixed_total)} + slices {n(acc.used_total)} + framing {n(acc.framing)}"))
    if acc.ledger is not None:
        ledger = acc.ledger
        out.append(line("+ assistant turns (tool calls)", ledger.assistant_tokens, "charged to the tool reserve"))
        for record, tool, tokens, tier in ledger.results:
            out.append(line(f"+ tool result {tool}", tokens, f"{tier}, {record}"))
        out.append(line("+ tool-message framing", acc.round_framing))
        out.append(line("= this round's request", acc.request_tokens, f"limit {n(acc.limit)}"))
        out.append(line("tool reserve left", ledger.left, f"{n(ledger.used)} of {n(ledger.reserve)} used, at most "
                                                          f"{n(ledger.per_result)} per result"))
    out.append(line("unused", acc.unused, f"of the {n(acc.limit)}-token request limit"))
    out += [f"    {n(tokens):>7} {what}" for what, tokens in unused_parts(acc)]
    if acc.balance:
        out.append(f"    (the parts differ from the total by {acc.balance}: this manifest predates them)")
    out.append("  why: " + why_unused(acc, needed_total(inspection)))
    filled = min(20, round(acc.request_tokens / acc.limit * 20)) if acc.limit else 0
    out.append(f"request: {acc.request_tokens} of {acc.limit} tokens [{'#' * filled}{'-' * (20 - filled)}] "
               f"{acc.request_tokens / acc.limit:.0%}" if acc.limit else "request: no limit recorded")
    return out


def _position_of(inspection: Inspection, ref: Any) -> str:
    memory = inspection.memory_at(ref)
    return f" (in this window at position {memory.get('position')})" if memory else " (not in this window)"


def describe_manifest(inspection: Inspection) -> str:
    manifest = inspection.manifest
    scope = manifest.get("scope") or {}
    view = request_view(inspection)
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
                                         or "none")]
    if manifest.get("round"):
        out.append(f"tool round {manifest.get('round')} of window {manifest.get('first_manifest_id')}")
    out.append(f"literal request: {safe_line(inspection.request_note, None)}"
               + (" (`--request` prints it)" if view is not None else ""))
    out.append("")
    out += budget_bar(inspection)
    summaries = [summary for name in overflow_order(manifest, inspection.budget_row)
                 if (summary := slice_summary(inspection, name))]
    if summaries:
        out.append("")
        out.append("left out, in short:")
        for summary in summaries:
            out.append(f"  {safe_line(summary.head, None)}")
            out += [f"    - {safe_line(line, None)}" for line in summary.lines]
    out.append("")
    out.append("window, slice by slice in request order:")
    allocation = manifest.get("allocation") or {}
    for name, memories in slices_in_request_order(manifest, inspection.rows):
        if name == INSTRUCTIONS:
            out.append(f"-- {name} (guideline rows, {allocation.get('memory_instructions', '?')} tokens charged to "
                       "guidelines) --")
        elif name in FIXED:
            cost = (allocation.get("fixed") or {}).get(name)
            extra = (f", of which memory instructions {allocation['memory_instructions']}"
                     if name == "guidelines" and allocation.get("memory_instructions") else "")
            out.append(f"-- {name} (fixed slice, {cost if cost is not None else '?'} tokens{extra}) --")
        elif name == TOOL_RESULTS:
            used = sum(int(m.get("tokens") or 0) for m in memories)
            out.append(f"-- {name} ({len(memories)} result(s), {used} tokens, paid from the tool reserve of "
                       f"{(allocation.get('reserves') or {}).get('tools', '?')}) --")
        else:
            part = (allocation.get("slices") or {}).get(name) or {}
            out.append(f"-- {name} (used {part.get('used', '?')} of allowance {part.get('allowance', '?')}, "
                       f"share {part.get('share', '?')}) --")
        if name == "question":
            out.append(f"       {safe_line(manifest.get('question'))}")
        if not memories and name != "question":
            out.append("       (nothing)")
        for memory in memories:
            tier = f"tier {memory.get('tier')}" + (f" ({memory['tier_rule']})" if memory.get("tier_rule") else "")
            out.append(f"  {memory.get('position', '?'):>3}  {memory.get('id')}  {ref_text(memory.get('ref'))}")
            out.append(f"       {memory.get('status')} | {tier} | {memory.get('tokens')} tokens"
                       f" | {scores_text(memory.get('scores'))}")
            if memory.get("summary_ref"):
                out.append(f"       summary from {ref_text(memory['summary_ref'])}{written_by(memory)}")
            elif memory.get("generated_by"):
                out.append(f"       written by {generator_text(memory['generated_by'])}")
            seen = view.seen.get(str(memory.get("id"))) if view is not None else None
            if seen is not None:
                out.append(f"       seen: {safe_line(seen, None)}")  # what the model saw, never shortened
            else:
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
        for item in sorted(items, key=lambda x: (str(x.get("slice") or ""), x.get("rank") or 0)):
            erased = " [erased]" if inspection.state(item.get("ref")) == "erased" else ""
            out.append(f"  {ref_text(item.get('ref'))}{erased}: {safe_line(explain(item, inspection), None)}")
    for cut in manifest.get("candidate_cuts") or []:
        out.append(f"-- candidate_limit (before fitting) --\n  {cut.get('slice')}: {safe_line(cut_sentence(cut), None)}")
    for remark in inspection.notes:
        out.append(f"note: {remark}")
    return "\n".join(out)


def describe_request(inspection: Inspection) -> str:
    """The literal request, message by message (terminal-safe: control characters shown, lines kept)."""
    view = request_view(inspection)
    if view is None:
        return f"== request of {inspection.manifest_id} ==\n{inspection.request_note}"
    out = [f"== request of {inspection.manifest_id}: {view.model}, {view.tokens} tokens, hash "
           f"{inspection.manifest.get('request_hash')} ==", f"({inspection.request_note})"]
    for message in view.messages:
        answers = f", answers {message.answers}" if message.answers else ""
        out.append(f"--- messages[{message.index}] {message.role} ({message.tokens} tokens{answers}) ---")
        text = "".join(piece.text for piece in message.pieces)
        out += [safe_line(line, None) if line.strip() else "" for line in text.split("\n")]
        for call in message.calls:
            function = call.get("function") or {}
            out.append(f"tool call {call.get('id')}: {function.get('name')}({safe_line(function.get('arguments'))})")
    for tool in view.tools:
        out.append(f"--- tool {tool.name} ({tool.tokens} tokens) ---")
        out += [safe_line(line, None) for line in tool.json.split("\n")]
    options = ", ".join(f"{k} {v}" for k, v in view.options.items())
    out.append(f"--- options: {options} ---")
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
    said = sentences(diff)
    out.append("what changed:")
    out += [f"  {safe_line(sentence, None)}" for sentence in said] or ["  nothing in the windows"]
    out.append("the raw differences:")
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
