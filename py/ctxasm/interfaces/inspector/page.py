"""The inspector page: one self-contained HTML file for one manifest (and optionally its diff with another).

Self-contained means: inline CSS, system fonts, no scripts, no images, nothing fetched; a Content-Security-Policy
of `default-src 'none'` says so to the browser too. Every piece of text that comes from the database (row text,
the question, details, ids) goes through `_e` (html.escape with quotes); anchors are derived from citation ids
(hex digests), never from stored text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm import __version__
from ctxasm.interfaces.inspector.diff import ManifestDiff
from ctxasm.services.inspection import (FIXED, REQUEST_LAYOUT, RESERVE_ORDER, Inspection, annotation_notes, citation_id,
                                        exclusions_by_rule, ordered, overflow_order, overflow_receivers, ref_key,
                                        ref_text, referenced_refs, slices_in_request_order)
from ctxasm.interfaces.inspector.text import scores_text

EXCERPT = 420
_CLASS = re.compile(r"[^a-z0-9_-]+")

CSS = """
:root { --ink:#1d232b; --muted:#5b6673; --line:#d7dde4; --paper:#fbfcfd; --card:#ffffff;
  --current:#1d7a46; --historical:#b26a00; --evidence:#2459a8; --unverified:#6b7280; --policy:#6d3fb0;
  --tool:#0f7c83; --reserve:#9aa3ad; --fixed:#55606d; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
  "DejaVu Sans", sans-serif; color: var(--ink); background: var(--paper); }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 22px 0 8px; border-bottom: 2px solid var(--line); padding-bottom: 3px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
