"""The naive baseline the benchmark compares the assembler with, written for that comparison only.

It reads every memory row of the tenant into Python (one SELECT per memory table, naming the tenant, in one
round trip, as the owner: the application role may read no table; row-level security keeps the owner to the
tenant too), then does in Python what select_window does in the database: scope and lifecycle filters, dedup
on normalised text, narrowest fixed rows per key, a simple lexical-overlap score, sort. Every knowledge-base
row in scope is an evidence candidate (there is no retrieval index to bound them). It then hands a selection
of the same shape to the project's own `window.compose` (same budget, fitting, rendering and token counting,
without stored counts) and records the manifest with the same `record_manifest`, so the two assemblers differ
only in where and how the rows are selected.
Not a product path: no conflicts, no annotations, no required facts, no reranker.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from ctxasm.core.compose import WindowSpec, compose
from ctxasm.core.selection import Selection
from ctxasm.engines.postgres import PostgresStore, SET_TENANT
from ctxasm.memory_types import MEMORY_TYPES, MemoryType
from ctxasm_dev.timing import phase

#: the memory-row slots the baseline reads, in this order, after the _COMMON columns; then `extra`
_SLOTS = ("key_name", "confidence", "subject", "title", "turn_index", "role", "event_type")


def _extra(memory_type: MemoryType) -> str:
    if not memory_type.extra:
        return "NULL"
    return f"jsonb_build_object({', '.join(f'{column!r}, {column}' for column in memory_type.extra)})"


#: per memory type (every type with a slice, contract/memory_types.toml): its table and the expressions of the
#: _SLOTS and `extra` columns, which differ by table
_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    t.name: (t.table, (*(t.slot(slot) or "NULL" for slot in _SLOTS), _extra(t))) for t in MEMORY_TYPES if t.slice}
#: the slice of each type whose rows always compete for the same one (a conversation turn's depends on its thread)
_SLICES = {t.name: t.slice for t in MEMORY_TYPES if t.slice and t.name != "conversation"}
_STATUS = {"entity": "current", "workflow": "current", "summary": "historical", "conversation": "unverified"}
#: which copy of a duplicate is kept, lowest first, for the types that compete
_AUTHORITY = {t.name: t.authority for t in MEMORY_TYPES if t.searchable}
_COMMON = ("id, version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content, "
           "content_json")
_WORD = re.compile(r"[^\W_]+")


class NaiveAssembler:
    """One naive assembly per call; `round_trips` counts network round trips as PostgresStore does."""

    def __init__(self, connection: Any):
        self.connection = connection
        self.store = PostgresStore(connection)
        self.round_trips = 0
        self.last_manifest: dict[str, Any] = {}
        self.last_selection: Selection | None = None

    def assemble(self, spec: WindowSpec, at: datetime) -> str:
        with phase("database_selection"):
            rows = self._read_all(spec.tenant_id)
        with phase("python_selection"):
            selection = Selection.parse(select_in_python(rows, spec, at))
        self.last_selection = selection
        with phase("rendering"):
            window = compose(selection, spec)
        # Recorded: what it rendered and its lifecycle/dedup exclusions, not the candidates the fitter left
        # out. Every knowledge-base row in scope is a candidate here, so at 1e6 rows that list would hold
        # ~170,000 refs and the manifest write alone would take minutes (one source_ref row each).
        recorded = {**window.manifest,
                    "excluded": [x for x in window.manifest["excluded"] if x["rule"] in ("lifecycle", "dedup")]}
        with phase("manifest_write"):
            manifest_id = self.store.record_manifest(recorded)
        self.round_trips += 1
        self.last_manifest = window.manifest
        return manifest_id

    def _read_all(self, tenant_id: str) -> list[tuple[Any, ...]]:
        """Every row of the tenant in every memory table the selection reads, one pipelined round trip."""
        with self.connection.pipeline():
            self.connection.execute(SET_TENANT, (self.store.claims.claim_for(tenant_id),))
            cursors = [self.connection.execute(
                f"SELECT %s::text, %s::text, {_COMMON}, {', '.join(columns)} FROM ctxasm.{table} "
                "WHERE tenant_id = %s", (kind, table, tenant_id))
                for kind, (table, columns) in _TABLES.items()]
        self.round_trips += 1
        return [row for cursor in cursors for row in cursor.fetchall()]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3}


def _pointer(text: str) -> str:
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return first if len(first) <= 60 else first[:59].rstrip() + "…"


def select_in_python(rows: list[tuple[Any, ...]], spec: WindowSpec, at: datetime) -> dict[str, Any]:
    """A selection document in select_window's shape, made from all of the tenant's rows."""
    question = _words(spec.question)
    budget_row = None
    fixed: dict[tuple[str, str], tuple[int, Any]] = {}
    dynamic: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    for (kind, table, row_id, version, user, agent, thread, status, valid_from, valid_until, deleted_at, content,
         content_json, key_name, confidence, subject, title, turn_index, role, event_type, extra) in rows:
        # scope
        if user is not None and user != spec.user_id or agent is not None and agent != spec.agent_id:
            continue
        if thread is not None and thread != spec.thread_id and not (kind == "conversation" and user == spec.user_id):
            continue
        if kind == "conversation" and event_type != "message":
            continue
        ref = [kind, row_id, version]
        # lifecycle
        reason = ("erased" if status == "erased" else "deleted" if deleted_at is not None
                  else "not_yet_effective" if valid_from > at
                  else ("superseded" if status == "superseded" else "expired")
                  if valid_until is not None and valid_until <= at else None)
        if reason:
            excluded.append({"ref": ref, "rule": "lifecycle", "detail": reason})
            continue
        depth = (user is not None) + (agent is not None) + (thread is not None)
        if kind == "guideline" and key_name == "context_budget":
            if budget_row is None or (depth, valid_from) > budget_row[0]:
                budget_row = ((depth, valid_from), ref, content_json)
            continue
        if kind in ("guideline", "persona", "toolbox"):
            key = (kind, key_name)
            item = {"ref": ref, "type": kind, "slice": _SLICES[kind], "key": key_name, "content": content,
                    "extra": extra}
            if key not in fixed or depth > fixed[key][0]:
                fixed[key] = (depth, item)
            continue
        slice_name = _SLICES.get(kind) or ("volatile_tail" if thread == spec.thread_id else "recalled_history")
        overlap = len(question & _words(content)) / len(question) if question else 0.0
        logit = round(8.0 * overlap - 4.0, 6)
        rerank = round(1 / (1 + math.exp(-logit)), 6)
        conf = round(float(confidence) if confidence is not None else 0.5, 6)
        recency = round(max(0.0, 1 - (at - valid_from).total_seconds() / 86400 / 60), 6)
        dynamic.append({
            "ref": ref, "type": kind, "slice": slice_name, "status": _STATUS.get(kind, "evidence"),
            "required": False, "role": role, "turn_index": turn_index, "title": title or subject or key_name,
            "valid_from": valid_from.isoformat(), "table": table, "authority": _AUTHORITY[kind],
            "norm": " ".join(content.lower().split()),
            "scores": {"rerank_logit": logit, "rerank": rerank, "confidence": conf, "recency": recency,
                       "priority": round(0.6 * rerank + 0.25 * conf + 0.15 * recency, 6)},
            "tiers": {"full": content, "summary": None, "pointer": _pointer(content)},
            "summary_ref": None, "annotations": [],
        })
    if budget_row is None:
        raise LookupError(f"naive: no context_budget guideline for agent {spec.agent_id!r}")
    # dedup: identical normalised text keeps the most authoritative copy
    keepers: dict[str, dict[str, Any]] = {}
    for item in sorted(dynamic, key=lambda c: (c["authority"], c["valid_from"], c["table"], c["ref"][1])):
        keepers.setdefault(item["norm"], item)
    candidates = []
    for item in dynamic:
        keeper = keepers[item["norm"]]
        if keeper is not item:
            excluded.append({"ref": item["ref"], "rule": "dedup", "kept": keeper["ref"]})
        else:
            candidates.append(item)
    # order: priority desc, valid_from desc, table, id; the tail keeps the latest turns
    by_slice: dict[str, list[dict[str, Any]]] = {}
    for item in candidates:
        by_slice.setdefault(item["slice"], []).append(item)
    ordered = []
    for name, items in sorted(by_slice.items()):
        if name == "volatile_tail":
            items.sort(key=lambda c: -(c["turn_index"] or 0))
        else:
            items.sort(key=lambda c: (c["table"], c["ref"][1]))
            items.sort(key=lambda c: c["valid_from"], reverse=True)
            items.sort(key=lambda c: c["scores"]["priority"], reverse=True)
        for rank, item in enumerate(items, start=1):
            item["selection_rank"] = rank
            for private in ("table", "authority", "norm"):
                del item[private]
            ordered.append(item)
    fixed_items = [item for _, item in sorted(fixed.values(), key=lambda d: (
        {"guidelines": 1, "persona": 2}.get(d[1]["slice"], 3), d[0], d[1]["key"], d[1]["ref"][1]))]
    return {
        "engine": "postgresql", "snapshot": "naive", "tenant_id": spec.tenant_id,
        "evaluation_time": at.isoformat(), "selection_version": "naive-python-1", "scorer": "naive-overlap",
        "budget": {"ref": budget_row[1], "content_json": budget_row[2]},
        "fixed": fixed_items, "candidates": ordered, "required_refs": [],
        # no retrieval arm: every row is read
        "retrieval": {"method": "naive-all-rows", "depth": max(1, len(rows)), "items": []}, "excluded": excluded,
    }

