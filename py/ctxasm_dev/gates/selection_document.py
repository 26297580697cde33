"""The selection document's objects, built with the same keys on both engines and the keys the schema declares.

select_window's candidates, candidate cuts, exclusions and fixed rows are JSON objects each engine writes by hand:
PostgreSQL with json_build_object('key', value, ...) in ctxasm.candidate_items, candidate_cuts, exclusions and
fixed_items (db/postgresql/internal/ctx_selection.sql), Oracle with json_object('key' value ..., ...) in the
CTX_SELECTION routines of the same names. A key one engine writes and the other does not (a new field added on
PostgreSQL only) would pass every test here, since no Oracle runs: the Python side reads a missing key as None.
This module reads the keys each builder writes, comments removed, so the contract check fails when the two differ
or when either differs from contract/schemas/selection.schema.json (the candidate's properties with those of its
scores, tiers and authorship; the others' own).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import strip_sql_comments
from ctxasm_dev.gates.selection_steps import CHANGESET_LINE, region

POSTGRES_SELECTION = "db/postgresql/internal/ctx_selection.sql"
ORACLE_SELECTION = "db/oracle/internal/ctx_selection.body.sql"
SCHEMA = "contract/schemas/selection.schema.json"

_PG_OBJECT = re.compile(r"\bjsonb?_build_object\s*\(", re.IGNORECASE)
_ORACLE_KEY = re.compile(r"'(?P<key>[A-Za-z_][A-Za-z0-9_]*)'\s+value\b", re.IGNORECASE)
_LITERAL = re.compile(r"^'(?P<key>[A-Za-z_][A-Za-z0-9_]*)'$")


@dataclass(frozen=True)
class Builder:
    """One object of the document: the routine that writes it on each engine, and the schema parts it follows."""

    name: str
    routine: str
    #: JSON pointers (into the schema) of the object definitions whose properties, together, are its keys
    schema_parts: tuple[str, ...]


BUILDERS = (
    Builder("candidate", "candidate_items",
            ("/$defs/candidate", "/$defs/scores", "/$defs/candidate/properties/tiers", "/$defs/generated_by")),
    Builder("candidate cut", "candidate_cuts", ("/properties/candidate_cuts/items",)),
    Builder("exclusion", "exclusions", ("/$defs/selection_exclusion",)),
    Builder("fixed row", "fixed_items", ("/$defs/fixed_row",)),
)


def _postgres_region(text: str, routine: str) -> str | None:
    # The function ends where the next changeset begins (a comment line: cut before stripping).
    found = region(text, re.compile(rf"\bfunction\s+ctxasm\.{routine}\s*\(", re.IGNORECASE), CHANGESET_LINE)
    return None if found is None else strip_sql_comments(found)


def _oracle_region(text: str, routine: str) -> str | None:
    start = re.compile(rf"^\s*function\s+{routine}\s*\(", re.IGNORECASE | re.MULTILINE)
    return region(strip_sql_comments(text), start, re.compile(rf"\bend\s+{routine}\s*;", re.IGNORECASE))


def _arguments(text: str, open_at: int) -> list[str]:
    """The top-level arguments of the call whose opening parenthesis is at `open_at` (quotes respected: a quote
    inside a literal is doubled)."""
    depth, quoted, start, found = 0, False, open_at + 1, []
    index = open_at
    while index < len(text):
        char = text[index]
        index += 1
        if quoted:
            if char == "'" and text[index:index + 1] == "'":
                index += 1  # a doubled quote, inside the literal
            elif char == "'":
                quoted = False
            continue
        if char == "'":
            quoted = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                found.append(text[start:index - 1].strip())
                return found
        elif char == "," and depth == 1:
            found.append(text[start:index - 1].strip())
            start = index
    return found


def postgres_keys(region: str) -> set[str]:
    """The keys of every json_build_object / jsonb_build_object call: its odd arguments, as literals."""
    keys: set[str] = set()
    for call in _PG_OBJECT.finditer(region):
        for argument in _arguments(region, call.end() - 1)[0::2]:
            literal = _LITERAL.match(argument)
            if literal:
                keys.add(literal["key"])
    return keys


def oracle_keys(region: str) -> set[str]:
    """The keys of every json_object call: each literal followed by VALUE."""
    return {match["key"] for match in _ORACLE_KEY.finditer(region)}


def schema_keys(schema: dict, parts: tuple[str, ...]) -> set[str]:
    keys: set[str] = set()
    for pointer in parts:
        node = schema
        for step in pointer.strip("/").split("/"):
            node = node[step]
        keys |= set(node.get("properties", {}))
    return keys


def check(repo: Path) -> tuple[list[str], list[str]]:
    """(problems, notes): per builder, the keys written on each engine and declared by the schema must agree."""
    paths = {"postgresql": repo / POSTGRES_SELECTION, "oracle": repo / ORACLE_SELECTION, "schema": repo / SCHEMA}
    missing = [f"selection document: {path.relative_to(repo)} not found" for path in paths.values()
               if not path.is_file()]
    if missing:
        return missing, []
    pg_text = paths["postgresql"].read_text(encoding="utf-8")
    oracle_text = paths["oracle"].read_text(encoding="utf-8")
    schema = json.loads(paths["schema"].read_text(encoding="utf-8"))
    problems: list[str] = []
    notes: list[str] = []
    for builder in BUILDERS:
        pg_region = _postgres_region(pg_text, builder.routine)
        oracle_region = _oracle_region(oracle_text, builder.routine)
        if pg_region is None or oracle_region is None:
            where = POSTGRES_SELECTION if pg_region is None else ORACLE_SELECTION
            problems.append(f"selection document: no {builder.routine} in {where}")
            continue
        written = {"postgresql": postgres_keys(pg_region), "oracle": oracle_keys(oracle_region)}
        declared = schema_keys(schema, builder.schema_parts)
        found = [f"selection document: the {builder.name} ({engine} {builder.routine}) {label}: "
                 f"{', '.join(sorted(names))}"
                 for engine, keys in written.items()
                 for label, names in (("writes keys the schema does not declare", keys - declared),
                                      ("does not write keys the schema declares", declared - keys)) if names]
        problems += found
        if not found:
            notes.append(f"selection document: the {builder.name}'s {len(declared)} keys are written alike on "
                         "both engines and declared by the schema")
    return problems, notes
