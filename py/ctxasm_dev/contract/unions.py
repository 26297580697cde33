"""The per-type memory-row shapes: which table column fills each row slot, what travels in `extra`, and the
PostgreSQL file made of them (db/postgresql/schema/memory_row.sql: the per-type views, their union, the history
view, ctxasm.memory_rows and ctxasm.search_row).

The engine-neutral helpers (renderable, slot_columns, extra_columns, added_shared_columns) are what an engine's
generator reads; the PostgreSQL text below is one such reader.

The PostgreSQL row shape is fixed by the deployed views, because CREATE OR REPLACE VIEW may only add columns at
the end: memory_type, table_name, the shared columns up to source_refs, the slots but embedding, extra,
created_xid (the history adds retired_xid), content_tokens, embedding, search_text, text_key, pointer_text, and
then every shared column the catalogue adds (ddl = "catalogue"), in catalogue order. A searchable type's table
has search_text (a generated tsvector, which the history tables do not keep: it is NULL there), text_key and
pointer_text (generated, kept in the history); the others read them as typed NULLs.
"""

from __future__ import annotations

import textwrap

from ctxasm_dev.contract.catalogue import TYPES_FILE, Catalogue, CatalogueError, Column, MemoryType, RowSlot
from ctxasm_dev.contract.targets import liquibase_header

HEADER = f"generated from {TYPES_FILE}; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)"


def renderable(catalogue: Catalogue) -> tuple[MemoryType, ...]:
    """The types whose rows are memory rows (a slice to compete for), in catalogue order."""
    return tuple(t for t in catalogue.types if t.slice)


def slot_columns(catalogue: Catalogue, memory_type: MemoryType) -> tuple[tuple[RowSlot, Column | None], ...]:
    """Every row slot in catalogue order with the type's column that fills it, or None (a typed NULL)."""
    filled = {c.row: c for c in memory_type.columns if c.row}
    return tuple((slot, filled.get(slot.name)) for slot in catalogue.row_slots)


def extra_columns(memory_type: MemoryType) -> tuple[Column, ...]:
    """The type's columns that fill no slot: they travel in the row's `extra` document, in column order."""
    return tuple(c for c in memory_type.columns if not c.row)


def added_shared_columns(catalogue: Catalogue) -> tuple[Column, ...]:
    """The shared columns the catalogue adds to every memory table: appended to every row shape, in order."""
    return tuple(c for c in catalogue.shared_columns if c.ddl == "catalogue")


# --- PostgreSQL -----------------------------------------------------------------------------------------------

#: shared columns the row does not carry (created_at), or carries later in the shape (see the module docstring)
_PG_NOT_LEADING = ("created_at", "created_xid", "content_tokens")
#: slots the PostgreSQL shape carries after content_tokens rather than with the other slots
_PG_LATE_SLOTS = ("embedding",)
#: the slots of the deployed views, in order: a slot added or moved would change their columns in the middle
_PG_DEPLOYED_SLOTS = ("confidence", "key_name", "subject", "predicate", "title", "turn_index", "role", "event_type",
                      "embedding")
#: the derived columns of a searchable table: (name, type of its NULL, kept in the history tables)
_PG_SEARCH_COLUMNS = (("search_text", "tsvector", False), ("text_key", "char(32)", True),
                      ("pointer_text", "text", True))
_WIDTH = 120
_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve")


def _shared_names(catalogue: Catalogue) -> list[str]:
    names = [n.strip() for c in catalogue.shared_columns if c.ddl == "base" for n in c.name.split(",")]
    return [n for n in names if n not in _PG_NOT_LEADING]


def _listed(items: list[str], indent: str) -> list[str]:
    """One item a line, comma-separated."""
    return [f"{indent}{item}," for item in items[:-1]] + [f"{indent}{items[-1]}"]


