"""Helpers over a manifest's plain JSON: row references and the rows a window depended on. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any


def ref_key(ref: Sequence[Any]) -> str:
    """A row reference [type, id, version] as the one string the database keys row states and scores by:
    "type:id:version"."""
    return f"{ref[0]}:{ref[1]}:{ref[2]}"


def dependencies(manifest: Mapping[str, Any]) -> list[list[Any]]:
    """Every row the window depended on, each once, in a stable order."""
    refs: list[list[Any]] = [manifest["budget_ref"]]
    for memory in manifest["memories"]:
        refs.append(memory["ref"])
        for note in memory.get("annotation_refs", ()):
            refs.append(note["source"])
            if note.get("current"):
                refs.append(note["current"])
    unique: dict[str, list[Any]] = {}
    for ref in refs:
        unique.setdefault(ref_key(ref), list(ref))
    return list(unique.values())


def issued(manifest: Mapping[str, Any]) -> Iterator[tuple[str, Sequence[Any]]]:
    """(id, row reference) of every id the window showed: its memories and the items of its tool results."""
    for memory in manifest.get("memories") or ():
        for entry in (memory, *(memory.get("items") or ())):
            if entry.get("id") and entry.get("ref"):
                yield str(entry["id"]), entry["ref"]


def first_difference(recorded: Any, rebuilt: Any, path: str = "") -> str | None:
    """The first place two JSON values differ, as a path with both values."""
    if isinstance(recorded, dict) and isinstance(rebuilt, dict):
        for key in list(recorded) + [k for k in rebuilt if k not in recorded]:
            found = first_difference(recorded.get(key), rebuilt.get(key), f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(rebuilt, list):
        for index in range(max(len(recorded), len(rebuilt))):
            left = recorded[index] if index < len(recorded) else "<absent>"
            right = rebuilt[index] if index < len(rebuilt) else "<absent>"
            found = first_difference(left, right, f"{path}[{index}]")
            if found:
                return found
        return None
    if recorded != rebuilt:
        return f"{path}: recorded {recorded!r}, rebuilt {rebuilt!r}"
    return None
