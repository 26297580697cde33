"""The PL/SQL parse gate: every Oracle statement must parse with sqlfluff's oracle dialect.

For each .sql file under db/oracle and db/tests/utplsql:
check the Liquibase layout rules (header, dbms:oracle, endDelimiter:/ for PL/SQL, one unit per changeset,
no line ending in a division slash, a rollback for every table change), split each changeset into
statements (lone `/` lines for PL/SQL changesets, `;` for plain SQL) and parse each statement.

Where sqlfluff cannot parse a statement kind that is valid Oracle, one of the rules in KNOWN_GAPS may
accept the statement instead; each rule recognises exactly one statement form and still parses what it can
(see docs/oracle-gates.md). Whole files are never skipped.

    python -m ctxasm_dev.gates.oracle_parse [--repo DIR] [FILE ...]

Exit code 0 when every statement parses or is accepted by a rule, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import Changeset, Statement, oracle_files, read_changelog, statements_of

REPO = Path(__file__).resolve().parents[3]
AUTHOR = "ctxasm"

_PLSQL_UNIT = re.compile(
    r"^\s*(create\s+(or\s+replace\s+)?((editionable|noneditionable)\s+)?"
    r"(package(\s+body)?|procedure|function|trigger|type(\s+body)?)\b|begin\b|declare\b)",
    re.IGNORECASE)
_PACKAGE = re.compile(r"^\s*create\s+(or\s+replace\s+)?package\s+(?P<body>body\s+)?(?P<name>\w+)", re.IGNORECASE)
_TABLE_CHANGE = re.compile(r"^\s*(create|alter|drop)\s+((unique|bitmap)\s+)?(table|index)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    path: Path
    changeset: str | None
    line: int
    message: str

    def render(self, repo: Path) -> str:
        where = self.path.relative_to(repo).as_posix() if self.path.is_relative_to(repo) else str(self.path)
        changeset = f" [changeset {self.changeset}]" if self.changeset else ""
        return f"{where}:{self.line}:{changeset} {self.message}"


# ---------------------------------------------------------------------------------------------------------
# sqlfluff


@lru_cache(maxsize=1)
def _linter():
    from sqlfluff.core import FluffConfig, Linter

    return Linter(config=FluffConfig(overrides={"dialect": "oracle"}))


def parse_errors(sql: str) -> list[tuple[int, str]]:
    """(line within sql, description) for every unparsable segment or parse violation; [] when it parses.

    The answer is kept on disk under the digest of the text and sqlfluff's version (the parse depends on nothing
    else), so the gate over unchanged files, and the tests that break a copy of one, parse only what changed:
    sqlfluff takes most of a minute over all the Oracle files and a quarter of one over one large package body."""
    cached = _cache_file(sql)
    if cached is not None and cached.is_file():
        return [(int(line), str(text)) for line, text in json.loads(cached.read_text(encoding="utf-8"))]
    errors = _parse(sql)
    if cached is not None:
        _store(cached, json.dumps(errors))
    return errors


def _cache_file(sql: str) -> Path | None:
    """Where the parse of `sql` is kept: CTXASM_PARSE_CACHE, else .ctxasm/cache/oracle_parse in the checkout
    (None when CTXASM_PARSE_CACHE=off)."""
    import sqlfluff

    folder = os.environ.get("CTXASM_PARSE_CACHE") or str(REPO / ".ctxasm" / "cache" / "oracle_parse")
    if folder == "off":
        return None
    digest = hashlib.sha256(f"sqlfluff {sqlfluff.__version__} oracle\n{sql}".encode("utf-8")).hexdigest()
    return Path(folder) / digest[:2] / f"{digest}.json"


def _store(path: Path, text: str) -> None:
    """Write whole or not at all (pytest workers may parse the same text at once)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False) as handle:
            handle.write(text)
        os.replace(handle.name, path)
    except OSError:
        pass  # a read-only checkout parses every time


def _parse(sql: str) -> list[tuple[int, str]]:
    parsed = _linter().parse_string(sql)
    errors: list[tuple[int, str]] = []
    for violation in parsed.violations:
        errors.append((getattr(violation, "line_no", 1) or 1, violation.desc()))
    if parsed.tree is not None:
        for segment in parsed.tree.recursive_crawl("unparsable"):
            snippet = " ".join(segment.raw.split())[:80]
            errors.append((segment.pos_marker.line_no, f"unparsable: {snippet!r}"))
    elif not errors:
        errors.append((1, "sqlfluff produced no parse tree"))
    return _dedupe(errors)


def _dedupe(errors: list[tuple[int, str]]) -> list[tuple[int, str]]:
    seen: set[tuple[int, str]] = set()
    unique = []
    for error in errors:
        if error not in seen:
            seen.add(error)
            unique.append(error)
    return unique


