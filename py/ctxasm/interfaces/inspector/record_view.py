"""A recorded model response or tool result (ctxasm.services.records) in the terminal or as one page."""

from __future__ import annotations

import html
import json
from typing import Any

from ctxasm.api.inspection import Record


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def describe_record(record: Record) -> str:
    """A model response or a tool result in the terminal (a provider request opens its window instead)."""
    from ctxasm.interfaces.inspector.text import safe_line

    data = record.content_json
    out = [f"== {record.event_type} {record.record_id} (tenant {record.tenant_id}) =="]
    if data.get("round") is not None:
        out.append(f"round {data.get('round')}")
    if record.event_type == "tool_result":
        out.append(f"call {data.get('call_id')}: {data.get('tool')}({safe_line(json.dumps(data.get('arguments')))})")
        items = ", ".join(data.get("items") or []) or "none"
        dropped = ", ".join(data.get("dropped") or []) or "none"
        out.append(f"tier {data.get('tier')}, {data.get('tokens')} tokens; items {items}; left out {dropped}")
        out.append("as the model received it:")
        out += [safe_line(line, None) for line in record.content.split("\n")]
    elif record.event_type == "model_response":
        response = data.get("response") or {}
        for choice in response.get("choices") or []:
            message = choice.get("message") or {}
            out.append(f"finish reason {choice.get('finish_reason')}")
            if message.get("content"):
                out.append("answer:")
                out += [safe_line(line, None) for line in str(message["content"]).split("\n")]
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                out.append(f"tool call {call.get('id')}: {function.get('name')}({safe_line(function.get('arguments'))})")
        if response.get("usage"):
            out.append(f"usage: {safe_line(json.dumps(response['usage']), None)}")
    else:
        out.append(safe_line(record.content, None))
        out += [safe_line(line, None) for line in _json(dict(data)).split("\n")]
    return "\n".join(out)


def record_page(record: Record) -> str:
    """A model response or a tool result as one self-contained page."""
    from ctxasm import __version__
    from ctxasm.interfaces.inspector.page import CSS

    def e(value: Any) -> str:
        return html.escape("" if value is None else str(value), quote=True)

    data = record.content_json
    body = [f"<header><h1>{e(record.event_type)} <code>{e(record.record_id)}</code></h1>"
            f"<p class=\"sub\">tenant <strong>{e(record.tenant_id)}</strong>"
            + (f" · round {e(data.get('round'))}" if data.get("round") is not None else "") + "</p></header>"]
    if record.event_type == "tool_result":
        body.append(f"<dl class=\"facts one\"><dt>call</dt><dd><code>{e(data.get('call_id'))}</code> "
                    f"{e(data.get('tool'))}</dd><dt>arguments</dt><dd><code>{e(json.dumps(data.get('arguments')))}"
                    f"</code></dd><dt>tier</dt><dd>{e(data.get('tier'))}, {e(data.get('tokens'))} tokens</dd>"
                    f"<dt>items</dt><dd>{e(', '.join(data.get('items') or []) or 'none')}</dd><dt>left out</dt>"
                    f"<dd>{e(', '.join(data.get('dropped') or []) or 'none')}</dd></dl>"
                    f"<h2>As the model received it</h2><pre id=\"record-content\">{e(record.content)}</pre>")
    elif record.event_type == "model_response":
        response = data.get("response") or {}
        for choice in response.get("choices") or []:
            message = choice.get("message") or {}
            body.append(f"<h2>Choice {e(choice.get('index'))}: {e(choice.get('finish_reason'))}</h2>")
            if message.get("content"):
                body.append(f"<pre id=\"record-content\">{e(message['content'])}</pre>")
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                body.append(f"<pre>tool call <code>{e(call.get('id'))}</code>: {e(function.get('name'))}"
                            f"({e(function.get('arguments'))})</pre>")
        body.append(f"<details><summary>the stored response</summary><pre>{e(_json(response))}</pre></details>")
    else:
        body.append(f"<pre id=\"record-content\">{e(record.content)}</pre><pre>{e(_json(dict(data)))}</pre>")
    body.append(f"<footer>ctxasm {e(__version__)} inspector · one self-contained file: no scripts, no fetches</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>ctxasm {e(record.event_type)} {e(record.record_id)}</title><style>{CSS}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")
