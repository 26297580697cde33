"""A tenant's context budgets: which guideline row is in effect for a scope, why each other one is not, and writing
a new one (Session.set_budget, `ctxasm budget set|show`).

Which row applies is the database's choice (the budget step of CTX_ASSEMBLY.select_window: in effect at the
evaluation time, matching the scope, the narrowest scope first, then the latest valid_from). This module asks the
database for that choice and explains the rest in words from the rows themselves; it never picks a budget of its
own. The same words answer `ctxasm inspect --why` for a budget row a window did not use.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ctxasm.core.budget import budget_problems
from ctxasm.engines.store import MemoryStore, WindowScope
from ctxasm.errors import BudgetMissing, InvalidBudget, UnknownIntent
from ctxasm.services.upsert import instant

BUDGET_KEY = "context_budget"
SCOPE_FIELDS = ("user_id", "agent_id", "thread_id")
#: The row id of a tenant-wide budget written by `ctxasm tenant create` or set_budget (the key prefixed with
#: context_, as in the article's seed).
TENANT_BUDGET_ID = "context_context_budget"


@dataclass(frozen=True)
class Scope:
    """The user, agent and thread a window is assembled for (None: the call names none)."""

    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None

    def text(self) -> str:
        named = [f"{f.removesuffix('_id')} {getattr(self, f)}" for f in SCOPE_FIELDS if getattr(self, f)]
        return ", ".join(named) or "no user, agent or thread"


def budget_scope(caller: Any, scope: str | Sequence[str]) -> Scope:
    """The scope a budget is set for: "tenant", or any of "user", "agent", "thread", each taken from the caller
    (which must name it)."""
    from ctxasm.errors import InvalidArgument

    names = [scope] if isinstance(scope, str) else list(scope)
    if names in (["tenant"], []):
        return Scope()
    unknown = [name for name in names if name not in ("user", "agent", "thread")]
    if unknown:
        raise InvalidArgument(f"invalid_argument: budget scope {unknown[0]!r} is not one of tenant, user, agent, "
                              "thread")
    values = {}
    for name in names:
        value = getattr(caller, f"{name}_id")
        if not value:
            raise InvalidArgument(f"invalid_argument: a budget for this {name} needs the session's {name} "
                                  f"({'--' + name} on the command line)")
        values[f"{name}_id"] = value
    return Scope(**values)


def same_scope_budget(rows: Sequence[Mapping[str, Any]], scope: Scope) -> Mapping[str, Any] | None:
    """The tenant's active budget row of exactly `scope` (not ended, not deleted), if any: the one a new budget
    for that scope supersedes, so two of one scope are never in effect at once."""
    for row in budget_rows(rows):
        if row.get("status") == "active" and row.get("deleted_at") is None and row.get("valid_until") is None \
                and all(row.get(f) == getattr(scope, f) for f in SCOPE_FIELDS):
            return row
    return None


def scope_of(row: Mapping[str, Any]) -> str:
    """A row's scope in words: "tenant-wide" or e.g. "agent helper, thread t1"."""
    named = [f"{f.removesuffix('_id')} {row[f]}" for f in SCOPE_FIELDS if row.get(f)]
    return ", ".join(named) or "tenant-wide"


def scope_level(row: Mapping[str, Any]) -> int:
    """How narrow a row's scope is: one per field it names (the order the budget step prefers)."""
    return sum(1 for f in SCOPE_FIELDS if row.get(f))


def is_budget(row: Mapping[str, Any]) -> bool:
    return row.get("guideline_key") == BUDGET_KEY


def _time(value: Any) -> str:
    at = instant(value)
    return at.isoformat() if at else str(value)


def standing(row: Mapping[str, Any], chosen: Mapping[str, Any] | None, scope: Scope, at: Any) -> str:
    """Why a budget row version is, or is not, the budget of a window of `scope` evaluated at `at`, in the order
    the budget step applies its conditions. `chosen` is the row the database picked (None: none was in effect)."""
    when = instant(at)
    if chosen is not None and (chosen.get("id"), int(chosen.get("version") or 0)) == \
            (row.get("id"), int(row.get("version") or 0)):
        return f"in effect: the budget of this window ({scope_of(row)}, valid from {_time(row.get('valid_from'))})."
    if row.get("status") == "erased":
        return "erased."
    if row.get("deleted_at") is not None:
        return f"deleted at {_time(row['deleted_at'])}."
    starts, ends = instant(row.get("valid_from")), instant(row.get("valid_until"))
    if when is not None and starts is not None and starts > when:
        early = (starts - when).total_seconds()
        return (f"not yet in effect: valid from {starts.isoformat()}, {early:.3f} s after the evaluation time "
                f"{when.isoformat()}.")
    if when is not None and ends is not None and ends <= when:
        word = "superseded" if row.get("status") == "superseded" else "expired"
        return f"{word}: in effect until {ends.isoformat()}, before the evaluation time {when.isoformat()}."
    for name in SCOPE_FIELDS:
        if row.get(name) is not None and row.get(name) != getattr(scope, name):
            given = getattr(scope, name)
            asked = f"this window's is {given}" if given else "this window names none"
            return f"for {name.removesuffix('_id')} {row[name]} only, and {asked}."
    if chosen is None:
        return "in effect for this scope, yet the window used none (read again: it may be newer than the window)."
    if scope_level(chosen) > scope_level(row):
        return (f"a narrower budget wins: guideline {chosen.get('id')} version {chosen.get('version')} "
                f"({scope_of(chosen)}).")
    return (f"a later budget of the same scope wins: guideline {chosen.get('id')} version {chosen.get('version')}, "
            f"valid from {_time(chosen.get('valid_from'))}.")


