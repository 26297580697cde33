"""`ctxasm load --upsert`: what a scenario file's memory says compared with what is stored, so a load writes only
the difference, through the lifecycle routines (supersede, delete_memory), never in place.

A memory's state in the file is its last version: the item's fields with each of its `versions` merged over them.
It is compared with the memory's latest stored version, field by field, on the fields the file gives. The row's
embedding and token count are derived from its text and are not compared. `valid_from` counts as a change only
when the file's is later than the stored version's: a new version written by an earlier upsert starts at the
time it was written, later than the file's original `valid_from`, and must not look changed at the next load.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from ctxasm.engines.store import MemoryStore, row_states_of
from ctxasm.memory_types import BY_NAME

#: What stored_memories gives for a memory whose rows were erased.
ERASED = object()


#: The key of a row the loader adds for a memory of the file (a long chunk's compression and its source_ref,
#: load.compress_chunks): the JSON path its errors name, the memory's it was made for (not one past the file's
#: last memory).
ADDED_FOR = "added_for"
#: Keys of a file's memory that steer the loader rather than describe the row.
LOADER_KEYS = ("type", "versions", "deleted_at", ADDED_FOR)
#: Columns the database derives (or the loader computes from the text), never compared.
_DERIVED = frozenset({"id", "version", "status", "embedding", "content_tokens", "valid_from", "created_at"})
#: (type, id, version) field triples that name another row by its version: a version number in a file counts
#: that file's versions, which after an upsert may differ from the version stored.
_VERSION_REFS = (("source_type", "source_id", "source_version"), ("derived_type", "derived_id", "derived_version"))


def stored_memories(store: MemoryStore, tenant_id: str,
                    refs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """(type, id) -> the latest stored row version (a dict), or ERASED, for each of `refs` the tenant has.
    The store's tenant must be set; on PostgreSQL the transaction is rolled back by the state read."""
    wanted = list(dict.fromkeys(refs))
    # row_states answers for the types of the memory-row view only (PostgreSQL's ctx_memory.row_states joins
    # ctxasm.memory_row); the loader's own rows (a chunk's compression and its source_ref) are never candidates
    # and not in it: those types are read whole below, every wanted id of them a maybe.
    derived = {kind for kind, _ in wanted if kind in BY_NAME and not BY_NAME[kind].slice}
    asked = [ref for ref in wanted if ref[0] not in derived]
    snapshot = store.capture_snapshot()
    states = row_states_of(store, tenant_id, [[kind, memory_id, 1] for kind, memory_id in asked], snapshot)
    found: dict[tuple[str, str], Any] = {ref: None for ref in wanted if ref[0] in derived}
    for kind, memory_id in asked:
        state = states.get(f"{kind}:{memory_id}:1")
        if state is not None:
            found[(kind, memory_id)] = ERASED if state[0] == "erased" else None
    kinds = sorted({kind for (kind, _), row in found.items() if row is None})
    if kinds:
        store.set_tenant(tenant_id)
        snapshot = store.capture_snapshot()
        for kind in kinds:
            for row in store.rows_as_of(kind, snapshot):  # ordered by id and version: the last one stays
                key = (kind, row.get("id"))
                if key in found and found[key] is not ERASED:
                    found[key] = ERASED if row.get("status") == "erased" else row
    return {key: row for key, row in found.items() if row is not None}


def row_fields(memory: dict[str, Any]) -> dict[str, Any]:
    """A file's memory as the row it describes: its fields without the keys that steer the loader."""
    return {k: v for k, v in memory.items() if k not in LOADER_KEYS}


def final_state(memory: dict[str, Any], versions_now: dict[tuple[str, str], tuple[int, int]]) -> dict[str, Any]:
    """The memory's last version as the file describes it. A reference to another row's version that is that
    row's last version in the file is rewritten to the version stored for it (`versions_now`: (type, id) ->
    (the file's last version, the stored one))."""
    state = row_fields(memory)
    for version in memory.get("versions", []):
        state.update(version)
    for type_key, id_key, version_key in _VERSION_REFS:
        state[version_key] = _stored_version(state.get(type_key), state.get(id_key), state.get(version_key),
                                             versions_now)
        if state[version_key] is None:
            del state[version_key]
    if isinstance(state.get("source_refs"), list):
        state["source_refs"] = [
            {**ref, "version": _stored_version(ref.get("type"), ref.get("id"), ref.get("version"), versions_now)}
            if isinstance(ref, dict) and "version" in ref else ref
            for ref in state["source_refs"]]
    return state


def _stored_version(kind: Any, memory_id: Any, version: Any,
                    versions_now: dict[tuple[str, str], tuple[int, int]]) -> Any:
    file_last, stored = versions_now.get((kind, memory_id), (None, None))
    return stored if file_last is not None and version == file_last else version


def difference(final: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The record to supersede `current` with so it says what `final` says; {} when nothing differs."""
    changed = {key: value for key, value in final.items()
               if key not in _DERIVED and not same(value, current.get(key))}
    file_from, stored_from = instant(final.get("valid_from")), instant(current.get("valid_from"))
    if file_from is not None and stored_from is not None and file_from > stored_from:
        changed["valid_from"] = final["valid_from"]
    if not changed:
        return {}
    if "valid_from" not in changed and stored_from is not None and stored_from > datetime.now(timezone.utc):
        changed["valid_from"] = current["valid_from"]  # a version may not start before the one it replaces
    if final.get("embedding") is not None:
        changed["embedding"] = final["embedding"]
    return changed


def same(wanted: Any, stored: Any) -> bool:
    """Whether a value of the file equals the stored one, as JSON from either engine gives it back (timestamps
    in another notation, numbers as floats, a JSON document as text)."""
    if wanted is None or stored is None:
        return wanted is None and stored is None
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return wanted is stored or wanted == stored and type(wanted) is type(stored)
    if isinstance(wanted, (int, float)):
        try:
            return abs(float(wanted) - float(stored)) <= 1e-9 * max(1.0, abs(float(wanted)))
        except (TypeError, ValueError):
            return False
    if isinstance(wanted, (dict, list)) and isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return False
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(same(wanted.get(k), stored.get(k)) for k in wanted.keys() | stored.keys())
    if isinstance(wanted, list):
        return isinstance(stored, list) and len(wanted) == len(stored) and all(map(same, wanted, stored))
    if wanted == stored:
        return True
    a, b = instant(wanted), instant(stored)
    return a is not None and a == b


def instant(value: Any) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime (UTC when it names no offset), else None."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str) or len(value) < 10 or value[4:5] != "-":
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
