"""The Oracle names gate: every identifier in the Oracle code resolves to something that exists.

In package specs and bodies, anonymous blocks and the utPLSQL suites, every name must be a declaration in
scope (a local, a parameter, a loop variable or cursor record), a member of the package or of another
package's spec, a column of a table db/oracle/schema creates, of a dictionary view, of a WITH query, a
subquery or a JSON_TABLE column list of the same statement, or an entry of the signature table
(oracle_signatures.json: Oracle-supplied packages and types, built-in functions, predefined exceptions,
datatypes). A misspelled variable, column, record field, package member or named parameter of a repository
routine fails, naming file and line. What the gate cannot follow is listed in docs/oracle-gates.md.

    python -m ctxasm_dev.gates.oracle_names [--repo DIR] [FILE ...]

Exit code 0 when every name resolves, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxasm_dev.gates.plsql_resolver import NAMES, Resolver

REPO = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.oracle_names",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("files", nargs="*", type=Path, help="report only these files (all are read)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    resolver = Resolver(repo)
    resolver.load()
    findings = [f for f in resolver.analyse() if f.gate == NAMES]
    if args.files:
        wanted = {f.resolve() for f in args.files}
        findings = [f for f in findings if f.path.resolve() in wanted]
    for finding in sorted(findings, key=lambda f: (f.path.as_posix(), f.line, f.message)):
        print(finding.render(repo))
    units = len(resolver.units)
    status = "FAIL" if findings else "OK"
    print(f"oracle_names: {status}: {units} units, {len(resolver.tables.columns)} tables, "
          f"{len(resolver.packages)} packages; {len(findings)} problems")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
