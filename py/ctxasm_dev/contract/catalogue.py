"""Reads contract/*.toml into typed records and checks them; a bad entry is named by file, entry and field."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS

ERRORS_FILE = f"{CATALOGUE_DIR}/errors.toml"
TYPES_FILE = f"{CATALOGUE_DIR}/memory_types.toml"
CONSTANTS_FILE = f"{CATALOGUE_DIR}/constants.toml"
SELECTION_FILE = f"{CATALOGUE_DIR}/selection.toml"

#: a type's `enumerated` values and its candidates' statuses (docs/contract.md, "Memory types and tables")
ENUMERATED = ("", "scope", "facts")
CANDIDATE_STATUSES = ("current", "historical", "unverified", "evidence")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_CLASS = re.compile(r"^[A-Z][A-Za-z0-9]*$")


class CatalogueError(ValueError):
    """A catalogue entry that does not check; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class ContractError:
    name: str
    number: int
    python_class: str
    message: str
    when: str
    engines: bool
    python_base: str = ""  # a class of ctxasm.error_bases with hand-written behaviour; "" for the plain base

    @property
    def sqlstate(self) -> str:
        return f"CX{self.number}"

    @property
    def oracle_code(self) -> int:
        return -20000 - self.number


@dataclass(frozen=True)
class RetiredError:
    name: str
    number: int
    note: str


@dataclass(frozen=True)
class Column:
    name: str
    pg: str
    oracle: str
    nullable: bool
    json: bool = False
    note: str = ""
    pg_default: str = ""
    check: str = ""  # a range the table checks, for docs (">= 0")
    ddl: str = "base"  # "catalogue": the generator writes its ALTER TABLE ... ADD
    row: str = ""  # the memory-row slot the column fills; "" = it travels in the row's `extra` document


@dataclass(frozen=True)
class RowSlot:
    """A column of the one memory-row shape (PostgreSQL ctxasm.memory_row, Oracle select_window's memory_rows)."""

    name: str
    pg: str
    oracle: str


@dataclass(frozen=True)
class MemoryType:
    name: str
    table: str
    slice: str
    authority: int
    searchable: bool
    embedded: bool
    columns: tuple[Column, ...]
    #: how a live window lists the type's rows without retrieval: "scope" (every version in scope, always),
    #: "facts" (every version in scope while the durable facts are few, CTX_SOURCES.facts_enumerable), "" (never)
    enumerated: str = ""
    #: the candidate's `status` in the selection document: what kind of truth the row is
    candidate_status: str = "evidence"
    #: recalled history whose citations (source_refs) become sources of the window (claim_sources)
    cites: bool = False


@dataclass(frozen=True)
class Binding:
    file: str
    declaration: str


@dataclass(frozen=True)
class Constant:
    name: str
    value: int | float
    python: str
    meaning: str
    bind: tuple[Binding, ...]


@dataclass(frozen=True)
class VersionRule:
    key: str
    prefix: str
    files: tuple[str, ...]
    host: str


@dataclass(frozen=True)
class Catalogue:
    errors: tuple[ContractError, ...]
    retired: tuple[RetiredError, ...]
    shared_columns: tuple[Column, ...]
    row_slots: tuple[RowSlot, ...]
    types: tuple[MemoryType, ...]
    constants: tuple[Constant, ...]
    steps: tuple[str, ...]
    versions: tuple[VersionRule, ...]


