"""The first failure of an Oracle deployment, explained: scripts/oracle-dev calls this when `liquibase update` or
the compile check after it fails (docs/oracle.md, "A local Oracle with scripts/oracle-dev").

It prints, from Liquibase's output and the owner's USER_ERRORS:
  - the changeset that failed (its id, the file and line it is written at, and the path Liquibase records),
  - the object it creates or replaces,
  - Oracle's error lines (ORA-, PLS-, DRG-),
  - the USER_ERRORS lines (what did not compile, with the file and line it comes from),
  - the row of docs/oracle.md's "Oracle readiness" table that names the error: the class of risk, the gate
    that should have caught it and the Oracle documentation section that explains it.

    python -m ctxasm_dev.oracle_failure --repo DIR [--liquibase-log FILE] [--user-errors FILE]

--user-errors takes the compile check's report: ERROR|type|name|line|position|text and INVALID|type|name lines.
Exit code 0 (it explains; the caller decides that the step failed).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import oracle_files, read_changelog, statements_of
from ctxasm_dev.gates.oracle_schema import ddl_statements

READINESS_DOC = "docs/oracle.md"
READINESS_HEADING = "## Oracle readiness"
_FAILED = re.compile(r"Migration failed for change ?set (?P<path>\S+?)::(?P<id>\S+?)::(?P<author>[^:\s]+)",
                     re.IGNORECASE)
_CODE = re.compile(r"\b(?:ORA|PLS|DRG)-\d{5}\b")
_ORACLE_LINE = re.compile(r"((?:ORA|PLS|DRG)-\d{5}:.*?)(?=\s*(?:\[Failed SQL|ORA-\d{5}|PLS-\d{5}|DRG-\d{5}|$))")
_OBJECT = re.compile(r"^\s*(create|alter|drop)\s+(?:or\s+replace\s+)?(?:unique\s+|bitmap\s+|vector\s+)?"
                     r"(?P<kind>package\s+body|package|table|index|context|trigger|type)\s+(?:if\s+not\s+exists\s+)?"
                     r"(?P<name>[\w$#.\"]+)(?:.*?\bon\s+(?P<table>[\w$#.\"]+))?", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Located:
    changeset: str
    path: str           # the file in this repository, relative
    line: int           # of the --changeset line
    recorded: str       # the path Liquibase records (logicalFilePath)
    objects: tuple[str, ...]


def locate_changeset(repo: Path, recorded: str, changeset_id: str) -> Located | None:
    """The file and line of a changeset Liquibase names by its recorded path and id."""
    for path in oracle_files(repo):
        changelog = read_changelog(path)
        for changeset in changelog.changesets:
            if changeset.id == changeset_id and changelog.identity_path(repo, changeset) == recorded:
                return Located(changeset.id, path.relative_to(repo).as_posix(), changeset.line, recorded,
                               tuple(_objects(repo, path, changeset)))
    return None


def _objects(repo: Path, path: Path, changeset) -> list[str]:
    """What a changeset creates or changes: 'index x on t', 'package body p', ... (dynamic DDL included)."""
    made: list[str] = []
    dropped: list[str] = []
    texts = [d.text for d in ddl_statements(repo) if d.path == path and d.changeset == changeset.id]
    statements, _ = statements_of(changeset)
    texts += [s.text for s in statements]
    for text in texts:
        match = _OBJECT.match(text)
        if match:
            kind = " ".join(match["kind"].lower().split())
            name = match["name"].lower()
            described = f"{kind} {name}" + (f" on {match['table'].lower()}" if match["table"] and kind == "index"
                                            else "")
            target = dropped if match.group(1).lower() == "drop" else made
            if described not in target:
                target.append(described)
    # a changeset that drops an object to create it again is about the one it creates
    return made or dropped


def locate_unit(repo: Path, kind: str, name: str) -> Located | None:
    """The changeset that creates a package or package body (USER_ERRORS names the object, not the file)."""
    pattern = re.compile(rf"^\s*create\s+or\s+replace\s+{re.escape(kind.lower())}\s+{re.escape(name.lower())}\b",
                         re.IGNORECASE | re.MULTILINE)
    for path in oracle_files(repo):
        changelog = read_changelog(path)
        for changeset in changelog.changesets:
            statements, _ = statements_of(changeset)
            if any(pattern.search(s.text) for s in statements):
                return Located(changeset.id, path.relative_to(repo).as_posix(), changeset.line,
                               changelog.identity_path(repo, changeset), (f"{kind.lower()} {name.lower()}",))
    return None


def readiness_rows(repo: Path) -> list[list[str]]:
    """The rows of docs/oracle.md's "Oracle readiness" table, as cells."""
    path = repo / READINESS_DOC
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    try:
        start = lines.index(READINESS_HEADING)
    except ValueError:
        return []
    rows: list[list[str]] = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not re.match(r"^\|\s*-", line):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]        # without the header row


