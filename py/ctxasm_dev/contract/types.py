"""The memory-type files: py/ctxasm/memory_types.py, the DDL of catalogue-only columns, the docs tables."""

from __future__ import annotations

from ctxasm_dev.contract.catalogue import TYPES_FILE, Catalogue, Column, MemoryType
from ctxasm_dev.contract.unions_oracle import TAIL_SLICE

HEADER = f"generated from {TYPES_FILE}; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)"


def python(catalogue: Catalogue) -> str:
    rows = []
    for t in catalogue.types:
        columns = ", ".join(repr(c.name) for c in t.columns)
        filled = [(c.row, c.name) for c in t.columns if c.row]
        row = ", ".join(repr(pair) for pair in filled)
        rows.append(f"    MemoryType({t.name!r}, {t.table!r}, {t.slice!r}, {t.authority}, {t.searchable}, {t.embedded},\n"
                    f"               ({columns}{',' if len(t.columns) == 1 else ''}),\n"
                    f"               ({row}{',' if len(filled) == 1 else ''})),")
    shared = ", ".join(repr(name.strip()) for c in catalogue.shared_columns for name in c.name.split(","))
    return "\n".join([
        f'"""The memory types and their tables: {HEADER}."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "",
        "class MemoryType(NamedTuple):",
        "    name: str",
        "    table: str",
        "    #: the window slice its rows compete for; '' for a type that is never a candidate",
        "    slice: str",
        "    #: which copy of a duplicate is kept, lowest first",
        "    authority: int",
        "    searchable: bool",
        "    embedded: bool",
        "    #: the type-specific columns, in table order",
        "    columns: tuple[str, ...]",
        "    #: (memory-row slot, column) for each column that fills a slot of the memory-row shape, in column order",
        "    row: tuple[tuple[str, str], ...]",
        "",
        "    @property",
        "    def extra(self) -> tuple[str, ...]:",
        '        """The columns that fill no slot: they travel in the memory row\'s `extra` document, in column order."""',
        "        filled = {column for _, column in self.row}",
        "        return tuple(column for column in self.columns if column not in filled)",
        "",
        "    def slot(self, name: str) -> str | None:",
        '        """The column that fills the memory-row slot `name`, or None (the row holds NULL there)."""',
        "        return dict(self.row).get(name)",
        "",
        "",
        "MEMORY_TYPES: tuple[MemoryType, ...] = (",
        *rows,
        ")",
        "",
        "#: the slots of the one memory-row shape, in order (a type's row names the column filling each)",
        f"ROW_SLOTS: tuple[str, ...] = ({', '.join(repr(slot.name) for slot in catalogue.row_slots)})",
        "",
        "#: the columns every memory table has",
        f"SHARED_COLUMNS: tuple[str, ...] = ({shared})",
        "",
        "BY_NAME: dict[str, MemoryType] = {memory_type.name: memory_type for memory_type in MEMORY_TYPES}",
        "TABLE_OF: dict[str, str] = {memory_type.name: memory_type.table for memory_type in MEMORY_TYPES}",
    ]) + "\n"


def _added(catalogue: Catalogue) -> list[tuple[str, MemoryType, Column]]:
    """(changeset id suffix, type, column) for every column the base table files do not create, sorted by the
    suffix: <column>-<type's ordinal>, so ids sort in file order (a Liquibase layout rule) and a column added
    later never renames the changesets of one added before."""
    shared = [c for c in catalogue.shared_columns if c.ddl == "catalogue"]
    added = [(f"{c.name.replace('_', '-')}-{i:02d}", t, c) for i, t in enumerate(catalogue.types, 1)
             for c in (*shared, *(c for c in t.columns if c.ddl == "catalogue"))]
    return sorted(added, key=lambda a: a[0])


def _pg_column(column: Column) -> str:
    text = f"{column.name} {column.pg}"
    if column.pg_default:
        text += f" DEFAULT {column.pg_default}"
    if not column.nullable and column.pg_default:
        text += " NOT NULL"
    return text


