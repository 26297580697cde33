"""python -m ctxasm_dev.contract.generate [--repo PATH]: writes every file generated from contract/*.toml.

generate() computes them in memory (the staleness gate compares them with the files on disk): whole generated
files, generated regions of docs/contract.md, and generated values (constants, versions) inside hand-written
packages. Versions come last: they digest the packages after the constants are written into them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ctxasm_dev.contract import constants, errors, per_type, types, unions, unions_oracle, versions
from ctxasm_dev.contract.catalogue import Catalogue, CatalogueError, load
from ctxasm_dev.contract.targets import target

REPO = Path(__file__).resolve().parents[3]

#: docs/contract.md regions: marker name -> (catalogue file, table)
_DOC_REGIONS = {
    "memory-types": ("contract/memory_types.toml", types.docs_types),
    "shared-columns": ("contract/memory_types.toml", types.docs_shared_columns),
    "errors": ("contract/errors.toml", types.docs_errors),
    "constants": ("contract/constants.toml", types.docs_constants),
}


class _Files:
    """The repository's text files as generation sees them: what was generated so far over what is on disk."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.generated: dict[str, str | None] = {}

    def read(self, key: str) -> str:
        path = target(key)
        if path in self.generated:
            text = self.generated[path]
            if text is None:
                raise CatalogueError(f"{path} is generated absent, yet read")
            return text
        return (self.repo / path).read_text(encoding="utf-8")

    def put(self, key: str, text: str | None) -> None:
        self.generated[target(key)] = text


def _docs(text: str, catalogue: Catalogue) -> str:
    for name, (_, table) in _DOC_REGIONS.items():
        pattern = re.compile(rf"(<!-- generated: {name} .*?-->\n).*?(\n<!-- end generated: {name} -->)", re.DOTALL)
        if len(pattern.findall(text)) != 1:
            raise CatalogueError(f"{target('docs_contract')}: the markers of the generated region {name!r} "
                                 f"(<!-- generated: {name} ... --> ... <!-- end generated: {name} -->) must occur once")
        text = pattern.sub(lambda m, table=table: m.group(1) + table(catalogue) + m.group(2), text)
    return text


#: regions of hand-written SQL files: (target, marker name, text)
def _sql_regions(catalogue: Catalogue, rules_spec: str) -> list[tuple[str, str, str]]:
    return [("ora_memory_body", "memory type names", types.oracle_memory_type_names(catalogue)),
            ("ora_memory_body", "table for type", types.oracle_table_for_type(catalogue)),
            ("pg_selection_helpers", "authority", types.pg_authority(catalogue)),
            ("pg_sources", "source row types", unions.pg_source_row_types(catalogue)),
            ("pg_sources", "source row columns", unions.pg_source_row_columns(catalogue)),
            ("pg_sources", "history source row", unions.pg_history_source_row(catalogue)),
            ("pg_sources", "candidate row columns", unions.pg_candidate_row_columns(catalogue)),
            ("pg_selection_candidate", "late step columns", unions.pg_late_step_columns()),
            ("pg_retrieval", "slice types", unions.pg_slice_types(catalogue)),
            ("pg_retrieval", "searchable tables", unions.pg_searchable_tables(catalogue)),
            ("pg_selection", "slice of type", unions.pg_slice_of_type(catalogue)),
            ("ora_rules_body", "authority", types.oracle_authority(catalogue)),
            ("ora_sources_body", "live memory rows", unions_oracle.memory_rows(catalogue, as_of=False)),
            ("ora_sources_body", "memory rows as of", unions_oracle.memory_rows(catalogue, as_of=True)),
            ("ora_sources_body", "erased now", unions_oracle.erased_now(catalogue)),
            ("ora_selection_body", "slice for type", unions_oracle.slice_for_type(catalogue)),
            ("ora_selection_candidate", "candidate row attributes", unions_oracle.candidate_attributes(catalogue)),
            ("ora_sources_body", "source row tail", unions_oracle.row_tail(catalogue, source=True)),
            ("ora_sources_body", "live row tail", unions_oracle.row_tail(catalogue)),
            ("ora_sources_body", "row tail as of", unions_oracle.row_tail(catalogue)),
            ("ora_tools_body", "expand rows", unions_oracle.expand_rows(catalogue)),
            ("ora_admin_body", "purge tables", unions_oracle.purge_deletes(catalogue)),
            ("ora_memory_body", "inventory types", unions_oracle.inventory_types(catalogue)),
            *_per_type_regions(catalogue, rules_spec)]