def _field(entry: dict, key: str, kind: type | tuple[type, ...], where: str, default: object = ...) -> object:
    if key not in entry:
        if default is ...:
            raise CatalogueError(f"{where}: {key} is required")
        return default
    value = entry[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CatalogueError(f"{where}: {key} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _name(entry: dict, where: str, key: str = "name") -> str:
    value = _field(entry, key, str, where)
    if not _NAME.match(value):
        raise CatalogueError(f"{where}: {key} {value!r} must be lower_snake_case")
    return value


def _target(key: str, where: str) -> str:
    if key not in TARGETS:
        raise CatalogueError(f"{where}: file {key!r} is not a generator target (py/ctxasm_dev/contract/targets.py)")
    return key


def _unique(names: list, what: str, file: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise CatalogueError(f"{file}: {what} {name!r} appears twice")
        seen.add(name)


def _errors(data: dict) -> tuple[tuple[ContractError, ...], tuple[RetiredError, ...]]:
    errors = []
    for i, entry in enumerate(data.get("error", [])):
        where = f"{ERRORS_FILE}: error[{i}]"
        name = _name(entry, where)
        where = f"{ERRORS_FILE}: error {name}"
        number = _field(entry, "number", int, where)
        if not 100 <= number <= 999:
            raise CatalogueError(f"{where}: number must be 100..999, got {number}")
        python_class = _field(entry, "python_class", str, where)
        if not _CLASS.match(python_class):
            raise CatalogueError(f"{where}: python_class {python_class!r} must be a CamelCase class name")
        python_base = _field(entry, "python_base", str, where, "")
        if python_base and not _CLASS.match(python_base):
            raise CatalogueError(f"{where}: python_base {python_base!r} must be a CamelCase class name")
        errors.append(ContractError(name, number, python_class, _field(entry, "message", str, where),
                                    _field(entry, "when", str, where), _field(entry, "engines", bool, where, True),
                                    python_base))
    retired = [RetiredError(_name(e, f"{ERRORS_FILE}: retired[{i}]"), _field(e, "number", int, "retired"),
                            _field(e, "note", str, "retired"))
               for i, e in enumerate(data.get("retired", []))]
    _unique([e.name for e in errors] + [r.name for r in retired], "error name", ERRORS_FILE)
    _unique([e.number for e in errors] + [r.number for r in retired], "error number", ERRORS_FILE)
    _unique([e.python_class for e in errors], "python_class", ERRORS_FILE)
    return tuple(sorted(errors, key=lambda e: e.number)), tuple(retired)


def _column(entry: dict, where: str, slots: frozenset[str] = frozenset()) -> Column:
    name = _field(entry, "name", str, where)
    where = f"{where} column {name}"
    ddl = _field(entry, "ddl", str, where, "base")
    if ddl not in ("base", "catalogue"):
        raise CatalogueError(f"{where}: ddl must be 'base' or 'catalogue', got {ddl!r}")
    row = _field(entry, "row", str, where, "")
    if row and row not in slots:
        raise CatalogueError(f"{where}: row {row!r} is not a row_slot; known: {', '.join(sorted(slots))}")
    return Column(name, _field(entry, "pg", str, where), _field(entry, "oracle", str, where),
                  _field(entry, "nullable", bool, where), _field(entry, "json", bool, where, False),
                  _field(entry, "note", str, where, ""), _field(entry, "pg_default", str, where, ""),
                  _field(entry, "check", str, where, ""), ddl, row)


def _row_slots(data: dict) -> tuple[RowSlot, ...]:
    slots = []
    for i, entry in enumerate(data.get("row_slot", [])):
        name = _name(entry, f"{TYPES_FILE}: row_slot[{i}]")
        where = f"{TYPES_FILE}: row_slot {name}"
        slots.append(RowSlot(name, _field(entry, "pg", str, where), _field(entry, "oracle", str, where)))
    _unique([s.name for s in slots], "row_slot", TYPES_FILE)
    return tuple(slots)


def _types(data: dict) -> tuple[tuple[Column, ...], tuple[RowSlot, ...], tuple[MemoryType, ...]]:
    shared = tuple(_column(c, f"{TYPES_FILE}: shared_column[{i}]") for i, c in enumerate(data.get("shared_column", [])))
    slots = _row_slots(data)
    slot_names = frozenset(s.name for s in slots)
    types = []
    for i, entry in enumerate(data.get("type", [])):
        name = _name(entry, f"{TYPES_FILE}: type[{i}]")
        where = f"{TYPES_FILE}: type {name}"
        columns = tuple(_column(c, where, slot_names) for c in _field(entry, "columns", list, where))
        _unique([c.name for c in columns], f"column of {name}", TYPES_FILE)
        _unique([c.row for c in columns if c.row], f"row slot filled by {name}", TYPES_FILE)
        enumerated = _field(entry, "enumerated", str, where, "")
        if enumerated not in ENUMERATED:
            raise CatalogueError(f"{where}: enumerated must be one of {', '.join(map(repr, ENUMERATED))}, "
                                 f"got {enumerated!r}")
        status = _field(entry, "candidate_status", str, where, "evidence")
        if status not in CANDIDATE_STATUSES:
            raise CatalogueError(f"{where}: candidate_status must be one of {', '.join(CANDIDATE_STATUSES)}, "
                                 f"got {status!r}")
        types.append(MemoryType(name, _name(entry, where, "table"), _field(entry, "slice", str, where),
                                _field(entry, "authority", int, where), _field(entry, "searchable", bool, where),
                                _field(entry, "embedded", bool, where), columns, enumerated, status,
                                _field(entry, "cites", bool, where, False)))
    _unique([t.name for t in types], "memory type", TYPES_FILE)
    _unique([t.table for t in types], "table", TYPES_FILE)
    return shared, slots, tuple(types)


def _constants(data: dict) -> tuple[Constant, ...]:
    constants = []
    for i, entry in enumerate(data.get("constant", [])):
        name = _name(entry, f"{CONSTANTS_FILE}: constant[{i}]")
        where = f"{CONSTANTS_FILE}: constant {name}"
        value = _field(entry, "value", (int, float), where)
        bind = tuple(Binding(_target(_field(b, "file", str, where), where), _field(b, "declaration", str, where))
                     for b in _field(entry, "bind", list, where, []))
        constants.append(Constant(name, value, _field(entry, "python", str, where), _field(entry, "meaning", str, where),
                                  bind))
    _unique([c.name for c in constants], "constant", CONSTANTS_FILE)
    _unique([c.python for c in constants], "python name", CONSTANTS_FILE)
    return tuple(constants)


def _selection(data: dict) -> tuple[tuple[str, ...], tuple[VersionRule, ...]]:
    steps = tuple(_field(data, "steps", list, SELECTION_FILE))
    _unique(list(steps), "step", SELECTION_FILE)
    rules = []
    for key, entry in _field(data, "version", dict, SELECTION_FILE).items():
        where = f"{SELECTION_FILE}: version.{key}"
        files = tuple(_target(f, where) for f in _field(entry, "files", list, where))
        host = _target(_field(entry, "host", str, where), where)
        if host not in files:
            raise CatalogueError(f"{where}: host {host!r} must be one of files")
        rules.append(VersionRule(key, _name(entry, where, "prefix"), files, host))
    return steps, tuple(rules)


def _read(repo: Path, relative: str) -> dict:
    path = repo / relative
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise CatalogueError(f"{relative}: {error}") from None


def load(repo: Path) -> Catalogue:
    """The catalogue of the repository at `repo`, checked."""
    errors, retired = _errors(_read(repo, ERRORS_FILE))
    shared, slots, types = _types(_read(repo, TYPES_FILE))
    steps, versions = _selection(_read(repo, SELECTION_FILE))
    return Catalogue(errors, retired, shared, slots, types, _constants(_read(repo, CONSTANTS_FILE)), steps, versions)
