"""The tenant-index gate: every key and index on a memory table leads with the tenant.

Multi-tenant means physical: a read that names the tenant must find its rows through an index that starts
with tenant_id, so the rows of other tenants are never walked. The gate reads the schema files of both engines
(db/{postgresql,oracle}/schema) and checks every PRIMARY KEY, UNIQUE constraint and CREATE INDEX on a memory
table or its history (including the ones a DO block or an EXECUTE IMMEDIATE creates from a template):

- a btree key or index must list tenant_id first;
- an index that cannot lead with a column (PostgreSQL GIN or HNSW over a tsvector or a vector) is accepted on a
  table that is partitioned by tenant_id (LIST, or HASH through the tenant slot operator class): each partition,
  and so each such index, holds one tenant; a template run for every memory table passes when every memory table
  is (the histories are partitioned the same way by ctxasm.rebuild_tenant_tables);
- an Oracle Text CONTEXT index must FILTER BY tenant_id (the text query filters by tenant inside the index);
- an Oracle vector index is accepted with the reason recorded in ORACLE_VECTOR_REASON (docs/scale-out.md).

    python -m ctxasm_dev.gates.tenant_indexes [--repo DIR]

Exit code 0 when every key and index passes, 1 otherwise (each finding names file and line).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCHEMA_DIRS = ("db/postgresql/schema", "db/oracle/schema")
#: Why an Oracle vector index may not lead with the tenant: a vector index has one column.
ORACLE_VECTOR_REASON = ("a vector index has one column; every query names the tenant, which the optimizer "
                        "applies as a pre-filter or in-filter of the vector index scan (docs/scale-out.md)")
#: Index methods that index one searchable column and cannot lead with the tenant.
_DOMAIN_METHODS = {"gin", "hnsw", "ivfflat", "gist"}
#: The memory tables of the catalogue (db/postgresql/schema/row_history.sql); history tables follow them.
_TYPES = re.compile(r"\('(\w+)',\s*'(\w+)',\s*\d+\)")


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    message: str

    def render(self, repo: Path) -> str:
        return f"{self.path.relative_to(repo)}:{self.line}: {self.message}"


def _strip_comments(text: str) -> str:
    """SQL with -- comments blanked (line numbers kept); quoted text is left alone."""
    return re.sub(r"--[^\n]*", lambda m: " " * len(m.group()), text)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def memory_tables(repo: Path) -> set[str]:
    """The memory tables and their history tables, from the catalogue the schema itself keeps."""
    catalogue = (repo / "db/postgresql/schema/row_history.sql").read_text()
    tables = {table for _, table in _TYPES.findall(catalogue)}
    return tables | {f"{table}_history" for table in tables}


def _balanced(text: str, start: int) -> tuple[str, int]:
    """The text inside the parentheses that open at text[start], and the offset just after them."""
    depth = 0
    for offset in range(start, len(text)):
        if text[offset] == "(":
            depth += 1
        elif text[offset] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:offset], offset + 1
    return text[start + 1:], len(text)


def _elements(text: str) -> list[str]:
    """The key elements of a column list, split at its top-level commas."""
    elements, depth, current = [], 0, []
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            elements.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    elements.append("".join(current).strip())
    return [e for e in elements if e]


def _leads_with_tenant(elements: list[str]) -> bool:
    """The first key element is tenant_id, or an expression over it (Oracle's one-active-version index keys
    `CASE WHEN status = 'active' THEN tenant_id END`)."""
    return bool(elements) and re.search(r"\btenant_id\b", elements[0], re.I) is not None


def _partitioned_by_tenant(sql: str) -> set[str]:
    return {m.group(1).lower() for m in re.finditer(
        r"create\s+table\s+(?:ctxasm\.)?(\w+)\s*\((?:[^;]*?)\)\s*partition\s+by\s+(?:list|hash)\s*\(\s*tenant_id"
        r"(?:\s+ctxasm_storage\.tenant_slot_ops)?\s*\)", sql, re.I | re.S)}


def check_file(path: Path, tables: set[str], partitioned: set[str]) -> list[Finding]:
    raw = path.read_text(encoding="utf-8")
    sql = _strip_comments(raw)
    findings: list[Finding] = []

    def table_of(name: str) -> str | None:
        name = name.lower().strip('"')
        if name in ("%i", "%s"):  # a template run for every memory table (the history loop)
            return "%"
        return name if name in tables else None

    # Keys declared with a table: PRIMARY KEY (...) and UNIQUE (...) inside CREATE TABLE.
    for table in re.finditer(r"create\s+table\s+(?:ctxasm\.)?(\w+)\s*\((.*?)\n\)", sql, re.I | re.S):
        name = table_of(table.group(1))
        if name is None:
            continue
        for key in re.finditer(r"(primary\s+key|unique)\s*(?=\()", table.group(2), re.I):
            elements = _elements(_balanced(table.group(2), key.end())[0])
            if elements and not _leads_with_tenant(elements):
                findings.append(Finding(path, _line(sql, table.start(2) + key.start()),
                                        f"{key.group(1).upper()} of {name} leads with {elements[0]}, not tenant_id"))
    # Indexes, also inside DO blocks and EXECUTE IMMEDIATE strings.
    index = re.compile(
        r"create\s+(unique\s+)?(vector\s+)?index\s+(?:if\s+not\s+exists\s+)?[\w%\"]+\s+on\s+(?:only\s+)?"
        r"(?:ctxasm\.)?([\w%\"]+)\s*(?:using\s+(\w+)\s*)?(?=\()", re.I)
    for match in index.finditer(sql):
        name = table_of(match.group(3))
        if name is None:
            continue
        inside, after = _balanced(sql, match.end())
        elements = _elements(inside)
        method = (match.group(4) or "btree").lower()
        # The rest of the statement; DDL built in PL/SQL is joined across its string pieces.
        tail = re.sub(r"'\s*\|\|\s*'", "", sql[after:]).split(";", 1)[0].lower()
        where = _line(sql, match.start())
        label = f"index on {name if name != '%' else 'every memory table'} ({', '.join(elements)})"
        if _leads_with_tenant(elements):
            continue
        if match.group(2):  # an Oracle vector index
            if not ORACLE_VECTOR_REASON:
                findings.append(Finding(path, where, f"{label}: a vector index without a recorded reason"))
            continue
        if "indextype is ctxsys.context" in tail:
            if not re.search(r"filter\s+by\s+[^;]*\btenant_id\b", tail):
                findings.append(Finding(path, where, f"{label}: an Oracle Text index must FILTER BY tenant_id"))
            continue
        every_table_partitioned = {t for t in tables if not t.endswith("_history")} <= partitioned
        if method in _DOMAIN_METHODS and (name in partitioned or (name == "%" and every_table_partitioned)):
            continue
        reason = (f"a {method} index on a table not partitioned by tenant_id" if method in _DOMAIN_METHODS
                  else "does not lead with tenant_id")
        findings.append(Finding(path, where, f"{label}: {reason}"))
    return findings


def check(repo: Path) -> list[Finding]:
    tables = memory_tables(repo)
    files = sorted(p for folder in SCHEMA_DIRS for p in (repo / folder).glob("*.sql"))
    partitioned = set().union(*(_partitioned_by_tenant(_strip_comments(p.read_text())) for p in files))
    return [finding for path in files for finding in check_file(path, tables, partitioned)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.tenant_indexes", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    findings = check(repo)
    for finding in findings:
        print(finding.render(repo))
    print(f"tenant_indexes: {'FAIL' if findings else 'OK'}: {len(memory_tables(repo))} memory and history tables; "
          f"{len(findings)} problems")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