def _packed(items: list[str], first: str, indent: str, width: int = 116, separator: str = ",") -> list[str]:
    """items separated, as many a line as fit in width, the first line after `first`."""
    lines, line = [], first
    for i, item in enumerate(items):
        text = item if i == len(items) - 1 else item + separator
        if line.strip() and line != first and len(line) + 1 + len(text) > width:
            lines.append(line)
            line = indent + text
        else:
            line += (" " if line != first else "") + text
    return lines + [line]


def _column(expression: str | None, name: str, null_type: str) -> str:
    if expression is None:
        return f"NULL::{null_type} AS {name}"
    return name if expression == name else f"{expression} AS {name}"


def _extra(memory_type: MemoryType, indent: str) -> list[str]:
    extra = extra_columns(memory_type)
    if not extra:
        return [f"{indent}NULL::jsonb AS extra,"]
    pairs = [f"'{c.name}', {c.name}" for c in extra]
    line = f"{indent}jsonb_build_object({', '.join(pairs)}) AS extra,"
    if len(line) <= _WIDTH:
        return [line]
    lines = _packed(pairs, indent * 2, indent * 2, width=100)
    return [f"{indent}jsonb_build_object(", *lines, f"{indent}) AS extra,"]


def pg_row_columns(catalogue: Catalogue, memory_type: MemoryType, history: bool = False,
                   indent: str = "    ") -> list[str]:
    """The select list of one type's rows in the shape of ctxasm.memory_row (history: of memory_row_history)."""
    slots = slot_columns(catalogue, memory_type)
    searchable = memory_type.searchable
    out = [f"'{memory_type.name}'::varchar AS memory_type", f"'{memory_type.table}'::varchar AS table_name",
           *_shared_names(catalogue)]
    out += [_column(c.name if c else None, s.name, s.pg) for s, c in slots if s.name not in _PG_LATE_SLOTS]
    lines = [f"{indent}{text}," for text in out] + _extra(memory_type, indent)
    out = ["created_xid", *(["retired_xid"] if history else []), "content_tokens"]
    out += [_column(c.name if c else None, s.name, s.pg) for s, c in slots if s.name in _PG_LATE_SLOTS]
    out += [_column(name if searchable and (kept or not history) else None, name, null_type)
            for name, null_type, kept in _PG_SEARCH_COLUMNS]
    out += [c.name for c in added_shared_columns(catalogue)]
    return lines + _listed(out, indent)


def pg_row_names(catalogue: Catalogue) -> list[str]:
    """The column names of ctxasm.memory_row, in order."""
    names = ["memory_type", "table_name", *_shared_names(catalogue)]
    names += [s.name for s in catalogue.row_slots if s.name not in _PG_LATE_SLOTS]
    names += ["extra", "created_xid", "content_tokens", *_PG_LATE_SLOTS, *(n for n, _, _ in _PG_SEARCH_COLUMNS)]
    return names + [c.name for c in added_shared_columns(catalogue)]


def _per_type_view(catalogue: Catalogue, memory_type: MemoryType, others: int) -> list[str]:
    name = memory_type.name
    view = f"ctxasm.memory_row_{name}"
    noqa = "  -- noqa: ST06" if extra_columns(memory_type) else ""
    return [
        f"--changeset ctxasm:pg-0090-memory-row-{name.replace('_', '-')} dbms:postgresql runOnChange:true "
        "splitStatements:false",
        f"--comment: the {name} rows in the shape of ctxasm.memory_row. A read of one type goes here, not through "
        "the union",
        "--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner",
        "--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of "
        f"{_NUMBERS[others] if others < len(_NUMBERS) else others} tables.",
        "--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).",
        f"CREATE OR REPLACE VIEW {view} WITH (security_invoker = TRUE) AS",
        f"SELECT{noqa}",
        *pg_row_columns(catalogue, memory_type),
        f"FROM ctxasm.{memory_type.table};",
        f"--rollback DROP VIEW {view};",
    ]


def _union_all(branches: list[list[str]]) -> list[str]:
    """The branches, each a list of lines, joined by UNION ALL and ended with the statement's semicolon."""
    lines = [line for i, branch in enumerate(branches) for line in (["UNION ALL"] if i else []) + branch]
    lines[-1] += ";"
    return lines


