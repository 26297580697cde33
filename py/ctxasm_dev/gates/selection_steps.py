"""The selection steps of select_window, named alike and in the same order on both engines.

Each selection rule is one unit named after it. On Oracle, each is a function `<rule>_step` of the package
CTX_SELECTION (db/oracle/internal/ctx_selection.body.sql), which CTX_ASSEMBLY.select_window calls in rule order.
On PostgreSQL, each is a function `ctxasm.<rule>_step` of db/postgresql/internal/ctx_selection.sql once that file
holds them, and until then a WITH query `step_<rule>` of ctx_assembly.select_window
(db/postgresql/api/ctx_assembly.sql). Both are read as `step_<rule>` names, in order of definition (comments
removed), so that the contract check fails when they differ. A step in OPTIONAL_STEPS may exist on one engine
only (it is left out of the comparison and named in the notes). Helper queries between the steps are free to
differ.
"""

from __future__ import annotations

import re
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import strip_sql_comments

POSTGRES_ASSEMBLY = "db/postgresql/api/ctx_assembly.sql"
POSTGRES_SELECTION = "db/postgresql/internal/ctx_selection.sql"
ORACLE_SELECTION = "db/oracle/internal/ctx_selection.body.sql"
STEP_PREFIX = "step_"
#: steps an engine may have without the other: the facts history requires (PostgreSQL may find them in another
#: step's query)
OPTIONAL_STEPS = ("step_required",)

_STEP = re.compile(rf"\b(?P<name>{STEP_PREFIX}\w+)\s+as\s+(?:(?:not\s+)?materialized\s+)?\(", re.IGNORECASE)
_PG_START = re.compile(r"\bfunction\s+ctx_assembly\.select_window\s*\(", re.IGNORECASE)
_PG_END = re.compile(r"^--\s*changeset\b", re.IGNORECASE | re.MULTILINE)
_ORACLE_ROUTINE = re.compile(r"^\s*function\s+(\w+)_step\s*\(", re.IGNORECASE | re.MULTILINE)
_PG_ROUTINE = re.compile(r"\bfunction\s+ctxasm\.(\w+)_step\s*\(", re.IGNORECASE)


def _region(text: str, start: re.Pattern[str], end: re.Pattern[str]) -> str | None:
    found = start.search(text)
    if not found:
        return None
    stop = end.search(text, found.end())
    return text[found.start():stop.start() if stop else len(text)]


def _steps(region: str) -> list[str]:
    return [match["name"].lower() for match in _STEP.finditer(region)]


def postgres_steps(repo: Path) -> list[str] | None:
    """PostgreSQL's steps, in order: the ctxasm.<rule>_step functions of internal/ctx_selection.sql when there are
    any, else the step_* queries of ctx_assembly.select_window; None if neither is found."""
    selection = repo / POSTGRES_SELECTION
    if selection.is_file():
        routines = _PG_ROUTINE.findall(strip_sql_comments(selection.read_text(encoding="utf-8")))
        if routines:
            return [f"{STEP_PREFIX}{name.lower()}" for name in routines]
    path = repo / POSTGRES_ASSEMBLY
    if not path.is_file():
        return None
    # The function ends where the next changeset begins (the `--changeset` line is a comment: cut before stripping).
    region = _region(path.read_text(encoding="utf-8"), _PG_START, _PG_END)
    return None if region is None else _steps(strip_sql_comments(region))


def oracle_steps(repo: Path) -> list[str] | None:
    """The <rule>_step functions of the CTX_SELECTION body, in order, as step_<rule>; None if it is not found."""
    path = repo / ORACLE_SELECTION
    if not path.is_file():
        return None
    return [f"{STEP_PREFIX}{name.lower()}"
            for name in _ORACLE_ROUTINE.findall(strip_sql_comments(path.read_text(encoding="utf-8")))]


def check(repo: Path) -> tuple[list[str], list[str]]:
    """(problems, notes): the two step sequences must be equal and not empty."""
    postgres, oracle = postgres_steps(repo), oracle_steps(repo)
    problems: list[str] = []
    if postgres is None:
        problems.append(f"selection steps: no function ctxasm.<rule>_step in {POSTGRES_SELECTION} and no function "
                        f"ctx_assembly.select_window in {POSTGRES_ASSEMBLY}")
    if oracle is None:
        problems.append(f"selection steps: no {ORACLE_SELECTION}")
    if problems:
        return problems, []
    assert postgres is not None and oracle is not None
    optional = sorted({s for s in postgres + oracle if s in OPTIONAL_STEPS and (s in postgres) != (s in oracle)})
    postgres = [s for s in postgres if s not in optional]
    oracle = [s for s in oracle if s not in optional]
    if not postgres or not oracle:
        problems.append(f"selection steps: none found (postgresql: {len(postgres)}, oracle: {len(oracle)})")
    elif postgres != oracle:
        first = next((i for i, (a, b) in enumerate(zip(postgres, oracle)) if a != b), min(len(postgres), len(oracle)))
        problems.append(f"selection steps differ from step {first + 1} on:\n"
                        f"    postgresql: {', '.join(postgres)}\n    oracle:     {', '.join(oracle)}")
    if problems:
        return problems, []
    notes = [f"selection steps, the same on both engines: {', '.join(postgres)}"]
    notes += [f"selection step {name} on {'oracle' if name in (oracle_steps(repo) or []) else 'postgresql'} only "
              "(optional)" for name in optional]
    return [], notes
