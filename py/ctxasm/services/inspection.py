"""A recorded manifest and the row versions it names, read through the tenant's application connection.

The manifest says which row versions went into a window; the rows themselves are read with
`rows_as_of(type, manifest.scn)`, the same snapshot the selection used, so the inspector shows the text as it was
when the window was assembled, even if the row has been superseded or deleted since.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ctxasm.core import render
from ctxasm.core.manifest import Manifest, issued
from ctxasm.core.refs import Ref
from ctxasm.engines.store import MemoryStore, row_states_of
from ctxasm.errors import CtxasmError, InvalidMemoryType, InvalidSnapshot

#: A row version the inspector keys rows by (a Ref is a (type, id, version) tuple).
RefKey = Ref

#: The order of slices in the request: the developer message (guidelines, persona, the memory instructions, which
#: are guideline rows charged to the guidelines slice), the tools, the thread's recent turns, the memory records of
#: the last user message, then the question (ctxasm.core.render).
REQUEST_LAYOUT: tuple[str, ...] = ("guidelines", "persona", "memory_instructions", "tools", "volatile_tail",
                                   "durable_facts", "evidence", "recalled_history", "question")
#: The window view's section of the memory instructions (their manifest slice is guidelines).
INSTRUCTIONS = "memory_instructions"
FIXED = frozenset({"guidelines", "persona", "tools", "question", INSTRUCTIONS})
#: The exclusion rules in the order the selection applies them (docs/assembly.md).
RULE_ORDER: tuple[str, ...] = ("lifecycle", "dedup", "conflict", "candidate_limit", "slice_budget", "tier_limit",
                               "request_budget")
#: Slices whose entries are tool results of the agent loop, paid from the tool reserve.
TOOL_RESULTS = "tool_results"


class ManifestNotFound(CtxasmError):
    code = "manifest_not_found"
    exit_code = 1

    def __init__(self, manifest_id: str, tenant_id: str):
        self.manifest_id = manifest_id
        self.tenant_id = tenant_id
        super().__init__(f"manifest_not_found: no manifest {manifest_id!r} for tenant {tenant_id!r} "
                         "(a manifest of another tenant is not visible)")


def ref_key(ref: Sequence[Any] | None) -> RefKey | None:
    """The Ref of a manifest's `[type, id, version]`, or None where it is missing or malformed."""
    return Ref.maybe(ref)


def ref_text(ref: Sequence[Any] | None) -> str:
    """`entity / fact_helios_rag_beir_ndcg10 / version 2`"""
    if not ref:
        return "none"
    if len(ref) != 3:
        return " / ".join(str(part) for part in ref)
    return f"{ref[0]} / {ref[1]} / version {ref[2]}"


def citation_id(ref: Sequence[Any]) -> str:
    """The row version's stable id (render.memory_id): the same in every window, so it anchors links."""
    key = ref_key(ref)
    return render.memory_id(key) if key else "M?"


def issued_ids(manifest: Mapping[str, Any]) -> dict[RefKey, str]:
    """Row version -> the id the window (or one of its tool results) showed it under."""
    ids: dict[RefKey, str] = {}
    for memory_id, ref in issued(manifest):
        key = ref_key(ref)
        if key:
            ids.setdefault(key, memory_id)
    return ids


