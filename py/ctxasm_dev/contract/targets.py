"""Where the generator writes, in one place: a key per file, relative to the repository root.

When files move (db/postgresql/..., db/oracle/...), change the paths here and regenerate.
"""

from __future__ import annotations

CATALOGUE_DIR = "contract"

TARGETS: dict[str, str] = {
    # errors
    "ora_errors_spec": "db/packages/oracle/spec/0010_ctx_errors.sql",
    "ora_errors_body": "db/packages/oracle/body/0010_ctx_errors.sql",
    "pg_errors": "db/packages/postgresql/0005_ctxasm_errors.sql",
    "py_error_codes": "py/ctxasm/error_codes.py",
    # memory types
    "py_memory_types": "py/ctxasm/memory_types.py",
    "pg_catalogue_columns": "db/schema/postgresql/0095_catalogue_columns.sql",
    "ora_catalogue_columns": "db/schema/oracle/0095_catalogue_columns.sql",
    "docs_contract": "docs/contract.md",
    # constants (generated values inside hand-written packages) and their Python module
    "py_constants": "py/ctxasm/contract_constants.py",
    "pg_assembly": "db/packages/postgresql/0050_ctx_assembly.sql",
    "pg_tools": "db/packages/postgresql/0060_ctx_tools.sql",
    "pg_selection_helpers": "db/packages/postgresql/0040_ctxasm_selection_helpers.sql",
    "pg_retrieval": "db/packages/postgresql/0045_ctxasm_retrieval.sql",
    "pg_sources": "db/packages/postgresql/0047_ctxasm_sources.sql",
    "ora_assembly_spec": "db/packages/oracle/spec/0060_ctx_assembly.sql",
    "ora_assembly_body": "db/packages/oracle/body/0060_ctx_assembly.sql",
    "ora_tools_body": "db/packages/oracle/body/0070_ctx_tools.sql",
    "ora_memory_body": "db/packages/oracle/body/0050_ctx_memory.sql",
    # versions
    "py_render": "py/ctxasm/core/render.py",
}


def target(key: str) -> str:
    """The repository-relative path of a target; a key the table lacks is a catalogue error naming it."""
    try:
        return TARGETS[key]
    except KeyError:
        raise KeyError(f"no generator target {key!r}; known: {', '.join(sorted(TARGETS))}") from None