def _union(catalogue: Catalogue, types: tuple[MemoryType, ...]) -> list[str]:
    lines = [
        "--changeset ctxasm:pg-0090-memory-row dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: every renderable memory row in one shape, for the assembler; RLS of the tables applies "
        "(invoker). Its",
        "--comment: branches are the per-type views above, whose columns are this view's (sqlfluff AM04 cannot "
        "see that).",
        "--comment: The view names its columns: PostgreSQL expands SELECT * when the view is made, so a column the",
        "--comment: catalogue adds must change this text for the view to be made again (runOnChange) and carry it.",
        "CREATE OR REPLACE VIEW ctxasm.memory_row (",
        *_packed(pg_row_names(catalogue), "    ", "    ", width=112),
        ") WITH (security_invoker = TRUE) AS",
    ]
    lines += _union_all([[f"SELECT * FROM ctxasm.memory_row_{t.name}{'  -- noqa: AM04' if i == 0 else ''}"]
                         for i, t in enumerate(types)])
    return lines + ["--rollback DROP VIEW ctxasm.memory_row;"]


def _history(catalogue: Catalogue, types: tuple[MemoryType, ...]) -> list[str]:
    lines = [
        "--changeset ctxasm:pg-0090-memory-row-history dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: the retired row versions in the same shape, with the xid that retired each",
        "CREATE OR REPLACE VIEW ctxasm.memory_row_history WITH (security_invoker = TRUE) AS",
    ]
    lines += _union_all([["SELECT", *pg_row_columns(catalogue, t, history=True), f"FROM ctxasm.{t.table}_history"]
                         for t in types])
    return lines + ["--rollback DROP VIEW ctxasm.memory_row_history;"]


def _memory_rows(catalogue: Catalogue) -> list[str]:
    return [
        "--changeset ctxasm:pg-0090-memory-rows dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: the memory rows now (NULL snapshot), or exactly those visible in a recorded snapshot (replay)",
        "CREATE OR REPLACE FUNCTION ctxasm.memory_rows(in_snapshot pg_snapshot) RETURNS SETOF ctxasm.memory_row",
        "LANGUAGE sql STABLE AS $$",
        "    SELECT r.*",
        "    FROM ctxasm.memory_row AS r",
        "    WHERE in_snapshot IS NULL OR pg_visible_in_snapshot(r.created_xid, in_snapshot)",
        "    UNION ALL",
        "    SELECT",
        *_listed([f"h.{name}" for name in pg_row_names(catalogue)], "        "),
        "    FROM ctxasm.memory_row_history AS h",
        "    WHERE",
        "        in_snapshot IS NOT NULL",
        "        AND pg_visible_in_snapshot(h.created_xid, in_snapshot)",
        "        AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)",
        "$$;",
        "--rollback DROP FUNCTION ctxasm.memory_rows(pg_snapshot);",
    ]


#: not per type: the persisted compressions as of a snapshot, kept in this file where it was first deployed
_COMPRESSIONS = """\
--changeset ctxasm:pg-0090-compressions dbms:postgresql runOnChange:true splitStatements:false
--comment: the persisted compressions now, or as of a recorded snapshot
CREATE OR REPLACE FUNCTION ctxasm.compressions(in_snapshot pg_snapshot) RETURNS SETOF ctxasm.context_compression
LANGUAGE sql STABLE AS $$
    SELECT c.*
    FROM ctxasm.context_compression AS c
    WHERE in_snapshot IS NULL OR pg_visible_in_snapshot(c.created_xid, in_snapshot)
    UNION ALL
    SELECT (jsonb_populate_record(NULL::ctxasm.context_compression, to_jsonb(h) - 'retired_xid')).*
    FROM ctxasm.context_compression_history AS h
    WHERE
        in_snapshot IS NOT NULL
        AND pg_visible_in_snapshot(h.created_xid, in_snapshot)
        AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)
$$;
--rollback DROP FUNCTION ctxasm.compressions(pg_snapshot);"""

