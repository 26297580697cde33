"""The inspector page: one self-contained HTML file for one manifest (and optionally its diff with another).

Self-contained means: inline CSS, system fonts, no scripts, no images, nothing fetched; a Content-Security-Policy
of `default-src 'none'` says so to the browser too. Every piece of text that comes from the database (row text,
the question, the request, details, ids) goes through `_e` (html.escape with quotes); anchors are derived from
citation ids (decimal digests), never from stored text.

Above the fold: the budget with every token accounted for (how many went unused, and where they stayed) and,
per slice, why candidates were left out. Then the literal request message by message, the window slice by
slice, every exclusion with its reason, and the source rows (folded).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm import __version__
from ctxasm.interfaces.inspector.accounting import RESERVE_NAMES, RESERVE_PURPOSE, Account, account, n, part_text, \
    unused_parts, unused_sentence, why_unused
from ctxasm.interfaces.inspector.diff import ManifestDiff, sentences
from ctxasm.interfaces.inspector.exclusions import candidates_in, cut_sentence, explain, needed_total, slice_summary
from ctxasm.interfaces.inspector.request_view import RequestView, request_view
from ctxasm.interfaces.inspector.text import generator_text, scores_text, written_by
from ctxasm.api.inspection import FIXED, INSTRUCTIONS, TOOL_RESULTS, Inspection, annotation_notes, citation_id, \
    exclusions_by_rule, ref_key, ref_text, referenced_refs, slices_in_request_order

_CLASS = re.compile(r"[^a-z0-9_-]+")

CSS = """
:root { --ink:#1d232b; --muted:#5b6673; --line:#d7dde4; --paper:#fbfcfd; --card:#ffffff;
  --current:#1d7a46; --historical:#b26a00; --evidence:#2459a8; --unverified:#6b7280; --policy:#6d3fb0;
  --tool:#0f7c83; --reserve:#9aa3ad; --fixed:#55606d; --unused:#eef1f4; }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
  "DejaVu Sans", sans-serif; color: var(--ink); background: var(--paper); }
