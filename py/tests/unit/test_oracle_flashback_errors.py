"""Oracle's refusals of a Flashback read, mapped the way the PostgreSQL twin answers (checked statically: no Oracle
runs here; with one, the utPLSQL tests rows_as_of_rejects_future_scn and rows_as_of_reads_the_past run them).

A read AS OF SCN fails with ORA-08180 (no snapshot at that time), ORA-08181 (not a valid SCN) or ORA-01466 (the
table's definition changed after the SCN: Flashback Query does not read across DDL, and a deployment's DDL is
enough). Unmapped, any of them reaches the caller as a bare ORA- error no contract names. Every routine that
reads AS OF SCN, in whichever package of db/oracle it lives, must catch all three: a routine that answers for the
whole snapshot raises invalid_snapshot, the error its PostgreSQL twin raises for a snapshot it cannot use; row_states,
which answers per row, says "no status at the snapshot" (null), as its twin does for a version it cannot see there.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import strip_sql_comments

REPO = Path(__file__).resolve().parents[3]
ORACLE = REPO / "db" / "oracle"
POSTGRESQL = REPO / "db" / "postgresql"
#: what Oracle raises when it cannot read a table AS OF an SCN
FLASHBACK_REFUSALS = (-1466, -8180, -8181)
#: the routine that answers per row rather than for the snapshot (docs/contract.md: "status then or null")
PER_ROW = {"row_states"}


def _code(path: Path) -> str:
    return strip_sql_comments(path.read_text(encoding="utf-8")).lower()


def _bodies() -> dict[Path, str]:
    """Every package body of db/oracle, whatever its file is called (packages are split and moved)."""
    texts = {path: _code(path) for path in sorted(ORACLE.rglob("*.sql"))}
    return {path: text for path, text in texts.items() if "package body" in text}


def _routines(text: str) -> dict[str, str]:
    """The package body's routines by name (the house layout: a routine starts and ends at three spaces)."""
    return {name: body for name, body in re.findall(
        r"\n   (?:function|procedure)\s+(\w+)\b(.*?)\n   end \1\s*;", text, re.DOTALL)}


def _bound_exceptions(text: str) -> dict[int, set[str]]:
    """Oracle error number -> the exception names PRAGMA EXCEPTION_INIT binds to it in `text`."""
    bound: dict[int, set[str]] = {}
    for name, number in re.findall(r"pragma\s+exception_init\s*\(\s*(\w+)\s*,\s*(-?\d+)\s*\)", text):
        bound.setdefault(int(number), set()).add(name)
    return bound


def _handlers(routine: str) -> list[tuple[set[str], str]]:
    """(exception names, handler text) of every WHEN ... THEN of the routine's exception sections."""
    found = []
    for section in re.split(r"\bexception\b", routine)[1:]:
        parts = re.split(r"\n\s*when\s+([\w.\s]+?)\s+then\b", section)
        for names, handler in zip(parts[1::2], parts[2::2], strict=True):
            handled = {n.strip().split(".")[-1] for n in re.split(r"\s+or\s+", names)}
            found.append((handled, re.split(r"\bend\s*;", handler)[0]))
    return found


def _flashback_readers() -> list[tuple[Path, str, str, dict[int, set[str]]]]:
    readers = []
    for path, text in _bodies().items():
        for name, routine in _routines(text).items():
            if re.search(r"\bas\s+of\s+scn\b", routine):
                readers.append((path, name, routine, _bound_exceptions(text)))
    return readers


def _postgresql_twin(name: str) -> str:
    """The PostgreSQL function of the same name in the contract's schemas (any file of db/postgresql)."""
    for path in sorted(POSTGRESQL.rglob("*.sql")):
        text = path.read_text(encoding="utf-8")
        found = re.search(rf"CREATE OR REPLACE FUNCTION ctx_\w+\.{name}\(.*?\n\$\$;", text, re.DOTALL)
        if found:
            return found.group(0)
    raise AssertionError(f"no PostgreSQL twin of {name}")


def _postgresql_function(qualified: str) -> str:
    for path in sorted(POSTGRESQL.rglob("*.sql")):
        text = path.read_text(encoding="utf-8")
        found = re.search(rf"CREATE OR REPLACE FUNCTION {re.escape(qualified)}\(.*?\n\$\$;", text, re.DOTALL)
        if found:
            return found.group(0)
    raise AssertionError(f"no {qualified}")


def _raises_invalid_snapshot(function: str) -> bool:
    return "ctxasm.error_code('invalid_snapshot')" in function


def _maps_all_refusals(routine: str, bound: dict[int, set[str]]) -> bool:
    handlers = _handlers(routine)
    return all(any(handled & bound.get(number, set()) for handled, _ in handlers) for number in FLASHBACK_REFUSALS)


