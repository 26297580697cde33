"""The contract check: the Oracle package specs and the PostgreSQL functions must declare the same API.

Oracle: every `create or replace package <name>` spec in db/oracle/*/<name>.spec.sql, with each
`procedure|function <name>(<params>)` declared in it. PostgreSQL: every
`create or replace function|procedure <schema>.<name>(<params>)` in db/postgresql/{internal,api}/*.sql, the schema
being the package name. For each package on both sides the routines must match: the same names, the same
parameter names in the same order (OUT parameters of PostgreSQL are result columns and not compared), and a
procedure on Oracle must be a function returning void on PostgreSQL (a function must return something).

A package on one side only fails, unless ENGINE_INTERNAL lists it with the reason; a contract package or
routine that one engine has not written yet may be listed in PENDING / PENDING_ROUTINES, which every run
prints and which fail once the package or routine exists on both sides. A declaration in an
Oracle spec can be excluded by the marker comment `-- contract:internal` on the line directly above it.

Every error of the contract's error table (docs/contract.md: name, -20nnn, CXnnn) must occur in both
engines' package sources; ctx_errors' co_<name> constants must carry the contract's numbers, and a
PostgreSQL `ERRCODE = ctxasm.error_code('<name>')` (or `'CXnnn'`) must name a contract error and come with a
MESSAGE starting with that name.

select_window's selection steps (the CTX_SELECTION `<rule>_step` routines it calls) must have the same names in
the same order on both engines (ctxasm_dev.gates.selection_steps), and the document's candidates and candidate
cuts must be written with the same keys on both, the keys the selection schema declares
(ctxasm_dev.gates.selection_document).

    python -m ctxasm_dev.gates.contract_check [--repo DIR]

Exit code 0 when both sides agree, 1 otherwise (both sides are printed for every difference).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ctxasm_dev.gates import selection_document, selection_steps
from ctxasm_dev.gates.formatted_sql import strip_sql_comments

REPO = Path(__file__).resolve().parents[3]
ORACLE_SPECS = "db/oracle"                   # every <package>.spec.sql below it
ORACLE_PACKAGES = "db/oracle"
POSTGRES_PACKAGES = "db/postgresql"          # its internal and api folders: the functions, not the tables
POSTGRES_CODE_FOLDERS = ("internal", "api")
ORACLE_CODE_FOLDERS = ("internal", "api", "security")   # security holds CTX_POLICY, the VPD function
CONTRACT = "docs/contract.md"

# Packages that exist on one engine only, on purpose. Each entry says why; anything else on one side fails.
ENGINE_INTERNAL: dict[str, dict[str, str]] = {
    "oracle": {
        "ctx_errors": "error constants and named exceptions (PRAGMA EXCEPTION_INIT); PostgreSQL raises SQLSTATE "
                      "CXnnn by name through ctxasm.error_code (both generated from contract/errors.toml)",
        "ctx_policy": "the VPD policy function for DBMS_RLS; PostgreSQL states the rule with CREATE POLICY",
        "ctx_row_binder": "CTX_MEMORY's JSON-to-column binder; PostgreSQL checks a record in ctxasm.check_record",
        "ctx_json": "readers of JSON_OBJECT_T values, timestamps and vector text as PostgreSQL writes them; "
                    "PostgreSQL has jsonb operators and text casts",
        "ctx_rules": "the selection rules of CTX_ASSEMBLY; PostgreSQL: functions of schema ctxasm in the file of the "
                     "same name, internal/ctx_rules.sql",
        "ctx_retrieval": "retrieval for CTX_ASSEMBLY; PostgreSQL: functions of schema ctxasm in the file of the same "
                         "name, internal/ctx_retrieval.sql",
        "ctx_sources": "the enumerated and cited sources of a window; PostgreSQL: functions of schema ctxasm in the "
                       "file of the same name, internal/ctx_sources.sql",
        "ctx_budget": "the budget in effect and the candidate limits of a window; PostgreSQL: functions of schema "
                      "ctxasm in the file of the same name, internal/ctx_budget.sql",
        "ctx_selection": "the selection steps of a window, one routine per rule; PostgreSQL: functions of schema "
                         "ctxasm in the file of the same name, internal/ctx_selection.sql",
        "ctx_manifest_store": "how a manifest is stored and read, CTX_ASSEMBLY's record_manifest, read_manifest and "
                              "latest_manifest_id delegating to it (outside the selection version's digest); "
                              "PostgreSQL: those functions of schema ctx_assembly in api/ctx_manifest_store.sql",
    },
    "postgresql": {
        "ctxasm": "the table schema and its helper functions (memory_table, check_record, history triggers, "
                  "selection helpers, error codes); on Oracle these are private routines of the package bodies "
                  "or the internal packages CTX_ERRORS, CTX_JSON, CTX_ROW_BINDER, CTX_RULES, CTX_RETRIEVAL and "
                  "CTX_SOURCES",
        "ctx_history": "row-version history triggers; Oracle uses Flashback Query instead",
    },
}

# Contract packages one engine has not implemented yet. Reported on every run; remove an entry when the
# package lands on that engine, so that from then on its routines are compared.
PENDING: dict[str, dict[str, str]] = {
    "oracle": {},
    "postgresql": {},
}
# The same for single routines of a package that exists on both engines ("package.routine").
PENDING_ROUTINES: dict[str, dict[str, str]] = {
    "oracle": {},
    "postgresql": {},
}

_ORACLE_PACKAGE = re.compile(r"\bcreate\s+(or\s+replace\s+)?((editionable|noneditionable)\s+)?package\s+"
                             r"(?!body\b)(?:(\w+)\.)?(?P<name>\w+)\b.*?\b(is|as)\b(?P<body>.*?)\bend\s+(?P=name)\s*;",
                             re.IGNORECASE | re.DOTALL)
_ORACLE_ROUTINE = re.compile(r"\b(?P<kind>procedure|function)\s+(?P<name>\w+)", re.IGNORECASE)
_PG_ROUTINE = re.compile(r"\bcreate\s+(or\s+replace\s+)?(?P<kind>function|procedure)\s+"
                         r"(?P<schema>\w+)\.(?P<name>\w+)\s*\(", re.IGNORECASE)
_PG_MODES = {"in", "out", "inout", "variadic"}
_ERROR_ROW = re.compile(r"^\|\s*`(?P<name>\w+)`\s*\|\s*(?P<oracle>-20\d{3})\s*\|\s*(?P<pg>CX\d{3})\s*\|", re.MULTILINE)


@dataclass(frozen=True)
class Routine:
    package: str
    name: str
    params: tuple[str, ...]
    is_procedure: bool
    where: str

    def signature(self) -> str:
        kind = "procedure" if self.is_procedure else "function"
        return f"{kind} {self.package}.{self.name}({', '.join(self.params)})  [{self.where}]"


def _matching_paren(text: str, open_index: int) -> int:
    depth = 0
    quote: str | None = None
    dollar: str | None = None
    index = open_index
    while index < len(text):
        char = text[index]
        if dollar:
            if text.startswith(dollar, index):
                index += len(dollar)
                dollar = None
                continue
        elif quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "$":
            tag = re.match(r"\$\w*\$", text[index:])
            if tag:
                dollar = tag.group(0)
                index += len(dollar)
                continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _split_params(text: str) -> list[str]:
    parts, depth, current, quote = [], 0, [], None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def postgres_code_files(repo: Path) -> list[Path]:
    """The PostgreSQL files that create functions: db/postgresql/internal and db/postgresql/api."""
    return sorted(path for folder in POSTGRES_CODE_FOLDERS for path in (repo / POSTGRES_PACKAGES / folder).glob("*.sql"))


def oracle_code_files(repo: Path) -> list[Path]:
    """The Oracle files that create packages: db/oracle/internal, api and security (CTX_POLICY)."""
    return sorted(path for folder in ORACLE_CODE_FOLDERS for path in (repo / ORACLE_PACKAGES / folder).glob("*.sql"))


def oracle_routines(repo: Path) -> tuple[dict[str, list[Routine]], list[str]]:
    packages: dict[str, list[Routine]] = {}
    problems: list[str] = []
    for path in sorted((repo / ORACLE_SPECS).rglob("*.spec.sql")):
        raw = path.read_text(encoding="utf-8")
        code = strip_sql_comments(raw)
        relative = path.relative_to(repo).as_posix()
        for package in _ORACLE_PACKAGE.finditer(code):
            name = package["name"].lower()
            routines = packages.setdefault(name, [])
            body_start = package.start("body")
            body = package["body"]
            for match in _ORACLE_ROUTINE.finditer(body):
                absolute = body_start + match.start()
                line = _line_of(code, absolute)
                previous = raw.split("\n")[line - 2].strip().lower() if line >= 2 else ""
                if previous == "-- contract:internal":
                    continue
                after = body[match.end():]
                stripped = after.lstrip()
                params: list[str] = []
                if stripped.startswith("("):
                    open_index = match.end() + (len(after) - len(stripped))
                    close = _matching_paren(body, open_index)
                    if close < 0:
                        problems.append(f"{relative}:{line}: unbalanced parentheses in {match['name']}")
                        continue
                    params = [p.split()[0].lower() for p in _split_params(body[open_index + 1:close]) if p.split()]
                routines.append(Routine(name, match["name"].lower(), tuple(params),
                                        match["kind"].lower() == "procedure", f"{relative}:{line}"))
    return packages, problems


def postgres_routines(repo: Path) -> tuple[dict[str, list[Routine]], list[str]]:
    packages: dict[str, list[Routine]] = {}
    problems: list[str] = []
    for path in postgres_code_files(repo):
        code = strip_sql_comments(path.read_text(encoding="utf-8"))
        relative = path.relative_to(repo).as_posix()
        for match in _PG_ROUTINE.finditer(code):
            line = _line_of(code, match.start())
            close = _matching_paren(code, match.end() - 1)
            if close < 0:
                problems.append(f"{relative}:{line}: unbalanced parentheses in {match['schema']}.{match['name']}")
                continue
            params: list[str] = []
            for param in _split_params(code[match.end():close]):
                words = param.split()
                mode = words[0].lower() if words else ""
                if mode in _PG_MODES:
                    words = words[1:]
                if mode in {"out"} or not words:
                    continue
                params.append(words[0].lower().strip('"'))
            returns = re.match(r"\s*returns\s+(?P<type>\w+)", code[close + 1:], re.IGNORECASE)
            is_procedure = match["kind"].lower() == "procedure" or bool(
                returns and returns["type"].lower() == "void")
            packages.setdefault(match["schema"].lower(), []).append(
                Routine(match["schema"].lower(), match["name"].lower(), tuple(params), is_procedure,
                        f"{relative}:{line}"))
    return packages, problems


def compare(oracle: dict[str, list[Routine]], postgres: dict[str, list[Routine]]) -> tuple[list[str], list[str]]:
    """(problems, notes)"""
    problems: list[str] = []
    notes: list[str] = []
    sides = {"oracle": oracle, "postgresql": postgres}
    for side, other in (("oracle", "postgresql"), ("postgresql", "oracle")):
        for package in sorted(set(sides[side]) - set(sides[other])):
            if package in ENGINE_INTERNAL[side]:
                notes.append(f"{package}: {side} only, engine-internal: {ENGINE_INTERNAL[side][package]}")
            elif package in PENDING[other]:
                notes.append(f"PENDING: {package}: on {side} only, not compared: {PENDING[other][package]}")
            else:
                listed = "\n    ".join(r.signature() for r in sides[side][package])
                problems.append(f"package {package} exists on {side} only (not in ENGINE_INTERNAL):\n    {listed}")
    for package in sorted(set(oracle) & set(postgres)):
        for pending_side, entries in PENDING.items():
            if package in entries:
                problems.append(f"package {package} now exists on {pending_side}: remove it from PENDING")
        names = sorted({r.name for r in oracle[package]} | {r.name for r in postgres[package]})
        for name in names:
            left = sorted((r for r in oracle[package] if r.name == name), key=lambda r: r.params)
            right = sorted((r for r in postgres[package] if r.name == name), key=lambda r: r.params)
            if [(r.params, r.is_procedure) for r in left] == [(r.params, r.is_procedure) for r in right]:
                for pending_side, entries in PENDING_ROUTINES.items():
                    if f"{package}.{name}" in entries:
                        problems.append(f"{package}.{name} now exists on {pending_side}: remove it from "
                                        "PENDING_ROUTINES")
                continue
            missing_side = "oracle" if not left else "postgresql" if not right else None
            if missing_side and f"{package}.{name}" in PENDING_ROUTINES[missing_side]:
                present = right or left
                notes.append(f"PENDING: {package}.{name}: not on {missing_side} yet, not compared "
                             f"({present[0].where}): {PENDING_ROUTINES[missing_side][f'{package}.{name}']}")
                continue
            oracle_text = "\n      ".join(r.signature() for r in left) or "(none)"
            postgres_text = "\n      ".join(r.signature() for r in right) or "(none)"
            problems.append(f"{package}.{name} differs:\n    oracle:     {oracle_text}\n"
                            f"    postgresql: {postgres_text}")
    return problems, notes


def contract_errors(repo: Path) -> list[tuple[str, str, str]]:
    text = (repo / CONTRACT).read_text(encoding="utf-8")
    return [(m["name"], m["oracle"], m["pg"]) for m in _ERROR_ROW.finditer(text)]


def check_errors(repo: Path) -> list[str]:
    problems: list[str] = []
    errors = contract_errors(repo)
    if not errors:
        return [f"{CONTRACT}: no error table rows (| `name` | -20nnn | CXnnn | ...) found"]
    oracle_text = "\n".join(p.read_text(encoding="utf-8") for p in oracle_code_files(repo))
    postgres_text = "\n".join(p.read_text(encoding="utf-8") for p in postgres_code_files(repo))
    by_code = {pg: name for name, _, pg in errors}
    by_name = {name: pg for name, _, pg in errors}
    for name, oracle_code, pg_code in errors:
        if not re.search(rf"(?<![\d]){re.escape(oracle_code)}(?!\d)", oracle_text):
            problems.append(f"error {name}: {oracle_code} does not occur in {ORACLE_PACKAGES}")
        if not re.search(rf"\b{pg_code}\b", postgres_text):
            problems.append(f"error {name}: {pg_code} does not occur in {POSTGRES_PACKAGES}")
        constant = re.search(rf"\bco_{name}\s+constant\s+pls_integer\s*:=\s*(-?\d+)", oracle_text, re.IGNORECASE)
        if constant and constant.group(1) != oracle_code:
            problems.append(f"error {name}: ctx_errors.co_{name} is {constant.group(1)}, the contract says "
                            f"{oracle_code}")
    for path in postgres_code_files(repo):
        code = strip_sql_comments(path.read_text(encoding="utf-8"))
        # ERRCODE = 'CXnnn' or, as the packages raise, ERRCODE = ctxasm.error_code('<name>')
        for match in re.finditer(r"ERRCODE\s*=\s*(?:'(?P<code>CX\d{3})'|ctxasm\.error_code\('(?P<errname>\w+)'\))"
                                 r"\s*,\s*MESSAGE\s*=\s*(format\s*\(\s*)?'(?P<name>\w+):", code, re.IGNORECASE):
            if match["errname"] and match["errname"] not in by_name:
                problems.append(f"{path.relative_to(repo).as_posix()}:{_line_of(code, match.start())}: "
                                f"ctxasm.error_code('{match['errname']}') names no error of the contract")
                continue
            expected = by_code.get(match["code"]) if match["code"] else match["errname"]
            match_code = match["code"] or by_name[match["errname"]]
            if expected and expected != match["name"]:
                problems.append(f"{path.relative_to(repo).as_posix()}:{_line_of(code, match.start())}: "
                                f"{match_code} raised with message '{match['name']}: ...', the contract names "
                                f"it {expected}")
    return problems


def check(repo: Path) -> tuple[list[str], list[str]]:
    oracle, oracle_problems = oracle_routines(repo)
    postgres, postgres_problems = postgres_routines(repo)
    problems = oracle_problems + postgres_problems
    if not oracle:
        problems.append(f"no Oracle package specs found in {ORACLE_SPECS}")
    if not postgres:
        problems.append(f"no PostgreSQL functions found in {POSTGRES_PACKAGES}")
    compared, notes = compare(oracle, postgres)
    problems += compared
    problems += check_errors(repo)
    for part in (selection_steps, selection_document):
        part_problems, part_notes = part.check(repo)
        problems += part_problems
        notes += part_notes
    both = sorted(set(oracle) & set(postgres))
    notes.insert(0, f"compared packages: {', '.join(both) or '(none)'}; "
                    f"{sum(len(oracle[p]) for p in both)} Oracle / {sum(len(postgres[p]) for p in both)} "
                    "PostgreSQL routines")
    return problems, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.contract_check", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    problems, notes = check(args.repo.resolve())
    for note in notes:
        print(note)
    for problem in problems:
        print("FAIL:", problem)
    print(f"contract_check: {'FAIL' if problems else 'OK'}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
