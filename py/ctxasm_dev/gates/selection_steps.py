"""The selection steps of select_window, named alike and run in the same order on both engines.

Each selection rule is one routine `<rule>_step` of CTX_SELECTION (scope_step, lifecycle_step, dedup_step, ...):
on PostgreSQL a function ctxasm.<rule>_step in db/postgresql/internal/ctx_selection.sql, on Oracle a function of
the package CTX_SELECTION. CTX_ASSEMBLY.select_window calls them in rule order. This module reads, on each
engine, the order in which select_window calls its steps (comments removed) so that the contract check fails
when the two differ. Routines between the steps (the document's parts, helpers) are free to differ.

An engine whose select_window still runs its rules as WITH queries named `step_<rule>` (the layout before
CTX_SELECTION) is read that way, so the two layouts compare while one engine moves before the other. A step in
OPTIONAL_STEPS (not a rule of contract/selection.toml: `required`, the annotations of history and the facts they
make required, a helper query in the earlier layout) is compared when both engines have it and left out, named
in the notes, when one lacks it.
"""

from __future__ import annotations

import re
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import strip_sql_comments

POSTGRES_ASSEMBLY = "db/postgresql/api/ctx_assembly.sql"
ORACLE_ASSEMBLY = "db/oracle/api/ctx_assembly.body.sql"
STEP_PREFIX = "step_"
STEP_SUFFIX = "_step"
OPTIONAL_STEPS = ("required",)

#: the older layout: one WITH query per rule, step_<rule>
_STEP_QUERY = re.compile(rf"\b{STEP_PREFIX}(?P<name>\w+)\s+as\s+(?:(?:not\s+)?materialized\s+)?\(", re.IGNORECASE)
#: a call of a step routine: ctxasm.<rule>_step( on PostgreSQL, ctx_selection.<rule>_step( on Oracle
_PG_CALL = re.compile(rf"\bctxasm\.(?P<name>\w+?){STEP_SUFFIX}\s*\(", re.IGNORECASE)
_ORACLE_CALL = re.compile(rf"\bctx_selection\.(?P<name>\w+?){STEP_SUFFIX}\s*\(", re.IGNORECASE)
_PG_START = re.compile(r"\bfunction\s+ctx_assembly\.select_window\s*\(", re.IGNORECASE)
#: where a PostgreSQL function of a formatted-SQL file ends: the next changeset line
CHANGESET_LINE = re.compile(r"^--\s*changeset\b", re.IGNORECASE | re.MULTILINE)
_ORACLE_START = re.compile(r"^\s*function\s+select_window\s*\(", re.IGNORECASE | re.MULTILINE)
_ORACLE_END = re.compile(r"\bend\s+select_window\s*;", re.IGNORECASE)


def region(text: str, start: re.Pattern[str], end: re.Pattern[str]) -> str | None:
    """The text from the first match of `start` to the first match of `end` after it (or the end); None without
    a start."""
    found = start.search(text)
    if not found:
        return None
    stop = end.search(text, found.end())
    return text[found.start():stop.start() if stop else len(text)]


def _steps(region: str, call: re.Pattern[str]) -> list[str]:
    """The rules in the order select_window calls their routines, else in the order of its step_* queries."""
    called = [match["name"].lower() for match in call.finditer(region)]
    return called or [match["name"].lower() for match in _STEP_QUERY.finditer(region)]


def postgres_steps(repo: Path) -> list[str] | None:
    """The rules ctx_assembly.select_window runs on PostgreSQL, in order; None if it is not found."""
    path = repo / POSTGRES_ASSEMBLY
    if not path.is_file():
        return None
    # The function ends where the next changeset begins (the `--changeset` line is a comment: cut before stripping).
    found = region(path.read_text(encoding="utf-8"), _PG_START, CHANGESET_LINE)
    return None if found is None else _steps(strip_sql_comments(found), _PG_CALL)


def oracle_steps(repo: Path) -> list[str] | None:
    """The rules select_window runs in the CTX_ASSEMBLY body, in order; None if it is not found."""
    path = repo / ORACLE_ASSEMBLY
    if not path.is_file():
        return None
    found = region(strip_sql_comments(path.read_text(encoding="utf-8")), _ORACLE_START, _ORACLE_END)
    return None if found is None else _steps(found, _ORACLE_CALL)


def check(repo: Path) -> tuple[list[str], list[str]]:
    """(problems, notes): the two step sequences must be equal and not empty."""
    postgres, oracle = postgres_steps(repo), oracle_steps(repo)
    problems: list[str] = []
    if postgres is None:
        problems.append(f"selection steps: no function ctx_assembly.select_window in {POSTGRES_ASSEMBLY}")
    if oracle is None:
        problems.append(f"selection steps: no function select_window in {ORACLE_ASSEMBLY}")
    if problems:
        return problems, []
    assert postgres is not None and oracle is not None
    optional = [s for s in OPTIONAL_STEPS if (s in postgres) != (s in oracle)]
    postgres = [s for s in postgres if s not in optional]
    oracle = [s for s in oracle if s not in optional]
    if not postgres or not oracle:
        problems.append(f"selection steps: select_window runs no step (neither <rule>{STEP_SUFFIX} calls nor "
                        f"{STEP_PREFIX}<rule> queries; {POSTGRES_ASSEMBLY}: {len(postgres)}, "
                        f"{ORACLE_ASSEMBLY}: {len(oracle)})")
    elif postgres != oracle:
        first = next((i for i, (a, b) in enumerate(zip(postgres, oracle)) if a != b), min(len(postgres), len(oracle)))
        problems.append(f"selection steps differ from step {first + 1} on:\n"
                        f"    postgresql: {', '.join(postgres)}\n    oracle:     {', '.join(oracle)}")
    if problems:
        return problems, []
    notes = [f"selection steps, the same on both engines: {', '.join(postgres)}"]
    notes += [f"selection steps: {step} runs on one engine only (compared when both have it)" for step in optional]
    return [], notes