@dataclass(frozen=True)
class BudgetView:
    """The budget in effect for a scope at a time, with every other budget row of the tenant and why it is not."""

    scope: Scope
    evaluation_time: str
    chosen: Mapping[str, Any] | None
    rows: tuple[Mapping[str, Any], ...] = ()
    problem: str | None = None
    standings: tuple[str, ...] = field(default=())

    @property
    def content(self) -> Mapping[str, Any]:
        return (self.chosen or {}).get("content_json") or {}

    def as_json(self) -> dict[str, Any]:
        def ref(row: Mapping[str, Any]) -> list[Any]:
            return ["guideline", row.get("id"), row.get("version")]

        return {"scope": {f: getattr(self.scope, f) for f in SCOPE_FIELDS}, "evaluation_time": self.evaluation_time,
                "budget_ref": ref(self.chosen) if self.chosen else None, "budget": dict(self.content) or None,
                "problem": self.problem,
                "rows": [{"ref": ref(row), "scope": scope_of(row), "valid_from": row.get("valid_from"),
                          "valid_until": row.get("valid_until"), "status": row.get("status"), "why": why}
                         for row, why in zip(self.rows, self.standings)]}

    def describe(self) -> str:
        head = f"budget for {self.scope.text()} at {self.evaluation_time}:"
        if self.chosen is None:
            lines = [head, f"  none in effect: {self.problem}"]
        else:
            c = self.content
            lines = [head, f"  guideline {self.chosen.get('id')} version {self.chosen.get('version')} "
                           f"({scope_of(self.chosen)}): usable_context {c.get('usable_context')}, reserves output "
                           f"{c.get('output_reserve')} / tools {c.get('tool_reserve')} / framing "
                           f"{c.get('request_overhead_reserve')}, reclaim_unused {bool(c.get('reclaim_unused'))}, "
                           f"intents {', '.join(sorted(c.get('shares') or {}))}"]
        if self.rows:
            lines.append("  every budget row of the tenant:")
            lines += [f"    guideline {row.get('id')} v{row.get('version')} ({scope_of(row)}): {why}"
                      for row, why in zip(self.rows, self.standings)]
        return "\n".join(lines)


def budget_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The context_budget rows among guideline row versions, newest first."""
    found = [row for row in rows if is_budget(row)]
    return sorted(found, key=lambda r: (str(r.get("id")), -int(r.get("version") or 0)))


def view(chosen_ref: Sequence[Any] | None, rows: Sequence[Mapping[str, Any]], scope: Scope, at: Any,
         problem: str | None = None) -> BudgetView:
    """A BudgetView from the database's choice (`chosen_ref`, or None with the `problem` it reported) and the
    tenant's guideline rows as of the same time."""
    budgets = budget_rows(rows)
    chosen = next((row for row in budgets if chosen_ref and row.get("id") == chosen_ref[1]
                   and int(row.get("version") or 0) == int(chosen_ref[2])), None)
    when = instant(at)
    return BudgetView(scope, when.isoformat() if when else str(at), chosen, tuple(budgets), problem,
                      tuple(standing(row, chosen, scope, at) for row in budgets))


def budget_record(content_json: Mapping[str, Any], scope: Scope, *, budget_id: str | None = None,
                  description: str | None = None, at: datetime | None = None) -> dict[str, Any]:
    """A context_budget guideline row for `scope`, checked first: every problem of the budget is reported at
    once, each naming its field (InvalidBudget). `at` None: in effect from the write (the database's clock)."""
    problems = budget_problems(content_json)
    if problems:
        raise InvalidBudget("invalid_budget: " + "; ".join(f"{p.field}: {p.problem}" for p in problems))
    c = content_json
    record: dict[str, Any] = {
        "id": budget_id or f"budget_{uuid.uuid4().hex[:16]}", "guideline_key": BUDGET_KEY,
        "content": description or (f"Context budget: {c['usable_context']} usable tokens with reserves for output "
                                   f"({c['output_reserve']}), tools ({c['tool_reserve']}) and framing "
                                   f"({c['request_overhead_reserve']})."),
        "content_json": dict(content_json),
        **{f: getattr(scope, f) for f in SCOPE_FIELDS if getattr(scope, f)},
    }
    if at is not None:
        record["valid_from"] = at
    return record


#: The question select_window is asked when only its budget step matters (nothing is recorded).
_PROBE_QUESTION = "which budget applies"


def effective_budget(store: MemoryStore, tenant_id: str, scope: Scope, at: datetime | None,
                     intent: str = "fact_check") -> BudgetView:
    """The budget the database picks for `scope` at `at` (None: its now), with every budget row of the tenant as
    of the same snapshot and why each other is not the one. Asks select_window (its budget step is the only
    judge) and records nothing."""
    when = at or store.database_time()
    store.set_tenant(tenant_id)
    snapshot = store.capture_snapshot()
    rows = store.rows_as_of("guideline", snapshot)
    store.rollback()
    intents = [intent] + sorted({name for row in budget_rows(rows)
                                 for name in ((row.get("content_json") or {}).get("shares") or {})} - {intent})
    problem = None
    for name in intents:
        probe = WindowScope(scope.user_id, scope.agent_id, scope.thread_id, name, when, _PROBE_QUESTION,
                            snapshot=snapshot)
        try:
            selection = store.select_window(tenant_id, probe)
        except UnknownIntent as exc:  # the budget step passed; another intent of the tenant's budgets will do
            problem = str(exc)
            continue
        except BudgetMissing as exc:
            return view(None, rows, scope, when, str(exc))
        finally:
            store.rollback()
        return view(selection.budget.ref, rows, scope, when)
    return view(None, rows, scope, when, problem)
