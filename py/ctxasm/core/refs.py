"""A row version as a manifest, a selection and the database name it: the one place its two forms are read
and written. Pure."""

from __future__ import annotations

from collections.abc import Sequence
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

    def as_source_ref(self) -> dict[str, Any]:
        """`{"type", "id", "version"}`, as an event's source_refs name the rows it derives from."""
        return {"type": self.memory_type, "id": self.id, "version": self.version}

    def __str__(self) -> str:
        return self.key