# ---------------------------------------------------------------------------------------------------------
# Known gaps: one rule per statement form that is valid Oracle but that sqlfluff 4.5 (oracle) cannot parse.


@dataclass(frozen=True)
class GapRule:
    name: str
    description: str
    recognise: Callable[[str], tuple[bool, str]]   # (the statement has this form and its parts parse, reason)


_IDENT = r"[A-Za-z][A-Za-z0-9_$#]*"
_CONTEXT = re.compile(
    rf"^\s*create\s+(or\s+replace\s+)?context\s+{_IDENT}\s+using\s+({_IDENT}\.)?{_IDENT}"
    r"(\s+(accessed\s+globally|initialized\s+(externally|globally)))?\s*;?\s*$",
    re.IGNORECASE)
_CONTEXT_HEAD = re.compile(r"^\s*create\s+(or\s+replace\s+)?context\b", re.IGNORECASE)


def _create_context(statement: str) -> tuple[bool, str]:
    if not _CONTEXT_HEAD.match(_code(statement)):
        return False, ""
    if _CONTEXT.match(_code(statement)):
        return True, "CREATE CONTEXT <namespace> USING [<schema>.]<package> matched exactly"
    return False, "CREATE CONTEXT does not have the form CREATE [OR REPLACE] CONTEXT ns USING [schema.]package"


_INDEX_HEAD = re.compile(
    rf"^\s*create\s+(unique\s+|bitmap\s+)?index\s+({_IDENT}\.)?{_IDENT}\s+on\s+({_IDENT}\.)?{_IDENT}\s*\(",
    re.IGNORECASE)
_INDEX_TAIL = re.compile(rf"^\s*((tablespace\s+{_IDENT}|online|compress(\s+\d+)?|nologging|logging|reverse)\s*)*;?\s*$",
                         re.IGNORECASE)


def _function_based_index(statement: str) -> tuple[bool, str]:
    code = _code(statement)
    head = _INDEX_HEAD.match(code)
    if not head:
        return False, ""
    close = _matching_paren(code, head.end() - 1)
    if close < 0:
        return False, "function-based index: unbalanced parentheses in the key list"
    if not _INDEX_TAIL.match(code[close + 1:]):
        return False, f"function-based index: unexpected text after the key list: {code[close + 1:].strip()[:60]!r}"
    keys = _split_top_level(code[head.end():close])
    for number, key in enumerate(keys, start=1):
        errors = parse_errors(f"select {key.strip()} from dual")
        if errors:
            return False, f"function-based index: key expression {number} does not parse: {errors[0][1]}"
    return True, f"CREATE INDEX header matched; its {len(keys)} key expression(s) parsed as SELECT expressions"


_APPROX_FETCH = re.compile(r"\bfetch\s+(approx|approximate)\s+(?=(first|next)\b)", re.IGNORECASE)
_TARGET_ACCURACY = re.compile(r"(?<=\bonly)\s+with\s+target\s+accuracy\s+\d+", re.IGNORECASE)


def _approximate_fetch(statement: str) -> tuple[bool, str]:
    """A statement with FETCH APPROX[IMATE] FIRST|NEXT ... ROWS ONLY [WITH TARGET ACCURACY n] (the row limit
    of a vector similarity search, 23ai): parsed again with the approximate words blanked, which leaves the
    exact FETCH FIRST ... ROWS ONLY sqlfluff knows; every other part of the statement must then parse."""
    code = _code(statement)
    found = list(_APPROX_FETCH.finditer(code))
    if not found:
        return False, ""

    def blank(match: re.Match) -> str:
        return re.sub(r"\S", " ", match.group(0))

    rewritten = _TARGET_ACCURACY.sub(blank, code)
    rewritten = _APPROX_FETCH.sub(lambda m: m.group(0)[:5] + re.sub(r"\S", " ", m.group(0)[5:]), rewritten)
    errors = parse_errors(rewritten)
    if errors:
        return False, f"approximate fetch: with APPROX blanked the statement still does not parse: {errors[0][1]}"
    return True, (f"{len(found)} FETCH APPROX row limit(s) read as FETCH FIRST ... ROWS ONLY; the rest of the "
                  "statement parsed")


KNOWN_GAPS: tuple[GapRule, ...] = (
    GapRule("create-context",
            "CREATE [OR REPLACE] CONTEXT ns USING [schema.]package [ACCESSED GLOBALLY | INITIALIZED ...]: "
            "sqlfluff's oracle dialect has no CREATE CONTEXT statement",
            _create_context),
    GapRule("function-based-index",
            "CREATE [UNIQUE|BITMAP] INDEX name ON table (expr, ...): sqlfluff's oracle dialect accepts only "
            "column names as index keys; the header is matched by a regex and every key expression is parsed "
            "by sqlfluff as `select <expr> from dual`",
            _function_based_index),
    GapRule("approximate-fetch",
            "FETCH APPROX[IMATE] FIRST|NEXT n ROWS ONLY [WITH TARGET ACCURACY n]: sqlfluff's oracle dialect has no "
            "approximate row limit; the statement is parsed again with APPROX (and the target accuracy) blanked",
            _approximate_fetch),
)


