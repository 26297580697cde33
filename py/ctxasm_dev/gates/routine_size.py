"""The routine-size gate: no stored routine of either engine grows past a limit (default 300 lines).

A routine a reader cannot hold in view is where bugs hide and where the two engines drift apart, so the gate
lists every stored routine of both engines with its length and fails when one is longer than the limit:

- Oracle: each `function` / `procedure` with a body in the PL/SQL files of db/oracle (package bodies, from its
  header line to its `end <name>;` line; a routine nested in another counts on its own and inside its parent);
- PostgreSQL: each `create [or replace] function|procedure` of db/postgresql, from the `create` line to the
  line that closes its dollar-quoted body.

A routine may stay over the limit only while it is listed in EXCEPTIONS with the reason; the gate prints every
entry on each run and fails once a listed routine is within the limit (or gone), so an entry cannot outlive its
reason: delete it then.

    python -m ctxasm_dev.gates.routine_size [--repo DIR] [--limit N] [--most N]

`--most N` prints the N largest routines of each engine. Exit code 0 when every routine is within the limit
(or excepted), 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DEFAULT_LIMIT = 300
ENGINES = ("oracle", "postgresql")

#: (engine, "<file stem or package>.<routine>") -> why it may exceed the limit for now. Empty it as the routines
#: are split; the gate fails on an entry whose routine is no longer over the limit.
EXCEPTIONS: dict[tuple[str, str], str] = {}

_ORACLE_HEADER = re.compile(r"^\s*(?:function|procedure)\s+(?P<name>\w+)\b", re.IGNORECASE)
_PG_HEADER = re.compile(
    r"^\s*create\s+(?:or\s+replace\s+)?(?:function|procedure)\s+(?:(?P<schema>\w+)\.)?(?P<name>\w+)\s*\(",
    re.IGNORECASE)
_DOLLAR = re.compile(r"\$(?:[A-Za-z_]\w*)?\$")


@dataclass(frozen=True)
class Routine:
    engine: str
    name: str             # package.routine (Oracle) or schema.routine (PostgreSQL)
    path: Path
    first: int            # 1-based line numbers, inclusive
    last: int

    @property
    def lines(self) -> int:
        return self.last - self.first + 1

    def render(self, repo: Path) -> str:
        where = self.path.relative_to(repo).as_posix() if self.path.is_relative_to(repo) else str(self.path)
        return f"{self.lines:5d}  {self.engine}  {self.name}  ({where}:{self.first}-{self.last})"


def _code(line: str) -> str:
    """The line without a `--` comment (quotes are not followed: a routine header never holds one)."""
    return line.split("--", 1)[0]


def _oracle_package(lines: list[str]) -> str:
    for line in lines:
        found = re.search(r"\bcreate\s+(?:or\s+replace\s+)?package\s+body\s+(\w+)", _code(line), re.IGNORECASE)
        if found:
            return found.group(1).lower()
    return ""


def oracle_routines(path: Path) -> list[Routine]:
    """The routines with a body in one Oracle file: header line to `end <name>;`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    package = _oracle_package(lines)
    routines = []
    for index, line in enumerate(lines):
        header = _ORACLE_HEADER.match(_code(line))
        if not header:
            continue
        name = header["name"].lower()
        # a declaration (spec, forward declaration) ends at `;` before any IS / AS
        rest = " ".join(_code(text) for text in lines[index:index + 60])
        body_at = re.search(r"\b(?:is|as)\b", rest[header.end():], re.IGNORECASE)
        semicolon = rest.find(";", header.end())
        if body_at is None or (semicolon != -1 and semicolon < header.end() + body_at.start()):
            continue
        end = re.compile(rf"^\s*end\s+{re.escape(name)}\s*;", re.IGNORECASE)
        last = next((i for i in range(index + 1, len(lines)) if end.match(lines[i])), None)
        if last is None:
            continue
        routines.append(Routine("oracle", f"{package or path.stem}.{name}", path, index + 1, last + 1))
    return routines


def postgres_routines(path: Path) -> list[Routine]:
    """Every CREATE FUNCTION / PROCEDURE of one PostgreSQL file: create line to the end of its body."""
    lines = path.read_text(encoding="utf-8").splitlines()
    routines = []
    index = 0
    while index < len(lines):
        header = _PG_HEADER.match(_code(lines[index]))
        if not header:
            index += 1
            continue
        opened = None
        at = index
        while at < len(lines) and opened is None:
            found = _DOLLAR.search(_code(lines[at]))
            if found:
                opened = (at, found)
            else:
                at += 1
        if opened is None:
            break
        at, found = opened
        tag = found.group(0)
        close = lines[at].find(tag, found.end())
        last = at if close != -1 else next((i for i in range(at + 1, len(lines)) if tag in lines[i]), len(lines) - 1)
        schema = (header["schema"] or "public").lower()
        routines.append(Routine("postgresql", f"{schema}.{header['name'].lower()}", path, index + 1, last + 1))
        index = last + 1
    return routines


def routines(repo: Path) -> dict[str, list[Routine]]:
    """Every routine of each engine, longest first."""
    found: dict[str, list[Routine]] = {engine: [] for engine in ENGINES}
    for path in sorted((repo / "db" / "oracle").rglob("*.sql")):
        found["oracle"].extend(oracle_routines(path))
    for path in sorted((repo / "db" / "postgresql").rglob("*.sql")):
        found["postgresql"].extend(postgres_routines(path))
    for listed in found.values():
        listed.sort(key=lambda r: (-r.lines, r.name))
    return found


def check(repo: Path, limit: int = DEFAULT_LIMIT,
          exceptions: dict[tuple[str, str], str] | None = None) -> tuple[list[str], list[str]]:
    """(problems, notes): each routine over the limit that is not excepted, each exception no longer needed."""
    exceptions = EXCEPTIONS if exceptions is None else exceptions
    problems: list[str] = []
    notes: list[str] = []
    found = routines(repo)
    over = {(r.engine, r.name): r for listed in found.values() for r in listed if r.lines > limit}
    for key, routine in over.items():
        if key in exceptions:
            notes.append(f"EXCEPTED: {routine.render(repo)}: {exceptions[key]}")
        else:
            problems.append(f"over {limit} lines: {routine.render(repo)}")
    for key, reason in exceptions.items():
        if key not in over:
            problems.append(f"the exception for {key[0]} {key[1]} is no longer needed (within {limit} lines or "
                            f"gone): delete it from EXCEPTIONS in routine_size.py ({reason})")
    return problems, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.routine_size",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="most lines a routine may have")
    parser.add_argument("--most", type=int, default=0, metavar="N", help="print the N largest routines of each engine")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    found = routines(repo)
    for engine in ENGINES:
        for routine in found[engine][:args.most]:
            print(routine.render(repo))
    problems, notes = check(repo, args.limit)
    for line in notes + problems:
        print(line)
    largest = ", ".join(f"{engine} {found[engine][0].name} {found[engine][0].lines}"
                        for engine in ENGINES if found[engine])
    print(f"routine_size: {'FAIL' if problems else 'OK'}: "
          f"{sum(len(v) for v in found.values())} routines, limit {args.limit}; largest: {largest}; "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