def pg_columns(catalogue: Catalogue) -> str | None:
    """The changesets adding catalogue-only columns to each table and its history; None when there are none."""
    added = _added(catalogue)
    if not added:
        return None
    out = ["--liquibase formatted sql", f"-- {HEADER}",
           "-- The columns the catalogue adds to tables the base files (0020_memory_tables.sql) create: each table",
           "-- and its history table (ctxasm.keep_row_version copies by column name)."]
    for suffix, t, c in added:
        out += ["", f"--changeset ctxasm:pg-0095-{suffix} dbms:postgresql",
                f"ALTER TABLE ctxasm.{t.table} ADD COLUMN {_pg_column(c)};",
                f"ALTER TABLE ctxasm.{t.table}_history ADD COLUMN {c.name} {c.pg};",
                f"--rollback ALTER TABLE ctxasm.{t.table}_history DROP COLUMN {c.name};",
                f"--rollback ALTER TABLE ctxasm.{t.table} DROP COLUMN {c.name};"]
    return "\n".join(out) + "\n"


def oracle_columns(catalogue: Catalogue) -> str | None:
    added = [(suffix, t, c) for suffix, t, c in _added(catalogue) if c.oracle]
    if not added:
        return None
    out = ["--liquibase formatted sql", f"-- {HEADER}",
           "-- The columns the catalogue adds to tables the base files (0020_memory_tables.sql) create."]
    for suffix, t, c in added:
        out += ["", f"--changeset ctxasm:ora-0095-{suffix} dbms:oracle",
                f"alter table {t.table} add ({c.name} {c.oracle});",
                f"--rollback alter table {t.table} drop column {c.name};"]
    return "\n".join(out) + "\n"


def _described(column: Column) -> str:
    notes = [n for n in ("JSON" if column.json else "", column.note, "optional" if column.nullable else "") if n]
    return f"{column.name} ({', '.join(notes)})" if notes else column.name


def _engine_type(column: Column, engine_type: str, other: str) -> str:
    if not engine_type:
        return "-"
    text = engine_type
    if column.check:
        text += f", {column.check}"
    if not column.nullable:
        text += " not null"
    if column.pg_default and engine_type == column.pg:
        text += f" default `{column.pg_default.strip(chr(39))}`"
    if not other:
        text += " (PostgreSQL only)" if engine_type == column.pg else " (Oracle only)"
    return text


def docs_types(catalogue: Catalogue) -> str:
    lines = ["| memory type | table | slice | a window lists it | candidate status | type-specific columns |",
             "|---|---|---|---|---|---|"]
    for t in catalogue.types:
        status = t.candidate_status if t.slice else "-"
        lines.append(f"| `{t.name}` | {t.table} | {t.slice or '-'} | {_listed(t)} | {status} | "
                     f"{', '.join(_described(c) for c in t.columns)} |")
    return "\n".join(lines)


def _listed(memory_type: MemoryType) -> str:
    """How a live window finds the type's rows (enumerated, retrieved) and whether their citations are followed."""
    if not memory_type.slice:
        return "-"
    ways = {"scope": ["every version in scope"], "facts": ["every version in scope while few"], "": []}[
        memory_type.enumerated]
    if memory_type.name in TAIL_SLICE:
        ways.append("the thread's latest turns (the volatile tail)")
    if memory_type.searchable:
        ways.append("else retrieval" if memory_type.enumerated == "facts" else "retrieval")
    if memory_type.cites:
        ways.append("its citations followed")
    return "; ".join(ways) or "-"


def docs_shared_columns(catalogue: Catalogue) -> str:
    lines = ["| column | PostgreSQL | Oracle | meaning |", "|---|---|---|---|"]
    for c in catalogue.shared_columns:
        lines.append(f"| {c.name} | {_engine_type(c, c.pg, c.oracle)} | {_engine_type(c, c.oracle, c.pg)} | {c.note} |")
    return "\n".join(lines)


def docs_errors(catalogue: Catalogue) -> str:
    lines = ["| name | Oracle | PostgreSQL | Python (`ctxasm.errors`) | when |", "|---|---|---|---|---|"]
    for e in catalogue.errors:
        if e.engines:
            lines.append(f"| `{e.name}` | {e.oracle_code} | {e.sqlstate} | `{e.python_class}` | {e.when} |")
        else:
            reserved = f"none: {e.number} reserved"
            lines.append(f"| `{e.name}` | {reserved} | {reserved} | `{e.python_class}` | {e.when} |")
    return "\n".join(lines)