#: the columns of ctxasm.search_row after memory_type and slice (the scope and lifecycle retrieval filters on)
_SEARCH_SHARED = ("tenant_id", "id", "version", "user_id", "agent_id", "thread_id", "status", "valid_from",
                  "valid_until", "deleted_at")


def _search_row(catalogue: Catalogue) -> list[str]:
    lines = [
        "--changeset ctxasm:pg-0090-search-row dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: the searchable memory rows in one shape, for retrieval: each with the slice it competes for. "
        "A read",
        "--comment: that names the tenant reads that tenant's partition of each table (RLS of the tables applies)",
        "CREATE OR REPLACE VIEW ctxasm.search_row WITH (security_invoker = TRUE) AS",
    ]
    branches = []
    for i, t in enumerate(t for t in renderable(catalogue) if t.searchable):
        filled = {s.name: c.name for s, c in slot_columns(catalogue, t) if c}
        first = i == 0
        columns = [f"'{t.name}'::varchar" + (" AS memory_type" if first else ""),
                   f"'{t.slice}'::varchar" + (" AS slice" if first else ""), *_SEARCH_SHARED]
        for slot, null_type in (("event_type", "varchar"), ("search_text", ""), ("embedding", "vector")):
            if slot == "search_text" or slot in filled:
                column = slot if slot == "search_text" else filled[slot]
                columns.append(column if column == slot else f"{column} AS {slot}")
            else:
                columns.append(f"NULL::{null_type}" + (f" AS {slot}" if first else ""))
        branches.append(["SELECT", *_listed(columns, "    "), f"FROM ctxasm.{t.table}"])
    return lines + _union_all(branches) + ["--rollback DROP VIEW ctxasm.search_row;"]


def pg_memory_row(catalogue: Catalogue) -> str:
    """db/postgresql/schema/memory_row.sql."""
    types = renderable(catalogue)
    if not types:
        raise CatalogueError(f"{TYPES_FILE}: no memory type has a slice, so there is no memory row")
    slots = tuple(s.name for s in catalogue.row_slots)
    if slots != _PG_DEPLOYED_SLOTS:
        raise CatalogueError(
            f"{TYPES_FILE}: row_slot: the PostgreSQL memory-row views are deployed with the slots "
            f"{', '.join(_PG_DEPLOYED_SLOTS)}, in that order, and CREATE OR REPLACE VIEW adds columns only at the "
            f"end; got {', '.join(slots)}. A column every row carries is a shared_column with ddl = \"catalogue\"")
    blocks = [[liquibase_header("pg_memory_row"), f"-- {HEADER}"]]
    blocks += [_per_type_view(catalogue, t, len(types) - 1) for t in types]
    blocks += [_union(catalogue, types), _history(catalogue, types), _memory_rows(catalogue),
               _COMPRESSIONS.splitlines(),
               _search_row(catalogue)]
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def pg_source_row_types(catalogue: Catalogue) -> str:
    """ctxasm.live_source_rows' types: every type whose rows are memory rows (each has its view
    ctxasm.memory_row_<type>), in catalogue order."""
    names = [f"'{t.name}'" for t in renderable(catalogue)]
    names[-1] += "]::varchar[];"
    return "\n".join(_packed(names, "    co_types constant varchar[] := ARRAY[", " " * 8))