def _code(statement: str) -> str:
    from ctxasm_dev.gates.formatted_sql import strip_sql_comments

    return strip_sql_comments(statement)


def _matching_paren(text: str, open_index: int) -> int:
    depth = 0
    in_quote = False
    for index in range(open_index, len(text)):
        char = text[index]
        if char == "'":
            in_quote = not in_quote
        elif not in_quote and char == "(":
            depth += 1
        elif not in_quote and char == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def _split_top_level(text: str) -> list[str]:
    parts, depth, current, in_quote = [], 0, [], False
    for char in text:
        if char == "'":
            in_quote = not in_quote
        if not in_quote:
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            elif char == "," and depth == 0:
                parts.append("".join(current))
                current = []
                continue
        current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


# ---------------------------------------------------------------------------------------------------------
# Narrowing a failure down: sqlfluff reports a broken package only at its first line.


_SUBPROGRAM = re.compile(r"^(?P<indent>\s*)(procedure|function)\s+(?P<name>\w+)\b", re.IGNORECASE)


def locate_in_package(statement: Statement) -> str | None:
    """For an unparsable package body, the first member (declarations or a routine) that fails alone."""
    head = _PACKAGE.match(statement.text)
    if not head:
        return None
    name = head["name"]
    lines = statement.text.split("\n")
    # the package's own `is`/`as` line ends the header; the final `end <name>;` closes it
    try:
        first = next(i for i, line in enumerate(lines) if re.search(r"\b(is|as)\s*$", _code(line), re.IGNORECASE))
    except StopIteration:
        return None
    last = max((i for i, line in enumerate(lines) if re.match(rf"^\s*end\s+{name}\s*;", line, re.IGNORECASE)),
               default=len(lines) - 1)
    header = "\n".join(lines[:first + 1])
    members = _members(lines, first + 1, last, body=bool(head["body"]))
    for label, start, end in members:
        chunk = "\n".join(lines[start:end])
        filler = "" if label != "declarations" or not head["body"] else "\nprocedure gate_filler is begin null; end gate_filler;"
        probe = f"{header}\n{chunk}{filler}\nend {name};"
        errors = parse_errors(probe)
        if errors:
            return f"{label} (lines {statement.line + start}-{statement.line + end - 1}) does not parse on its own"
    return None


def _members(lines: list[str], start: int, stop: int, *, body: bool) -> list[tuple[str, int, int]]:
    """(label, first line, end line exclusive) of the declarations and each routine between start and stop."""
    starts: list[tuple[int, str]] = []
    indent: str | None = None
    for index in range(start, stop):
        match = _SUBPROGRAM.match(lines[index])
        if match and (indent is None or match["indent"] == indent):
            indent = match["indent"]
            starts.append((index, match["name"]))
    if not body:
        # a spec: each declaration on its own (a routine declaration runs to its first `;`)
        return [(f"declaration of {name}", index, _declaration_end(lines, index, stop)) for index, name in starts] or \
            [("declarations", start, stop)]
    members: list[tuple[str, int, int]] = []
    if not starts or starts[0][0] > start:
        members.append(("declarations", start, starts[0][0] if starts else stop))
    for position, (index, name) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else stop
        members.append((f"routine {name}", index, end))
    return members


def _declaration_end(lines: list[str], index: int, stop: int) -> int:
    for end in range(index, stop):
        if ";" in _code(lines[end]):
            return end + 1
    return stop


# ---------------------------------------------------------------------------------------------------------
# The gate


@dataclass
class Report:
    files: int = 0
    changesets: int = 0
    statements: int = 0
    accepted: list[str] | None = None
    problems: list[Problem] | None = None

    def __post_init__(self) -> None:
        self.accepted = [] if self.accepted is None else self.accepted
        self.problems = [] if self.problems is None else self.problems


def check_file(path: Path, report: Report, seen_ids: dict[str, Path]) -> None:
    report.files += 1
    changelog = read_changelog(path)
    problems = report.problems
    if not changelog.has_header:
        problems.append(Problem(path, None, 1, "first line must be '--liquibase formatted sql'"))
    if not changelog.changesets:
        problems.append(Problem(path, None, 1, "no --changeset in the file"))
    previous_id: str | None = None
    for changeset in changelog.changesets:
        report.changesets += 1
        _check_layout(changeset, previous_id, seen_ids, problems)
        previous_id = changeset.id
        statements, split_problems = statements_of(changeset)
        for message in split_problems:
            problems.append(Problem(path, changeset.id, changeset.line, message))
        _check_units(changeset, statements, problems)
        for statement in statements:
            report.statements += 1
            _check_statement(changeset, statement, report)