def _callers_that_map(name: str, routines: dict[str, tuple[Path, str, dict[int, set[str]]]],
                     seen: set[str] | None = None) -> tuple[set[str], set[str]]:
    """(the routines that map the three refusals on every way a caller reaches `name`, the entry points reached
    with no such routine on the way). An internal step may leave the mapping to the routine that calls it: an
    exception bound to an error number catches that error wherever below it was raised."""
    seen = seen if seen is not None else {name}
    callers = [other for other, (_, text, _) in routines.items()
               if other not in seen and re.search(rf"(?<![\w.])(?:\w+\.)?{name}\s*\(", text)]
    if not callers:
        return set(), {name}
    mapping: set[str] = set()
    unmapped: set[str] = set()
    for caller in callers:
        seen.add(caller)
        _, text, bound = routines[caller]
        if _maps_all_refusals(text, bound):
            mapping.add(caller)
        else:
            above, open_ = _callers_that_map(caller, routines, seen)
            mapping |= above
            unmapped |= open_
    return mapping, unmapped


def test_every_flashback_read_maps_ora_01466_and_its_kin_as_its_postgresql_twin_answers() -> None:
    readers = _flashback_readers()
    names = {name for _, name, _, _ in readers}
    # the check must see the routines that read AS OF SCN, or it proves nothing
    assert {"rows_as_of", "row_states"} <= names and len(names) > 2, names
    errors = tomllib.loads((REPO / "contract" / "errors.toml").read_text(encoding="utf-8"))["error"]
    invalid_snapshot = -20000 - next(e["number"] for e in errors if e["name"] == "invalid_snapshot")
    assert re.search(rf"co_invalid_snapshot\s+constant\s+pls_integer\s*:=\s*{invalid_snapshot}\s*;",
                     _code(ORACLE / "internal" / "ctx_errors.spec.sql"))
    parse_snapshot = _postgresql_function("ctxasm.parse_snapshot")
    assert _raises_invalid_snapshot(parse_snapshot)
    routines = {name: (path, routine, _bound_exceptions(text))
                for path, text in _bodies().items() for name, routine in _routines(text).items()}
    mapping = []
    for path, name, routine, bound in readers:
        if _maps_all_refusals(routine, bound) or name in PER_ROW:
            mapping.append((path, name, routine, bound))
        else:
            # an internal read: every way to reach it passes through a routine that maps the three
            assert path.parent.name == "internal", f"{path.name}: {name} reads AS OF SCN and maps no refusal"
            callers, unmapped = _callers_that_map(name, routines)
            assert callers and not unmapped, f"{name} reads AS OF SCN; reached from {unmapped} with no mapping"
            mapping += [(routines[c][0], c, routines[c][1], routines[c][2]) for c in sorted(callers)]
    for path, name, routine, bound in {(p, n): (p, n, r, b) for p, n, r, b in mapping}.values():
        where = f"{path.relative_to(REPO)}: {name}"
        handlers = _handlers(routine)
        for number in FLASHBACK_REFUSALS:
            assert bound.get(number), f"{path.name} binds no exception to ORA{number:06d}"
            catching = [text for handled, text in handlers if handled & bound[number]]
            assert catching, f"{where} reads AS OF SCN and does not catch ORA{number:06d}"
            for handler in catching:
                if name in PER_ROW:
                    # the version's status at the snapshot is unknown: null, and the call goes on
                    assert re.search(r"\b\w+\s*:=\s*null\s*;", handler) and not re.search(
                        r"\braise\b|raise_error", handler), f"{where}: ORA{number:06d} must give a null status"
                else:
                    assert "ctx_errors.raise_error" in handler and "co_invalid_snapshot" in handler, (
                        f"{where}: ORA{number:06d} must be raised as invalid_snapshot")
        twin = _postgresql_twin(name)
        if name in PER_ROW:
            # the twin reads the status at the snapshot by a scalar subquery: null where the version is not there
            assert re.search(r"\(SELECT \w+\.status FROM ctxasm\.memory_rows\(l_snapshot\)", twin), name
            assert "ctxasm.parse_snapshot(in_snapshot)" in twin
        else:
            assert _raises_invalid_snapshot(twin) or "ctxasm.parse_snapshot(in_snapshot)" in twin, (
                f"the PostgreSQL {name} raises no invalid_snapshot")


def test_the_utplsql_refusal_of_an_unreadable_scn_fetches_and_expects_invalid_snapshot() -> None:
    """Oracle may refuse an SCN when the cursor opens or only at its first fetch: a test that never fetches
    passes without the refusal. The SCN is taken ahead of the current one, not written as a 21-digit number that
    Oracle could refuse for another reason than the one tested."""
    path = REPO / "db" / "tests" / "utplsql" / "0010_test_ctx_memory.sql"
    annotated = path.read_text(encoding="utf-8").lower()  # utPLSQL's annotations are comments
    assert re.search(r"--%throws\(ctx_errors\.e_invalid_snapshot\)\s*procedure\s+rows_as_of_rejects_future_scn;",
                     annotated)
    suite = _code(path)
    test = _routines(suite)["rows_as_of_rejects_future_scn"]
    cursor = re.search(r"(\w+)\s*:=\s*ctx_memory\.rows_as_of\(", test)
    assert cursor, "the test reads through rows_as_of"
    assert re.search(rf"\bfetch\s+{cursor.group(1)}\s+into\b", test), "the test never fetches from the cursor"
    assert not re.search(r"\d{21,}", test), "a 21-digit SCN tests another refusal than the one named"
    assert "capture_snapshot()" in test, "the SCN is taken relative to the current one"