def pg_source_row_columns(catalogue: Catalogue) -> str:
    """ctxasm.live_source_rows' select list of each type (co_types' order): the view ctxasm.memory_row_<type>'s,
    read from the tenant's own partition instead of the parent table, one dollar-quoted literal per type."""
    lines = ["    co_columns constant text[] := ARRAY["]
    types = renderable(catalogue)
    for i, memory_type in enumerate(types):
        text = " ".join(line.strip() for line in pg_row_columns(catalogue, memory_type, indent=""))
        text = text.replace("( ", "(").replace(" )", ")")
        end = "$list$" + ("," if i < len(types) - 1 else "];")
        lines += textwrap.wrap(f"$list${text}{end}", width=_WIDTH - 4, initial_indent=" " * 8,
                               subsequent_indent=" " * 14, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def pg_history_source_row(catalogue: Catalogue) -> str:
    """ctxasm.history_source_rows' row: the history's row built column by column."""
    names = [f"h.{name}" for name in pg_row_names(catalogue)]
    names[-1] += ")::ctxasm.memory_row"
    return "\n".join(_packed(names, "    SELECT f.at, ROW(", " " * 11))


#: the step columns ctxasm.selection_candidate gained after it was made, with their types, which follow
#: memory_row's columns there (db/postgresql/schema/ctx_selection_candidate.sql keeps them last, from the list
#: written into it here): empty when a row is read
PG_LATE_STEP_COLUMNS = (("length_logit", "numeric"),)


def pg_late_step_columns() -> str:
    """The upgrade block's list of the late step columns (ctx_selection_candidate.sql), names and types."""
    names = ", ".join(f"'{name}'" for name, _ in PG_LATE_STEP_COLUMNS)
    types = ", ".join(f"'{column_type}'" for _, column_type in PG_LATE_STEP_COLUMNS)
    return (f"    co_late_names constant name[] := ARRAY[{names}];\n"
            f"    co_late_types constant text[] := ARRAY[{types}];")


def pg_candidate_row_columns(catalogue: Catalogue) -> str:
    """ctxasm.candidate_rows' row columns: the source row's, read one by one, with the embedding left out, then
    the late step columns, empty."""
    names = ["NULL" if name == "embedding" else f"(x.memory).{name}" for name in pg_row_names(catalogue)]
    names += ["NULL"] * len(PG_LATE_STEP_COLUMNS)
    names[-1] += ")::ctxasm.selection_candidate), '{}')"
    return "\n".join(_packed(names, " " * 15, " " * 15))


def searchable_by_slice(catalogue: Catalogue) -> dict[str, tuple[MemoryType, ...]]:
    """The searchable types of each slice, the slices in catalogue order; within a slice the embedded types come
    first (the rows both retrievers read: a knowledge-base document's vectors are its chunks'), then catalogue
    order. Retrieval reads a slice's tables in this order."""
    out: dict[str, list[MemoryType]] = {}
    for t in renderable(catalogue):
        if t.searchable:
            out.setdefault(t.slice, []).append(t)
    return {s: tuple(sorted(types, key=lambda t: not t.embedded)) for s, types in out.items()}


def pg_slice_types(catalogue: Catalogue) -> str:
    """ctxasm.slice_types' CASE: the memory types retrieval searches for a slice."""
    cases = [f"WHEN '{s}' THEN ARRAY[{', '.join(repr(t.name) for t in types)}]::varchar[]"
             for s, types in searchable_by_slice(catalogue).items()]
    lines = [f"    SELECT CASE in_slice {cases[0]}", *(f"                         {case}" for case in cases[1:])]
    lines[-1] += " END"
    return "\n".join(lines)


def pg_searchable_tables(catalogue: Catalogue) -> str:
    """ctxasm.question_terms' VALUES: each searchable type with its table."""
    pairs = [f"('{t.name}', '{t.table}')" for types in searchable_by_slice(catalogue).values() for t in types]
    first = pairs[0].replace("',", "'::varchar,").replace("')", "'::varchar)")
    return "\n".join(_packed([first, *pairs[1:]], "        VALUES ", " " * 15))


def pg_slice_of_type(catalogue: Catalogue) -> str:
    """step_scope's CASE arms: the slice a type's rows compete for (the thread's tail is decided before)."""
    arms = [f"WHEN '{t.name}' THEN '{t.slice}'" for t in renderable(catalogue)]
    return "\n".join(_packed(arms, " " * 19, " " * 19, width=116, separator=""))