def _check_layout(changeset: Changeset, previous_id: str | None, seen_ids: dict[str, Path],
                  problems: list[Problem]) -> None:
    path = changeset.path

    def fail(message: str, line: int | None = None) -> None:
        problems.append(Problem(path, changeset.id, line or changeset.line, message))

    if changeset.dbms != {"oracle"}:
        fail(f"changeset needs dbms:oracle (has {','.join(sorted(changeset.dbms)) or 'none'})")
    if changeset.author != AUTHOR:
        fail(f"changeset author is {changeset.author!r}, not {AUTHOR!r}")
    if changeset.id in seen_ids:
        fail(f"changeset id {changeset.id!r} is also used in {seen_ids[changeset.id].name}")
    seen_ids.setdefault(changeset.id, path)
    if previous_id is not None and changeset.id < previous_id:
        fail(f"changeset ids must sort in file order: {changeset.id!r} comes after {previous_id!r}")
    # Code lines only: a comment's slash (the `*/` closing a doc comment) is inside a comment token, and the
    # render gate checks that Liquibase kept every line of the changeset (docs/oracle-gates.md).
    code_lines = _code("\n".join(line for _, line in changeset.body_lines)).split("\n")
    for (number, _), code in zip(changeset.body_lines, code_lines):
        stripped = code.rstrip()
        if stripped.endswith("/") and stripped.strip() != "/":
            fail("line ends with '/': Liquibase 4.29 may split there (endDelimiter:/); move the slash", number)


def _check_units(changeset: Changeset, statements: list[Statement], problems: list[Problem]) -> None:
    path = changeset.path
    plsql = [s for s in statements if _PLSQL_UNIT.match(_code(s.text))]
    if plsql or changeset.end_delimiter is not None:
        if changeset.end_delimiter is None:
            problems.append(Problem(path, changeset.id, changeset.line,
                                    "PL/SQL changeset needs endDelimiter:/ (Liquibase would split it at ';')"))
        if not changeset.flag("stripComments") and "stripcomments" not in changeset.attributes:
            problems.append(Problem(path, changeset.id, changeset.line,
                                    "PL/SQL changeset needs stripComments:false (keep comments in stored source)"))
        if len(statements) != 1:
            problems.append(Problem(path, changeset.id, changeset.line,
                                    f"one object per changeset: found {len(statements)} '/'-terminated units"))
        if any(_PACKAGE.match(_code(s.text)) for s in plsql) and not changeset.flag("runOnChange"):
            problems.append(Problem(path, changeset.id, changeset.line, "package changeset needs runOnChange:true"))
    if any(_TABLE_CHANGE.match(_code(s.text)) for s in statements) and not changeset.rollback_lines:
        problems.append(Problem(path, changeset.id, changeset.line, "table or index change without a --rollback"))


def _check_statement(changeset: Changeset, statement: Statement, report: Report) -> None:
    errors = parse_errors(statement.text)
    if not errors:
        return
    rule_reasons: list[str] = []
    for rule in KNOWN_GAPS:
        accepted, reason = rule.recognise(statement.text)
        if accepted:
            report.accepted.append(
                f"{changeset.path.name} [changeset {changeset.id}] line {statement.line}: rule {rule.name}: {reason}")
            return
        if reason:
            rule_reasons.append(f"rule {rule.name}: {reason}")
    line, description = errors[0]
    message = f"sqlfluff (oracle) cannot parse this statement: {description}"
    where = locate_in_package(statement)
    if where:
        message += f"; narrowed down: {where}"
    if rule_reasons:
        message += "; " + "; ".join(rule_reasons)
    report.problems.append(Problem(changeset.path, changeset.id, statement.line + line - 1, message))


def run(repo: Path, files: list[Path] | None = None) -> Report:
    report = Report()
    seen_ids: dict[str, Path] = {}
    for path in files if files is not None else oracle_files(repo):
        check_file(path, report, seen_ids)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.oracle_parse", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("files", nargs="*", type=Path, help="only these files (default: all Oracle folders)")
    parser.add_argument("--verbose", action="store_true", help="also list statements accepted by a known-gap rule")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    files = [f.resolve() for f in args.files] if args.files else None
    report = run(repo, files)
    if not report.files:
        print("oracle_parse: FAIL: no Oracle .sql files found under", repo)
        return 1
    for problem in report.problems:
        print(problem.render(repo))
    if args.verbose:
        for accepted in report.accepted:
            print("accepted by", accepted)
    status = "FAIL" if report.problems else "OK"
    print(f"oracle_parse: {status}: {report.files} files, {report.changesets} changesets, {report.statements} "
          f"statements; {len(report.accepted)} accepted by known-gap rules; {len(report.problems)} problems")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
