"""What changed between two manifests of one tenant: what was asked, the memories, the exclusions, the budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxasm.services.inspection import RefKey, ref_key

#: Top-level manifest keys compared as "what was asked and what produced it".
ASKED_KEYS: tuple[str, ...] = ("question", "intent", "model", "scope", "evaluation_time", "scn", "budget_ref",
                               "request_tokens", "request_limit", "required_refs", "renderer_version",
                               "selection_version", "code_hash", "tokenizer", "scorer", "mode")
#: Per-memory fields compared for a row version in both windows.
MEMORY_FIELDS: tuple[str, ...] = ("tier", "status", "slice", "tokens")


@dataclass(frozen=True)
class Change:
    what: str
    old: Any
    new: Any


@dataclass(frozen=True)
class MemoryChange:
    ref: RefKey
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class VersionChange:
    """The same row in both windows, but another version (e.g. a fact superseded between the two)."""

    kind: str
    row_id: str
    old_versions: tuple[int, ...]
    new_versions: tuple[int, ...]


@dataclass(frozen=True)
class ManifestDiff:
    old_id: str
    new_id: str
    request_hash_equal: bool
    old_hash: str
    new_hash: str
    asked: tuple[Change, ...] = ()
    added: tuple[Mapping[str, Any], ...] = ()
    removed: tuple[Mapping[str, Any], ...] = ()
    changed: tuple[MemoryChange, ...] = ()
    versions: tuple[VersionChange, ...] = ()
    excluded_added: tuple[Mapping[str, Any], ...] = ()
    excluded_removed: tuple[Mapping[str, Any], ...] = ()
    allocation: tuple[Change, ...] = field(default=())

    @property
    def windows_differ(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.excluded_added or self.excluded_removed
                    or self.allocation or not self.request_hash_equal)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def _memories(manifest: Mapping[str, Any]) -> dict[RefKey, Mapping[str, Any]]:
    found: dict[RefKey, Mapping[str, Any]] = {}
    for memory in sorted(manifest.get("memories") or [], key=lambda m: m.get("position") or 0):
        key = ref_key(memory.get("ref"))
        if key:
            found.setdefault(key, memory)
    return found


def _slice_ranks(memories: Mapping[RefKey, Mapping[str, Any]]) -> dict[RefKey, int]:
    """1-based order of each memory inside its slice (the memories come in position order)."""
    counters: dict[str, int] = {}
    ranks: dict[RefKey, int] = {}
    for key, memory in memories.items():
        name = str(memory.get("slice"))
        counters[name] = counters.get(name, 0) + 1
        ranks[key] = counters[name]
    return ranks


def _exclusions(manifest: Mapping[str, Any]) -> dict[tuple[RefKey | None, str], Mapping[str, Any]]:
    return {(ref_key(item.get("ref")), str(item.get("rule"))): item for item in manifest.get("excluded") or []}


def diff_manifests(old: Mapping[str, Any], new: Mapping[str, Any], *, old_id: str = "A",
                   new_id: str = "B") -> ManifestDiff:
    """`new` compared with `old`: "added" is in `new` only, "removed" in `old` only."""
    asked = tuple(Change(key, old.get(key), new.get(key)) for key in ASKED_KEYS if old.get(key) != new.get(key))

    before, after = _memories(old), _memories(new)
    added = tuple(after[key] for key in after if key not in before)
    removed = tuple(before[key] for key in before if key not in after)
    changed = []
    old_ranks, new_ranks = _slice_ranks(before), _slice_ranks(after)
    for key in before:
        if key in after:
            changes = tuple(Change(name, before[key].get(name), after[key].get(name)) for name in MEMORY_FIELDS
                            if before[key].get(name) != after[key].get(name))
            if old_ranks[key] != new_ranks[key] and before[key].get("slice") == after[key].get("slice"):
                changes += (Change("order in slice", old_ranks[key], new_ranks[key]),)
            if changes:
                changed.append(MemoryChange(key, changes))

    def versions_by_row(keys) -> dict[tuple[str, str], tuple[int, ...]]:
        rows: dict[tuple[str, str], list[int]] = {}
        for kind, row_id, version in keys:
            rows.setdefault((kind, row_id), []).append(version)
        return {row: tuple(sorted(v)) for row, v in rows.items()}

    old_rows, new_rows = versions_by_row(before), versions_by_row(after)
    versions = tuple(VersionChange(kind, row_id, old_rows[(kind, row_id)], new_rows[(kind, row_id)])
                     for kind, row_id in old_rows
                     if (kind, row_id) in new_rows and old_rows[(kind, row_id)] != new_rows[(kind, row_id)])

    old_excluded, new_excluded = _exclusions(old), _exclusions(new)
    excluded_added = tuple(item for key, item in new_excluded.items() if key not in old_excluded)
    excluded_removed = tuple(item for key, item in old_excluded.items() if key not in new_excluded)

    old_alloc, new_alloc = _flatten(old.get("allocation") or {}), _flatten(new.get("allocation") or {})
    allocation = tuple(Change(path, old_alloc.get(path), new_alloc.get(path))
                       for path in list(old_alloc) + [p for p in new_alloc if p not in old_alloc]
                       if old_alloc.get(path) != new_alloc.get(path))

    old_hash, new_hash = str(old.get("request_hash") or ""), str(new.get("request_hash") or "")
    return ManifestDiff(old_id=old_id, new_id=new_id, request_hash_equal=bool(old_hash) and old_hash == new_hash,
                        old_hash=old_hash, new_hash=new_hash, asked=asked, added=added, removed=removed,
                        changed=tuple(changed), versions=versions, excluded_added=excluded_added,
                        excluded_removed=excluded_removed, allocation=allocation)
