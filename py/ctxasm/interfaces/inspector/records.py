"""What the agent loop recorded, opened by id: provider requests, model responses and tool results.

`ctxasm inspect ID` takes a manifest id or the id of one of these records. A provider request opens the page of
the window it was sent for, with the recorded request as the literal request (its hash checked against the
manifest's); a model response and a tool result are shown as they were stored, with the round and call they
belong to.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ctxasm.core import render
from ctxasm.errors import CtxasmError
from ctxasm.engines.store import MemoryStore
from ctxasm.services.inspection import Inspection, ManifestNotFound, load_inspection

RECORD_TYPES = ("provider_request", "model_response", "tool_result")


class RecordErased(CtxasmError):
    code = "record_erased"
    exit_code = 1

    def __init__(self, record_id: str):
        super().__init__(f"record_erased: {record_id!r} was erased (erasure follows every copy of a memory, and "
                         "every record of a window that rendered it)")


@dataclass(frozen=True)
class Record:
    """One recorded event of the agent loop."""

    record_id: str
    tenant_id: str
    event_type: str
    content: str
    content_json: Mapping[str, Any]

    @property
    def manifest_id(self) -> str | None:
        value = self.content_json.get("manifest_id")
        return str(value) if value else None


def load_record(store: MemoryStore, tenant_id: str, record_id: str) -> Record:
    """The tenant's recorded event `record_id`; RecordErased when it was erased, ManifestNotFound (which names
    records too) when the tenant has nothing of that id."""
    event = store.read_event(tenant_id, record_id)
    if event is None:
        try:
            snapshot = store.capture_snapshot()
            store.rollback()
            states = store.row_states(tenant_id, [["conversation", record_id, 1]], snapshot)
        except CtxasmError:
            store.rollback()
            states = {}
        if (states.get(f"conversation:{record_id}:1") or [None])[0] == "erased":
            raise RecordErased(record_id)
        raise ManifestNotFound(record_id, tenant_id)
    content_json = event.get("content_json")
    return Record(record_id, tenant_id, str(event.get("event_type")), str(event.get("content") or ""),
                  content_json if isinstance(content_json, Mapping) else {})


def inspection_of_request(store: MemoryStore, record: Record) -> Inspection:
    """The window a recorded provider request was sent for, with that request as the literal request when its
    hash is the manifest's."""
    manifest_id = record.manifest_id
    if not manifest_id:
        raise ManifestNotFound(record.record_id, record.tenant_id)
    inspection = load_inspection(store, record.tenant_id, manifest_id, with_request=False)
    request = record.content_json.get("request")
    recorded = inspection.manifest.get("request_hash")
    if isinstance(request, Mapping) and render.request_hash(request) == recorded:
        note = (f"the provider request recorded as {record.record_id} (round {record.content_json.get('round', 1)}); "
                "its sha256 equals the manifest's request hash")
        return replace(inspection, request=request, request_note=note)
    note = (f"the provider request recorded as {record.record_id} does not hash to the manifest's request hash "
            f"({str(recorded)[:16]}…): it is not shown as the window's request")
    return replace(inspection, request=None, request_note=note)


def rows_then(store: MemoryStore, tenant_id: str, memory_type: str, snapshot: str) -> list[Mapping[str, Any]]:
    """The tenant's rows of one type as of a snapshot ([] when the type is unknown or the snapshot unreadable)."""
    try:
        store.set_tenant(tenant_id)
        return list(store.rows_as_of(memory_type, snapshot))
    except CtxasmError:
        return []
    finally:
        store.rollback()


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
