"""What the agent loop recorded, opened by id: provider requests, model responses and tool results.

`load_by_id` takes a manifest id or the id of one of these records. A provider request opens the window it was
sent for, with the recorded request as the literal request (its hash checked against the manifest's); a model
response and a tool result come as they were stored (ctxasm.interfaces.inspector.record_view shows them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ctxasm.core import render
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import CtxasmError
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


def load_by_id(store: MemoryStore, tenant_id: str, some_id: str) -> Inspection | Record:
    """A manifest, or a record of the agent loop, by id: a provider request opens the window it was sent for."""
    try:
        return load_inspection(store, tenant_id, some_id)
    except ManifestNotFound:
        record = load_record(store, tenant_id, some_id)
    if record.event_type == "provider_request":
        return inspection_of_request(store, record)
    return record