h1 { font-size: 20px; margin: 0 0 2px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 18px 0 8px; border-bottom: 2px solid var(--line); padding-bottom: 3px; }
h3 { font-size: 15px; margin: 12px 0 6px; }
a { color: #1f5fbf; text-decoration: none; } a:hover { text-decoration: underline; }
code, .mono, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.sub { color: var(--muted); margin: 0 0 8px; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr);
  gap: 1px 14px; margin: 6px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
dl.facts.one { grid-template-columns: max-content minmax(0, 1fr); }
.question { font-weight: 600; }
.note { background: #fff4d6; border: 1px solid #e7c35a; padding: 6px 10px; border-radius: 4px; }
.glance { display: grid; grid-template-columns: minmax(0, 1.15fr) minmax(0, 1fr); gap: 26px; }
.glance h2 { margin-top: 12px; }
.bar { display: flex; height: 22px; border: 1px solid var(--ink); border-radius: 4px; overflow: hidden;
  background: var(--unused); }
.seg { height: 100%; border-right: 1px solid #fff; }
.seg.reserve { background: var(--reserve); } .seg.fixed { background: var(--fixed); }
.seg.framing { background: #b9c0c8; }
.seg.free { background: repeating-linear-gradient(45deg, #fff, #fff 4px, #e3e7ec 4px, #e3e7ec 8px); }
.legend { display: flex; flex-wrap: wrap; gap: 3px 14px; margin: 6px 0 0; padding: 0; list-style: none;
  font-size: 12.5px; }
.legend li { white-space: nowrap; }
.key { display: inline-block; width: 11px; height: 11px; border-radius: 2px; vertical-align: -1px;
  margin-right: 5px; }
.key.reserve { background: var(--reserve); } .key.fixed { background: var(--fixed); }
.key.framing { background: #b9c0c8; }
.key.free { background: repeating-linear-gradient(45deg, #fff, #fff 2px, #c9cfd6 2px, #c9cfd6 4px);
  border: 1px solid var(--line); }
.dyn-0 { background: #5b9be6; } .dyn-1 { background: #46a86a; } .dyn-2 { background: #e39a3b; }
.dyn-3 { background: #9a6ad6; } .dyn-4 { background: #2fa3ab; } .dyn-5 { background: #cc5a72; }
.headline { font-size: 15px; margin: 10px 0 4px; }
.headline strong { font-size: 17px; }
.why { margin: 4px 0; color: var(--ink); }
.leftout p { margin: 4px 0; } .leftout ul { margin: 2px 0 4px; padding-left: 20px; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { text-align: left; padding: 1px 10px 1px 0; vertical-align: top; }
th { color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); }
tr.group td { color: var(--ink); font-weight: 600; padding-top: 6px; }
tr.total td { border-top: 1px solid var(--ink); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.gloss { color: var(--muted); }
.msg { background: var(--card); border: 1px solid var(--line); border-radius: 4px; margin: 8px 0; }
.msg > h3 { margin: 0; padding: 4px 10px; background: #f0f3f6; font-size: 13px; border-bottom: 1px solid var(--line); }
.msg > h3 small { color: var(--muted); font-weight: 400; }
.msg pre { margin: 0; padding: 6px 10px; background: none; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f5f8; padding: 6px 8px; margin: 6px 0;
  border-radius: 3px; }
a.part { color: inherit; display: inline; background: #eaf2fd; border-bottom: 1px solid #9fc0ee; }
a.part:hover { background: #d6e6fb; text-decoration: none; }
.slice { border-left: 4px solid var(--line); padding: 0 0 2px 10px; margin: 10px 0; }
.slice h3 { margin: 4px 0; } .slice h3 small { color: var(--muted); font-weight: 400; }
.memory { background: var(--card); border: 1px solid var(--line); border-left: 5px solid var(--unverified);
  border-radius: 4px; padding: 5px 9px; margin: 5px 0; }
.memory .head { display: flex; flex-wrap: wrap; gap: 2px 10px; align-items: baseline; }
.pos { font-weight: 700; min-width: 22px; } .cid { color: var(--muted); }
.badge { font-weight: 700; font-size: 12px; padding: 0 6px; border-radius: 8px; color: #fff;
  background: var(--unverified); white-space: nowrap; }
.tier, .tok, .scores { font-size: 12px; color: var(--muted); }
.seen { margin: 4px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; font-family: "DejaVu Sans Mono", Menlo,
  Consolas, monospace; font-size: 12.5px; background: #f6f8fa; padding: 3px 6px; border-radius: 3px; }
.annotation { margin: 4px 0 0; padding: 3px 8px; background: #fff4d6; border-radius: 3px; }
.st-current { border-left-color: var(--current); } .badge.st-current { background: var(--current); }
.st-historical { border-left-color: var(--historical); } .badge.st-historical { background: var(--historical); }
.st-evidence { border-left-color: var(--evidence); } .badge.st-evidence { background: var(--evidence); }
.st-policy { border-left-color: var(--policy); } .badge.st-policy { background: var(--policy); }
.st-tool { border-left-color: var(--tool); } .badge.st-tool { background: var(--tool); }
.rule { background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 2px 10px 6px;
  margin: 8px 0; }
.rule h3 { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.rule ul, .diff ul { margin: 0; padding-left: 18px; } .rule li { margin: 3px 0; }
.detail { color: var(--muted); }
.erased { color: #b3261e; font-weight: 600; }
details.row { background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 3px 12px;
  margin: 4px 0; }
details.row > summary { cursor: pointer; }
details.row[open] { padding-bottom: 8px; }
.row:target, .memory:target, .msg:target { outline: 3px solid #f2c94c; }
.diff { background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 4px 12px 8px; }
.diff .sentences li { margin: 3px 0; }
.added { color: var(--current); } .removed { color: #b3261e; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _cls(value: Any) -> str:
    return _CLASS.sub("-", str(value).lower()).strip("-") or "x"


def _row_anchor(inspection: Inspection, ref: Any) -> str:
    """Anchors carry the id the model saw (a window id, else the stable id), so `#mem-M7` finds [M7]."""
    return f"row-{inspection.cited_as(ref)}"


def _mem_anchor(inspection: Inspection, ref: Any) -> str:
    return f"mem-{inspection.cited_as(ref)}"


def _ref_link(ref: Any, inspection: Inspection, *, prefer_window: bool = False) -> str:
    """A link to the row version's section (or, with prefer_window, to the memory in the window if it is there)."""
    if not ref_key(ref):
        return f"<span class=\"mono\">{_e(ref_text(ref))}</span>"
    target = (_mem_anchor(inspection, ref) if prefer_window and inspection.memory_at(ref)
              else _row_anchor(inspection, ref))
    erased = " <span class=\"erased\">erased</span>" if inspection.state(ref) == "erased" else ""
    return f"<a class=\"mono\" href=\"#{target}\">{_e(ref_text(ref))}</a>{erased}"


def _pct(part: float, whole: float) -> str:
    return f"{max(0.0, min(100.0, part / whole * 100)) if whole else 0:.3f}%"


def _header(inspection: Inspection) -> str:
    m = inspection.manifest
    scope = m.get("scope") or {}
    required = ", ".join(_ref_link(r, inspection, prefer_window=True) for r in m.get("required_refs") or [])
    round_note = (f" · tool round {_e(m.get('round'))} of window <code>{_e(m.get('first_manifest_id'))}</code>"
                  if m.get("round") else "")
    facts = [
        ("question", f"<span class=\"question\">{_e(m.get('question'))}</span>"),
        ("intent / model", f"{_e(m.get('intent'))} / {_e(m.get('model'))}"),
        ("scope", f"user {_e(scope.get('user_id'))}, agent {_e(scope.get('agent_id'))}, "
                  f"thread {_e(scope.get('thread_id'))}"),
        ("evaluation time", _e(m.get("evaluation_time"))),
        ("SCN / snapshot", f"<code id=\"scn\">{_e(m.get('scn'))}</code> ({_e(m.get('mode'))})"),
        ("request hash", f"<code id=\"request-hash\">{_e(m.get('request_hash'))}</code>"),
        ("budget guideline", _ref_link(m.get("budget_ref"), inspection)),
        ("required current facts", required or "none"),
        ("versions", f"renderer {_e(m.get('renderer_version'))}, selection {_e(m.get('selection_version'))}, "
                     f"tokenizer {_e(m.get('tokenizer'))}, scorer {_e(m.get('scorer'))}, "
                     f"code <code>{_e(str(m.get('code_hash') or '')[:16])}</code>"),
    ]
    rows = "\n".join(f"<dt>{name}</dt> <dd>{value}</dd>" for name, value in facts)
    notes = "\n".join(f"<p class=\"note\">{_e(n_)}</p>" for n_ in inspection.notes)
    return (f"<header><h1>What the model saw: manifest <code>{_e(inspection.manifest_id)}</code></h1>"
            f"<p class=\"sub\">tenant <strong>{_e(inspection.tenant_id)}</strong>{round_note} · "
            f"{len(m.get('memories') or [])} memories in the window · {len(m.get('excluded') or [])} excluded · "
            "<a href=\"#accounting\">every token</a> · <a href=\"#request\">the request</a> · "
            "<a href=\"#window\">window</a> · <a href=\"#excluded\">exclusions</a> · <a href=\"#rows\">source rows</a>"
            f"</p><dl class=\"facts\">{rows}</dl>{notes}</header>")


# -- above the fold: the budget and what was left out -----------------------------------------------------------


def _dyn_classes(acc: Account) -> dict[str, str]:
    return {part.name: f"dyn-{i % 6}" for i, part in enumerate(sorted(acc.slices, key=lambda p: p.name))}


def _bar(acc: Account) -> str:
    """The usable context as one bar: reserves, fixed slices, what each slice used, framing, unused. No text
    inside: the legend below names every part, so no label can be clipped."""
    classes = _dyn_classes(acc)
    segments = []

    def seg(css: str, tokens: int, title: str) -> None:
        if tokens > 0:
            segments.append(f"<div class=\"seg {css}\" style=\"width:{_pct(tokens, acc.usable)}\" "
                            f"title=\"{_e(title)}\"></div>")

    for name, tokens in acc.reserves:
        if name != "request_overhead":
            seg("reserve", tokens, f"{name} reserve: {tokens} tokens")
    seg("fixed", acc.fixed_total, f"fixed slices: {acc.fixed_total} tokens")
    for part in acc.slices:
        seg(classes[part.name], part.used, f"{part.name}: used {part.used}")
    seg("framing", max(0, acc.framing), f"framing: {acc.framing} tokens")
    free = acc.usable - sum(t for name, t in acc.reserves if name != "request_overhead") - acc.window_tokens
    seg("free", free, f"unused: {free} tokens")
    legend = [f"<li><span class=\"key reserve\"></span>reserves {n(sum(t for k, t in acc.reserves if k != 'request_overhead'))}"
              " (output, tools)</li>",
              f"<li><span class=\"key fixed\"></span>fixed slices {n(acc.fixed_total)}</li>"]
    legend += [f"<li><span class=\"key {classes[part.name]}\"></span>{_e(part.name)} {n(part.used)}</li>"
               for part in acc.slices]
    legend += [f"<li><span class=\"key framing\"></span>framing {n(acc.framing)}</li>",
               f"<li><span class=\"key free\"></span>unused {n(free)}</li>"]
    return (f"<div class=\"bar\" role=\"img\" aria-label=\"budget bar\">{''.join(segments)}</div>"
            f"<ul class=\"legend\" id=\"budget-legend\">{''.join(legend)}</ul>")


def _glance(inspection: Inspection, acc: Account | None) -> str:
    if acc is None:
        return "<section id=\"budget\"><h2>Budget</h2><p>No allocation recorded.</p></section>"
    needed = needed_total(inspection)
    balance = "" if acc.balance == 0 else (f" <span class=\"erased\">(the parts differ from the total by "
                                           f"{n(acc.balance)}: this manifest predates the figures they need)</span>")
    budget = (f"<section id=\"budget\"><h2>Budget: {n(acc.usable)} tokens of usable context</h2>{_bar(acc)}"
              f"<p class=\"headline\" id=\"unused\"><strong>{n(acc.unused)}</strong> of the {n(acc.limit)}-token "
              f"request limit went unused; the request is {n(acc.request_tokens)} tokens.</p>"
              f"<p class=\"why\">{_e(unused_sentence(acc))}{balance}</p>"
              f"<p class=\"why\" id=\"why-unused\">{_e(why_unused(acc, needed))}</p>"
              "<p class=\"detail\"><a href=\"#accounting\">Every token, line by line</a></p></section>")
    parts = ["<section id=\"left-out\" class=\"leftout\"><h2>Left out, and why</h2>"]
    any_part = False
    for part in acc.slices:
        summary = slice_summary(inspection, part.name)
        if summary:
            any_part = True
            lines = "".join(f"<li>{_e(line)}</li>" for line in summary.lines)
            parts.append(f"<div id=\"why-{_cls(part.name)}\"><p>{_e(summary.head)}</p><ul>{lines}</ul>"
                         f"<p class=\"detail\"><a href=\"#excluded-{_cls(part.name)}\">each one, with its rank, score "
                         "and tokens</a></p></div>")
    if not any_part:
        parts.append("<p>No candidate was left out for lack of room.</p>")
    rules = [(rule, items) for rule, items in exclusions_by_rule(inspection.manifest)
             if rule not in ("slice_budget", "tier_limit", "request_budget")]
    if rules:
        parts.append("<p>By the selection rules: " + ", ".join(
            f"<a href=\"#excluded-{_cls(rule)}\">{_e(rule)}</a> {len(items)}" for rule, items in rules) + ".</p>")
    parts.append("</section>")
    return f"<div class=\"glance\">{budget}{''.join(parts)}</div>"


def _accounting(inspection: Inspection, acc: Account | None) -> str:
    if acc is None:
        return ""
    rows: list[str] = []

    def row(label: str, tokens: Any, note: str = "", css: str = "") -> None:
        value = n(tokens) if isinstance(tokens, int) else _e(tokens)
        rows.append(f"<tr class=\"{css}\"><td>{label}</td><td class=\"num\">{value}</td>"
                    f"<td class=\"gloss\">{note}</td></tr>")

    row("usable context", acc.usable, "the whole budget", "group")
    reserve = dict(acc.reserves)
    rounds = (inspection.manifest.get("allocation") or {}).get("tool_rounds") or {}
    for name in ("output", "tools"):
        if name in reserve:
            extra = f", shared by up to {_e(rounds.get('max_rounds'))} rounds" if name == "tools" and rounds else ""
            row(f"− {RESERVE_NAMES[name]}", reserve[name], _e(RESERVE_PURPOSE[name]) + extra)
    row("= request limit", acc.window_limit, "what the first request may count", "total")
    row("− request-overhead reserve", acc.overhead, _e(RESERVE_PURPOSE["request_overhead"]))
    row("= before the fixed slices", acc.before_fixed, "", "total")
    for name, tokens in acc.fixed:
        note = ""
        if name == "guidelines" and acc.instructions:
            note = (f"{n(tokens - acc.instructions)} guideline rows + {n(acc.instructions)} "
                    f"<a href=\"#slice-{INSTRUCTIONS}\">memory instructions</a> (guideline rows, charged here)")
        row(f"− <a href=\"#slice-{_cls(name)}\">{_e(name)}</a> (fixed)", tokens, note)
    row("= remainder, split by the intent's shares", acc.remainder,
        f"intent {_e(inspection.manifest.get('intent'))}", "total")
    rows.append("<tr class=\"group\"><td colspan=\"3\">dynamic slices, in overflow order: a slice's allowance is its "
                "share plus what the slice before it passed on</td></tr>")
    for part in acc.slices:
        onward = (f"passed on {n(part.passed_on)} → <a href=\"#slice-{_cls(part.receiver)}\">{_e(part.receiver)}</a>"
                  if part.receiver else "")
        kept = f"kept {n(part.kept)} unused" + (" (last in overflow order: nothing to pass on to)"
                                                 if part.receiver is None else "") if part.kept else ""
        reclaimed = f"reclaimed {n(part.reclaimed)}" if part.reclaimed else ""
        left_out = (f"<a href=\"#excluded-{_cls(part.name)}\">{part.left_out} left out</a>" if part.left_out else "")
        note = "; ".join(x for x in (f"share {n(part.share)} + received {n(part.received)} = allowance "
                                     f"{n(part.allowance)}", onward, kept, reclaimed, left_out) if x)
        row(f"&nbsp;&nbsp;<a href=\"#slice-{_cls(part.name)}\">{_e(part.name)}</a> used", part.used, note)
    if acc.unallocated:
        row("&nbsp;&nbsp;unallocated", acc.unallocated, "the shares sum below 1")
    row("request (first window)" if acc.ledger else "request as sent", acc.window_tokens,
        f"fixed {n(acc.fixed_total)} + slices {n(acc.used_total)} + framing {n(acc.framing)}", "total")
    if acc.ledger is not None:
        ledger = acc.ledger
        row("+ assistant turns (tool calls)", ledger.assistant_tokens, "charged to the tool reserve")
        for record, tool, tokens, tier in ledger.results:
            memory = next((m for m in inspection.manifest.get("memories") or []
                           if (m.get("ref") or [None, None])[1] == record), None)
            link = f"<a href=\"#{_mem_anchor(inspection, memory['ref'])}\">{_e(tool)}</a>" if memory else _e(tool)
            row(f"+ tool result {link}", tokens, f"{_e(tier)}; at most {n(ledger.per_result)} per result")
        row("+ tool-message framing", acc.round_framing, "message framing beyond the ledger's charges")
        row("= this round's request", acc.request_tokens, f"limit {n(acc.limit)} (usable context − output reserve)",
            "total")
        row("tool reserve left", ledger.left, f"{n(ledger.used)} of {n(ledger.reserve)} used so far")
    row("unused", acc.unused, "; ".join(_e(part_text(w, t)) for w, t in unused_parts(acc)), "total")
    return ("<section id=\"accounting\"><h2>Every token</h2><table class=\"accounting\">"
            "<tr><th></th><th class=\"num\">tokens</th><th></th></tr>" + "".join(rows) + "</table></section>")


# -- the literal request ------------------------------------------------------------------------------------------


def _pieces_html(pieces: Sequence[Any]) -> str:
    out = []
    for piece in pieces:
        if piece.memory_id:
            out.append(f"<a class=\"part\" href=\"#mem-{_e(piece.memory_id)}\" title=\"manifest entry "
                       f"{_e(piece.memory_id)}\">{_e(piece.text)}</a>")
        else:
            out.append(_e(piece.text))
    return "".join(out)


def _request(inspection: Inspection, view: RequestView | None) -> str:
    out = ["<section id=\"request\"><h2>The request, as the model received it</h2>"]
    if view is None:
        out.append(f"<p class=\"note\">{_e(inspection.request_note or 'The request was not rebuilt.')} The window "
                   "below is shown from the manifest and the rows as of its snapshot.</p></section>")
        return "\n".join(out)
    options = ", ".join(f"{_e(k)} {_e(json.dumps(v, ensure_ascii=False))}" for k, v in view.options.items())
    out.append(f"<p class=\"sub\">{_e(inspection.request_note)}. {len(view.messages)} messages and "
               f"{len(view.tools)} tools, {n(view.tokens)} tokens; {options}. Highlighted text is a memory: "
               "it links to its manifest entry.</p>")
    for message in view.messages:
        extra = ""
        if message.answers:
            extra = f", answers call <code>{_e(message.answers)}</code>"
        out.append(f"<article class=\"msg\" id=\"msg-{message.index}\"><h3>messages[{message.index}] "
                   f"{_e(message.role)} <small>{n(message.tokens)} tokens{extra}</small></h3>")
        if message.pieces:
            out.append(f"<pre>{_pieces_html(message.pieces)}</pre>")
        for call in message.calls:
            function = call.get("function") or {}
            out.append(f"<pre>tool call <code>{_e(call.get('id'))}</code>: {_e(function.get('name'))}"
                       f"({_e(function.get('arguments'))})</pre>")
        out.append("</article>")
    out.append(f"<div id=\"request-tools\"><h3>tools ({len(view.tools)})</h3>")
    for index, tool in enumerate(view.tools):
        target = f" <a href=\"#mem-{_e(tool.memory_id)}\">manifest entry</a>" if tool.memory_id else ""
        out.append(f"<article class=\"msg\" id=\"tool-{index}\"><h3>{_e(tool.name)} <small>{n(tool.tokens)} tokens"
                   f"</small>{target}</h3><pre>{_e(tool.json)}</pre></article>")
    out.append("</div></section>")
    return "\n".join(out)


# -- the window -------------------------------------------------------------------------------------------------


def _memory_card(memory: Mapping[str, Any], inspection: Inspection, view: RequestView | None) -> str:
    ref = memory.get("ref")
    status = memory.get("status")
    tier = f"tier {_e(memory.get('tier'))}"
    if memory.get("tier_rule"):
        tier += f" ({_e(memory['tier_rule'])})"
    head = " ".join([f"<span class=\"pos\" title=\"position in the request\">{_e(memory.get('position'))}</span>",
                     f"<span class=\"cid mono\">{_e(memory.get('id'))}</span>",
                     f"<span class=\"badge st-{_cls(status)}\">{_e(status)}</span>",
                     f"<span class=\"tier\">{tier}</span>",
                     f"<span class=\"tok\">{_e(memory.get('tokens'))} tokens</span>",
                     f"<span>source row {_ref_link(ref, inspection)}</span>"])
    parts = [f"<article class=\"memory st-{_cls(status)}\" id=\"{_mem_anchor(inspection, ref)}\">",
             f"<div class=\"head\">{head}</div>"]
    if memory.get("scores"):
        parts.append(f"<div class=\"scores\">{_e(scores_text(memory.get('scores')))}</div>")
    if memory.get("summary_ref"):
        parts.append(f"<div class=\"scores\">summary from {_ref_link(memory['summary_ref'], inspection)}"
                     f"{_e(written_by(memory))}</div>")
    elif memory.get("generated_by"):
        parts.append(f"<div class=\"scores\">written by {_e(generator_text(memory['generated_by']))}</div>")
    if memory.get("slice") == TOOL_RESULTS:
        parts.append(f"<div class=\"scores\">round {_e(memory.get('round'))}, call <code>{_e(memory.get('call_id'))}"
                     f"</code>, arguments <code>{_e(json.dumps(memory.get('arguments'), ensure_ascii=False))}</code>"
                     f", {len(memory.get('items') or [])} item(s) shown, {len(memory.get('dropped') or [])} left out"
                     "</div>")
    seen = view.seen.get(str(memory.get("id"))) if view is not None else None
    if seen is not None:
        parts.append(f"<div class=\"seen\" title=\"as the model received it\">{_e(seen)}</div>")
    else:
        text, what = inspection.seen_text(memory)
        if text is not None:
            parts.append(f"<div class=\"seen\" title=\"{_e(what)}\">{_e(text)}</div>"
                         f"<div class=\"detail\">{_e(what)} (the literal request could not be rebuilt)</div>")
        else:
            css = "erased" if inspection.state(ref) == "erased" else "detail"
            parts.append(f"<p class=\"{css}\">({_e(what)})</p>")
    for note in annotation_notes(memory):
        source = _ref_link(note.get("source"), inspection)
        if note.get("current"):
            current = _ref_link(note["current"], inspection, prefer_window=True)
            shown = inspection.memory_at(note["current"])
            where = f" (in this window at position {_e(shown.get('position'))})" if shown else \
                " (not in this window)"
            parts.append(f"<p class=\"annotation\"><strong>Annotation:</strong> this {_e(status)} memory cites "
                         f"{source}, which is no longer in effect. Current fact: {current}{where}.</p>")
        else:
            parts.append(f"<p class=\"annotation\"><strong>Annotation:</strong> cites {source}, withdrawn with no "
                         "current version.</p>")
    parts.append("</article>")
    return "\n".join(parts)


def _slice_meta(name: str, inspection: Inspection, acc: Account | None, memories: Sequence[Mapping[str, Any]]) -> str:
    allocation = inspection.manifest.get("allocation") or {}
    if name == INSTRUCTIONS:
        return (f"guideline rows keyed memory_instructions, {_e(allocation.get('memory_instructions'))} tokens "
                "charged to the guidelines slice; a tool's sentence only when that tool is in the window")
    if name in FIXED:
        cost = (allocation.get("fixed") or {}).get(name)
        meta = f"fixed slice, {_e(cost)} tokens"
        if name == "guidelines" and allocation.get("memory_instructions"):
            meta += (f", of which <a href=\"#slice-{INSTRUCTIONS}\">memory instructions</a> "
                     f"{_e(allocation['memory_instructions'])}")
        return meta
    if name == TOOL_RESULTS:
        ledger = acc.ledger if acc is not None else None
        used = sum(int(m.get("tokens") or 0) for m in memories)
        if ledger is None:
            return f"{len(memories)} result(s), {used} tokens, paid from the tool reserve"
        return (f"{len(memories)} result(s), {n(used)} tokens; the tool reserve of {n(ledger.reserve)} (at most "
                f"{n(ledger.per_result)} per result) has {n(ledger.used)} used with the assistant turns, "
                f"{n(ledger.left)} left")
    part = (allocation.get("slices") or {}).get(name) or {}
    meta = f"used {_e(part.get('used'))} of allowance {_e(part.get('allowance'))} (share {_e(part.get('share'))})"
    total = candidates_in(inspection, name)
    if total > len(memories):
        meta += f"; {len(memories)} of {total} candidates seated"
    return meta


def _window(inspection: Inspection, acc: Account | None, view: RequestView | None) -> str:
    m = inspection.manifest
    out = ["<section id=\"window\"><h2>The window, slice by slice in request order</h2>"]
    for name, memories in slices_in_request_order(m, inspection.rows):
        out.append(f"<section class=\"slice\" id=\"slice-{_cls(name)}\"><h3>{_e(name)} "
                   f"<small>{_slice_meta(name, inspection, acc, memories)}</small></h3>")
        if name == "question":
            out.append(f"<div class=\"seen\">{_e(m.get('question'))}</div>")
        elif not memories:
            out.append("<p class=\"detail\">nothing in this slice</p>")
        out += [_memory_card(memory, inspection, view) for memory in memories]
        out.append("</section>")
    out.append("</section>")
    return "\n".join(out)


#: What the columns of a fitter rule's table mean.
RULE_HEADS = {"slice_budget": "rank in the slice (1 = best), priority, the tokens of its smallest tier, and the "
                              "tokens the slice had left when it came up",
              "tier_limit": "every tier the candidate has was at its cap (tier_limits)",
              "request_budget": "given back because the complete request was over its limit (by the tokens shown)"}


def _exclusions(inspection: Inspection) -> str:
    manifest = inspection.manifest
    groups = exclusions_by_rule(manifest)
    total = sum(len(i) for _, i in groups)
    out = [f"<section id=\"excluded\"><h2>Excluded, by rule ({total})</h2>"]
    anchored: set[str] = set()  # the first table of a slice is the one "each one" links to
    if not groups and not manifest.get("candidate_cuts"):
        out.append("<p class=\"detail\">Nothing was excluded.</p>")
    for rule, items in groups:
        out.append(f"<section class=\"rule\" id=\"excluded-{_cls(rule)}\"><h3>{_e(rule)} "
                   f"<small>({len(items)})</small></h3>")
        fitted = rule in ("slice_budget", "tier_limit", "request_budget")
        if fitted:
            by_slice: dict[str, list[Mapping[str, Any]]] = {}
            for item in items:
                by_slice.setdefault(str(item.get("slice")), []).append(item)
            for name, group in by_slice.items():
                group = sorted(group, key=lambda x: (x.get("rank") is None, x.get("rank") or 0))
                anchor = "" if name in anchored else f" id=\"excluded-{_cls(name)}\""
                anchored.add(name)
                left_head = {"slice_budget": "left then", "request_budget": "over by"}.get(rule, "")
                why = rule != "slice_budget"
                out.append(f"<table{anchor}><tr><th colspan=\"{6 if why else 5}\">{_e(name)}: "
                           f"{_e(RULE_HEADS.get(rule, ''))}</th></tr>"
                           "<tr><th class=\"num\">rank</th><th class=\"num\">priority</th><th class=\"num\">needed"
                           f"</th><th class=\"num\">{left_head}</th><th>row</th>{'<th>why</th>' if why else ''}</tr>")
                for item in group:
                    left = item.get("left") if rule == "slice_budget" else item.get("over")
                    out.append(f"<tr><td class=\"num\">{_e(item.get('rank'))}</td>"
                               f"<td class=\"num\">{_e(item.get('priority'))}</td>"
                               f"<td class=\"num\">{_e(item.get('tokens'))}</td>"
                               f"<td class=\"num\">{_e(left if left is not None else '')}</td>"
                               f"<td>{_ref_link(item.get('ref'), inspection)}</td>"
                               + (f"<td>{_e(explain(item, inspection))}</td>" if why else "") + "</tr>")
                out.append("</table>")
        else:
            out.append("<ul>")
            for item in items:
                out.append(f"<li>{_ref_link(item.get('ref'), inspection)}: {_e(explain(item, inspection))}</li>")
            out.append("</ul>")
        out.append("</section>")
    cuts = manifest.get("candidate_cuts") or []
    if cuts:
        out.append("<section class=\"rule\" id=\"excluded-candidate_limit\"><h3>candidate_limit <small>(before "
                   "fitting)</small></h3><ul>")
        out += [f"<li>{_e(cut.get('slice'))}: {_e(cut_sentence(cut))}.</li>" for cut in cuts]
        out.append("</ul></section>")
    out.append("</section>")
    return "\n".join(out)


def _roles(key: Any, inspection: Inspection) -> list[str]:
    """What the manifest says about one row version, as HTML fragments."""
    m = inspection.manifest
    roles = []
    memory = inspection.memory_at(key)
    if memory:
        roles.append(f"in the window at <a href=\"#{_mem_anchor(inspection, key)}\">"
                     f"position {_e(memory.get('position'))}</a>"
                     f", slice {_e(memory.get('slice'))}, tier {_e(memory.get('tier'))}, {_e(memory.get('status'))}")
    for item in m.get("excluded") or []:
        if ref_key(item.get("ref")) == key:
            roles.append(f"excluded by rule <a href=\"#excluded-{_cls(item.get('rule'))}\">{_e(item.get('rule'))}"
                         f"</a>: {_e(explain(item, inspection))}")
        if ref_key(item.get("kept")) == key:
            roles.append(f"kept instead of {_ref_link(item.get('ref'), inspection)} ({_e(item.get('rule'))})")
    for other in m.get("memories") or []:
        if ref_key(other.get("summary_ref")) == key:
            roles.append(f"summary tier of {_ref_link(other.get('ref'), inspection, prefer_window=True)}")
        for note in annotation_notes(other):
            if ref_key(note.get("current")) == key:
                roles.append(f"current fact named by the annotation of "
                             f"{_ref_link(other.get('ref'), inspection, prefer_window=True)}")
            if ref_key(note.get("source")) == key:
                roles.append(f"earlier version cited by {_ref_link(other.get('ref'), inspection, prefer_window=True)}")
    if any(ref_key(r) == key for r in m.get("required_refs") or []):
        roles.append("required current fact (had to enter at full size)")
    if ref_key(m.get("budget_ref")) == key:
        roles.append("the context_budget guideline of this window")
    return roles


def _source_refs(row: Mapping[str, Any], inspection: Inspection) -> str:
    refs = row.get("source_refs") or []
    links = []
    for item in refs if isinstance(refs, list) else []:
        if isinstance(item, Mapping):
            ref = [item.get("type"), item.get("id"), item.get("version")]
            links.append(_ref_link(ref, inspection) if inspection.row(ref) else f"<span class=\"mono\">"
                         f"{_e(ref_text(ref))}</span>")
    return ", ".join(links) or "none"


def _rows(inspection: Inspection) -> str:
    keys = referenced_refs(inspection.manifest)
    out = [f"<section id=\"rows\"><h2>Source rows, as of the recorded snapshot ({len(keys)})</h2>"
           "<p class=\"sub\">Folded: open one, or follow a link to it.</p>"]
    for key in keys:
        row = inspection.row(key)
        state = inspection.state(key)
        status = row.get("status") if row is not None else (state or "not readable")
        out.append(f"<details class=\"row\" id=\"{_row_anchor(inspection, key)}\"><summary><span class=\"mono\">"
                   f"{_e(ref_text(key))}</span> <span class=\"{'erased' if state == 'erased' else 'detail'}\">"
                   f"{_e(status)}</span></summary>")
        facts = [("row reference", f"<code>{_e(json.dumps(list(key), ensure_ascii=False))}</code> type "
                                   f"{_e(key[0])}, row id {_e(key[1])}, version {_e(key[2])}"),
                 ("citation id", f"<code>{_e(inspection.cited_as(key))}</code>"
                                 + (f" (stable id <code>{_e(citation_id(key))}</code>)"
                                    if inspection.cited_as(key) != citation_id(key) else ""))]
        roles = _roles(key, inspection)
        facts.append(("in this manifest", "<br>".join(roles) or "named"))
        if row is not None:
            scope = ", ".join(f"{name} {_e(row.get(name + '_id') or 'any')}" for name in ("user", "agent", "thread"))
            facts += [("status at the snapshot", _e(row.get("status"))),
                      ("valid", f"from {_e(row.get('valid_from'))} until {_e(row.get('valid_until') or 'open')}"),
                      ("scope", scope), ("written", _e(row.get("created_at"))),
                      ("source refs", _source_refs(row, inspection))]
        out.append("<dl class=\"facts one\">" + "\n".join(f"<dt>{n_}</dt> <dd>{v}</dd>" for n_, v in facts) + "</dl>")
        if row is None:
            out.append(f"<p class=\"{'erased' if state == 'erased' else 'detail'}\">This row version could not be "
                       f"read at the recorded snapshot: {_e(inspection.unreadable(key))}.</p>")
        else:
            out.append(f"<pre>{_e(row.get('content'))}</pre>")
            if row.get("content_json") is not None:
                out.append("<details><summary>content_json</summary><pre>"
                           f"{_e(json.dumps(row['content_json'], indent=2, ensure_ascii=False))}</pre></details>")
        out.append("</details>")
    out.append("</section>")
    return "\n".join(out)


# -- the diff ---------------------------------------------------------------------------------------------------


def _list(items: Sequence[str], empty: str = "none") -> str:
    return "<ul>" + "\n".join(f"<li>{item}</li>" for item in items) + "</ul>" if items else \
        f"<p class=\"detail\">{empty}</p>"


def _value(value: Any) -> str:
    if isinstance(value, list) and len(value) == 3 and not isinstance(value[0], (list, dict)):
        return _e(ref_text(value))
    if isinstance(value, (dict, list)):
        return f"<code>{_e(json.dumps(value, ensure_ascii=False))}</code>"
    return _e(value)


def _diff(diff: ManifestDiff, inspection: Inspection) -> str:
    def memory_line(m: Mapping[str, Any], sign: str, css: str) -> str:
        link = _ref_link(m.get("ref"), inspection, prefer_window=True) if sign == "−" else \
            f"<span class=\"mono\">{_e(ref_text(m.get('ref')))}</span>"
        return (f"<span class=\"{css}\">{sign}</span> {link} {_e(m.get('status'))}, tier {_e(m.get('tier'))}, "
                f"{_e(m.get('tokens'))} tokens, slice {_e(m.get('slice'))}")

    hash_text = ("<strong>equal</strong>" if diff.request_hash_equal else
                 f"<strong>differs</strong>: <code>{_e(diff.old_hash[:16])}…</code> → "
                 f"<code>{_e(diff.new_hash[:16])}…</code>")
    said = sentences(diff)
    out = [f"<section id=\"diff\" class=\"diff\"><h2>Diff: this manifest → <code>{_e(diff.new_id)}</code></h2>",
           f"<p>Request hash: {hash_text}</p>",
           "<h3>What changed</h3>",
           f"<ul class=\"sentences\" id=\"diff-sentences\">{''.join(f'<li>{_e(s)}</li>' for s in said)}</ul>"
           if said else "<p class=\"detail\">Nothing in the windows changed.</p>",
           "<h3>What was asked, and what produced it</h3>",
           _list([f"{_e(c.what)}: {_value(c.old)} → {_value(c.new)}" for c in diff.asked], "no differences"),
           "<details id=\"diff-raw\"><summary>The raw differences: memories, exclusions and allocation keys</summary>",
           f"<h3>Memories added ({len(diff.added)})</h3>",
           _list([memory_line(m, "+", "added") for m in diff.added]),
           f"<h3>Memories removed ({len(diff.removed)})</h3>",
           _list([memory_line(m, "−", "removed") for m in diff.removed]),
           f"<h3>Memories changed ({len(diff.changed)})</h3>",
           _list([f"{_ref_link(c.ref, inspection, prefer_window=True)}: "
                  + "; ".join(f"{_e(x.what)} {_e(x.old)} → {_e(x.new)}" for x in c.changes) for c in diff.changed])]
    if diff.versions:
        out += ["<h3>Same row, another version</h3>",
                _list([f"<span class=\"mono\">{_e(v.kind)} / {_e(v.row_id)}</span>: version "
                       f"{_e(', '.join(map(str, v.old_versions)))} → {_e(', '.join(map(str, v.new_versions)))}"
                       for v in diff.versions])]
    out += [f"<h3>Exclusions added ({len(diff.excluded_added)})</h3>",
            _list([f"<span class=\"added\">+</span> {_e(e.get('rule'))}: <span class=\"mono\">"
                   f"{_e(ref_text(e.get('ref')))}</span>" for e in diff.excluded_added]),
            f"<h3>Exclusions removed ({len(diff.excluded_removed)})</h3>",
            _list([f"<span class=\"removed\">−</span> {_e(e.get('rule'))}: {_ref_link(e.get('ref'), inspection)}"
                   for e in diff.excluded_removed]),
            f"<h3>Allocation changes ({len(diff.allocation)})</h3>",
            _list([f"<code>{_e(c.what)}</code>: {_e(c.old)} → {_e(c.new)}" for c in diff.allocation]),
            "</details></section>"]
    return "\n".join(out)


def render_page(inspection: Inspection, diff: ManifestDiff | None = None) -> str:
    """The whole page as one string (UTF-8 when written)."""
    acc = account(inspection)
    view = request_view(inspection)
    body = [_header(inspection)]
    if diff is not None:
        body.append(_diff(diff, inspection))
    body += [_glance(inspection, acc), _accounting(inspection, acc), _request(inspection, view),
             _window(inspection, acc, view), _exclusions(inspection), _rows(inspection),
             f"<footer>ctxasm {_e(__version__)} inspector · one self-contained file: no scripts, no fetches"
             "</footer>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>ctxasm manifest {_e(inspection.manifest_id)} ({_e(inspection.tenant_id)})</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")
