"""The manifest of one window: its row references (Ref), its typed wrapper (Manifest), validation against
contract/schemas/manifest.schema.json, and the rows a window depended on. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple


class Ref(NamedTuple):
    """One row version, as a manifest names it: JSON `[type, id, version]`, keyed as "type:id:version" (the
    one string the database keys row states and scores by). The only place either form is built or read."""

    memory_type: str
    id: str
    version: int

    @classmethod
    def of(cls, value: Any) -> Ref:
        """A Ref from `[type, id, version]` (list or tuple) or "type:id:version" (a row id may hold ':').
        ValueError names what is wrong."""
        if isinstance(value, str):
            kind, _, rest = value.partition(":")
            row_id, _, version = rest.rpartition(":")
            parts: Sequence[Any] = (kind, row_id, version)
            if not (kind and row_id and version):
                raise ValueError(f"a row reference must be 'type:id:version', got {value!r}")
        elif isinstance(value, (list, tuple)) and len(value) == 3:
            parts = value
        else:
            raise ValueError(f"a row reference must be [type, id, version], got {value!r}")
        kind, row_id, version = parts
        if isinstance(version, bool):
            raise ValueError(f"a row reference's version must be a whole number, got {version!r}")
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise ValueError(f"a row reference's version must be a whole number, got {version!r}") from None
        return cls(str(kind), str(row_id), number)

    @classmethod
    def maybe(cls, value: Any) -> Ref | None:
        """Ref.of, or None where `value` is missing or not a row reference (a reader of stored manifests)."""
        if not value:
            return None
        try:
            return cls.of(value)
        except ValueError:
            return None

    @property
    def key(self) -> str:
        """"type:id:version"."""
        return f"{self.memory_type}:{self.id}:{self.version}"

    def as_json(self) -> list[Any]:
        """`[type, id, version]`, as the manifest and the database's JSON carry it."""
        return [self.memory_type, self.id, self.version]

    def __str__(self) -> str:
        return self.key


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
        unique.setdefault(Ref.of(ref).key, list(ref))
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
