"""What the Oracle code may name: the signature table of Oracle-supplied code (oracle_signatures.json) and
the tables the repository creates (db/oracle/schema). Used by the gates oracle_api and oracle_names.

The signature table lists, per Oracle-supplied package and object type the code calls, each member with
its parameter names in order per overload ('name?' has a default), and the documentation section it comes
from; dictionary views with their columns; and the names of built-in functions, predefined exceptions and
scalar types. docs/oracle-gates.md says how to add an entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import oracle_files, read_changelog, statements_of
from ctxasm_dev.gates.oracle_schema import column_type_text
from ctxasm_dev.gates.plsql_tokens import IDENT, OP, matching, split_top_level, tokenize

SIGNATURES = Path(__file__).with_name("oracle_signatures.json")
SCHEMA_FOLDER = "db/oracle/schema"
_CONSTRAINT_WORDS = {"constraint", "primary", "unique", "foreign", "check", "supplemental", "period"}


@dataclass(frozen=True)
class Parameter:
    name: str
    optional: bool


@dataclass(frozen=True)
class Member:
    """One member of an Oracle-supplied package or type: a routine (with overloads) or a constant."""

    owner: str
    name: str
    kind: str                                   # function | procedure | constant
    overloads: tuple[tuple[Parameter, ...], ...]
    doc: str

    def describe(self) -> str:
        if self.kind == "constant":
            return f"{self.owner}.{self.name} (constant)"
        shapes = " | ".join("(" + ", ".join(p.name + ("?" if p.optional else "") for p in o) + ")"
                            for o in self.overloads)
        return f"{self.owner}.{self.name}{shapes}"


@dataclass
class OracleType:
    name: str
    kind: str                                   # object | collection
    supertype: str | None
    constructors: Member | None
    static: dict[str, Member]
    members: dict[str, Member]
    doc: str
    sql: bool = True                            # False: a PL/SQL-only type (sql_doc says why)
    sql_doc: str = ""


@dataclass
class Signatures:
    packages: dict[str, dict[str, Member]]
    package_docs: dict[str, str]
    types: dict[str, OracleType]
    views: dict[str, list[str]]
    functions: set[str]
    exceptions: set[str]
    scalar_types: set[str]

    def type_member(self, type_name: str, member: str) -> Member | None:
        """A member function or procedure of an object type, looked up through its supertypes."""
        seen: set[str] = set()
        current: str | None = type_name
        while current and current not in seen:
            seen.add(current)
            oracle_type = self.types.get(current)
            if oracle_type is None:
                return None
            if member in oracle_type.members:
                return oracle_type.members[member]
            current = oracle_type.supertype
        return None


def _parameters(overload: list[str]) -> tuple[Parameter, ...]:
    return tuple(Parameter(p.rstrip("?").lower(), p.endswith("?")) for p in overload)


def _member(owner: str, name: str, entry: dict) -> Member:
    overloads = tuple(_parameters(o) for o in entry.get("overloads", []))
    return Member(owner, name, entry["kind"], overloads, entry.get("doc", ""))


@lru_cache(maxsize=4)
def load_signatures(path: Path = SIGNATURES) -> Signatures:
    data = json.loads(path.read_text(encoding="utf-8"))
    packages: dict[str, dict[str, Member]] = {}
    docs: dict[str, str] = {}
    for name, package in data["packages"].items():
        packages[name] = {member: _member(name, member, entry) for member, entry in package["members"].items()}
        docs[name] = package["doc"]["url"]
    types: dict[str, OracleType] = {}
    for name, entry in data["types"].items():
        constructors = entry.get("constructors")
        types[name] = OracleType(
            name=name,
            kind=entry["kind"],
            supertype=entry.get("supertype"),
            constructors=_member(name, name, constructors) if constructors else None,
            static={m: _member(name, m, e) for m, e in (entry.get("static") or {}).items()},
            members={m: _member(name, m, e) for m, e in (entry.get("members") or {}).items()},
            doc=entry["doc"]["url"],
            sql=entry.get("sql", True),
            sql_doc=entry.get("sql_doc", ""),
        )
    views = {name: [c.lower() for c in entry["columns"]] for name, entry in data["views"].items()}
    return Signatures(
        packages=packages,
        package_docs=docs,
        types=types,
        views=views,
        functions=set(data["functions"]["names"]),
        exceptions=set(data["exceptions"]["names"]),
        scalar_types=set(data["scalar_types"]["names"]),
    )


def check_signature_table(signatures: Signatures, path: Path = SIGNATURES) -> list[str]:
    """Problems of the table itself: an entry without a citation, a parameter list that is not a list."""
    problems: list[str] = []
    data = json.loads(path.read_text(encoding="utf-8"))
    for name, package in data["packages"].items():
        if not package.get("doc", {}).get("url"):
            problems.append(f"{path.name}: package {name} has no documentation URL")
        for member, entry in package["members"].items():
            if not entry.get("doc"):
                problems.append(f"{path.name}: {name}.{member} cites no documentation section")
            if entry["kind"] != "constant" and not isinstance(entry.get("overloads"), list):
                problems.append(f"{path.name}: {name}.{member} has no overloads list")
    for name, entry in data["types"].items():
        if not entry.get("doc", {}).get("url"):
            problems.append(f"{path.name}: type {name} has no documentation URL")
        if entry.get("sql", True) is False and not entry.get("sql_doc"):
            problems.append(f"{path.name}: type {name} is marked PL/SQL only without sql_doc saying why")
        for member, item in (entry.get("members") or {}).items():
            if not item.get("doc"):
                problems.append(f"{path.name}: {name}.{member} cites no documentation section")
    return problems


# ---------------------------------------------------------------------------------------------------------
# The repository's own tables


@dataclass
class Tables:
    columns: dict[str, list[str]] = field(default_factory=dict)
    # declared type of each column, normalised ('varchar2(64 byte)', 'clob'): the last CREATE, ADD or MODIFY read
    types: dict[str, dict[str, str]] = field(default_factory=dict)


def repository_tables(repo: Path) -> Tables:
    """Every table of db/oracle/schema with its columns: CREATE TABLE, then ALTER TABLE ... ADD."""
    tables = Tables()
    for path in oracle_files(repo):
        if not path.relative_to(repo).as_posix().startswith(SCHEMA_FOLDER):
            continue
        for changeset in read_changelog(path).changesets:
            statements, _ = statements_of(changeset)
            for statement in statements:
                _read_table_statement(tokenize(statement.text, statement.line), tables)
    return tables


def _read_table_statement(tokens, tables: Tables) -> None:
    words = [t.text for t in tokens[:4] if t.kind == IDENT]
    if len(tokens) < 4:
        return
    if words[:2] == ["create", "table"] or words[:4] == ["create", "global", "temporary", "table"]:
        at = next(i for i, t in enumerate(tokens) if t.is_word("table")) + 1
        name = tokens[at].text
        if at + 2 < len(tokens) and tokens[at + 1].text == ".":
            at += 2
            name = tokens[at].text
        open_at = next((i for i in range(at, len(tokens)) if tokens[i].kind == OP and tokens[i].text == "("), None)
        if open_at is None:
            return
        close = matching(tokens, open_at)
        items = [(a, b) for a, b in split_top_level(tokens, open_at + 1, close)
                 if tokens[a].kind == IDENT and tokens[a].text not in _CONSTRAINT_WORDS]
        # files are read in path order, not deployment order: schema/catalogue/ (ALTER TABLE ... ADD) sorts
        # before the file that creates the table, so keep what was added
        tables.columns[name] = [tokens[a].text for a, _ in items] + tables.columns.get(name, [])
        types = tables.types.setdefault(name, {})
        for a, b in items:
            types.setdefault(tokens[a].text, column_type_text(tokens, a + 1, b))
    elif words[:2] == ["alter", "table"] and len(tokens) > 4 and tokens[3].is_word("add", "modify"):
        name = tokens[2].text
        if tokens[4].kind == OP and tokens[4].text == "(":
            items = [(a, b) for a, b in split_top_level(tokens, 5, matching(tokens, 4))
                     if tokens[a].kind == IDENT and tokens[a].text not in _CONSTRAINT_WORDS]
        else:
            items = [(4, len(tokens))] if tokens[4].kind == IDENT and tokens[4].text not in _CONSTRAINT_WORDS else []
        if tokens[3].is_word("add"):
            tables.columns.setdefault(name, []).extend(tokens[a].text for a, _ in items)
        types = tables.types.setdefault(name, {})
        for a, b in items:
            declared = column_type_text(tokens, a + 1, b)
            if declared:
                # MODIFY (c NULL) changes no type
                types[tokens[a].text] = declared