# codes that wrap the one that explains: a stack line, Oracle Text's and PL/SQL's envelopes
_WRAPPERS = {"ORA-06512", "ORA-20000", "ORA-06550"}


def explain_codes(repo: Path, codes: list[str]) -> list[str]:
    lines: list[str] = []
    rows = readiness_rows(repo)
    explained: dict[int, list[str]] = {}
    for code in dict.fromkeys(c for c in codes if c not in _WRAPPERS):
        number = next((i for i, r in enumerate(rows) if len(r) >= 5 and code in r[1]), None)
        if number is None:
            lines.append(f"  {code}: no row of {READINESS_DOC}, \"Oracle readiness\", names it; Oracle's page: "
                         f"https://docs.oracle.com/error-help/db/{code.lower()}")
        else:
            explained.setdefault(number, []).append(code)
    for number, named in explained.items():
        row = rows[number]
        lines.append(f"  {', '.join(named)}: {READINESS_DOC}, \"Oracle readiness\": {row[0]}")
        lines.append(f"      gate: {row[2]}")
        lines.append(f"      Oracle documentation: {row[4]}")
    return lines


def explain(repo: Path, liquibase_log: str = "", user_errors: str = "") -> str:
    out = ["scripts/oracle-dev: the first failure, explained"]
    codes: list[str] = []
    failed = _FAILED.search(liquibase_log)
    if failed:
        located = locate_changeset(repo, failed["path"], failed["id"])
        if located is None:
            out.append(f"  changeset: {failed['id']} (recorded as {failed['path']}; not found in this checkout)")
        else:
            out.append(f"  changeset: {located.changeset}  [{located.path}:{located.line}, recorded as "
                       f"{located.recorded}]")
            out.append(f"  object:    {', '.join(located.objects) or 'none found in the changeset'}")
        reason = liquibase_log[failed.end():]
        messages = [m.strip() for m in _ORACLE_LINE.findall(reason.split("[Failed SQL")[0])]
        if not messages:
            messages = [m.strip() for m in _ORACLE_LINE.findall(reason)]
        for message in dict.fromkeys(messages):
            out.append(f"  Oracle:    {message}")
        codes += _CODE.findall(reason.split("[Failed SQL")[0]) or _CODE.findall(reason)
    elif liquibase_log:
        messages = list(dict.fromkeys(m.strip() for m in _ORACLE_LINE.findall(liquibase_log)))
        out.append("  changeset: Liquibase names none (it failed before running one: see its output above)")
        out.extend(f"  Oracle:    {m}" for m in messages)
        codes += _CODE.findall(liquibase_log)
    errors = [line.split("|", 5) for line in user_errors.splitlines() if line.startswith("ERROR|")]
    invalid = [line.split("|", 2) for line in user_errors.splitlines() if line.startswith("INVALID|")]
    if errors or invalid:
        out.append("  USER_ERRORS:")
        units: dict[tuple[str, str], Located | None] = {}
        for _, kind, name, line, position, text in (e + [""] * (6 - len(e)) for e in errors):
            unit = units.setdefault((kind, name), locate_unit(repo, kind, name))
            where = ""
            if unit is not None and line.isdigit():
                where = f"  [{unit.path}, changeset {unit.changeset}]"
            out.append(f"    {kind} {name} line {line}, column {position}: {text}{where}")
            codes += _CODE.findall(text)
        for _, kind, name in (i + [""] * (3 - len(i)) for i in invalid):
            unit = units.get((kind, name)) or locate_unit(repo, kind, name)
            where = f"  [{unit.path}, changeset {unit.changeset}]" if unit else ""
            out.append(f"    INVALID: {kind} {name}{where}")
    elif liquibase_log or user_errors:
        out.append("  USER_ERRORS: empty (no unit failed to compile: the failure is the statement's own)")
    if codes:
        out.append("  explained:")
        out.extend(explain_codes(repo, codes))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.oracle_failure", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--liquibase-log", type=Path)
    parser.add_argument("--user-errors", type=Path)
    args = parser.parse_args(argv)
    log = args.liquibase_log.read_text(encoding="utf-8", errors="replace") if args.liquibase_log else ""
    errors = args.user_errors.read_text(encoding="utf-8", errors="replace") \
        if args.user_errors and args.user_errors.exists() else ""
    print(explain(args.repo.resolve(), log, errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
