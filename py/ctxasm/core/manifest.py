"""The manifest of one window: the JSON document a window is recorded as (contract/schemas/manifest.schema.json),
a typed wrapper over it (Manifest), its validation, the tool-round manifests of the agent loop, and the rows a
window depended on. Pure.

A Manifest is the dict itself, so what is recorded, hashed and compared stays the same bytes; the class adds the
accessors the code reads it by and the one way a tool round extends it. It is validated where it is written
(before record_manifest) and where it is read back (replay, the inspector, `ctxasm show`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ctxasm.core import render, schemas
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import count_tokens
from ctxasm.core.tool_results import TOOL_RESULTS, FittedResult
from ctxasm.errors import InvalidManifest


def manifest_problems(data: Any, checked_sources: Sequence[Mapping[str, Any]] = ()) -> list[tuple[str, str]]:
    """(JSON path, problem) of every place `data` breaks the manifest schema, the most specific first; [].

    `checked_sources`: the retrieval sources of the selection document the manifest was composed from, which
    Selection.parse checked against the same definition (`source`, word for word in both schemas). When the
    manifest's retrieval items are those very objects, in order, they are not walked again: at a large budget
    they are most of the manifest."""
    return schemas.problems(schemas.MANIFEST, _without_checked_sources(data, checked_sources))


def _without_checked_sources(data: Any, checked: Sequence[Mapping[str, Any]]) -> Any:
    retrieval = data.get("retrieval") if isinstance(data, dict) and checked else None
    if not isinstance(retrieval, dict):
        return data
    items = retrieval.get("items")
    if (not isinstance(items, list) or len(items) != len(checked)
            or any(item is not source for item, source in zip(items, checked))):
        return data
    return {**data, "retrieval": {**retrieval, "items": []}}


def validate_manifest(data: Any, checked_sources: Sequence[Mapping[str, Any]] = ()) -> None:
    """Raise InvalidManifest naming the JSON path of the bad field when `data` is not a manifest (see
    manifest_problems for `checked_sources`)."""
    problems = manifest_problems(data, checked_sources)
    if problems:
        path, problem = problems[0]
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise InvalidManifest(f"invalid_manifest: {path}: {problem}{more}")


class Manifest(dict[str, Any]):
    """One window's manifest (contract/schemas/manifest.schema.json). Fields beyond the accessors are read by
    key, as for any dict; `docs/manifest.md` lists them all."""

    @classmethod
    def checked(cls, data: Mapping[str, Any]) -> Manifest:
        """`data` as a Manifest once it validates; InvalidManifest names the bad field's JSON path."""
        validate_manifest(data)
        return data if isinstance(data, Manifest) else cls(data)

    @property
    def memories(self) -> list[dict[str, Any]]:
        """Every entry the request shows, in position order (tool results last)."""
        return self["memories"]

    @property
    def excluded(self) -> list[dict[str, Any]]:
        return self["excluded"]

    @property
    def allocation(self) -> dict[str, Any]:
        return self["allocation"]

    @property
    def scope(self) -> dict[str, str | None]:
        return self["scope"]

    @property
    def budget_ref(self) -> Ref:
        return Ref.of(self["budget_ref"])

    @property
    def required_refs(self) -> list[Ref]:
        return [Ref.of(ref) for ref in self["required_refs"]]

    @property
    def round(self) -> int:
        """The agent-loop round whose request this manifest describes: 1 for the assembled window."""
        return int(self.get("round", 1))

    @property
    def first_manifest_id(self) -> str | None:
        """A tool round's first window; None for the first window itself."""
        return self.get("first_manifest_id")

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The earlier rounds' assistant turns and tool results ([] for the first window)."""
        return self.get("turns", [])

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool results the request shows (slice tool_results), in position order."""
        return [memory for memory in self["memories"] if memory.get("slice") == TOOL_RESULTS]

    def dependencies(self) -> list[list[Any]]:
        return dependencies(self)

    def issued(self) -> Iterator[tuple[str, Sequence[Any]]]:
        return issued(self)

    def next_round(self, first_manifest_id: str, request: Mapping[str, Any], limit: int,
                   assistant: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> Manifest:
        """The manifest of the next round's request: this one plus the turn that led to it (the assistant's
        tool calls and their `results`, tool_result_entry's, appended to the memories), with the new request's
        hashes, count and limit; what replay needs to rebuild the request exactly."""
        number = self.round
        manifest = Manifest(json.loads(json.dumps(self)))
        turn = {"round": number, "assistant": assistant, "tool_results": [Ref.of(e["ref"]).id for e in results]}
        manifest["turns"] = manifest.turns + [turn]
        if "tool_choice" in request:
            manifest["request_options"] = {"tool_choice": request["tool_choice"]}
        memories = manifest.memories
        for entry in results:
            memories.append(dict(entry, position=len(memories) + 1))
        manifest.update(round=number + 1, first_manifest_id=first_manifest_id,
                        request_hash=render.request_hash(request), request_parts=render.part_hashes(request),
                        request_tokens=count_tokens(render.serialize(request)), request_limit=limit)
        return manifest


def tool_result_entry(event_id: str, tool: str, fitted: FittedResult, round_number: int, call_id: str,
                      arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool result as a round's manifest lists it (its position is set by Manifest.next_round): the
    tool_result event it was stored as, its tier and cost, and the rows it showed and left out."""
    ref = Ref("conversation", event_id, 1)
    return {"id": render.memory_id(ref), "ref": ref.as_json(), "type": "tool_result", "status": "tool",
            "slice": TOOL_RESULTS, "tier": fitted.tier, "tokens": fitted.tokens, "origin": f"tool:{tool}",
            "round": round_number, "call_id": call_id, "arguments": arguments,
            "items": [{"id": i.memory_id, "ref": i.ref.as_json()} for i in fitted.kept],
            "dropped": [{"id": i.memory_id, "ref": i.ref.as_json()} for i in fitted.dropped]}


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


def read_rows(manifest: Mapping[str, Any]) -> list[list[Any]]:
    """Every row the selection read that the window did not show: the other entries of the recorded source list
    and the excluded rows, each once, in a stable order. Replay reads them again, so one erased since changes what
    the selection would decide even though the model never saw it."""
    shown = {Ref.of(ref).key for ref in dependencies(manifest)}
    refs = [item["ref"] for item in (manifest.get("retrieval") or {}).get("items") or () if item.get("ref")]
    refs += [entry["ref"] for entry in manifest.get("excluded") or () if entry.get("ref")]
    unique: dict[str, list[Any]] = {}
    for ref in refs:
        key = Ref.of(ref).key
        if key not in shown:
            unique.setdefault(key, list(ref))
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
