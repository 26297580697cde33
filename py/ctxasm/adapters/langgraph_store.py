"""A LangGraph long-term memory store (`langgraph.store.base.BaseStore`) over ctxasm.api.

    from ctxasm.adapters.langgraph_store import CtxasmStore

    store = CtxasmStore("acme")                   # the tenant; namespace[0] is the user
    store.put(("jane", "preferences"), "theme", {"colour": "teal"})
    store.get(("jane", "preferences"), "theme").value
    graph = builder.compile(store=store)

What it maps to (docs/adapters.md):

- the tenant is the store's (one store per tenant); `user_index` (default 0) and `agent_index` (default none)
  name the namespace labels that are the user and the agent: an item is a personal fact of that user (and
  agent), which other users' sessions never see;
- an item is a fact (`Session.remember`): subject `lg:` + the namespace joined by `/` (a `/` or `%` in a
  label escaped as `%2F` / `%25`), predicate the key,
  content the value as JSON text (so hybrid search reads it), content_json `{"namespace", "key", "value"}`;
- `put` again writes a new version (the old one stays in history, so windows that showed it replay); `put`
  of None (`delete`) retracts it: no longer in effect, its history kept;
- `search` with a query ranks the items under the prefix by meaning (cosine similarity of the embeddings,
  ctxasm.adapters.ranking), with the score; without one, the items under the prefix, latest first; `filter` compares top-level values for equality;
- `list_namespaces` lists the namespaces of the stored items;
- every read is one CTX_MEMORY.read_facts call: the newest MAX_FACT_ROWS items under the namespace prefix.

Lost: TTLs (`supports_ttl` is False), the `index` argument (every value is searchable as text), filter
operators other than equality. Needs the `langgraph` extra (langgraph-checkpoint).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem,
                                  SearchOp)

from ctxasm import api
from ctxasm.adapters.ranking import by_meaning
from ctxasm.contract_constants import MAX_FACT_ROWS
from ctxasm.services import memory_spans as spans
from ctxasm.services.upsert import instant

SUBJECT_PREFIX = "lg:"


def subject_of(namespace: tuple[str, ...]) -> str:
    """The fact subject of a namespace: its labels joined by "/", a "/" (and so "%") inside a label escaped, so
    ("a/b",) and ("a", "b") are two namespaces, not one. A label without either character reads as itself."""
    return SUBJECT_PREFIX + "/".join(label.replace("%", "%25").replace("/", "%2F") for label in namespace)


class CtxasmStore(BaseStore):
    """BaseStore over one ctxasm tenant. `memory` is a ctxasm.api.Memory (default: `Memory.open()`, closed with
    the store)."""

    supports_ttl = False

    def __init__(self, tenant_id: str, *, memory: api.Memory | None = None, user_index: int | None = 0,
                 agent_index: int | None = None):
        self.tenant_id = tenant_id
        self._own = memory is None
        self.memory = memory or api.Memory.open()
        self.user_index, self.agent_index = user_index, agent_index

    # -- the batch the base class's get/put/search/delete/list_namespaces call ---------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                with spans.memory_span(spans.SEARCH_MEMORY, self.tenant_id, "langgraph.search",
                                       memory_type="entity") as span:
                    found = self._search(op, self._items(tuple(op.namespace_prefix)))
                    spans.set_records(span, len(found))
                    spans.set_content(span, query=op.query, records=[
                        spans.memory_record(item.value, item.key, score=item.score, namespace=list(item.namespace))
                        for item in found])
                results.append(found)
            elif isinstance(op, GetOp):
                results.append(self._items(tuple(op.namespace), op.key).get((tuple(op.namespace), op.key)))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op, self._items(_fixed_prefix(op))))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- one operation ---------------------------------------------------------------------------------------

    def _label(self, namespace: tuple[str, ...], index: int | None) -> str | None:
        return namespace[index] if index is not None and len(namespace) > index else None

    def _session(self, namespace: tuple[str, ...]) -> api.Session:
        return self.memory.session(self.tenant_id, user_id=self._label(namespace, self.user_index),
                                   agent_id=self._label(namespace, self.agent_index))

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        session = self._session(namespace)
        if op.value is None:
            row = self._rows(namespace, op.key).get((namespace, op.key))
            if row is not None:
                session.retract("entity", row["ref"][1])
            return
        value = dict(op.value)
        # The namespace's user (and agent) own the item; a store without a user label writes the tenant's facts.
        owned = session.caller.user_id is not None or session.caller.agent_id is not None
        session.remember(subject_of(namespace), op.key, json.dumps(value, ensure_ascii=False, sort_keys=True),
                         content_json={"namespace": list(namespace), "key": op.key, "value": value}, personal=owned)

    def _search(self, op: SearchOp, items: Mapping[tuple[tuple[str, ...], str], Item]) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        under = {(ns, key): item for (ns, key), item in items.items() if ns[:len(prefix)] == prefix
                 and all(item.value.get(k) == v for k, v in (op.filter or {}).items())}
        chosen: list[tuple[tuple[tuple[str, ...], str], float | None]]  # a listing has no score
        if op.query:
            keys = list(under)
            ranked = by_meaning(op.query, [json.dumps(under[k].value, ensure_ascii=False) for k in keys])
            chosen = [(keys[i], score) for i, score in ranked]
        else:
            latest = sorted(under, key=lambda k: under[k].updated_at, reverse=True)
            chosen = [(key, None) for key in latest]
        page = chosen[op.offset:op.offset + op.limit]
        return [SearchItem(namespace=key[0], key=key[1], value=under[key].value, created_at=under[key].created_at,
                           updated_at=under[key].updated_at, score=score) for key, score in page]

    def _namespaces(self, op: ListNamespacesOp, items: Mapping[tuple[tuple[str, ...], str], Item]) -> list[tuple]:
        found = sorted({ns for ns, _ in items})
        for condition in op.match_conditions or ():
            path = tuple(condition.path)

            def matches(ns: tuple[str, ...], path: tuple[str, ...] = path, suffix: bool = condition.match_type != "prefix"
                        ) -> bool:
                part = (ns[-len(path):] if path else ()) if suffix else ns[:len(path)]
                return len(ns) >= len(path) and all(p == "*" or p == n for p, n in zip(path, part))

            found = [ns for ns in found if matches(ns)]
        if op.max_depth is not None:
            found = sorted({ns[:op.max_depth] for ns in found})
        return found[op.offset:op.offset + op.limit]

    # -- the stored items: every read is CTX_MEMORY.read_facts, bounded and on the tenant's own rows ----------

    def _rows(self, prefix: tuple[str, ...], key: str | None = None
              ) -> dict[tuple[tuple[str, ...], str], Mapping[str, Any]]:
        """(namespace, key) -> the active row of each item under the namespace prefix (of one key when given):
        the newest MAX_FACT_ROWS items, read with the claim of the prefix's user (and agent) when it names them."""
        with self._session(prefix).store() as store:
            rows = store.read_facts(self.tenant_id, subject_of(prefix), key, None, MAX_FACT_ROWS)
        found: dict[tuple[tuple[str, ...], str], Mapping[str, Any]] = {}
        for row in rows:
            payload = row.get("content_json") or {}
            if "namespace" not in payload or "key" not in payload:
                continue
            namespace = tuple(payload["namespace"])
            # the subject prefix "lg:users" also starts "lg:users2/..": only the namespaces under the prefix
            if namespace[:len(prefix)] == prefix and (key is None or namespace == prefix):
                found.setdefault((namespace, str(payload["key"])), row)
        return found

    def _items(self, prefix: tuple[str, ...], key: str | None = None) -> dict[tuple[tuple[str, ...], str], Item]:
        return {k: Item(value=dict(r["content_json"]["value"]), key=k[1], namespace=k[0],
                        created_at=_at(r.get("first_valid_from") or r.get("valid_from")),
                        updated_at=_at(r.get("valid_from")))
                for k, r in self._rows(prefix, key).items()}

    def close(self) -> None:
        if self._own:
            self.memory.close()


def _at(value: Any) -> datetime:
    return instant(value) or datetime.min


def _fixed_prefix(op: ListNamespacesOp) -> tuple[str, ...]:
    """The namespace prefix every listed namespace starts with: a prefix condition's labels up to a wildcard."""
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            path = tuple(condition.path)
            return path[:path.index("*")] if "*" in path else path
    return ()
