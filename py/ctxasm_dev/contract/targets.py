"""Where the generator writes, in one place: a key per file, relative to the repository root.

When files move, change the paths here and regenerate. A file that moved after it was deployed keeps its
Liquibase identity: LOGICAL_PATHS gives the path its changesets were first recorded under.
"""

from __future__ import annotations

CATALOGUE_DIR = "contract"

TARGETS: dict[str, str] = {
    # errors
    "ora_errors_spec": "db/oracle/internal/ctx_errors.spec.sql",
    "ora_errors_body": "db/oracle/internal/ctx_errors.body.sql",
    "pg_errors": "db/postgresql/internal/ctx_errors.sql",
    "py_error_classes": "py/ctxasm/error_classes.py",
    # memory types
    "py_memory_types": "py/ctxasm/memory_types.py",
    "pg_catalogue_columns": "db/postgresql/schema/catalogue/catalogue_columns.sql",
    "pg_memory_row": "db/postgresql/schema/memory_row.sql",
    "pg_memory_type_registry": "db/postgresql/schema/catalogue/memory_type_registry.sql",
    "py_scenario_schema": "py/ctxasm/schemas/scenario.schema.json",
    "ora_catalogue_columns": "db/oracle/schema/catalogue/catalogue_columns.sql",
    "docs_contract": "docs/contract.md",
    # constants (generated values inside hand-written packages) and their Python module
    "py_constants": "py/ctxasm/contract_constants.py",
    "pg_assembly": "db/postgresql/api/ctx_assembly.sql",
    "pg_tools": "db/postgresql/api/ctx_tools.sql",
    "pg_memory": "db/postgresql/api/ctx_memory.sql",
    "pg_selection_helpers": "db/postgresql/internal/ctx_rules.sql",
    "pg_retrieval": "db/postgresql/internal/ctx_retrieval.sql",
    "pg_sources": "db/postgresql/internal/ctx_sources.sql",
    "pg_budget": "db/postgresql/internal/ctx_budget.sql",
    "pg_selection": "db/postgresql/internal/ctx_selection.sql",
    "pg_selection_candidate": "db/postgresql/schema/ctx_selection_candidate.sql",
    "ora_assembly_spec": "db/oracle/api/ctx_assembly.spec.sql",
    "ora_assembly_body": "db/oracle/api/ctx_assembly.body.sql",
    "ora_tools_body": "db/oracle/api/ctx_tools.body.sql",
    "ora_rules_spec": "db/oracle/internal/ctx_rules.spec.sql",
    "ora_rules_body": "db/oracle/internal/ctx_rules.body.sql",
    "ora_retrieval_spec": "db/oracle/internal/ctx_retrieval.spec.sql",
    "ora_retrieval_body": "db/oracle/internal/ctx_retrieval.body.sql",
    "ora_sources_spec": "db/oracle/internal/ctx_sources.spec.sql",
    "ora_sources_body": "db/oracle/internal/ctx_sources.body.sql",
    "ora_budget_spec": "db/oracle/internal/ctx_budget.spec.sql",
    "ora_budget_body": "db/oracle/internal/ctx_budget.body.sql",
    "ora_selection_spec": "db/oracle/internal/ctx_selection.spec.sql",
    "ora_selection_body": "db/oracle/internal/ctx_selection.body.sql",
    "ora_selection_candidate": "db/oracle/schema/ctx_selection_candidate.sql",
    "ora_selection_candidates": "db/oracle/schema/ctx_selection_candidates.sql",
    "ora_memory_body": "db/oracle/api/ctx_memory.body.sql",
    "pg_row_checks": "db/postgresql/internal/row_checks.sql",
    "ora_row_binder_body": "db/oracle/internal/ctx_row_binder.body.sql",
    # how a manifest is stored and read: outside the selection version's files (contract/selection.toml)
    "pg_manifest_store": "db/postgresql/api/ctx_manifest_store.sql",
    "ora_manifest_store_body": "db/oracle/internal/ctx_manifest_store.body.sql",
    # per-type unions and lists (Oracle)
    "ora_admin_body": "db/oracle/api/ctx_admin.body.sql",
    "ora_vpd_policies": "db/oracle/security/vpd_policies.sql",
    # versions
    "py_render": "py/ctxasm/core/render.py",
    "ora_json_spec": "db/oracle/internal/ctx_json.spec.sql",
    "ora_json_body": "db/oracle/internal/ctx_json.body.sql",
}


#: generated files that moved after they were deployed: the path their changesets keep (logicalFilePath)
LOGICAL_PATHS: dict[str, str] = {
    "ora_errors_spec": "db/packages/oracle/spec/0010_ctx_errors.sql",
    "ora_errors_body": "db/packages/oracle/body/0010_ctx_errors.sql",
    "pg_errors": "db/postgresql/internal/ctxasm_errors.sql",
    "pg_memory_row": "db/schema/postgresql/0090_memory_row.sql",
    "ora_vpd_policies": "db/security/oracle/0020_vpd_policies.sql",
}


def liquibase_header(key: str) -> str:
    """The formatted-SQL header line of a generated file, naming its changesets' first path if it moved."""
    logical = LOGICAL_PATHS.get(key)
    return "--liquibase formatted sql" + (f" logicalFilePath:{logical}" if logical else "")


def target(key: str) -> str:
    """The repository-relative path of a target; a key the table lacks is a catalogue error naming it."""
    try:
        return TARGETS[key]
    except KeyError:
        raise KeyError(f"no generator target {key!r}; known: {', '.join(sorted(TARGETS))}") from None