def docs_constants(catalogue: Catalogue) -> str:
    lines = ["| constant | value | meaning |", "|---|---|---|"]
    for c in catalogue.constants:
        lines.append(f"| `{c.name}` | {c.value} | {c.meaning} |")
    return "\n".join(lines)


def oracle_memory_type_names(catalogue: Catalogue) -> str:
    """CTX_MEMORY's co_memory_types: the names an invalid_memory_type message lists, in type order."""
    names = [t.name for t in catalogue.types]
    chunks: list[str] = []
    for name in names:
        if chunks and len(chunks[-1]) + len(name) + 2 <= 92:
            chunks[-1] += f" {name},"
        else:
            chunks.append(f"{name},")
    chunks[-1] = chunks[-1][:-1]
    parts = [f"'{chunk} '" for chunk in chunks[:-1]] + [f"'{chunks[-1]}'"]
    return "\n".join(["   co_memory_types constant varchar2(200) :=",
                      "      " + "\n      || ".join(parts) + ";"])


def oracle_table_for_type(catalogue: Catalogue) -> str:
    """CTX_MEMORY.table_for_type's mapping: the whitelist of tables dynamic SQL may name."""
    cases = [f"                    when '{t.name}' then '{t.table.upper()}'" for t in catalogue.types]
    return "\n".join(["      l_table := case in_memory_type", *cases, "                 end;"])


def _by_authority(catalogue: Catalogue) -> list[MemoryType]:
    return sorted((t for t in catalogue.types if t.authority != NO_AUTHORITY), key=lambda t: t.authority)


#: the authority of a type that never competes with another for a duplicate
NO_AUTHORITY = 9


def pg_authority(catalogue: Catalogue) -> str:
    """ctxasm.authority's CASE: which copy of a duplicate is kept, lowest first."""
    cases = [f"WHEN '{t.name}' THEN {t.authority}" for t in _by_authority(catalogue)] + [f"ELSE {NO_AUTHORITY} END"]
    lines, line = [], "        "
    for case in cases:
        if len(line) + len(case) + 1 > 108 and line.strip():
            lines.append(line.rstrip())
            line = "        "
        line += case + " "
    lines.append(line.rstrip())
    return "\n".join(["    SELECT CASE in_memory_type", *lines])


def oracle_authority(catalogue: Catalogue) -> str:
    """CTX_RULES.authority's CASE, the twin of ctxasm.authority."""
    cases = [f"                when '{t.name}' then {t.authority}" for t in _by_authority(catalogue)]
    return "\n".join(["      return case in_memory_type", *cases, f"                else {NO_AUTHORITY}", "             end;"])


def scenario_schema(text: str, catalogue: Catalogue) -> str:
    """py/ctxasm/schemas/scenario.schema.json with its memory-type enum from the catalogue (the rest of the
    schema, each type's own properties among it, is hand-written); the file's layout is json.dumps(indent=1)."""
    import json

    schema = json.loads(text)
    schema["$defs"]["memory"]["properties"]["type"]["enum"] = [t.name for t in catalogue.types]
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def pg_registry(catalogue: Catalogue) -> str:
    """The changeset that keeps ctxasm.memory_type (the registry every generic routine loops over) as the catalogue
    has it. row_history.sql created the table with its first rows in a changeset that never runs again; this one
    runs again whenever its text, that is the catalogue's list of types, changes."""
    values = [f"    ('{t.name}', '{t.table}', {i})" for i, t in enumerate(catalogue.types, 1)]
    return "\n".join([
        "--liquibase formatted sql", f"-- {HEADER}", "",
        "--changeset ctxasm:pg-0096-memory-type-registry dbms:postgresql runOnChange:true",
        "--comment: every memory type of the catalogue with its table and its place in the catalogue's order",
        "INSERT INTO ctxasm.memory_type (memory_type, table_name, ordinal) VALUES",
        ",\n".join(values),
        "ON CONFLICT (memory_type) DO UPDATE SET table_name = excluded.table_name, ordinal = excluded.ordinal;",
        "--rollback SELECT 1;",
    ]) + "\n"
