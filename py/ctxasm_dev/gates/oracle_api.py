"""The Oracle API gate: every call into Oracle-supplied code matches the signature table.

Every call to an Oracle-supplied package (DBMS_LOB, DBMS_SQL, DBMS_CRYPTO, DBMS_RLS, DBMS_SESSION,
DBMS_FLASHBACK, DBMS_ASSERT, DBMS_VECTOR, CTX_DDL, ...) or object type (JSON_OBJECT_T, JSON_ARRAY_T,
JSON_ELEMENT_T, ...) in the Oracle folders, the `--rollback` blocks included, must name a member that
py/ctxasm_dev/gates/oracle_signatures.json lists, with arguments that one of its overloads accepts: no named
parameter it has not, no more positional arguments than it takes, every parameter without a default given.
Each entry of the table cites the documentation section it was taken from (docs/oracle-gates.md).

    python -m ctxasm_dev.gates.oracle_api [--repo DIR] [FILE ...]

Exit code 0 when every call matches, 1 otherwise (each finding names file and line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxasm_dev.gates.oracle_catalog import SIGNATURES, check_signature_table, load_signatures
from ctxasm_dev.gates.plsql_resolver import API, analyse

REPO = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.oracle_api", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("files", nargs="*", type=Path, help="report only these files (all are read)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    signatures = load_signatures()
    problems = check_signature_table(signatures)
    findings = [f for f in analyse(repo, [f.resolve() for f in args.files] or None, signatures) if f.gate == API]
    for problem in problems:
        print(problem)
    for finding in findings:
        print(finding.render(repo))
    calls = sum(len(members) for members in signatures.packages.values()) + \
        sum(len(t.members) + len(t.static) for t in signatures.types.values())
    status = "FAIL" if findings or problems else "OK"
    print(f"oracle_api: {status}: signature table {SIGNATURES.name} ({len(signatures.packages)} packages, "
          f"{len(signatures.types)} types, {calls} members); {len(findings) + len(problems)} problems")
    return 1 if findings or problems else 0


if __name__ == "__main__":
    sys.exit(main())