a { color: #1f5fbf; text-decoration: none; } a:hover { text-decoration: underline; }
code, .mono, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.sub { color: var(--muted); margin: 0 0 10px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.question { font-size: 15px; font-weight: 600; }
.note { background: #fff4d6; border: 1px solid #e7c35a; padding: 6px 10px; border-radius: 4px; }
.bar { display: flex; height: 34px; border: 1px solid var(--ink); border-radius: 4px; overflow: hidden;
  background: repeating-linear-gradient(45deg, #fff, #fff 4px, #eef1f4 4px, #eef1f4 8px); }
.seg { position: relative; height: 100%; overflow: hidden; white-space: nowrap; border-right: 1px solid #fff;
  font-size: 11px; color: #fff; }
.seg span { position: relative; padding: 0 4px; line-height: 34px; text-shadow: 0 0 2px rgba(0,0,0,.6); }
.seg.reserve { background: var(--reserve); } .seg.fixed { background: var(--fixed); }
.seg .fill { position: absolute; left: 0; top: 0; bottom: 0; }
.seg.dyn { color: var(--ink); } .seg.dyn span { text-shadow: none; }
.dyn-0 { background: #cfe3fb; } .dyn-0 .fill, .key.dyn-0 { background: #5b9be6; }
.dyn-1 { background: #d3f0dc; } .dyn-1 .fill, .key.dyn-1 { background: #46a86a; }
.dyn-2 { background: #fde3c4; } .dyn-2 .fill, .key.dyn-2 { background: #e39a3b; }
.dyn-3 { background: #eadcf8; } .dyn-3 .fill, .key.dyn-3 { background: #9a6ad6; }
.dyn-4 { background: #d9f1f2; } .dyn-4 .fill, .key.dyn-4 { background: #2fa3ab; }
.dyn-5 { background: #f6d9df; } .dyn-5 .fill, .key.dyn-5 { background: #cc5a72; }
.key { display: inline-block; width: 11px; height: 11px; border-radius: 2px; vertical-align: -1px;
  margin-right: 5px; }
.key.reserve { background: var(--reserve); } .key.fixed { background: var(--fixed); }
.key.unallocated { background: #eef1f4; border: 1px solid var(--line); }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { text-align: left; padding: 1px 8px 1px 0; vertical-align: top; }
th { color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); }
tr.group th { color: var(--ink); border-bottom: none; padding-top: 6px; }
td.num, th.num { text-align: right; }
.request-bar { height: 10px; width: 420px; background: #eef1f4; border: 1px solid var(--line); border-radius: 5px;
  display: inline-block; vertical-align: middle; overflow: hidden; margin: 0 8px; }
.request-bar span { display: block; height: 100%; background: var(--fixed); }
.columns { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1.1fr); gap: 24px; }
.legend td:first-child { white-space: nowrap; }
.slice { border-left: 4px solid var(--line); padding: 0 0 2px 10px; margin: 10px 0; }
.slice h3 { margin: 4px 0; } .slice h3 small { color: var(--muted); font-weight: 400; }
.memory { background: var(--card); border: 1px solid var(--line); border-left: 5px solid var(--unverified);
  border-radius: 4px; padding: 5px 9px; margin: 5px 0; }
.memory .head { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: baseline; }
.pos { font-weight: 700; min-width: 22px; } .cid { color: var(--muted); }
.badge { font-weight: 700; font-size: 12px; padding: 0 6px; border-radius: 8px; color: #fff;
  background: var(--unverified); }
.tier, .tok { font-size: 12px; color: var(--muted); }
.scores { font-size: 12px; color: var(--muted); }
.text { margin: 3px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; }
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
.row { background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 4px 12px 8px;
  margin: 8px 0; }
.row:target, .memory:target { outline: 3px solid #f2c94c; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f5f8; padding: 6px 8px; margin: 6px 0;
  border-radius: 3px; }
.diff { background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 4px 12px 8px; }
.added { color: var(--current); } .removed { color: #b3261e; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _cls(value: Any) -> str:
    return _CLASS.sub("-", str(value).lower()).strip("-") or "x"


def _row_anchor(ref: Any) -> str:
    return f"row-{citation_id(ref)}"


def _mem_anchor(ref: Any) -> str:
    return f"mem-{citation_id(ref)}"


def _ref_link(ref: Any, inspection: Inspection, *, prefer_window: bool = False) -> str:
    """A link to the row version's section (or, with prefer_window, to the memory in the window if it is there)."""
    if not ref_key(ref):
        return f"<span class=\"mono\">{_e(ref_text(ref))}</span>"
    target = _mem_anchor(ref) if prefer_window and inspection.memory_at(ref) else _row_anchor(ref)
    return f"<a class=\"mono\" href=\"#{target}\">{_e(ref_text(ref))}</a>"


def _excerpt(text: Any, limit: int = EXCERPT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _pct(part: float, whole: float) -> str:
    return f"{max(0.0, min(100.0, part / whole * 100)) if whole else 0:.3f}%"


def _header(inspection: Inspection) -> str:
    m = inspection.manifest
    scope = m.get("scope") or {}
    required = ", ".join(_ref_link(r, inspection, prefer_window=True) for r in m.get("required_refs") or [])
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
    notes = "\n".join(f"<p class=\"note\">{_e(n)}</p>" for n in inspection.notes)
    return (f"<header><h1>What the model saw: manifest <code>{_e(inspection.manifest_id)}</code></h1>"
            f"<p class=\"sub\">tenant <strong>{_e(inspection.tenant_id)}</strong> · "
            f"{len(m.get('memories') or [])} memories in the window · {len(m.get('excluded') or [])} excluded · "
            f"<a href=\"#budget\">budget</a> · <a href=\"#window\">window</a> · <a href=\"#excluded\">exclusions</a>"
            f" · <a href=\"#rows\">source rows</a></p><dl class=\"facts\">{rows}</dl>{notes}</header>")


def _budget(inspection: Inspection) -> tuple[str, str]:
    """(the budget bar, the allocation table)"""
    m = inspection.manifest
    allocation = m.get("allocation") or {}
    usable = allocation.get("usable_context") or 0
    if not usable:
        return "<section id=\"budget\"><h2>Budget</h2><p>No allocation recorded.</p></section>", ""
    reserves = ordered(allocation.get("reserves"), RESERVE_ORDER)
    fixed = ordered(allocation.get("fixed"), REQUEST_LAYOUT)
    raw = allocation.get("slices") or {}
    slices = [(name, raw[name] or {}) for name in overflow_order(m, inspection.budget_row)]
    receivers = overflow_receivers(m, inspection.budget_row)
    dyn_class = {name: f"dyn-{i % 6}" for i, name in enumerate(sorted(raw))}

    segments = []
    legend = [f"<tr class=\"group\"><th colspan=\"5\">reserves ({_e(sum(v for _, v in reserves))})</th></tr>"]
    for name, tokens in reserves:
        segments.append(f"<div class=\"seg reserve\" style=\"width:{_pct(tokens, usable)}\" "
                        f"title=\"{_e(name)} reserve: {_e(tokens)} tokens\"><span>{_e(name)} {_e(tokens)}</span></div>")
        legend.append(f"<tr><td><span class=\"key reserve\"></span>{_e(name)}</td>"
                      f"<td class=\"num\">{_e(tokens)}</td><td></td><td></td><td></td></tr>")
    legend.append(f"<tr class=\"group\"><th colspan=\"5\">fixed slices, at their real cost "
                  f"({_e(sum(v for _, v in fixed))})</th></tr>")
    for name, tokens in fixed:
        segments.append(f"<div class=\"seg fixed\" style=\"width:{_pct(tokens, usable)}\" "
                        f"title=\"fixed slice {_e(name)}: {_e(tokens)} tokens\"><span>{_e(name)} {_e(tokens)}</span>"
                        "</div>")
        legend.append(f"<tr><td><span class=\"key fixed\"></span><a href=\"#slice-{_cls(name)}\">{_e(name)}</a></td>"
                      f"<td class=\"num\">{_e(tokens)}</td><td></td><td class=\"num\">{_e(tokens)}</td><td></td></tr>")
    legend.append(f"<tr class=\"group\"><th colspan=\"5\">dynamic slices, in overflow order (remainder "
                  f"{_e(allocation.get('remainder'))})</th></tr>")
    for name, part in slices:
        share, used = part.get("share") or 0, part.get("used") or 0
        passed = part.get("passed_on") or 0
        onward = f" → <a href=\"#slice-{_cls(receivers[name])}\">{_e(receivers[name])}</a>" if receivers.get(name) \
            else ""
        segments.append(f"<div class=\"seg dyn {dyn_class[name]}\" style=\"width:{_pct(share, usable)}\" "
                        f"title=\"{_e(name)}: share {_e(share)}, allowance {_e(part.get('allowance'))}, used "
                        f"{_e(used)}, passed on {_e(passed)}\"><div class=\"fill\" style=\"width:"
                        f"{_pct(min(used, share), share)}\"></div><span>{_e(name)} {_e(used)}/{_e(share)}</span></div>")
        legend.append(f"<tr><td><span class=\"key {dyn_class[name]}\"></span>"
                      f"<a href=\"#slice-{_cls(name)}\">{_e(name)}</a></td><td class=\"num\">{_e(share)}</td>"
                      f"<td class=\"num\">{_e(part.get('allowance'))}</td><td class=\"num\">{_e(used)}</td>"
                      f"<td>{_e(passed)}{onward}</td></tr>")
    unallocated = allocation.get("unallocated") or 0
    if unallocated:
        segments.append(f"<div class=\"seg\" style=\"width:{_pct(unallocated, usable)}\" "
                        f"title=\"unallocated: {_e(unallocated)} tokens\"></div>")
    legend.append(f"<tr><td><span class=\"key unallocated\"></span>unallocated</td>"
                  f"<td class=\"num\">{_e(unallocated)}</td><td></td><td></td><td></td></tr>")
    tokens, limit = m.get("request_tokens"), m.get("request_limit")
    request = ""
    if tokens is not None and limit:
        request = (f"<p>Request as sent: <strong>{_e(tokens)}</strong> of {_e(limit)} tokens allowed "
                   f"(usable context minus output and tool reserves)<span class=\"request-bar\"><span "
                   f"style=\"width:{_pct(tokens, limit)}\"></span></span>{_e(round(tokens / limit * 100))}%</p>")
    bar = (f"<section id=\"budget\"><h2>Budget: {_e(usable)} tokens of usable context</h2>"
           f"<div class=\"bar\" role=\"img\" aria-label=\"budget bar\">{''.join(segments)}</div>{request}</section>")
    table = ("<section id=\"allocation\"><h2>Allocation</h2>"
             "<table class=\"legend\"><tr><th></th><th class=\"num\">tokens / share</th>"
             "<th class=\"num\">allowance</th><th class=\"num\">used</th><th>passed on</th>"
             f"</tr>{''.join(legend)}</table>"
             f"<p class=\"sub\">Before the fixed slices: {_e(allocation.get('before_fixed'))} tokens; after them, "
             f"{_e(allocation.get('remainder'))} tokens are split by the intent's shares. Dynamic slices are listed "
             "in overflow order: a slice's allowance is its share plus what the one before it passed on.</p>"
             "</section>")
    return bar, table


def _memory_card(memory: Mapping[str, Any], inspection: Inspection) -> str:
    ref = memory.get("ref")
    status = memory.get("status")
    text, what = inspection.seen_text(memory)
    head = " ".join([f"<span class=\"pos\" title=\"position in the request\">{_e(memory.get('position'))}</span>",
                     f"<span class=\"cid mono\">{_e(memory.get('id'))}</span>",
                     f"<span class=\"badge st-{_cls(status)}\">{_e(status)}</span>",
                     f"<span class=\"tier\">tier {_e(memory.get('tier'))}</span>",
                     f"<span class=\"tok\">{_e(memory.get('tokens'))} tokens</span>",
                     f"<span>source row {_ref_link(ref, inspection)}</span>"])
    parts = [f"<article class=\"memory st-{_cls(status)}\" id=\"{_mem_anchor(ref)}\">",
             f"<div class=\"head\">{head}</div>"]
    if memory.get("scores"):
        parts.append(f"<div class=\"scores\">{_e(scores_text(memory.get('scores')))}</div>")
    if memory.get("summary_ref"):
        parts.append(f"<div class=\"scores\">summary from {_ref_link(memory['summary_ref'], inspection)}</div>")
    if text is not None:
        parts.append(f"<p class=\"text\" title=\"{_e(what)}\">{_e(_excerpt(text))}</p>")
    else:
        parts.append(f"<p class=\"text detail\">({_e(what)})</p>")
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


def _window(inspection: Inspection) -> str:
    m = inspection.manifest
    allocation = m.get("allocation") or {}
    out = ["<main id=\"window\"><h2>The window, slice by slice in request order</h2>"]
    for name, memories in slices_in_request_order(m):
        if name in FIXED:
            cost = (allocation.get("fixed") or {}).get(name)
            meta = f"fixed slice, {_e(cost)} tokens"
        else:
            part = (allocation.get("slices") or {}).get(name) or {}
            meta = (f"used {_e(part.get('used'))} of allowance {_e(part.get('allowance'))} "
                    f"(share {_e(part.get('share'))})")
        out.append(f"<section class=\"slice\" id=\"slice-{_cls(name)}\"><h3>{_e(name)} <small>{meta}</small></h3>")
        if name == "question":
            out.append(f"<p class=\"text question\">{_e(m.get('question'))}</p>")
        elif not memories:
            out.append("<p class=\"detail\">nothing in this slice</p>")
        out += [_memory_card(memory, inspection) for memory in memories]
        out.append("</section>")
    out.append("</main>")
    return "\n".join(out)


def _exclusions(inspection: Inspection) -> str:
    groups = exclusions_by_rule(inspection.manifest)
    out = [f"<section id=\"excluded\"><h2>Excluded, by rule ({sum(len(i) for _, i in groups)})</h2>"]
    if not groups:
        out.append("<p class=\"detail\">Nothing was excluded.</p>")
    for rule, items in groups:
        out.append(f"<section class=\"rule\" id=\"excluded-{_cls(rule)}\"><h3>{_e(rule)} "
                   f"<small>({len(items)})</small></h3><ul>")
        for item in items:
            why = []
            if item.get("detail"):
                why.append(f"<span class=\"detail\">{_e(item['detail'])}</span>")
            if item.get("kept"):
                why.append(f"kept {_ref_link(item['kept'], inspection, prefer_window=True)}")
            if item.get("slice"):
                why.append(f"<span class=\"detail\">slice {_e(item['slice'])}</span>")
            if item.get("tokens") is not None:
                why.append(f"<span class=\"detail\">smallest tier {_e(item['tokens'])} tokens</span>")
            out.append(f"<li>{_ref_link(item.get('ref'), inspection)}{': ' if why else ''}{'; '.join(why)}</li>")
        out.append("</ul></section>")
    out.append("</section>")
    return "\n".join(out)


def _roles(key: Any, inspection: Inspection) -> list[str]:
    """What the manifest says about one row version, as HTML fragments."""
    m = inspection.manifest
    roles = []
    memory = inspection.memory_at(key)
    if memory:
        roles.append(f"in the window at <a href=\"#{_mem_anchor(key)}\">position {_e(memory.get('position'))}</a>"
                     f", slice {_e(memory.get('slice'))}, tier {_e(memory.get('tier'))}, {_e(memory.get('status'))}")
    for item in m.get("excluded") or []:
        if ref_key(item.get("ref")) == key:
            roles.append(f"excluded by rule <a href=\"#excluded-{_cls(item.get('rule'))}\">{_e(item.get('rule'))}"
                         f"</a>{(': ' + _e(item['detail'])) if item.get('detail') else ''}")
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
    out = ["<section id=\"rows\"><h2>Source rows, as of the recorded snapshot</h2>"]
    for key in referenced_refs(inspection.manifest):
        row = inspection.row(key)
        out.append(f"<article class=\"row\" id=\"{_row_anchor(key)}\"><h3 class=\"mono\">{_e(ref_text(key))}</h3>")
        facts = [("row reference", f"<code>{_e(json.dumps(list(key), ensure_ascii=False))}</code> type "
                                   f"{_e(key[0])}, row id {_e(key[1])}, version {_e(key[2])}"),
                 ("citation id", f"<code>{_e(citation_id(key))}</code>")]
        roles = _roles(key, inspection)
        facts.append(("in this manifest", "<br>".join(roles) or "named"))
        if row is not None:
            scope = ", ".join(f"{name} {_e(row.get(name + '_id') or 'any')}" for name in ("user", "agent", "thread"))
            facts += [("status at the snapshot", _e(row.get("status"))),
                      ("valid", f"from {_e(row.get('valid_from'))} until {_e(row.get('valid_until') or 'open')}"),
                      ("scope", scope), ("written", _e(row.get("created_at"))),
                      ("source refs", _source_refs(row, inspection))]
        out.append("<dl class=\"facts\">" + "\n".join(f"<dt>{n}</dt> <dd>{v}</dd>" for n, v in facts) + "</dl>")
        if row is None:
            out.append("<p class=\"detail\">This row version could not be read at the recorded snapshot.</p>")
        else:
            out.append(f"<pre>{_e(row.get('content'))}</pre>")
            if row.get("content_json") is not None:
                out.append("<details><summary>content_json</summary><pre>"
                           f"{_e(json.dumps(row['content_json'], indent=2, ensure_ascii=False))}</pre></details>")
        out.append("</article>")
    out.append("</section>")
    return "\n".join(out)


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
    out = [f"<section id=\"diff\" class=\"diff\"><h2>Diff: this manifest → <code>{_e(diff.new_id)}</code></h2>",
           f"<p>Request hash: {hash_text}</p>",
           "<h3>What was asked, and what produced it</h3>",
           _list([f"{_e(c.what)}: {_value(c.old)} → {_value(c.new)}" for c in diff.asked], "no differences"),
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
            "</section>"]
    return "\n".join(out)


def render_page(inspection: Inspection, diff: ManifestDiff | None = None) -> str:
    """The whole page as one string (UTF-8 when written)."""
    body = [_header(inspection)]
    if diff is not None:
        body.append(_diff(diff, inspection))
    bar, table = _budget(inspection)
    body += [bar, "<div class=\"columns\">", _window(inspection), "<aside>", _exclusions(inspection), table,
             "</aside></div>",
             _rows(inspection),
             f"<footer>ctxasm {_e(__version__)} inspector · one self-contained file: no scripts, no fetches"
             "</footer>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>ctxasm manifest {_e(inspection.manifest_id)} ({_e(inspection.tenant_id)})</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")
