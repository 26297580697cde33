"""The selection steps of select_window, named alike and in the same order on both engines.

Each selection rule of CTX_ASSEMBLY.select_window is one WITH query named `step_<rule>` (step_scope,
step_lifecycle, step_dedup, ...), on PostgreSQL in db/postgresql/api/ctx_assembly.sql and on Oracle in the
package body db/oracle/api/ctx_assembly.body.sql. A reader of either file finds the same steps under the same
names in the same order; this module reads both sequences (comments removed, in order of definition) so that
the contract check fails when they differ. Helper queries between the steps are free to differ (Oracle needs
some that PostgreSQL does not: a rank before a join where PostgreSQL takes first_value).
"""

from __future__ import annotations

import re
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import strip_sql_comments

POSTGRES_ASSEMBLY = "db/postgresql/api/ctx_assembly.sql"
ORACLE_ASSEMBLY = "db/oracle/api/ctx_assembly.body.sql"
STEP_PREFIX = "step_"

_STEP = re.compile(rf"\b(?P<name>{STEP_PREFIX}\w+)\s+as\s+(?:(?:not\s+)?materialized\s+)?\(", re.IGNORECASE)
_PG_START = re.compile(r"\bfunction\s+ctx_assembly\.select_window\s*\(", re.IGNORECASE)
_PG_END = re.compile(r"^--\s*changeset\b", re.IGNORECASE | re.MULTILINE)
_ORACLE_START = re.compile(r"^\s*function\s+select_window\s*\(", re.IGNORECASE | re.MULTILINE)
_ORACLE_END = re.compile(r"\bend\s+select_window\s*;", re.IGNORECASE)


def _region(text: str, start: re.Pattern[str], end: re.Pattern[str]) -> str | None:
    found = start.search(text)
    if not found:
        return None
    stop = end.search(text, found.end())
    return text[found.start():stop.start() if stop else len(text)]


def _steps(region: str) -> list[str]:
    return [match["name"].lower() for match in _STEP.finditer(region)]


def postgres_steps(repo: Path) -> list[str] | None:
    """The step_* queries of ctx_assembly.select_window on PostgreSQL, in order; None if it is not found."""
    path = repo / POSTGRES_ASSEMBLY
    if not path.is_file():
        return None
    # The function ends where the next changeset begins (the `--changeset` line is a comment: cut before stripping).
    region = _region(path.read_text(encoding="utf-8"), _PG_START, _PG_END)
    return None if region is None else _steps(strip_sql_comments(region))


def oracle_steps(repo: Path) -> list[str] | None:
    """The step_* queries of select_window in the CTX_ASSEMBLY body, in order; None if it is not found."""
    path = repo / ORACLE_ASSEMBLY
    if not path.is_file():
        return None
    region = _region(strip_sql_comments(path.read_text(encoding="utf-8")), _ORACLE_START, _ORACLE_END)
    return None if region is None else _steps(region)


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
    if not postgres or not oracle:
        problems.append(f"selection steps: no {STEP_PREFIX}* query in select_window "
                        f"({POSTGRES_ASSEMBLY}: {len(postgres)}, {ORACLE_ASSEMBLY}: {len(oracle)})")
    elif postgres != oracle:
        first = next((i for i, (a, b) in enumerate(zip(postgres, oracle)) if a != b), min(len(postgres), len(oracle)))
        problems.append(f"selection steps differ from step {first + 1} on:\n"
                        f"    postgresql: {', '.join(postgres)}\n    oracle:     {', '.join(oracle)}")
    if problems:
        return problems, []
    return [], [f"selection steps, the same on both engines: {', '.join(postgres)}"]