def _per_type_regions(catalogue: Catalogue, rules_spec: str) -> list[tuple[str, str, str]]:
    """What a live window reads per type (enumeration, citations, claims) and its candidates' status."""
    return [("pg_sources", "facts counted", per_type.pg_facts_counted(catalogue)),
            ("pg_sources", "enumerated by scope", per_type.pg_enumerated(catalogue, "scope")),
            ("pg_sources", "enumerated facts", per_type.pg_enumerated(catalogue, "facts")),
            ("pg_sources", "history types", per_type.pg_history_types(catalogue)),
            ("pg_selection", "candidate status", per_type.pg_candidate_status(catalogue)),
            ("ora_sources_body", "facts counted", per_type.oracle_facts_counted(catalogue)),
            ("ora_sources_body", "enumerated by scope", per_type.oracle_enumerated(catalogue, rules_spec, "scope")),
            ("ora_sources_body", "enumerated facts", per_type.oracle_enumerated(catalogue, rules_spec, "facts")),
            ("ora_sources_body", "history types", per_type.oracle_history_types(catalogue)),
            ("ora_sources_body", "citing rows", per_type.oracle_citing_rows(catalogue)),
            ("ora_sources_body", "cited rows", per_type.oracle_cited_rows(catalogue)),
            ("ora_selection_body", "candidate status", per_type.oracle_candidate_status(catalogue)),
            ("ora_retrieval_body", "lexical evidence", per_type.oracle_lexical(catalogue, "evidence")),
            ("ora_retrieval_body", "lexical recalled history", per_type.oracle_lexical(catalogue, "recalled_history")),
            ("ora_retrieval_body", "lexical durable facts", per_type.oracle_lexical(catalogue, "durable_facts")),
            ("ora_retrieval_body", "nearest evidence", per_type.oracle_nearest(catalogue, "evidence")),
            ("ora_retrieval_body", "nearest recalled history", per_type.oracle_nearest(catalogue, "recalled_history")),
            ("ora_retrieval_body", "nearest durable facts", per_type.oracle_nearest(catalogue, "durable_facts"))]


def _sql_region(text: str, path: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(-- generated: {re.escape(name)} .*?\n).*?(\n[ \t]*-- end generated: {re.escape(name)}\n)",
                         re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise CatalogueError(f"{path}: the markers of the generated region {name!r} (-- generated: {name} ... / "
                             f"-- end generated: {name}) must occur once")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def generate(repo: Path = REPO) -> dict[str, str | None]:
    """Repository-relative path -> the text it must hold (None: the file must not exist)."""
    catalogue = load(repo)
    files = _Files(repo)
    files.put("ora_errors_spec", errors.oracle_spec(catalogue))
    files.put("ora_errors_body", errors.oracle_body(catalogue))
    files.put("pg_errors", errors.postgresql(catalogue))
    files.put("py_error_classes", errors.python_classes(catalogue))
    files.put("py_memory_types", types.python(catalogue))
    files.put("pg_catalogue_columns", types.pg_columns(catalogue))
    files.put("ora_catalogue_columns", types.oracle_columns(catalogue))
    files.put("pg_memory_row", unions.pg_memory_row(catalogue))
    files.put("pg_memory_type_registry", types.pg_registry(catalogue))
    files.put("py_scenario_schema", types.scenario_schema(files.read("py_scenario_schema"), catalogue))
    files.put("ora_vpd_policies", unions_oracle.vpd_policies(catalogue, "ora_vpd_policies",
                                                            files.read("ora_vpd_policies")))
    files.put("docs_contract", _docs(files.read("docs_contract"), catalogue))
    for key, name, body in _sql_regions(catalogue, files.read("ora_rules_spec")):
        files.put(key, _sql_region(files.read(key), target(key), name, body))
    unions_oracle.check_carried(catalogue, files.read("ora_selection_candidate"), target("ora_selection_candidate"))
    for constant in catalogue.constants:
        for binding in constant.bind:
            files.put(binding.file, constants.bind(files.read(binding.file), target(binding.file), constant,
                                                   binding.declaration))
    files.put("py_constants", constants.python(catalogue.constants, catalogue.steps))
    for rule in catalogue.versions:
        version = versions.digest(rule, {target(key): files.read(key) for key in rule.files})
        files.put(rule.host, versions.write_version(rule, target(rule.host), files.read(rule.host), version))
    return files.generated


def stale(repo: Path = REPO) -> list[str]:
    """The generated files whose text on disk is not what the catalogue gives, in path order."""
    out = []
    for path, text in sorted(generate(repo).items()):
        on_disk = repo / path
        current = on_disk.read_text(encoding="utf-8") if on_disk.exists() else None
        if current != text:
            out.append(path)
    return out


def write(repo: Path = REPO) -> list[str]:
    """Writes the generated files that changed; returns their paths."""
    changed = stale(repo)
    generated = generate(repo)
    for path in changed:
        text = generated[path]
        if text is None:
            (repo / path).unlink()
        else:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    args = parser.parse_args(argv)
    try:
        changed = write(args.repo)
    except CatalogueError as error:
        print(f"contract: {error}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"wrote {path}")
    print(f"contract: {len(changed)} file(s) regenerated" if changed else "contract: every generated file is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
