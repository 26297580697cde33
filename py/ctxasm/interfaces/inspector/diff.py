"""What changed between two manifests of one tenant: what was asked, the memories, the exclusions, the budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxasm.api.inspection import RefKey, ref_key

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


# -- the diff in sentences ------------------------------------------------------------------------------------

#: How a memory type is named in a sentence (singular, plural).
NOUNS = {"kb_chunk": ("chunk", "chunks"), "kb_document": ("document", "documents"), "entity": ("fact", "facts"),
         "workflow": ("workflow", "workflows"), "summary": ("summary", "summaries"),
         "conversation": ("turn", "turns"), "guideline": ("guideline", "guidelines"), "persona": ("persona", "personas"),
         "toolbox": ("tool", "tools"), "tool_result": ("tool result", "tool results")}
#: Allocation fields in words.
FIELD_WORDS = {"share": "share", "allowance": "allowance", "used": "used", "passed_on": "passed on",
               "reclaimed": "reclaimed"}


def _noun(kind: str, count: int) -> str:
    singular, plural = NOUNS.get(kind, (kind, kind + "s"))
    return singular if count == 1 else plural


def _named(memories: list[Mapping[str, Any]]) -> str:
    """'version 3 of fact_x', or '2 chunks (a, b)', or '3 chunks (a, b and 1 more)'."""
    if len(memories) == 1:
        ref = memories[0].get("ref") or ["?", "?", "?"]
        return f"version {ref[2]} of {ref[1]}" if ref[0] in ("entity", "workflow") else f"{_noun(str(ref[0]), 1)} " \
            f"{ref[1]}"
    kinds = {str((m.get("ref") or ["?"])[0]) for m in memories}
    noun = _noun(kinds.pop(), len(memories)) if len(kinds) == 1 else "memories"
    ids = [str((m.get("ref") or ["?", "?"])[1]) for m in memories]
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return f"{len(memories)} {noun} ({shown})"


def sentences(diff: ManifestDiff) -> list[str]:
    """The diff as sentences a person reads: per slice what it gained and lost (and to which rule), tier
    changes, then the token figures that moved."""
    out: list[str] = []
    if diff.request_hash_equal:
        out.append("The two requests are byte-identical (equal request hashes).")
    rules = {ref_key(item.get("ref")): item for item in diff.excluded_added}
    order: list[str] = []
    for memory in list(diff.added) + list(diff.removed):
        name = str(memory.get("slice"))
        if name not in order:
            order.append(name)
    replaced = {(v.kind, v.row_id): v for v in diff.versions}
    for name in order:
        parts = []
        gained = [m for m in diff.added if m.get("slice") == name]
        if gained:
            text = f"gained {_named(gained)}"
            if len(gained) == 1:
                key = ref_key(gained[0].get("ref"))
                if key and (key[0], key[1]) in replaced:
                    old = replaced[(key[0], key[1])].old_versions
                    text += f", replacing version {', '.join(map(str, old))}"
            parts.append(text)
        lost = [m for m in diff.removed if m.get("slice") == name]
        by_rule: dict[str, list[Mapping[str, Any]]] = {}
        for memory in lost:
            item = rules.get(ref_key(memory.get("ref")))
            reason = str(item.get("rule")) if item else ""
            if item and item.get("detail"):
                reason += f" ({item['detail']})"
            by_rule.setdefault(reason, []).append(memory)
        for reason, memories in by_rule.items():
            parts.append(f"lost {_named(memories)}" + (f" to {reason}" if reason else
                                                        ": no longer a candidate of this window"))
        if parts:
            out.append(f"{name} " + "; ".join(parts) + ".")
    for change in diff.changed:
        words = []
        for x in change.changes:
            if x.what == "tier":
                words.append(f"went from {x.old} to {x.new}")
            elif x.what == "status":
                words.append(f"is now {x.new} (was {x.old})")
            elif x.what == "tokens":
                words.append(f"costs {x.new} tokens (was {x.old})")
            elif x.what == "slice":
                words.append(f"moved from {x.old} to {x.new}")
            elif x.what == "order in slice":
                words.append(f"moved from place {x.old} to {x.new} in its slice")
        if words:
            out.append(f"{_named([{'ref': list(change.ref)}])} " + ", ".join(words) + ".")
    gone = [item for item in diff.excluded_removed if ref_key(item.get("ref")) not in
            {ref_key(m.get("ref")) for m in diff.added}]
    if gone:
        out.append(f"{len(gone)} exclusion(s) of the first window are not in the second: "
                   + ", ".join(f"{(ref_key(i.get('ref')) or ('', '?'))[1]} ({i.get('rule')})"
                               for i in gone[:5]) + (" and more" if len(gone) > 5 else "") + ".")
    out += allocation_sentences(diff)
    return out


def allocation_sentences(diff: ManifestDiff) -> list[str]:
    """The token figures that moved, one sentence per slice and one for the request."""
    per_slice: dict[str, list[str]] = {}
    top: list[str] = []
    for change in diff.allocation:
        path = change.what.split(".")
        if path[0] == "slices" and len(path) == 3:
            per_slice.setdefault(path[1], []).append(f"{FIELD_WORDS.get(path[2], path[2])} {change.old} → {change.new}")
        elif path[0] == "fixed" and len(path) == 2:
            top.append(f"the fixed slice {path[1]} costs {change.new} tokens (was {change.old})")
        elif path == ["unused"]:
            top.append(f"{change.new} tokens of the request limit went unused (was {change.old})")
        elif path == ["memory_instructions"]:
            top.append(f"the memory instructions cost {change.new} tokens (was {change.old})")
        elif path == ["remainder"]:
            top.append(f"the fixed slices left {change.new} tokens for the dynamic ones (was {change.old})")
    out = [f"{name}: " + ", ".join(changes) + "." for name, changes in per_slice.items()]
    asked = {c.what: c for c in diff.asked}
    if "request_tokens" in asked:
        c = asked["request_tokens"]
        verb = "grew" if (c.new or 0) > (c.old or 0) else "shrank"
        top.insert(0, f"the request {verb} from {c.old} to {c.new} tokens")
    if top:
        out.insert(0, "; ".join(top)[0].upper() + "; ".join(top)[1:] + ".")
    return out
