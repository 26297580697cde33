"""`ctxasm replay`: rebuild a recorded window and check it against its manifest.

1. The manifest must be visible to the tenant (RLS), and made by the same renderer, selection and code.
2. Every dependency (rendered rows, the current facts and historical sources of annotations, the budget) must
   be visible now, not erased, and readable as of the recorded snapshot (its history retained); so must every
   stored compression the window showed or wrote, read as it is now (one written during the window was stored
   after the snapshot). No row the selection read without showing it (the rest of the source list, the
   excluded rows) may have been erased either: the selection reads it again.
3. The selection runs again at the recorded snapshot and evaluation time with the recorded scores, the
   compressions the window wrote are put back from storage (never from a model), the window is composed again,
   and both the request hash and the manifest's account of the window must be equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxasm.core import render
from ctxasm.core.compose import WindowSpec, code_hash, compose
from ctxasm.core.compression import Stored, with_compressions, written_refs
from ctxasm.core.manifest import Manifest, dependencies, first_difference, read_rows
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.store import MemoryStore, WindowScope, row_states_of
from ctxasm.services.assemble import parse_time

MATCH, MISMATCH, UNAVAILABLE = "match", "mismatch", "unavailable"
EXIT_CODES = {MATCH: 0, MISMATCH: 5, UNAVAILABLE: 6}
#: The parts of a manifest that describe the window itself (not when or where it was recorded).
COMPARED = ("budget_ref", "required_refs", "memories", "excluded", "allocation", "request_tokens")


@dataclass(frozen=True)
class ReplayResult:
    status: str
    manifest_id: str
    reason: str | None = None
    recorded_hash: str | None = None
    rebuilt_hash: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "manifest_id": self.manifest_id, "reason": self.reason,
                "recorded_hash": self.recorded_hash, "rebuilt_hash": self.rebuilt_hash, "notes": list(self.notes)}

    def describe(self) -> str:
        lines = [f"replay of {self.manifest_id}: {self.status}"]
        if self.reason:
            lines.append(f"  {self.reason}")
        if self.recorded_hash:
            lines.append(f"  recorded request hash {self.recorded_hash}")
        if self.rebuilt_hash:
            lines.append(f"  rebuilt  request hash {self.rebuilt_hash}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def replay(store: MemoryStore, tenant_id: str, manifest_id: str) -> ReplayResult:
    return replay_window(store, tenant_id, manifest_id)[0]


def replay_window(store: MemoryStore, tenant_id: str, manifest_id: str
                  ) -> tuple[ReplayResult, dict[str, Any] | None]:
    """The replay result, and the rebuilt request when the window (or tool round) matched: then it is, byte for
    byte, the request the model received."""
    result, request = _replay_window(store, tenant_id, manifest_id)
    return result, request if result.status == MATCH else None


def _replay_window(store: MemoryStore, tenant_id: str, manifest_id: str) -> tuple[ReplayResult, Any]:
    recorded = store.read_manifest(tenant_id, manifest_id)
    if recorded is None:
        return ReplayResult(UNAVAILABLE, manifest_id, f"no manifest {manifest_id} is visible to tenant {tenant_id}"), None
    manifest = Manifest.checked(recorded)
    recorded_hash = manifest.get("request_hash")

    def unavailable(reason: str) -> tuple[ReplayResult, None]:
        return ReplayResult(UNAVAILABLE, manifest_id, reason, recorded_hash), None

    if manifest.round > 1:
        return _replay_round(store, tenant_id, manifest_id, manifest)
    running = store.selection_version()
    store.rollback()
    if manifest.get("selection_version") != running:
        return unavailable(f"selection version {manifest.get('selection_version')} is not the running {running}: "
                           "the selection rules changed since the window was recorded")
    if manifest.get("renderer_version") != render.RENDERER_VERSION:
        return unavailable(f"renderer version {manifest.get('renderer_version')} is not the running "
                           f"{render.RENDERER_VERSION}")
    if manifest.get("code_hash") != code_hash():
        return unavailable("the assembly code changed since the window was recorded "
                           f"(code_hash {str(manifest.get('code_hash'))[:12]} vs {code_hash()[:12]})")

    notes = []
    states = row_states_of(store, tenant_id, dependencies(manifest), manifest["scn"])
    for ref in dependencies(manifest):
        key = Ref.of(ref).key
        if key not in states:
            return unavailable(f"dependency {key} is gone: erased, purged or no longer authorized")
        status, status_then = states[key]
        if status == "erased":
            return unavailable(f"dependency {key} was erased")
        if status_then is None:
            return unavailable(f"history gone: dependency {key} cannot be read as of {manifest['scn']}")
        if status != status_then:
            notes.append(f"dependency {key} was {status_then} then and is {status} now; "
                         "replayed from its retained version")

    # A row the selection read without showing it (ranked below the cut, excluded by a rule) is read again: if it
    # was erased since, its scrubbed version changes the selection (dedup, scores, the window's numbering), so
    # the window cannot be rebuilt as it ran, whatever the model saw.
    read = read_rows(manifest)
    read_states = row_states_of(store, tenant_id, read, manifest["scn"])
    for ref in read:
        key = Ref.of(ref).key
        if read_states.get(key, ("",))[0] == "erased":
            return unavailable(f"{key}, which the selection read but did not show, was erased: the selection "
                               "cannot be rebuilt as it ran")
    store.rollback()

    scope = manifest["scope"]
    spec = WindowSpec(tenant_id=tenant_id, user_id=scope.get("user_id"), agent_id=scope.get("agent_id"),
                      thread_id=scope.get("thread_id"), intent=manifest["intent"], question=manifest["question"],
                      model=manifest["model"])
    selection = store.select_window(tenant_id, WindowScope(
        spec.user_id, spec.agent_id, spec.thread_id, spec.intent, parse_time(manifest["evaluation_time"]),
        spec.question, snapshot=manifest["scn"], sources=manifest["retrieval"]["items"]))
    store.rollback()
    stored, problem = _stored_compressions(store, tenant_id, manifest)
    if problem:
        return unavailable(problem)
    if stored:
        selection = with_compressions(selection, stored)
    rebuilt = compose(selection, spec)
    rebuilt_hash = rebuilt.manifest["request_hash"]
    recorded_part = {k: manifest.get(k) for k in COMPARED}
    rebuilt_part = {k: rebuilt.manifest.get(k) for k in COMPARED}
    if rebuilt_hash == recorded_hash and recorded_part == rebuilt_part:
        return ReplayResult(MATCH, manifest_id, None, recorded_hash, rebuilt_hash, tuple(notes)), rebuilt.request
    difference = first_difference(recorded_part, rebuilt_part)
    if difference is None:
        difference = first_difference(manifest.get("request_parts"), rebuilt.manifest.get("request_parts"))
        difference = f"request {difference}" if difference else "the request hash differs"
    return ReplayResult(MISMATCH, manifest_id, f"first difference: {difference}", recorded_hash, rebuilt_hash,
                        tuple(notes)), None


def _stored_compressions(store: MemoryStore, tenant_id: str, manifest: Manifest
                         ) -> tuple[dict[str, Stored], str | None]:
    """The stored compressions the window showed or wrote, checked (present, not erased) and read as they are now.
    Returns the ones written during the window (stored after its snapshot, so the selection at the snapshot does
    not have them; a model is never asked again), by the candidate each is of; or why one is not available."""
    written = {summary.key: source for source, summary in written_refs(manifest)}
    shown = [Ref.of(m["summary_ref"]).key for m in manifest.memories if m.get("summary_ref")]
    wanted = list(dict.fromkeys([*shown, *written]))
    if not wanted:
        return {}, None
    rows = store.read_compressions(tenant_id, [Ref.of(key).as_json() for key in wanted])
    store.rollback()
    for key in wanted:
        row = rows.get(key)
        if row is None:
            return {}, f"compression {key} is gone: erased, purged or no longer authorized"
        if row["status"] == "erased":
            return {}, f"compression {key} was erased"
    stored: dict[str, Stored] = {}
    for key, source in written.items():
        row = rows[key]
        if Ref.of(row["source"]) != source:
            return {}, f"compression {key} is of {Ref.of(row['source']).key}, not of {source.key}"
        tokens = row.get("content_tokens")
        stored[source.key] = Stored(Ref.of(key), row["content"],
                                    int(tokens) if tokens is not None else count_tokens(row["content"]),
                                    row["generating_model"], row["prompt_version"])
    return stored, None


def replay_round(store: MemoryStore, tenant_id: str, manifest_id: str, manifest: dict[str, Any]) -> ReplayResult:
    """A tool round of the agent loop: its first window must replay, then the request is rebuilt from it, the
    recorded model turns and the stored tool results, and must hash to the recorded request."""
    return _replay_round(store, tenant_id, manifest_id, Manifest.checked(manifest))[0]


def _replay_round(store: MemoryStore, tenant_id: str, manifest_id: str, manifest: Manifest
                  ) -> tuple[ReplayResult, dict[str, Any] | None]:
    recorded_hash = manifest["request_hash"]
    first_id = manifest.first_manifest_id
    if not first_id:
        return ReplayResult(UNAVAILABLE, manifest_id, "a tool round's manifest names no first window",
                            recorded_hash), None
    first, request = replay_window(store, tenant_id, first_id)
    if request is None:
        return ReplayResult(first.status, manifest_id, f"its first window {first_id}: {first.reason}",
                            recorded_hash), None
    entries = {Ref.of(m["ref"]).id: m for m in manifest.tool_results}
    messages = list(request["messages"])
    for turn in manifest.turns:
        messages.append(turn["assistant"])
        calls = [call["id"] for call in turn["assistant"]["tool_calls"]]
        for call_id, record_id in zip(calls, turn["tool_results"]):
            event = store.read_event(tenant_id, record_id)
            if event is None or event["event_type"] != "tool_result":
                return ReplayResult(UNAVAILABLE, manifest_id, f"tool result {record_id} of round {turn['round']} "
                                    "is gone: erased, purged or no longer authorized", recorded_hash), None
            entry = entries.get(record_id)
            if entry is None or entry["call_id"] != call_id:
                return ReplayResult(MISMATCH, manifest_id, f"tool result {record_id} is not the manifest's answer "
                                    f"to call {call_id}", recorded_hash), None
            messages.append({"role": "tool", "tool_call_id": call_id, "content": event["content"]})
    rebuilt = {**request, "messages": messages, **manifest.get("request_options", {})}
    rebuilt_hash = render.request_hash(rebuilt)
    if rebuilt_hash == recorded_hash:
        return ReplayResult(MATCH, manifest_id, None, recorded_hash, rebuilt_hash,
                            (f"round {manifest['round']}: first window {first_id} replayed, then "
                             f"{len(manifest.turns)} model turn(s) and {len(entries)} stored tool result(s)",)
                            ), rebuilt
    difference = first_difference(manifest.get("request_parts"), render.part_hashes(rebuilt))
    return ReplayResult(MISMATCH, manifest_id, f"request {difference or 'hash differs'}", recorded_hash,
                        rebuilt_hash), None