def annotation_notes(memory: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    notes = memory.get("annotation_refs") or []
    return [note for note in notes if isinstance(note, Mapping)]


def is_instruction_key(key: Any) -> bool:
    key = str(key or "")
    return key == render.MEMORY_INSTRUCTIONS_KEY or key.startswith(render.TOOL_INSTRUCTION_PREFIX)


def slices_in_request_order(manifest: Mapping[str, Any], rows: Mapping[RefKey, Mapping[str, Any]] | None = None
                            ) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """(slice, memories in position order) for every slice with memories or an allocation, in request order. The
    memory instructions get a section of their own after the persona: guideline rows keyed memory_instructions
    (known from `rows`), else the guidelines placed after the persona."""
    memories = sorted(manifest.get("memories") or [], key=lambda m: m.get("position") or 0)
    persona_at = max((m.get("position") or 0 for m in memories if m.get("slice") == "persona"), default=None)

    def section(memory: Mapping[str, Any]) -> str:
        name = str(memory.get("slice"))
        if name != "guidelines":
            return name
        row = (rows or {}).get(ref_key(memory.get("ref")) or Ref("", "", 0))
        if row is not None:
            return INSTRUCTIONS if is_instruction_key(row.get("guideline_key")) else name
        return INSTRUCTIONS if persona_at is not None and (memory.get("position") or 0) > persona_at else name

    by_slice: dict[str, list[Mapping[str, Any]]] = {}
    for memory in memories:
        by_slice.setdefault(section(memory), []).append(memory)
    allocation = manifest.get("allocation") or {}
    names = set(by_slice) | set(allocation.get("fixed") or {}) | set(allocation.get("slices") or {})
    known = [name for name in REQUEST_LAYOUT if name in names]
    others = sorted(names - set(REQUEST_LAYOUT),
                    key=lambda n: min((m.get("position") or 0 for m in by_slice.get(n, [])), default=10**9))
    return [(name, by_slice.get(name, [])) for name in known + others]


def exclusions_by_rule(manifest: Mapping[str, Any]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for item in manifest.get("excluded") or []:
        groups.setdefault(str(item.get("rule") or "unknown"), []).append(item)
    order = [rule for rule in RULE_ORDER if rule in groups] + sorted(set(groups) - set(RULE_ORDER))
    return [(rule, groups[rule]) for rule in order]


RESERVE_ORDER: tuple[str, ...] = ("output", "tools", "request_overhead")


def ordered(mapping: Mapping[str, Any] | None, order: Sequence[str]) -> list[tuple[str, Any]]:
    """Items of `mapping` in `order`, then any others by name. A manifest read back from PostgreSQL jsonb has
    its keys re-sorted (by length, then bytes), so the order of keys in it means nothing."""
    mapping = mapping or {}
    return [(k, mapping[k]) for k in order if k in mapping] + sorted(
        (k, v) for k, v in mapping.items() if k not in order)


def overflow_order(manifest: Mapping[str, Any], budget: Mapping[str, Any] | None = None) -> list[str]:
    """The dynamic slices in overflow (= fitting) order: the budget row's `overflow_order` when it is known,
    then the other dynamic slices in layout order."""
    slices = (manifest.get("allocation") or {}).get("slices") or {}
    declared = []
    content = (budget or {}).get("content_json") if budget else None
    if isinstance(content, Mapping) and isinstance(content.get("overflow_order"), list):
        declared = [str(name) for name in content["overflow_order"] if name in slices]
    layout = [name for name in REQUEST_LAYOUT if name in slices and name not in declared]
    return declared + layout + sorted(name for name in slices if name not in declared and name not in layout)


def overflow_receivers(manifest: Mapping[str, Any],
                       budget: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """The slice each dynamic slice passed its unused tokens to (None: it passed nothing on, or it is unknown).

    With the budget row, the receiver is the next slice of its overflow_order. Without it, the receiver is the
    slice whose allowance exceeds its share by exactly the tokens passed on, when exactly one does.
    """
    slices = (manifest.get("allocation") or {}).get("slices") or {}
    content = (budget or {}).get("content_json") if budget else None
    declared = content.get("overflow_order") if isinstance(content, Mapping) else None
    receivers: dict[str, str | None] = {}
    for name, part in slices.items():
        passed = (part or {}).get("passed_on") or 0
        receivers[name] = None
        if not passed:
            continue
        if isinstance(declared, list) and name in declared:
            index = declared.index(name)
            receivers[name] = str(declared[index + 1]) if index + 1 < len(declared) else None
            continue
        matches = [other for other, o in slices.items() if other != name
                   and ((o or {}).get("allowance") or 0) - ((o or {}).get("share") or 0) == passed]
        receivers[name] = matches[0] if len(matches) == 1 else None
    return receivers


def referenced_refs(manifest: Mapping[str, Any]) -> list[RefKey]:
    """Every row version the manifest names, in a stable order: window, exclusions, annotations, budget."""
    found: list[RefKey] = []

    def add(ref: Any) -> None:
        key = ref_key(ref)
        if key and key not in found:
            found.append(key)

    memories = sorted(manifest.get("memories") or [], key=lambda m: m.get("position") or 0)
    for memory in memories:
        add(memory.get("ref"))
    for memory in memories:
        add(memory.get("summary_ref"))
        for note in annotation_notes(memory):
            add(note.get("current"))
            add(note.get("source"))
    for item in manifest.get("excluded") or []:
        add(item.get("ref"))
        add(item.get("kept"))
    for ref in manifest.get("required_refs") or []:
        add(ref)
    add(manifest.get("budget_ref"))
    return found


@dataclass(frozen=True)
class Inspection:
    """One recorded manifest of one tenant, with the row versions it names (as of its snapshot) and, when it can
    be rebuilt, the literal request the model received."""

    manifest_id: str
    tenant_id: str
    manifest: Mapping[str, Any]
    rows: Mapping[RefKey, Mapping[str, Any]] = field(default_factory=dict)
    #: Why some rows could not be read, if any (shown on the page and in the text view).
    notes: tuple[str, ...] = ()
    #: The request as the model received it: rebuilt by replay and equal to the recorded request hash. None when
    #: it could not be rebuilt (`request_note` says why) or was not asked for.
    request: Mapping[str, Any] | None = None
    request_note: str = ""
    #: What became of row versions that could not be read at the snapshot: "erased", "gone", ...
    states: Mapping[RefKey, str] = field(default_factory=dict)
    #: The tool-result events a round's window shows, by record id (read now: they were written after the
    #: window's snapshot); a missing one was erased or is gone.
    events: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def cited_as(self, ref: Any) -> str:
        """The id the model saw for a row version: its window id, else (a row the window did not show) its
        stable id."""
        key = ref_key(ref)
        return self._issued.get(key, citation_id(ref)) if key else "M?"

    @cached_property
    def _issued(self) -> dict[RefKey, str]:
        return issued_ids(self.manifest)

    def row(self, ref: Any) -> Mapping[str, Any] | None:
        key = ref_key(ref)
        return self.rows.get(key) if key else None

    def state(self, ref: Any) -> str | None:
        """What became of a row version the inspector could not read ("erased", "gone", ...), else None."""
        key = ref_key(ref)
        return self.states.get(key) if key else None

    @property
    def budget_row(self) -> Mapping[str, Any] | None:
        return self.row(self.manifest.get("budget_ref"))

    @property
    def budget(self) -> Mapping[str, Any]:
        """The budget guideline's content_json as of the snapshot ({} when it is not readable)."""
        content = (self.budget_row or {}).get("content_json")
        return content if isinstance(content, Mapping) else {}

    def memory_at(self, ref: Any) -> Mapping[str, Any] | None:
        """The included memory for a row version, if that version is in the window."""
        key = ref_key(ref)
        for memory in self.manifest.get("memories") or []:
            if ref_key(memory.get("ref")) == key:
                return memory
        return None

    def unreadable(self, ref: Any) -> str:
        """Why a row version's text is not shown, in words."""
        state = self.state(ref)
        if state == "erased":
            return "erased since the window was assembled"
        if state == "gone":
            return "gone: purged, or no longer visible to this tenant"
        if state:
            return f"{state} now, and not readable as of the recorded snapshot (its history is gone)"
        return "not readable at the recorded snapshot"

    def seen_text(self, memory: Mapping[str, Any]) -> tuple[str | None, str]:
        """(stored text, what it is) for an included memory: the compression for the summary tier, the tool
        result's content, else the row (a tool's usage notes: its description in the request)."""
        if memory.get("slice") == TOOL_RESULTS:
            event = self.events.get(str((memory.get("ref") or [None, None])[1]))
            if event is not None:
                return event.get("content"), "the tool result as the model received it"
            return None, self.unreadable(memory.get("ref")) if self.state(memory.get("ref")) else \
                "tool result erased or gone"
        if memory.get("tier") == "summary":
            compression = self.row(memory.get("summary_ref"))
            if compression is not None:
                return compression.get("content"), "summary tier: the stored compression"
        row = self.row(memory.get("ref"))
        if row is None:
            return None, self.unreadable(memory.get("ref"))
        if memory.get("slice") == "tools" and row.get("usage_notes"):
            return row.get("usage_notes"), "the tool's usage notes: its description in the request"
        if memory.get("tier") == "pointer":
            return row.get("content"), "pointer tier: the model saw a one-line pointer to this text"
        return row.get("content"), "full text"


def _read_rows(store: MemoryStore, tenant_id: str, snapshot: str, wanted: Iterable[RefKey]
               ) -> tuple[dict[RefKey, Mapping[str, Any]], list[str], dict[RefKey, str]]:
    wanted = [key for key in wanted if key[0] != "manifest"]
    rows: dict[RefKey, Mapping[str, Any]] = {}
    notes: list[str] = []
    types = sorted({key[0] for key in wanted})
    wanted_set = set(wanted)
    try:
        store.set_tenant(tenant_id)
        for kind in types:
            try:
                found = store.rows_as_of(kind, snapshot)
            except InvalidMemoryType:
                notes.append(f"{kind!r} is not a memory type: its rows are not shown")
                store.rollback()
                store.set_tenant(tenant_id)
                continue
            for row in found:
                key = ref_key((kind, row.get("id"), row.get("version")))
                if key in wanted_set:
                    rows[key] = row
    except InvalidSnapshot as exc:
        notes.append(f"the rows cannot be read as of the recorded snapshot: {exc}")
    finally:
        store.rollback()
    missing = [key for key in wanted if key not in rows and key[0] in types]
    states = _states(store, tenant_id, snapshot, missing) if missing else {}
    if missing and not notes:
        erased = sum(1 for key in missing if states.get(key) == "erased")
        notes.append(f"{len(missing)} row version(s) named by the manifest were not readable at its snapshot"
                     + (f" ({erased} erased since)" if erased else ""))
    return rows, notes, states


def _states(store: MemoryStore, tenant_id: str, snapshot: str, keys: Sequence[RefKey]) -> dict[RefKey, str]:
    """What became of row versions not readable at the snapshot: their status now ("erased", ...), or "gone"."""
    try:
        now = row_states_of(store, tenant_id, keys, snapshot)
    except CtxasmError:
        store.rollback()
        return {}
    # row_states answers for the memory rows; a compression is read as it is now, by its own routine.
    compressions = [key for key in keys if key[0] == "compression" and key.key not in now]
    if compressions:
        try:
            stored = store.read_compressions(tenant_id, [list(key) for key in compressions])
        except CtxasmError:
            stored = {}
        store.rollback()
        now = {**now, **{key.key: (row["status"], None) for key in compressions
                         if (row := stored.get(key.key)) is not None and row.get("status")}}
    states: dict[RefKey, str] = {}
    for key in keys:
        found = now.get(key.key)
        states[key] = "gone" if found is None else str(found[0])
    return states


def _tool_events(store: MemoryStore, tenant_id: str, manifest: Mapping[str, Any]
                 ) -> tuple[dict[str, Mapping[str, Any]], dict[RefKey, str]]:
    """The tool results a round's window shows, read now by id (they postdate the window's snapshot)."""
    events: dict[str, Mapping[str, Any]] = {}
    missing: list[RefKey] = []
    for memory in manifest.get("memories") or []:
        key = ref_key(memory.get("ref"))
        if memory.get("slice") != TOOL_RESULTS or key is None:
            continue
        event = store.read_event(tenant_id, key[1])
        if event is not None and event.get("event_type") == "tool_result":
            events[key[1]] = event
        else:
            missing.append(key)
    states = {}
    if missing:
        states = _states(store, tenant_id, str(manifest.get("scn") or ""), missing)
    return events, states


def rebuild_request(store: MemoryStore, tenant_id: str, manifest_id: str) -> tuple[Mapping[str, Any] | None, str]:
    """(the literal request, how it was obtained) by replaying the window; (None, why) when it cannot be."""
    from ctxasm.services.replay import MATCH, replay_window

    try:
        result, request = replay_window(store, tenant_id, manifest_id)
    except CtxasmError as exc:
        store.rollback()
        return None, f"the request could not be rebuilt: {exc}"
    if result.status == MATCH and request is not None:
        return request, ("rebuilt by replay from the recorded sources at the recorded snapshot; its sha256 equals "
                         "the recorded request hash, so these are the bytes the model received")
    return None, f"the request could not be rebuilt ({result.status}): {result.reason}"


def load_inspection(store: MemoryStore, tenant_id: str, manifest_id: str, *, with_rows: bool = True,
                    with_request: bool = True) -> Inspection:
    """The tenant's manifest `manifest_id` and its rows; ManifestNotFound (exit code 1) when the tenant has none
    of that id, which is also what another tenant's manifest looks like. With `with_request`, the literal
    request too, rebuilt by replay (one more selection at the recorded snapshot)."""
    recorded = store.read_manifest(tenant_id, manifest_id)
    if recorded is None:
        raise ManifestNotFound(manifest_id, tenant_id)
    manifest = Manifest.checked(recorded)
    rows: dict[RefKey, Mapping[str, Any]] = {}
    notes: list[str] = []
    states: dict[RefKey, str] = {}
    events: dict[str, Mapping[str, Any]] = {}
    if with_rows and manifest.get("scn"):
        late = _written_compressions(manifest)
        wanted = [key for key in referenced_refs(manifest) if not _is_tool_result(manifest, key) and key not in late]
        rows, notes, states = _read_rows(store, tenant_id, str(manifest["scn"]), wanted)
        events, event_states = _tool_events(store, tenant_id, manifest)
        states.update(event_states)
        if late:
            found = store.read_compressions(tenant_id, [list(key) for key in late])
            store.rollback()
            for key in late:
                row = found.get(key.key)
                if row is None or row.get("status") == "erased":
                    states[key] = "erased" if row else "gone"
                else:
                    rows[key] = row
    request, request_note = (rebuild_request(store, tenant_id, manifest_id) if with_request
                             else (None, "not rebuilt"))
    return Inspection(manifest_id=manifest_id, tenant_id=tenant_id, manifest=manifest, rows=rows,
                      notes=tuple(notes), request=request, request_note=request_note, states=states, events=events)


def _written_compressions(manifest: Mapping[str, Any]) -> set[RefKey]:
    """The compressions the window wrote during its assembly: stored after its snapshot, so read as they are now."""
    written = (manifest.get("compression") or {}).get("written") or []
    return {key for key in (ref_key(item.get("summary_ref")) for item in written) if key}


def _is_tool_result(manifest: Mapping[str, Any], key: RefKey) -> bool:
    return any(m.get("slice") == TOOL_RESULTS and ref_key(m.get("ref")) == key for m in manifest.get("memories") or [])
