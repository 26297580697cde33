"""Name resolution over the Oracle code, for the gates oracle_api and oracle_names (docs/oracle-gates.md).

It reads every PL/SQL unit of the Oracle folders (package specs and bodies, anonymous blocks, the `--rollback`
blocks) and the SQL inside them, keeping scopes as Oracle does: a routine's locals and parameters, then its
package's body and spec, then other packages, the signature table of Oracle-supplied code
(oracle_signatures.json) and the built-ins. In SQL, a name is first a column of a source of the query
(tables of db/oracle/schema, dictionary views of the signature table, WITH queries, subqueries, JSON_TABLE
column lists, TABLE() collections), then of an enclosing query, then a PL/SQL name.

Two kinds of findings come out, each with its file and line:
  api    a call into Oracle-supplied code that the signature table does not allow: an unknown member, a
         named parameter the member has not, too many arguments, a required parameter left out;
  names  an identifier that resolves to nothing, a column the table or query does not have, a member or
         field that does not exist, a named parameter that a repository routine does not have.

What it cannot follow (dynamic SQL text, declaration order) is listed in docs/oracle-gates.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import Statement, oracle_files, read_changelog, statements_of
from ctxasm_dev.gates.oracle_catalog import Member, Parameter, Signatures, Tables, load_signatures, repository_tables
from ctxasm_dev.gates.plsql_tokens import BIND, IDENT, NUMBER, OP, STRING, Token, matching, split_top_level, tokenize

API = "api"
NAMES = "names"


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    gate: str
    message: str

    def render(self, repo: Path) -> str:
        where = self.path.relative_to(repo).as_posix() if self.path.is_relative_to(repo) else str(self.path)
        return f"{where}:{self.line}: {self.message}"


# ---------------------------------------------------------------------------------------------------------
# Types and entities


@dataclass(frozen=True)
class TypeDesc:
    kind: str                                       # scalar | record | collection | object | cursor | unknown
    name: str = ""                                  # object: the Oracle type's name; scalar: its base (clob, ...)
    fields: tuple[tuple[str, "TypeDesc"], ...] = ()
    element: "TypeDesc | None" = None
    origin: str = ""                                # a declared type: where (spec | body | local)

    def field(self, name: str) -> "TypeDesc | None":
        return next((t for f, t in self.fields if f == name), None)


SCALAR = TypeDesc("scalar")
UNKNOWN = TypeDesc("unknown")
CURSOR = TypeDesc("cursor")


def base_type(declared: str | None) -> str:
    """The base name of a declared datatype: 'varchar2(64 byte)' -> 'varchar2', 'timestamp with time zone'
    -> 'timestamp', 'clob' -> 'clob'; '' when unknown."""
    if not declared:
        return ""
    word = declared.strip().lower().split("(")[0].split()
    return word[0] if word else ""


def column_type(declared: str | None) -> TypeDesc:
    """The PL/SQL view of a column of this declared type."""
    return TypeDesc("scalar", base_type(declared)) if declared else SCALAR


class Columns(list):
    """The output columns of a query, with the base type of each where it is known ('' otherwise)."""

    def __init__(self, names: list[str] | None = None, types: dict[str, str] | None = None):
        super().__init__(names or [])
        self.types: dict[str, str] = dict(types or {})


@dataclass
class Routine:
    name: str
    parameters: tuple[Parameter, ...]
    is_function: bool
    returns: TypeDesc = UNKNOWN
    path: Path | None = None
    line: int = 0


@dataclass
class Entity:
    kind: str            # var | routine | package | ora_package | ora_type | type | exception | builtin | schema
    name: str
    type: TypeDesc = UNKNOWN
    routines: list[Routine] = field(default_factory=list)
    where: str = ""      # a package member: spec | body (a routine or type of a block or routine: "")


@dataclass
class PackageInfo:
    name: str
    spec: dict[str, Entity] = field(default_factory=dict)
    body: dict[str, Entity] = field(default_factory=dict)


class Scope:
    def __init__(self, parent: "Scope | None" = None, entries: dict[str, Entity] | None = None):
        self.parent = parent
        self.entries: dict[str, Entity] = dict(entries or {})

    def lookup(self, name: str) -> Entity | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.entries:
                return scope.entries[name]
            scope = scope.parent
        return None

    def declare(self, entity: Entity) -> None:
        existing = self.entries.get(entity.name)
        if existing is not None and existing.kind == "routine" and entity.kind == "routine":
            for routine in entity.routines:
                if all(r.parameters != routine.parameters for r in existing.routines):
                    existing.routines.append(routine)
            return
        self.entries[entity.name] = entity


# ---------------------------------------------------------------------------------------------------------
# Words that are syntax, never names


PLSQL_KEYWORDS = {
    "and", "or", "not", "is", "null", "true", "false", "in", "like", "between", "escape", "case", "when", "then",
    "else", "end", "elsif", "of", "all", "any", "some", "member", "submultiset", "multiset",
}
SQL_KEYWORDS = PLSQL_KEYWORDS | {
    "as", "distinct", "unique", "exists", "over", "partition", "by", "order", "asc", "desc", "nulls", "first",
    "last", "rows", "range", "unbounded", "preceding", "following", "current", "row", "within", "group", "keep",
    "value", "format", "json", "returning", "on", "absent", "ordered", "pretty", "strict", "with", "keys", "error",
    "empty", "default", "wrapper", "without", "conditional", "unconditional", "array", "path", "columns",
    "nested", "ordinality", "for", "using", "data", "day", "hour", "minute", "second", "year", "month", "to",
    "interval", "time", "zone", "local", "at", "both", "leading", "trailing", "from", "cosine", "euclidean", "dot",
    "manhattan", "hamming", "jaccard", "euclidean_squared", "float32", "float64", "int8", "binary", "sparse",
    "dense", "prior", "level", "only", "ties", "percent", "next", "byte", "char", "truncate", "overflow", "count",
    "ignore", "respect", "separator", "scn", "timestamp", "approx", "approximate", "target", "accuracy",
}
# schemas that own Oracle-supplied packages and types (sys.dbms_lob, ctxsys.ctx_query)
_ORACLE_OWNERS = {"sys", "ctxsys"}
# clause words that end a FROM item or its alias
_CLAUSE_WORDS = {
    "where", "join", "inner", "left", "right", "full", "outer", "cross", "natural", "on", "using", "group",
    "order", "having", "connect", "start", "union", "minus", "intersect", "except", "fetch", "offset", "for",
    "model", "window", "pivot", "unpivot", "sample", "when", "then", "set", "values", "select", "into", "as",
    "returning", "log", "partition",
}
_SET_OPERATORS = {"union", "minus", "intersect", "except"}
# SQL operators over a mining or ONNX model: MODEL USING expr AS attribute, ...
_MODEL_OPERATORS = {"vector_embedding", "prediction", "prediction_probability", "prediction_cost",
                    "prediction_details", "prediction_set"}
_COLLECTION_METHODS = {"count", "first", "last", "extend", "delete", "exists", "prior", "next", "trim", "limit"}
_CURSOR_ATTRIBUTES = {"found", "notfound", "rowcount", "isopen", "bulk_rowcount", "bulk_exceptions", "type",
                      "rowtype"}
_TYPE_MODIFIER_WORDS = {"with", "local", "time", "zone", "char", "byte", "to", "second", "month", "year", "day",
                        "precision", "varying", "character", "set", "any_cs"}


def _op(token: Token, *texts: str) -> bool:
    return token.kind == OP and token.text in texts


# ---------------------------------------------------------------------------------------------------------
# The analysis


@dataclass
class _Unit:
    """One PL/SQL or SQL statement to analyse."""

    path: Path
    tokens: list[Token]
    kind: str            # spec | body | block | sql | type (CREATE TYPE: an object or collection type of the schema)
    package: str | None = None
    start: int = 0       # after the header (spec/body: after IS/AS)


class Resolver:
    def __init__(self, repo: Path, signatures: Signatures | None = None):
        self.repo = repo
        self.signatures = signatures or load_signatures()
        self.tables: Tables = repository_tables(repo)
        self.packages: dict[str, PackageInfo] = {}
        # the schema's own types (CREATE TYPE): an object type as a record of its attributes, origin "sql"
        self.sql_types: dict[str, TypeDesc] = {}
        self.findings: list[Finding] = []
        self.units: list[_Unit] = []
        self.path: Path = repo
        self._seen: set[tuple[Path, int, str, str]] = set()
        # > 0 while the tokens being resolved are SQL (a static statement, a cursor's query) rather than PL/SQL
        self._sql_depth = 0
        # > 0 while the arguments of a call to a repository routine are resolved
        self._routine_arguments = 0
        # the columns of every query resolved, by (id(tokens), index of its first token)
        self._query_columns: dict[tuple[int, int], Columns] = {}

    # -- hooks for the rules built on this resolver (oracle_semantics); no-ops here ---------------------------

    def _declared_type(self, tokens: list[Token], start: int, stop: int, in_sql: bool) -> None:
        """A datatype written in the code: a declaration, CAST(... AS type), RETURNING type."""

    def _literal(self, token: Token, in_sql: bool) -> None:
        """A string literal (or the BOOLEAN literal TRUE / FALSE) in PL/SQL or in SQL."""

    def _chain_step(self, state: tuple, token: Token, step: str, sql: "_SqlScope | None") -> None:
        """One step of a name chain, in SQL (sql given) or PL/SQL: `first`, `member`, `call` (the state before a
        parenthesised argument list) or `apply` (the state after it: a call or an index)."""

    def _chain_end(self, state: tuple, first: Token, sql: "_SqlScope | None") -> None:
        """What a name chain resolved to, at its end."""

    def _expression_type(self, tokens: list[Token], start: int, stop: int, block: "_SqlScope",
                         scope: Scope) -> str:
        """The base type of a SQL expression ('' when not known)."""
        return ""

    def _after_query_block(self, tokens: list[Token], start: int, stop: int, block: "_SqlScope", scope: Scope,
                           items: list[tuple[int, int]], clauses: list[tuple[str, int]], distinct: bool) -> None:
        """A query block has been resolved: its select items (expression ranges) and clause positions."""

    def _after_query(self, tokens: list[Token], branches: list[tuple[int, int]], results: list) -> None:
        """A query of one or more set-operation branches has been resolved, with each branch's columns."""

    def _condition(self, tokens: list[Token], start: int, stop: int, block: "_SqlScope", scope: Scope) -> None:
        """The condition of a DML statement (UPDATE / DELETE WHERE, MERGE ON)."""

    # -- reporting -------------------------------------------------------------------------------------

    def report(self, gate: str, token: Token, message: str) -> None:
        key = (self.path, token.line, gate, message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(Finding(self.path, token.line, gate, message))

    # -- reading the files -----------------------------------------------------------------------------

    def load(self) -> None:
        """Every Oracle file: a package body may use what any spec declares."""
        for path in oracle_files(self.repo):
            for changeset in read_changelog(path).changesets:
                statements, _ = statements_of(changeset)
                for statement in statements:
                    self._add_unit(path, statement)
                for rollback in _rollback_blocks(path, changeset.rollback_lines):
                    self._add_unit(path, rollback)

    def _add_unit(self, path: Path, statement: Statement) -> None:
        unit = self._unit(path, statement)
        if unit is not None:
            self.units.append(unit)

    def _unit(self, path: Path, statement: Statement) -> _Unit | None:
        tokens = tokenize(statement.text, statement.line)
        if not tokens:
            return None
        words = [t.text for t in tokens[:8] if t.kind == IDENT]
        head = words[:6]
        if head[:1] in (["begin"], ["declare"]):
            return _Unit(path, tokens, "block")
        if head[:1] == ["create"]:
            rest = [w for w in head[1:] if w not in ("or", "replace", "editionable", "noneditionable")]
            if rest[:2] == ["package", "body"] or rest[:1] == ["package"]:
                kind = "body" if rest[:2] == ["package", "body"] else "spec"
                at = next(i for i, t in enumerate(tokens) if t.is_word("package")) + (2 if kind == "body" else 1)
                if at + 1 < len(tokens) and _op(tokens[at + 1], "."):
                    at += 2
                name = tokens[at].text
                start = next(i for i in range(at, len(tokens)) if tokens[i].is_word("is", "as")) + 1
                return _Unit(path, tokens, kind, name, start)
            if rest[:1] == ["type"] and len(tokens) > 2:
                at = next(i for i, t in enumerate(tokens) if t.is_word("type")) + 1
                start = next((i for i in range(at, len(tokens)) if tokens[i].is_word("is", "as")), None)
                if start is not None:
                    return _Unit(path, tokens, "type", tokens[at].text, start + 1)
            # CREATE PROCEDURE | FUNCTION | TRIGGER: none in the repository today; docs/oracle-gates.md lists them
            # as not analysed. Tables and indexes are read by oracle_catalog.
            return None
        if head[:1] in (["select"], ["with"], ["insert"], ["update"], ["delete"], ["merge"]):
            return _Unit(path, tokens, "sql")
        return None

    # -- pass 1: what the packages declare ---------------------------------------------------------------

    def _sql_type(self, unit: _Unit) -> None:
        """CREATE TYPE name AS OBJECT (attribute type, ...) | AS TABLE OF element: an object type's attributes
        are read like a record's fields (name, type), so `row.attribute` and TABLE(collection)'s columns resolve."""
        tokens, at = unit.tokens, unit.start
        name = unit.package or ""
        if at < len(tokens) and tokens[at].is_word("object") and at + 1 < len(tokens) and _op(tokens[at + 1], "("):
            close = matching(tokens, at + 1, len(tokens))
            fields = tuple((tokens[a].text, self._type_reference(tokens, a + 1, b, Scope(), check=True))
                           for a, b in split_top_level(tokens, at + 2, close))
            self.sql_types[name] = TypeDesc("record", name, fields=fields, origin="sql")
        elif at + 2 < len(tokens) and tokens[at].is_word("table") and tokens[at + 1].is_word("of"):
            element = self.sql_types.get(tokens[at + 2].text)
            if element is None:
                self.report(NAMES, tokens[at + 2], f"type {name}: no type {tokens[at + 2].text} created before it")
            self.sql_types[name] = TypeDesc("collection", name, element=element or UNKNOWN, origin="sql")
        else:
            self.report(NAMES, tokens[min(at, len(tokens) - 1)],
                        f"type {name}: only AS OBJECT (...) and AS TABLE OF <type> are read")

    def collect(self) -> None:
        for unit in self.units:
            if unit.kind == "type":
                self.path = unit.path
                self._sql_type(unit)
        for kind in ("spec", "body"):
            for unit in self.units:
                if unit.kind != kind:
                    continue
                self.path = unit.path
                package = self.packages.setdefault(unit.package, PackageInfo(unit.package))
                target = package.spec if kind == "spec" else package.body
                scope = self._package_scope(unit.package, with_body=False)
                end = self._package_end(unit)
                self._declarations(unit.tokens, unit.start, end, scope, collect_into=target, check=False,
                                   origin=kind)

    def _package_end(self, unit: _Unit) -> int:
        """The index of the package's final END."""
        tokens = unit.tokens
        for index in range(len(tokens) - 1, unit.start - 1, -1):
            if tokens[index].is_word("end"):
                return index
        return len(tokens)

    def _package_scope(self, package: str | None, with_body: bool = True) -> Scope:
        scope = Scope()
        for name, type_desc in self.sql_types.items():
            scope.declare(Entity("type", name, type_desc))
        if package and package in self.packages:
            info = self.packages[package]
            for entity in info.spec.values():
                scope.declare(Entity(entity.kind, entity.name, entity.type, list(entity.routines), "spec"))
            if with_body:
                for entity in info.body.values():
                    scope.declare(Entity(entity.kind, entity.name, entity.type, list(entity.routines), "body"))
        return scope

    # -- pass 2 ----------------------------------------------------------------------------------------

    def analyse(self) -> list[Finding]:
        self.collect()
        self._specs_match_bodies()
        for unit in self.units:
            self._analyse_unit(unit)
        return self.findings

    def _specs_match_bodies(self) -> None:
        """Every routine a spec declares is defined in its body with the same parameter names (PLS-00323)."""
        bodies = {unit.package for unit in self.units if unit.kind == "body"}
        for name, package in self.packages.items():
            if name not in bodies:
                continue
            for entity in package.spec.values():
                if entity.kind != "routine":
                    continue
                defined = package.body.get(entity.name)
                for routine in entity.routines:
                    shape = [p.name for p in routine.parameters]
                    if defined is None or defined.kind != "routine" \
                            or all([p.name for p in r.parameters] != shape for r in defined.routines):
                        found = "" if defined is None or defined.kind != "routine" else \
                            "; the body defines " + " | ".join(
                                "(" + ", ".join(p.name for p in r.parameters) + ")" for r in defined.routines)
                        self.findings.append(Finding(
                            routine.path or self.repo, routine.line, NAMES,
                            f"{name}.{routine.name}({', '.join(shape)}) is declared in the spec but not defined in "
                            f"the body with these parameters{found}"))

    def _analyse_unit(self, unit: _Unit) -> None:
        self.path = unit.path
        if unit.kind in ("spec", "body"):
            scope = self._package_scope(unit.package, with_body=unit.kind == "body")
            self._declarations(unit.tokens, unit.start, self._package_end(unit), scope, collect_into=None,
                               check=True, origin=unit.kind)
        elif unit.kind == "block":
            self._block(unit.tokens, 0, len(unit.tokens), Scope())
        elif unit.kind == "type":
            return
        else:
            self._sql_statement(unit.tokens, 0, len(unit.tokens), Scope(), None)

    def analyse_text(self, path: Path, statements: list[Statement]) -> list[Finding]:
        """Findings for SQL and PL/SQL kept outside the Oracle folders (the SQL the scripts run), resolved
        against the repository (call after analyse())."""
        before = len(self.findings)
        for statement in statements:
            unit = self._unit(path, statement)
            if unit is not None:
                self._analyse_unit(unit)
        return self.findings[before:]

    # =========================================================================================================
    # Declarations

    def _declarations(self, tokens: list[Token], start: int, stop: int, scope: Scope, *,
                      collect_into: dict[str, Entity] | None, check: bool, origin: str = "local") -> int:
        """Declarations from start until BEGIN or stop; returns the index of BEGIN (or stop). `origin` is where
        the types declared there live: a package spec, a package body, or a block or routine (local)."""
        index = start
        while index < stop:
            token = tokens[index]
            if token.is_word("begin"):
                return index
            if token.is_word("procedure", "function"):
                index = self._routine(tokens, index, stop, scope, collect_into=collect_into, check=check)
                continue
            end = self._statement_end(tokens, index, stop)
            if token.is_word("pragma"):
                if check:
                    self._pragma(tokens, index, end, scope)
            elif token.is_word("type", "subtype"):
                entity = self._type_declaration(tokens, index, end, scope, check, origin)
                if entity:
                    scope.declare(entity)
                    if collect_into is not None:
                        collect_into[entity.name] = entity
            elif token.is_word("cursor"):
                name = tokens[index + 1].text
                entity = Entity("var", name, CURSOR)
                if check:
                    select_at = next((i for i in range(index, end) if tokens[i].is_word("select", "with")), None)
                    if select_at is not None:
                        self._query(tokens, select_at, end, scope, [], {})
                scope.declare(entity)
                if collect_into is not None:
                    collect_into[name] = entity
            elif token.kind == IDENT and index + 1 < end:
                entity = self._variable(tokens, index, end, scope, check)
                if entity:
                    scope.declare(entity)
                    if collect_into is not None:
                        collect_into[entity.name] = entity
            index = end + 1
        return index

    def _statement_end(self, tokens: list[Token], start: int, stop: int) -> int:
        depth = 0
        for index in range(start, stop):
            token = tokens[index]
            if _op(token, "("):
                depth += 1
            elif _op(token, ")"):
                depth -= 1
            elif depth == 0 and _op(token, ";"):
                return index
        return stop

    def _pragma(self, tokens: list[Token], start: int, end: int, scope: Scope) -> None:
        if start + 2 < end and tokens[start + 1].is_word("exception_init") and _op(tokens[start + 2], "("):
            name = tokens[start + 3]
            if name.kind == IDENT and scope.lookup(name.text) is None:
                self.report(NAMES, name, f"PRAGMA EXCEPTION_INIT names {name.text}, which is not declared")

    def _variable(self, tokens: list[Token], start: int, end: int, scope: Scope, check: bool) -> Entity | None:
        name = tokens[start].text
        index = start + 1
        if tokens[index].is_word("exception"):
            return Entity("exception", name)
        if tokens[index].is_word("constant"):
            index += 1
        type_end = index
        while type_end < end and not (_op(tokens[type_end], ":=") or tokens[type_end].is_word("default")
                                      or (tokens[type_end].is_word("not") and type_end + 1 < end
                                          and tokens[type_end + 1].is_word("null"))):
            type_end += 1
        type_desc = self._type_reference(tokens, index, type_end, scope, check)
        value_at = next((i for i in range(type_end, end) if _op(tokens[i], ":=") or tokens[i].is_word("default")),
                        None)
        if check and value_at is not None:
            self._expression(tokens, value_at + 1, end, scope)
        return Entity("var", name, type_desc)

    def _type_declaration(self, tokens: list[Token], start: int, end: int, scope: Scope,
                          check: bool, origin: str = "local") -> Entity | None:
        name = tokens[start + 1].text
        is_at = start + 2
        if not tokens[is_at].is_word("is"):
            return None
        body = is_at + 1
        if tokens[start].is_word("subtype"):
            return Entity("type", name, self._type_reference(tokens, body, end, scope, check))
        if tokens[body].is_word("record") and _op(tokens[body + 1], "("):
            close = matching(tokens, body + 1, end)
            fields = []
            for a, b in split_top_level(tokens, body + 2, close):
                field_name = tokens[a].text
                type_end = next((i for i in range(a + 1, b) if _op(tokens[i], ":=") or tokens[i].is_word("default")
                                 or tokens[i].is_word("not")), b)
                fields.append((field_name, self._type_reference(tokens, a + 1, type_end, scope, check)))
            return Entity("type", name, TypeDesc("record", fields=tuple(fields), origin=origin))
        if tokens[body].is_word("table", "varray", "array") or tokens[body].is_word("varying"):
            of_at = next((i for i in range(body, end) if tokens[i].is_word("of")), None)
            if of_at is None:
                return Entity("type", name, TypeDesc("collection", element=UNKNOWN, origin=origin))
            element_end = next((i for i in range(of_at + 1, end) if tokens[i].is_word("index", "not")), end)
            element = self._type_reference(tokens, of_at + 1, element_end, scope, check)
            return Entity("type", name, TypeDesc("collection", element=element, origin=origin))
        if tokens[body].is_word("ref") and tokens[body + 1].is_word("cursor"):
            return Entity("type", name, CURSOR)
        return Entity("type", name, UNKNOWN)

    def _type_reference(self, tokens: list[Token], start: int, stop: int, scope: Scope, check: bool) -> TypeDesc:
        """A datatype in a declaration: a scalar, a declared type, x%TYPE, t%ROWTYPE or an Oracle type."""
        if start >= stop:
            return UNKNOWN
        parts: list[Token] = [tokens[start]]
        index = start + 1
        while index + 1 < stop and _op(tokens[index], ".") and tokens[index + 1].kind == IDENT:
            parts.append(tokens[index + 1])
            index += 2
        attribute = None
        if index + 1 < stop and _op(tokens[index], "%"):
            attribute = tokens[index + 1].text
        names = [p.text for p in parts]
        first = parts[0]
        if attribute == "type":
            return self._anchored_type(parts, scope, check)
        if attribute == "rowtype":
            table = self._source_columns(names[-1])
            if table is None:
                if check:
                    self.report(NAMES, first, f"{'.'.join(names)}%ROWTYPE: no table or view {names[-1]}")
                return UNKNOWN
            types = self.tables.types.get(names[-1], {})
            return TypeDesc("record", fields=tuple((c, column_type(types.get(c))) for c in table))
        qualified = ".".join(names)
        if qualified in self.signatures.types:
            oracle_type = self.signatures.types[qualified]
            return TypeDesc("object", qualified) if oracle_type.kind == "object" else \
                TypeDesc("collection", qualified, element=SCALAR)
        if len(names) == 1:
            if names[0] in self.signatures.scalar_types:
                if check:
                    self._declared_type(tokens, start, stop, in_sql=self._sql_depth > 0)
                return CURSOR if names[0] == "sys_refcursor" else TypeDesc("scalar", names[0])
            entity = scope.lookup(names[0])
            if entity is not None and entity.kind == "type":
                return entity.type
        if len(names) == 2 and names[0] in self.packages:
            member = self.packages[names[0]].spec.get(names[1])
            if member is not None and member.kind == "type":
                return member.type
        if check:
            self.report(NAMES, first, f"unknown datatype {qualified}")
        return UNKNOWN

    def _anchored_type(self, parts: list[Token], scope: Scope, check: bool) -> TypeDesc:
        names = [p.text for p in parts]
        if len(names) == 1:
            entity = scope.lookup(names[0])
            if entity is None or entity.kind != "var":
                if check:
                    self.report(NAMES, parts[0], f"{names[0]}%TYPE: no variable {names[0]} in scope")
                return UNKNOWN
            return entity.type
        table, column = names[-2], names[-1]
        columns = self._source_columns(table)
        if columns is not None:
            if column not in columns:
                if check:
                    self.report(NAMES, parts[-1], f"{'.'.join(names)}%TYPE: table {table} has no column {column}")
                return UNKNOWN
            return column_type(self.tables.types.get(table, {}).get(column))
        entity = scope.lookup(names[0])
        if entity is not None and entity.kind == "var" and entity.type.kind == "record":
            field_type = entity.type.field(names[1])
            if field_type is not None:
                return field_type
        if names[0] in self.packages:
            member = self.packages[names[0]].spec.get(names[1])
            if member is not None and member.kind == "var":
                return member.type
        if check:
            self.report(NAMES, parts[0], f"{'.'.join(names)}%TYPE: no table or variable {names[0]}")
        return UNKNOWN

    def _source_columns(self, name: str) -> list[str] | None:
        if name in self.tables.columns:
            return self.tables.columns[name]
        if name in self.signatures.views:
            return self.signatures.views[name]
        return None

    # -- routines ----------------------------------------------------------------------------------------

    def _routine(self, tokens: list[Token], start: int, stop: int, scope: Scope, *,
                 collect_into: dict[str, Entity] | None, check: bool) -> int:
        is_function = tokens[start].is_word("function")
        name_token = tokens[start + 1]
        index = start + 2
        parameters: list[tuple[str, TypeDesc, bool]] = []
        if index < stop and _op(tokens[index], "("):
            close = matching(tokens, index, stop)
            for a, b in split_top_level(tokens, index + 1, close):
                parameters.append(self._parameter(tokens, a, b, scope, check))
            index = close + 1
        returns = UNKNOWN
        if is_function and tokens[index].is_word("return"):
            type_end = index + 1
            while type_end < stop and not (tokens[type_end].is_word("is", "as") or _op(tokens[type_end], ";")
                                           or tokens[type_end].is_word("deterministic", "pipelined",
                                                                       "result_cache", "parallel_enable",
                                                                       "authid", "accessible")):
                type_end += 1
            returns = self._type_reference(tokens, index + 1, type_end, scope, check)
            index = type_end
        while index < stop and not (tokens[index].is_word("is", "as") or _op(tokens[index], ";")):
            index += 1
        routine = Routine(name_token.text, tuple(Parameter(n, optional) for n, _, optional in parameters),
                          is_function, returns, self.path, name_token.line)
        entity = Entity("routine", name_token.text, returns, [routine])
        scope.declare(entity)
        if collect_into is not None:
            existing = collect_into.get(name_token.text)
            if existing is not None and existing.kind == "routine":
                if all(r.parameters != routine.parameters for r in existing.routines):
                    existing.routines.append(routine)
            else:
                collect_into[name_token.text] = Entity("routine", name_token.text, returns, [routine])
        if index >= stop or _op(tokens[index], ";"):
            return index + 1
        # a definition: IS <declarations> BEGIN <statements> END [name];
        local = Scope(scope, {n: Entity("var", n, t) for n, t, _ in parameters})
        begin = self._declarations(tokens, index + 1, stop, local, collect_into=None, check=check)
        end = self._block_end(tokens, begin, stop)
        if check:
            self._statements_with_handlers(tokens, begin + 1, end, local)
        after = end + 1
        while after < stop and not _op(tokens[after], ";"):
            after += 1
        return after + 1

    def _parameter(self, tokens: list[Token], start: int, stop: int, scope: Scope,
                   check: bool) -> tuple[str, TypeDesc, bool]:
        name = tokens[start].text
        index = start + 1
        while index < stop and tokens[index].is_word("in", "out", "nocopy"):
            index += 1
        type_end = next((i for i in range(index, stop) if _op(tokens[i], ":=") or tokens[i].is_word("default")),
                        stop)
        type_desc = self._type_reference(tokens, index, type_end, scope, check)
        if check and type_end < stop:
            self._expression(tokens, type_end + 1, stop, scope)
        return name, type_desc, type_end < stop

    def _block_end(self, tokens: list[Token], begin: int, stop: int) -> int:
        """The END that closes the construct opened at `begin` (BEGIN, IF, LOOP, CASE)."""
        depths = _depths(tokens, begin, stop)
        for index in range(begin + 1, stop):
            if tokens[index].is_word("end") and depths[index - begin] == 0:
                return index
        return stop

    # =========================================================================================================
    # Statements

    def _block(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> int:
        """DECLARE ... BEGIN ... END or BEGIN ... END starting at `start`; returns the index after its ';'."""
        local = Scope(scope)
        begin = start
        if tokens[start].is_word("declare"):
            begin = self._declarations(tokens, start + 1, stop, local, collect_into=None, check=True)
        end = self._block_end(tokens, begin, stop)
        self._statements_with_handlers(tokens, begin + 1, end, local)
        after = end + 1
        while after < stop and not _op(tokens[after], ";"):
            after += 1
        return after + 1

    def _statements_with_handlers(self, tokens: list[Token], start: int, end: int, scope: Scope) -> None:
        handlers = self._top_level_word(tokens, start, end, "exception")
        self._statements(tokens, start, handlers if handlers is not None else end, scope)
        if handlers is not None:
            self._handlers(tokens, handlers + 1, end, scope)

    def _top_level_word(self, tokens: list[Token], start: int, end: int, word: str) -> int | None:
        """The first `word` in tokens[start:end] outside nested blocks, declare sections, IFs, LOOPs, CASEs."""
        depths = _depths(tokens, start, end)
        for index in range(start, end):
            if tokens[index].is_word(word) and depths[index - start] == 0:
                return index
        return None

    def _handlers(self, tokens: list[Token], start: int, end: int, scope: Scope) -> None:
        index = start
        while index < end:
            if not tokens[index].is_word("when"):
                index += 1
                continue
            then = next(i for i in range(index, end) if tokens[i].is_word("then"))
            for token in tokens[index + 1:then]:
                if token.kind == IDENT and token.text != "or":
                    self._exception_name(token, scope)
            following = self._next_handler(tokens, then + 1, end)
            self._statements(tokens, then + 1, following, scope)
            index = following

    def _exception_name(self, token: Token, scope: Scope) -> None:
        if token.text in self.signatures.exceptions:
            return
        entity = scope.lookup(token.text)
        if entity is None or entity.kind != "exception":
            # a qualified exception (pkg.e_x) is resolved by its first part; the parse gate forbids it anyway
            if entity is None and token.text not in self.packages:
                self.report(NAMES, token, f"exception {token.text} is not declared")

    def _next_handler(self, tokens: list[Token], start: int, end: int) -> int:
        depths = _depths(tokens, start, end)
        for index in range(start + 1, end):
            if tokens[index].is_word("when") and depths[index - start] == 0 and _op(tokens[index - 1], ";"):
                return index
        return end

    def _statements(self, tokens: list[Token], start: int, end: int, scope: Scope) -> None:
        index = start
        while index < end:
            index = self._statement(tokens, index, end, scope)

    def _statement(self, tokens: list[Token], start: int, end: int, scope: Scope) -> int:
        token = tokens[start]
        if _op(token, ";"):
            return start + 1
        if _op(token, "<<"):
            close = next((i for i in range(start, end) if _op(tokens[i], ">>")), start)
            return close + 1
        if token.kind != IDENT:
            stop = self._statement_end(tokens, start, end)
            self._expression(tokens, start, stop, scope)
            return stop + 1
        word = token.text
        if word in ("begin", "declare"):
            return self._block(tokens, start, end, scope)
        if word == "if":
            return self._if(tokens, start, end, scope)
        if word == "case":
            return self._case_statement(tokens, start, end, scope)
        if word in ("loop", "while", "for"):
            return self._loop(tokens, start, end, scope)
        stop = self._statement_end(tokens, start, end)
        if word in ("select", "with", "insert", "update", "delete", "merge"):
            self._sql_statement(tokens, start, stop, scope, None)
        elif word in ("null", "commit", "rollback", "savepoint", "continue", "goto"):
            when = next((i for i in range(start, stop) if tokens[i].is_word("when")), None)
            if when is not None:
                self._expression(tokens, when + 1, stop, scope)
        elif word == "exit":
            when = next((i for i in range(start, stop) if tokens[i].is_word("when")), None)
            if when is not None:
                self._expression(tokens, when + 1, stop, scope)
        elif word == "return":
            self._expression(tokens, start + 1, stop, scope)
        elif word == "raise":
            if start + 1 < stop:
                self._expression(tokens, start + 1, stop, scope)
        elif word == "execute" and start + 1 < stop and tokens[start + 1].is_word("immediate"):
            self._execute_immediate(tokens, start + 2, stop, scope)
        elif word == "open":
            self._open(tokens, start + 1, stop, scope)
        elif word == "fetch":
            into = next((i for i in range(start, stop) if tokens[i].is_word("into")), stop)
            self._expression(tokens, start + 1, into, scope)
            limit = next((i for i in range(into, stop) if tokens[i].is_word("limit")), stop)
            self._targets(tokens, into + 1, limit, scope)
            if limit < stop:
                self._expression(tokens, limit + 1, stop, scope)
        elif word == "close":
            self._expression(tokens, start + 1, stop, scope)
        elif word != "pragma":
            assign = next((i for i in range(start, stop) if _op(tokens[i], ":=")), None)
            if assign is not None:
                self._expression(tokens, start, assign, scope)
                self._expression(tokens, assign + 1, stop, scope)
            else:
                self._expression(tokens, start, stop, scope)
        return stop + 1

    def _if(self, tokens: list[Token], start: int, end: int, scope: Scope) -> int:
        end_if = self._matching_end(tokens, start, end, "if")
        index = start
        while index < end_if:
            token = tokens[index]
            if token.is_word("if", "elsif"):
                then = self._word_at_depth(tokens, index + 1, end_if, "then")
                self._expression(tokens, index + 1, then, scope)
                branch_end = self._branch_end(tokens, then + 1, end_if)
                self._statements(tokens, then + 1, branch_end, scope)
                index = branch_end
            elif token.is_word("else"):
                self._statements(tokens, index + 1, end_if, scope)
                index = end_if
            else:
                index += 1
        return self._statement_end(tokens, end_if, end) + 1

    def _case_statement(self, tokens: list[Token], start: int, end: int, scope: Scope) -> int:
        end_case = self._matching_end(tokens, start, end, "case")
        index = start + 1
        first_when = self._word_at_depth(tokens, index, end_case, "when")
        self._expression(tokens, index, first_when, scope)
        index = first_when
        while index < end_case:
            if tokens[index].is_word("when"):
                then = self._word_at_depth(tokens, index + 1, end_case, "then")
                self._expression(tokens, index + 1, then, scope)
                branch_end = self._branch_end(tokens, then + 1, end_case, ("when", "else"))
                self._statements(tokens, then + 1, branch_end, scope)
                index = branch_end
            elif tokens[index].is_word("else"):
                self._statements(tokens, index + 1, end_case, scope)
                index = end_case
            else:
                index += 1
        return self._statement_end(tokens, end_case, end) + 1

    def _loop(self, tokens: list[Token], start: int, end: int, scope: Scope) -> int:
        loop_at = self._word_at_depth(tokens, start, end, "loop")
        end_loop = self._matching_end(tokens, loop_at, end, "loop")
        local = Scope(scope)
        if tokens[start].is_word("while"):
            self._expression(tokens, start + 1, loop_at, scope)
        elif tokens[start].is_word("for"):
            variable = tokens[start + 1].text
            in_at = start + 2
            after_in = in_at + 1
            if tokens[after_in].is_word("reverse"):
                after_in += 1
            if _op(tokens[after_in], "(") and tokens[after_in + 1].is_word("select", "with"):
                close = matching(tokens, after_in, loop_at)
                columns = self._query(tokens, after_in + 1, close, scope, [], {})
                fields = tuple((c, SCALAR) for c in columns or [])
                record = TypeDesc("record", fields=fields) if columns is not None else UNKNOWN
                local.declare(Entity("var", variable, record))
            elif any(_op(tokens[i], "..") for i in range(after_in, loop_at)):
                self._expression(tokens, after_in, loop_at, scope)
                local.declare(Entity("var", variable, SCALAR))
            else:
                self._expression(tokens, after_in, loop_at, scope)
                local.declare(Entity("var", variable, UNKNOWN))
        self._statements(tokens, loop_at + 1, end_loop, local)
        return self._statement_end(tokens, end_loop, end) + 1

    def _word_at_depth(self, tokens: list[Token], start: int, end: int, word: str) -> int:
        depth = 0
        nested = 0
        for index in range(start, end):
            token = tokens[index]
            if _op(token, "("):
                depth += 1
            elif _op(token, ")"):
                depth -= 1
            elif depth == 0 and token.is_word("case"):
                nested += 1
            elif depth == 0 and token.is_word("end") and nested:
                nested -= 1
            elif depth == 0 and nested == 0 and token.is_word(word):
                return index
        return end

    def _matching_end(self, tokens: list[Token], start: int, end: int, word: str) -> int:
        """The index of END in `END <word>` closing the construct opened at `start`."""
        return self._block_end(tokens, start, end)

    def _branch_end(self, tokens: list[Token], start: int, end: int, words: tuple[str, ...] = ("elsif", "else")) -> int:
        depths = _depths(tokens, start, end)
        for index in range(start, end):
            if tokens[index].kind == IDENT and tokens[index].text in words and depths[index - start] == 0:
                return index
        return end

    def _execute_immediate(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        markers = [i for i in range(start, stop) if tokens[i].is_word("into", "using", "bulk", "returning", "return")]
        first = markers[0] if markers else stop
        self._expression(tokens, start, first, scope)
        index = first
        while index < stop:
            token = tokens[index]
            following = next((m for m in markers if m > index), stop)
            if token.is_word("into"):
                self._targets(tokens, index + 1, following, scope)
            elif token.is_word("using"):
                for a, b in split_top_level(tokens, index + 1, following):
                    while a < b and tokens[a].is_word("in", "out"):
                        a += 1
                    self._expression(tokens, a, b, scope)
            index = following

    def _open(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        for_at = next((i for i in range(start, stop) if tokens[i].is_word("for")), None)
        if for_at is None:
            self._expression(tokens, start, stop, scope)
            return
        self._expression(tokens, start, for_at, scope)
        using = next((i for i in range(for_at, stop) if tokens[i].is_word("using")), stop)
        if tokens[for_at + 1].is_word("select", "with"):
            self._query(tokens, for_at + 1, using, scope, [], {})
        else:
            self._expression(tokens, for_at + 1, using, scope)
        if using < stop:
            for a, b in split_top_level(tokens, using + 1, stop):
                while a < b and tokens[a].is_word("in", "out"):
                    a += 1
                self._expression(tokens, a, b, scope)

    def _targets(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        for a, b in split_top_level(tokens, start, stop):
            self._expression(tokens, a, b, scope)

    # =========================================================================================================
    # PL/SQL expressions

    def _expression(self, tokens: list[Token], start: int, stop: int, scope: Scope,
                    sql: "_SqlScope | None" = None) -> None:
        keywords = SQL_KEYWORDS if sql is not None else PLSQL_KEYWORDS
        index = start
        while index < stop:
            token = tokens[index]
            if token.kind in (STRING, NUMBER, BIND):
                if token.kind == STRING:
                    self._literal(token, in_sql=sql is not None)
                index += 1
                continue
            if token.kind == OP:
                if token.text == "(" and sql is not None and index + 1 < stop \
                        and tokens[index + 1].is_word("select", "with"):
                    close = matching(tokens, index, stop)
                    self._query(tokens, index + 1, close, scope, [sql], sql.ctes)
                    index = close + 1
                    continue
                if token.text == "*" and index > start and _op(tokens[index - 1], "."):
                    index += 1
                    continue
                index += 1
                continue
            # identifiers
            if sql is not None and token.text in ("cast", "treat") and index + 1 < stop and _op(tokens[index + 1], "("):
                close = matching(tokens, index + 1, stop)
                as_at = self._word_at_depth(tokens, index + 2, close, "as")
                self._expression(tokens, index + 2, as_at, scope, sql)
                self._type_tokens(tokens, as_at + 1, close, scope)
                index = close + 1
                continue
            if sql is None and token.text in ("treat", "cast") and index + 1 < stop and _op(tokens[index + 1], "("):
                close = matching(tokens, index + 1, stop)
                as_at = self._word_at_depth(tokens, index + 2, close, "as")
                self._expression(tokens, index + 2, as_at, scope)
                self._type_tokens(tokens, as_at + 1, close, scope)
                index = close + 1
                continue
            if sql is not None and token.text in _MODEL_OPERATORS and index + 1 < stop and _op(tokens[index + 1], "("):
                close = matching(tokens, index + 1, stop)
                self._model_operator(tokens, index + 2, close, scope, sql)
                index = close + 1
                continue
            if sql is not None and token.text == "returning":
                end = self._skip_type(tokens, index + 1, stop)
                self._declared_type(tokens, index + 1, end, in_sql=True)
                index = end
                continue
            if token.text in keywords and not (index + 1 < stop and _op(tokens[index + 1], ".")):
                if token.text in ("true", "false"):
                    self._literal(token, in_sql=sql is not None)
                index += 1
                continue
            if sql is not None and token.text in self.signatures.scalar_types \
                    and not (index + 1 < stop and _op(tokens[index + 1], "(")):
                index += 1
                continue
            index = self._chain(tokens, index, stop, scope, sql)

    def _model_operator(self, tokens: list[Token], start: int, stop: int, scope: Scope, sql: "_SqlScope") -> None:
        """VECTOR_EMBEDDING(model USING expr AS alias, ...) and PREDICTION(...): the model is a schema object
        (not checked here) and each alias names a model attribute, not a column."""
        using = self._word_at_depth(tokens, start, stop, "using")
        for a, b in split_top_level(tokens, using + 1, stop):
            as_at = self._word_at_depth(tokens, a, b, "as")
            self._expression(tokens, a, as_at, scope, sql)

    def _skip_type(self, tokens: list[Token], start: int, stop: int) -> int:
        """Past a datatype after RETURNING (name, optional (n [CHAR|BYTE]))."""
        index = start
        if index < stop and tokens[index].kind == IDENT:
            index += 1
            if index < stop and _op(tokens[index], "("):
                index = matching(tokens, index, stop) + 1
        return index

    def _type_tokens(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        """The datatype in CAST(x AS type) / TREAT(x AS type): resolved like a declaration's."""
        type_end = start
        while type_end < stop and not _op(tokens[type_end], "("):
            type_end += 1
        self._type_reference(tokens, start, type_end, scope, True)

    def _chain(self, tokens: list[Token], start: int, stop: int, scope: Scope, sql: "_SqlScope | None") -> int:
        """Resolve one name chain (a.b(c).d%e ...) starting at `start`; returns the index after it."""
        first = tokens[start]
        index = start + 1
        # named argument: handled by the caller's argument list; a stray one is skipped
        if index < stop and _op(tokens[index], "=>"):
            return index + 1
        if first.text == "sql" and index < stop and _op(tokens[index], "%"):
            return index + 2
        state = self._first(first, tokens, index, stop, scope, sql)
        self._chain_step(state, first, "first", sql)
        while index < stop:
            token = tokens[index]
            if _op(token, "("):
                close = matching(tokens, index, stop)
                before = state
                state = self._apply(state, tokens, index, close, scope, sql, first)
                self._chain_step(before, tokens[index - 1], "call", sql)
                self._chain_step(state, tokens[index - 1], "apply", sql)
                index = close + 1
            elif _op(token, ".") and index + 1 < stop and tokens[index + 1].kind == IDENT:
                state = self._member(state, tokens[index + 1], tokens, index + 2, stop)
                self._chain_step(state, tokens[index + 1], "member", sql)
                index += 2
            elif _op(token, ".") and index + 1 < stop and _op(tokens[index + 1], "*"):
                index += 2
            elif _op(token, "%") and index + 1 < stop and tokens[index + 1].kind == IDENT:
                if tokens[index + 1].text not in _CURSOR_ATTRIBUTES:
                    self.report(NAMES, tokens[index + 1], f"unknown attribute %{tokens[index + 1].text}")
                state = ("done",)
                index += 2
            else:
                break
        self._chain_end(state, first, sql)
        return index

    # The state of a chain: ("entity", Entity) | ("value", TypeDesc) | ("ora_package", name) |
    # ("ora_member", Member) | ("ora_static", type, name) | ("method", type, name) | ("package", name, own) |
    # ("routine", Entity, package) | ("sql_source", _Source) | ("done",)

    def _first(self, token: Token, tokens: list[Token], after: int, stop: int, scope: Scope,
               sql: "_SqlScope | None") -> tuple:
        name = token.text
        followed_by_dot = after < stop and _op(tokens[after], ".")
        if sql is not None:
            if followed_by_dot:
                source = sql.source(name)
                if source is not None:
                    return ("sql_source", source)
            else:
                if sql.has_column(name, allow_aliases=True):
                    return ("done",)
        entity = scope.lookup(name)
        if entity is not None:
            if entity.kind == "routine":
                return ("routine", entity, None)
            if entity.kind == "var":
                return ("value", entity.type)
            if entity.kind == "type":
                return ("type", entity)
            return ("done",)
        if name in self.packages:
            return ("package", name)
        if name in _ORACLE_OWNERS:
            return ("schema",)
        if name in self.signatures.packages:
            return ("ora_package", name)
        if name in self.signatures.types:
            return ("ora_type", name)
        if name in self.signatures.functions or name in self.signatures.exceptions:
            return ("done",)
        if sql is not None and not followed_by_dot and sql.open_sources():
            return ("done",)
        where = "in this query or scope" if sql is not None else "in scope"
        self.report(NAMES, token, f"{name} is not declared {where} (no variable, parameter, column, package "
                                  "member or signature-table entry of that name)")
        return ("done",)

    def _member(self, state: tuple, token: Token, tokens: list[Token], after: int, stop: int) -> tuple:
        name = token.text
        kind = state[0]
        if kind == "schema":
            if name in self.signatures.packages:
                return ("ora_package", name)
            if f"sys.{name}" in self.signatures.types:
                return ("ora_type", f"sys.{name}")
            if name in self.signatures.types:
                return ("ora_type", name)
            self.report(API, token, f"sys.{name} is not in the signature table (oracle_signatures.json)")
            return ("done",)
        if kind == "sql_source":
            source: _Source = state[1]
            if source.columns is not None and name not in source.columns:
                self.report(NAMES, token, f"{source.label} has no column {name}")
            return ("done",)
        if kind == "package":
            package = self.packages[state[1]]
            entity = package.spec.get(name)
            if entity is None:
                self.report(NAMES, token, f"package {state[1]} declares no {name} in its spec")
                return ("done",)
            if entity.kind == "routine":
                return ("routine", entity, state[1])
            if entity.kind == "var":
                return ("value", entity.type)
            if entity.kind == "type":
                return ("type", entity)
            return ("done",)
        if kind == "ora_package":
            member = self.signatures.packages[state[1]].get(name)
            if member is None:
                self.report(API, token, f"{state[1]}.{name} is not a member of {state[1]} in the signature table "
                                        f"(see {self.signatures.package_docs.get(state[1], 'its documentation')})")
                return ("done",)
            called = after < stop and _op(tokens[after], "(")
            if member.kind != "constant" and not called:
                self._check_call(member, [], [], token)
            return ("ora_member", member)
        if kind == "ora_type":
            oracle_type = self.signatures.types[state[1]]
            member = oracle_type.static.get(name)
            if member is None:
                self.report(API, token, f"{state[1]}.{name}: {state[1]} has no static member {name} in the "
                                        "signature table")
                return ("done",)
            return ("ora_member", member)
        if kind == "value":
            type_desc: TypeDesc = state[1]
            return self._value_member(type_desc, token, tokens, after, stop)
        if kind == "routine":
            # a call without parentheses followed by .member: the function's result
            entity: Entity = state[1]
            self._check_routine_call(entity, [], token, state[2])
            return self._value_member(entity.type, token, tokens, after, stop)
        return ("done",)

    def _value_member(self, type_desc: TypeDesc, token: Token, tokens: list[Token], after: int, stop: int) -> tuple:
        name = token.text
        if type_desc.kind == "record":
            field_type = type_desc.field(name)
            if field_type is None:
                self.report(NAMES, token, f"the record has no field {name} (fields: "
                                          f"{', '.join(f for f, _ in type_desc.fields) or 'none'})")
                return ("done",)
            return ("value", field_type)
        if type_desc.kind == "collection":
            if name not in _COLLECTION_METHODS:
                self.report(NAMES, token, f"{name} is not a collection method")
                return ("done",)
            return ("value", SCALAR)
        if type_desc.kind == "object":
            member = self.signatures.type_member(type_desc.name, name)
            if member is None:
                self.report(API, token, f"{type_desc.name} has no member {name} in the signature table "
                                        f"(see {self.signatures.types[type_desc.name].doc})")
                return ("done",)
            called = after < stop and _op(tokens[after], "(")
            if not called:
                self._check_call(member, [], [], token)
            return ("ora_member", member)
        return ("done",)

    def _apply(self, state: tuple, tokens: list[Token], open_at: int, close: int, scope: Scope,
               sql: "_SqlScope | None", first: Token) -> tuple:
        """Arguments in parentheses after a chain: a call, a constructor or a collection index."""
        kind = state[0]
        self._routine_arguments += kind == "routine"
        try:
            positional, named = self._arguments(tokens, open_at, close, scope, sql)
        finally:
            self._routine_arguments -= kind == "routine"
        anchor = tokens[open_at - 1]
        if kind == "ora_member":
            self._check_call(state[1], positional, named, anchor)
            return ("done",)
        if kind == "ora_type":
            oracle_type = self.signatures.types[state[1]]
            if oracle_type.constructors is not None:
                self._check_call(oracle_type.constructors, positional, named, anchor)
                return ("value", TypeDesc("object", state[1]))
            if oracle_type.kind == "collection":
                return ("value", TypeDesc("collection", state[1], element=SCALAR))
            self.report(API, anchor, f"{state[1]} has no constructor in the signature table")
            return ("done",)
        if kind == "routine":
            self._check_routine_call(state[1], named, anchor, state[2], len(positional))
            return ("value", state[1].type)
        if kind == "type":
            entity: Entity = state[1]
            return ("value", entity.type)
        if kind == "value":
            type_desc: TypeDesc = state[1]
            if type_desc.kind == "collection":
                return ("value", type_desc.element or UNKNOWN)
            return ("done",)
        return ("done",)

    def _arguments(self, tokens: list[Token], open_at: int, close: int, scope: Scope,
                   sql: "_SqlScope | None") -> tuple[list[tuple[int, int]], list[Token]]:
        positional: list[tuple[int, int]] = []
        named: list[Token] = []
        for a, b in split_top_level(tokens, open_at + 1, close):
            if a + 1 < b and tokens[a].kind == IDENT and _op(tokens[a + 1], "=>"):
                named.append(tokens[a])
                self._expression(tokens, a + 2, b, scope, sql)
            else:
                positional.append((a, b))
                self._expression(tokens, a, b, scope, sql)
        return positional, named

    def _check_call(self, member: Member, positional: list, named: list[Token], anchor: Token) -> None:
        """An Oracle-supplied routine called with these arguments: some overload must accept them."""
        if member.kind == "constant":
            if positional or named:
                self.report(API, anchor, f"{member.owner}.{member.name} is a constant, not a routine")
            return
        problems: list[str] = []
        for overload in member.overloads:
            names = [p.name for p in overload]
            problem = None
            if len(positional) > len(overload):
                problem = f"{len(positional)} positional arguments, at most {len(overload)}"
            else:
                covered = set(names[:len(positional)])
                for argument in named:
                    if argument.text not in names:
                        problem = f"no parameter {argument.text}"
                        break
                    if argument.text in covered:
                        problem = f"{argument.text} given twice"
                        break
                    covered.add(argument.text)
                if problem is None:
                    missing = [p.name for p in overload if not p.optional and p.name not in covered]
                    if missing:
                        problem = f"required {', '.join(missing)} not given"
            if problem is None:
                return
            problems.append(problem)
        given = [f"{len(positional)} positional"] + [f"{n.text} =>" for n in named]
        self.report(API, anchor, f"call to {member.describe()} with ({', '.join(given)}) matches no overload "
                                 f"({'; '.join(dict.fromkeys(problems))}); {member.doc}")

    def _check_routine_call(self, entity: Entity, named: list[Token], anchor: Token, package: str | None,
                            positional: int = 0) -> None:
        """A repository routine called with named arguments: every name must be one of its parameters."""
        if not entity.routines:
            return
        owner = f"{package}." if package else ""
        for routine in entity.routines:
            names = [p.name for p in routine.parameters]
            if positional <= len(names) and all(n.text in names for n in named):
                return
        for argument in named:
            if all(argument.text not in [p.name for p in r.parameters] for r in entity.routines):
                known = ", ".join(p.name for p in entity.routines[0].parameters)
                self.report(NAMES, argument, f"{owner}{entity.name} has no parameter {argument.text} "
                                             f"(parameters: {known})")
                return
        self.report(NAMES, anchor, f"{owner}{entity.name} takes at most "
                                   f"{max(len(r.parameters) for r in entity.routines)} arguments, not {positional}")

    # =========================================================================================================
    # SQL

    def _sql_statement(self, tokens: list[Token], start: int, stop: int, scope: Scope,
                       outer: "_SqlScope | None") -> None:
        self._sql_depth += 1
        try:
            self._sql_statement_in_sql(tokens, start, stop, scope, outer)
        finally:
            self._sql_depth -= 1

    def _sql_statement_in_sql(self, tokens: list[Token], start: int, stop: int, scope: Scope,
                              outer: "_SqlScope | None") -> None:
        word = tokens[start].text
        outers = [outer] if outer is not None else []
        if word in ("select", "with"):
            self._query(tokens, start, stop, scope, outers, {})
        elif word == "insert":
            self._insert(tokens, start, stop, scope)
        elif word == "update":
            self._update(tokens, start, stop, scope)
        elif word == "delete":
            self._delete(tokens, start, stop, scope)
        elif word == "merge":
            self._merge(tokens, start, stop, scope)

    def _query(self, tokens: list[Token], start: int, stop: int, scope: Scope, outers: list["_SqlScope"],
               ctes: dict[str, list[str] | None]) -> list[str] | None:
        """A query (WITH ..., set operations); returns the names of its columns (None when unknown), with their
        types where known (Columns)."""
        self._sql_depth += 1
        try:
            result = self._query_in_sql(tokens, start, stop, scope, outers, ctes)
        finally:
            self._sql_depth -= 1
        if isinstance(result, Columns):
            self._query_columns[(id(tokens), start)] = result
        return result

    def _query_in_sql(self, tokens: list[Token], start: int, stop: int, scope: Scope, outers: list["_SqlScope"],
                      ctes: dict[str, list[str] | None]) -> list[str] | None:
        while start < stop and _op(tokens[start], "(") and matching(tokens, start, stop) == stop - 1:
            start, stop = start + 1, stop - 1
        ctes = dict(ctes)
        if tokens[start].is_word("with"):
            index = start + 1
            while index < stop:
                name = tokens[index].text
                index += 1
                explicit: list[str] | None = None
                if _op(tokens[index], "("):
                    close = matching(tokens, index, stop)
                    explicit = [tokens[a].text for a, b in split_top_level(tokens, index + 1, close)]
                    index = close + 1
                if not tokens[index].is_word("as"):
                    break
                open_at = index + 1
                close = matching(tokens, open_at, stop)
                columns = self._query(tokens, open_at + 1, close, scope, outers, ctes)
                if explicit is not None:
                    kinds = [getattr(columns, "types", {}).get(c, "") for c in columns or []]
                    ctes[name] = Columns(explicit, dict(zip(explicit, kinds)))
                else:
                    ctes[name] = columns
                index = close + 1
                if index < stop and _op(tokens[index], ","):
                    index += 1
                    continue
                break
            start = index
        branches = self._set_branches(tokens, start, stop)
        results = [self._query_block(tokens, a, b, scope, outers, ctes) for a, b in branches]
        self._after_query(tokens, branches, results)
        return results[0] if results else None

    def _set_branches(self, tokens: list[Token], start: int, stop: int) -> list[tuple[int, int]]:
        branches: list[tuple[int, int]] = []
        depth = 0
        begin = start
        index = start
        while index < stop:
            token = tokens[index]
            if _op(token, "("):
                depth += 1
            elif _op(token, ")"):
                depth -= 1
            elif depth == 0 and token.kind == IDENT and token.text in _SET_OPERATORS:
                branches.append((begin, index))
                index += 1
                if index < stop and tokens[index].is_word("all", "distinct"):
                    index += 1
                begin = index
                continue
            index += 1
        branches.append((begin, stop))
        return branches

    def _query_block(self, tokens: list[Token], start: int, stop: int, scope: Scope, outers: list["_SqlScope"],
                     ctes: dict[str, list[str] | None]) -> list[str] | None:
        if _op(tokens[start], "("):
            close = matching(tokens, start, stop)
            return self._query(tokens, start + 1, close, scope, outers, ctes)
        if not tokens[start].is_word("select"):
            return None
        clauses = self._clauses(tokens, start + 1, stop)
        select_end = min([i for _, i in clauses] + [stop])
        positions = dict((w, i) for w, i in clauses)
        block = _SqlScope(outers, ctes)
        # FROM first: the select list and the conditions name its sources
        if "from" in positions:
            from_end = min([i for w, i in clauses if i > positions["from"]] + [stop])
            self._from_clause(tokens, positions["from"] + 1, from_end, scope, block)
        items_start = start + 1
        distinct = tokens[items_start].is_word("distinct", "unique")
        if tokens[items_start].is_word("distinct", "unique", "all"):
            items_start += 1
        columns: Columns | None = Columns()
        items: list[tuple[int, int]] = []
        for a, b in split_top_level(tokens, items_start, select_end):
            expression_end, names = self._item_names(tokens, a, b, block)
            self._expression(tokens, a, expression_end, scope, block)
            items.append((a, expression_end))
            if names is None or columns is None:
                columns = None
            else:
                kind = self._expression_type(tokens, a, expression_end, block, scope) if len(names) == 1 else ""
                if len(names) != 1:
                    source = block.source(tokens[b - 3].text) if b - a >= 3 else None
                    for name in names:
                        columns.types[name] = (source.types or {}).get(name, "") if source else ""
                else:
                    columns.types[names[0]] = kind
                columns.extend(names)
        block.aliases = set(columns or [])
        block.alias_types = dict(columns.types) if columns is not None else {}
        for word, at in clauses:
            following = min([i for _, i in clauses if i > at] + [stop])
            if word == "into":
                self._targets(tokens, at + 1, following, scope)
            elif word == "bulk":
                into = next((i for i in range(at, following) if tokens[i].is_word("into")), following)
                self._targets(tokens, into + 1, following, scope)
            elif word in ("where", "having", "start", "connect"):
                self._expression(tokens, at + 1, following, scope, block)
            elif word in ("group", "order"):
                by = at + 1 if at + 1 < following and tokens[at + 1].is_word("by") else at
                if word == "order":
                    block.in_order_by = True
                self._expression(tokens, by + 1, following, scope, block)
                block.in_order_by = False
            elif word in ("fetch", "offset"):
                self._expression(tokens, at + 1, following, scope, block)
            elif word == "for":
                pass
        self._after_query_block(tokens, start, stop, block, scope, items, clauses, distinct)
        return columns

    def _clauses(self, tokens: list[Token], start: int, stop: int) -> list[tuple[str, int]]:
        words = {"into", "bulk", "from", "where", "group", "having", "order", "fetch", "offset", "start",
                 "connect", "for", "window", "model"}
        found: list[tuple[str, int]] = []
        depth = 0
        for index in range(start, stop):
            token = tokens[index]
            if _op(token, "("):
                depth += 1
            elif _op(token, ")"):
                depth -= 1
            elif depth == 0 and token.kind == IDENT and token.text in words:
                if token.text in ("group", "order") and not (index + 1 < stop and tokens[index + 1].is_word("by")):
                    continue
                if token.text == "start" and not (index + 1 < stop and tokens[index + 1].is_word("with")):
                    continue
                if token.text == "for" and not (index + 1 < stop and tokens[index + 1].is_word("update")):
                    continue
                if token.text == "into" and any(w == "into" for w, _ in found):
                    continue
                if token.text == "into" and found and found[-1][0] == "bulk":
                    continue
                if token.text == "bulk" and not (index + 1 < stop and tokens[index + 1].is_word("collect")):
                    continue
                found.append((token.text, index))
        return found

    def _item_names(self, tokens: list[Token], start: int, stop: int,
                    block: "_SqlScope") -> tuple[int, list[str] | None]:
        """Where the expression of one select-list item ends, and its output column name(s): the alias, the
        column of a plain column reference, the columns of t.* (None when t's columns are unknown)."""
        length = stop - start
        last = tokens[stop - 1]
        if length >= 2 and _op(last, "*") and _op(tokens[stop - 2], "."):
            source = block.source(tokens[stop - 3].text) if length >= 3 else None
            return stop, (list(source.columns) if source is not None and source.columns is not None else None)
        if length == 1 and _op(last, "*"):
            return stop, block.all_columns()
        if length >= 3 and tokens[stop - 2].is_word("as") and last.kind == IDENT:
            return stop - 2, [last.text]
        if last.kind == IDENT and length >= 2:
            previous = tokens[stop - 2]
            if (_op(previous, ")") or previous.kind in (IDENT, STRING, NUMBER, BIND)) \
                    and last.text not in SQL_KEYWORDS and not previous.is_word("as"):
                return stop - 1, [last.text]
        if last.kind == IDENT and (length == 1 or _op(tokens[stop - 2], ".")):
            return stop, [last.text]
        return stop, [""]

    def _from_clause(self, tokens: list[Token], start: int, stop: int, scope: Scope, block: "_SqlScope") -> None:
        conditions: list[tuple[int, int]] = []
        laterals: list[tuple[int, int]] = []
        index = start
        while index < stop:
            token = tokens[index]
            if _op(token, ","):
                index += 1
                continue
            if token.kind == IDENT and token.text in ("inner", "left", "right", "full", "outer", "cross",
                                                      "natural", "join", "lateral", "apply"):
                index += 1
                continue
            if token.is_word("on"):
                end = self._from_item_end(tokens, index + 1, stop, conditions=True)
                conditions.append((index + 1, end))
                index = end
                continue
            if token.is_word("using") and index + 1 < stop and _op(tokens[index + 1], "("):
                index = matching(tokens, index + 1, stop) + 1
                continue
            index = self._from_item(tokens, index, stop, scope, block, laterals)
        for a, b in laterals:
            self._expression(tokens, a, b, scope, block)
        for a, b in conditions:
            self._expression(tokens, a, b, scope, block)

    def _from_item_end(self, tokens: list[Token], start: int, stop: int, conditions: bool = False) -> int:
        depth = 0
        for index in range(start, stop):
            token = tokens[index]
            if _op(token, "("):
                depth += 1
            elif _op(token, ")"):
                depth -= 1
            elif depth == 0 and (_op(token, ",") or token.is_word("join", "inner", "left", "right", "full", "cross",
                                                                   "natural")):
                return index
        return stop

    def _from_item(self, tokens: list[Token], start: int, stop: int, scope: Scope, block: "_SqlScope",
                   laterals: list[tuple[int, int]]) -> int:
        token = tokens[start]
        index = start + 1
        columns: list[str] | None
        label: str
        name: str | None = None
        types: dict[str, str] | None = None
        if _op(token, "("):
            close = matching(tokens, start, stop)
            columns = self._query(tokens, start + 1, close, scope, block.outers, block.ctes)
            label = "the subquery"
            index = close + 1
        elif token.is_word("json_table") and index < stop and _op(tokens[index], "("):
            close = matching(tokens, index, stop)
            columns_at = next((i for i in range(index + 1, close) if tokens[i].is_word("columns")
                               and i + 1 < close and _op(tokens[i + 1], "(")), None)
            first_comma = next((a for a, b in split_top_level(tokens, index + 1, close)[1:2]), close)
            laterals.append((index + 1, first_comma - 1 if first_comma > index + 1 else close))
            columns = self._json_table_columns(tokens, columns_at + 2, matching(tokens, columns_at + 1, close)) \
                if columns_at is not None else None
            label = "the JSON_TABLE"
            index = close + 1
        elif token.is_word("table") and index < stop and _op(tokens[index], "("):
            close = matching(tokens, index, stop)
            laterals.append((index + 1, close))
            columns = ["column_value"]
            label = "the TABLE() collection"
            # TABLE(variable) of a collection of an object type: the columns are the type's attributes
            entity = scope.lookup(tokens[index + 1].text) if close == index + 2 else None
            element = entity.type.element if entity is not None and entity.kind == "var" else None
            if element is not None and element.kind == "record" and element.origin == "sql":
                columns = Columns([f for f, _ in element.fields], {f: t.name for f, t in element.fields})
                label = f"TABLE() of {entity.type.name}"
                types = dict(columns.types)
            index = close + 1
        elif token.kind == IDENT:
            parts = [token.text]
            while index + 1 < stop and _op(tokens[index], ".") and tokens[index + 1].kind == IDENT:
                parts.append(tokens[index + 1].text)
                index += 2
            name = parts[-1]
            if name in block.ctes:
                columns = block.ctes[name]
                label = f"WITH query {name}"
            else:
                columns = self._source_columns(name)
                label = f"table {name}"
                types = self.tables.types.get(name)
                if columns is None:
                    self.report(NAMES, token, f"no table, view or WITH query {'.'.join(parts)}")
        else:
            return start + 1
        # flashback: AS OF SCN|TIMESTAMP <expr>
        if index + 2 < stop and tokens[index].is_word("as") and tokens[index + 1].is_word("of") \
                and tokens[index + 2].is_word("scn", "timestamp"):
            expr_start = index + 3
            expr_end = expr_start + 1
            while expr_end + 1 < stop and _op(tokens[expr_end], ".") and tokens[expr_end + 1].kind == IDENT:
                expr_end += 2
            if expr_end < stop and _op(tokens[expr_end], "("):
                expr_end = matching(tokens, expr_end, stop) + 1
            laterals.append((expr_start, expr_end))
            index = expr_end
        alias = None
        if index < stop and tokens[index].is_word("as") and index + 1 < stop and tokens[index + 1].kind == IDENT:
            index += 1
        if index < stop and tokens[index].kind == IDENT and tokens[index].text not in _CLAUSE_WORDS:
            alias = tokens[index].text
            index += 1
        if types is None and isinstance(columns, Columns):
            types = columns.types
        block.add(_Source(alias or name or "", columns, label, types=types,
                          base_table=name if label.startswith("table ") else None))
        return index

    def _json_table_columns(self, tokens: list[Token], start: int, stop: int) -> Columns:
        names = Columns()
        for a, b in split_top_level(tokens, start, stop):
            if tokens[a].is_word("nested"):
                inner = next((i for i in range(a, b) if tokens[i].is_word("columns")), None)
                if inner is not None and inner + 1 < b and _op(tokens[inner + 1], "("):
                    nested = self._json_table_columns(tokens, inner + 2, matching(tokens, inner + 1, b))
                    names.extend(nested)
                    names.types.update(nested.types)
            elif tokens[a].kind == IDENT:
                names.append(tokens[a].text)
                declared = tokens[a + 1].text if a + 1 < b and tokens[a + 1].kind == IDENT else ""
                # name FOR ORDINALITY is a number; name PATH ... (no type) is VARCHAR2(4000)
                names.types[tokens[a].text] = {"for": "number", "path": "varchar2", "format": "varchar2",
                                               "exists": "varchar2"}.get(declared, base_type(declared))
        return names

    # -- DML -----------------------------------------------------------------------------------------------

    def _dml_target(self, tokens: list[Token], start: int, stop: int) -> tuple[_Source | None, int]:
        token = tokens[start]
        if token.kind != IDENT:
            return None, start
        parts = [token.text]
        index = start + 1
        while index + 1 < stop and _op(tokens[index], ".") and tokens[index + 1].kind == IDENT:
            parts.append(tokens[index + 1].text)
            index += 2
        columns = self._source_columns(parts[-1])
        if columns is None:
            self.report(NAMES, token, f"no table {'.'.join(parts)}")
        alias = parts[-1]
        if index < stop and tokens[index].kind == IDENT and tokens[index].text not in _CLAUSE_WORDS:
            alias = tokens[index].text
            index += 1
        return _Source(alias, columns, f"table {parts[-1]}", table=parts[-1],
                       types=self.tables.types.get(parts[-1]), base_table=parts[-1]), index

    def _column_list(self, tokens: list[Token], start: int, stop: int, target: _Source) -> None:
        for _, b in split_top_level(tokens, start, stop):
            column = tokens[b - 1]
            if target.columns is not None and column.kind == IDENT and column.text not in target.columns:
                self.report(NAMES, column, f"{target.label} has no column {column.text}")

    def _returning(self, tokens: list[Token], start: int, stop: int, scope: Scope, block: "_SqlScope") -> int:
        returning = next((i for i in range(start, stop) if tokens[i].is_word("returning", "return")), None)
        if returning is None:
            return stop
        into = next((i for i in range(returning, stop) if tokens[i].is_word("into")), stop)
        self._expression(tokens, returning + 1, into, scope, block)
        self._targets(tokens, into + 1, stop, scope)
        return returning

    def _insert(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        index = start + 1
        if tokens[index].is_word("into"):
            index += 1
        target, index = self._dml_target(tokens, index, stop)
        if target is None:
            return
        block = _SqlScope([], {})
        block.add(target)
        stop = self._returning(tokens, index, stop, scope, block)
        if index < stop and _op(tokens[index], "("):
            close = matching(tokens, index, stop)
            self._column_list(tokens, index + 1, close, target)
            index = close + 1
        if index < stop and tokens[index].is_word("values"):
            self._expression(tokens, index + 1, stop, scope, _SqlScope([], {}))
        elif index < stop:
            self._query(tokens, index, stop, scope, [], {})

    def _update(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        target, index = self._dml_target(tokens, start + 1, stop)
        if target is None:
            return
        block = _SqlScope([], {})
        block.add(target)
        stop = self._returning(tokens, index, stop, scope, block)
        where = self._word_at_depth(tokens, index, stop, "where")
        if tokens[index].is_word("set"):
            self._assignments(tokens, index + 1, where, scope, block, target)
        if where < stop:
            self._expression(tokens, where + 1, stop, scope, block)
            self._condition(tokens, where + 1, stop, block, scope)

    def _assignments(self, tokens: list[Token], start: int, stop: int, scope: Scope, block: "_SqlScope",
                     target: _Source) -> None:
        for a, b in split_top_level(tokens, start, stop):
            equals = next((i for i in range(a, b) if _op(tokens[i], "=")), None)
            if equals is None:
                continue
            if _op(tokens[a], "("):
                self._column_list(tokens, a + 1, matching(tokens, a, equals), target)
            else:
                column = tokens[equals - 1]
                if target.columns is not None and column.kind == IDENT and column.text not in target.columns:
                    self.report(NAMES, column, f"{target.label} has no column {column.text}")
                if equals - a == 3 and tokens[a].text != target.alias and tokens[a].text != target.table:
                    self.report(NAMES, tokens[a], f"{tokens[a].text} is not the alias of {target.label}")
            self._expression(tokens, equals + 1, b, scope, block)

    def _delete(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        index = start + 1
        if tokens[index].is_word("from"):
            index += 1
        target, index = self._dml_target(tokens, index, stop)
        if target is None:
            return
        block = _SqlScope([], {})
        block.add(target)
        stop = self._returning(tokens, index, stop, scope, block)
        if index < stop and tokens[index].is_word("where"):
            self._expression(tokens, index + 1, stop, scope, block)
            self._condition(tokens, index + 1, stop, block, scope)

    def _merge(self, tokens: list[Token], start: int, stop: int, scope: Scope) -> None:
        index = start + 1
        if tokens[index].is_word("into"):
            index += 1
        target, index = self._dml_target(tokens, index, stop)
        if target is None:
            return
        block = _SqlScope([], {})
        block.add(target)
        if tokens[index].is_word("using"):
            index = self._from_item(tokens, index + 1, stop, scope, block, [])
        if tokens[index].is_word("on") and _op(tokens[index + 1], "("):
            close = matching(tokens, index + 1, stop)
            self._expression(tokens, index + 2, close, scope, block)
            self._condition(tokens, index + 2, close, block, scope)
            index = close + 1
        whens = [i for i in range(index, stop) if tokens[i].is_word("when")] + [stop]
        for when, following in zip(whens, whens[1:]):
            then = next((i for i in range(when, following) if tokens[i].is_word("then")), following)
            if then + 1 < following and tokens[then + 1].is_word("update"):
                set_at = then + 2
                where = self._word_at_depth(tokens, set_at, following, "where")
                self._assignments(tokens, set_at + 1, where, scope, block, target)
                if where < following:
                    self._expression(tokens, where + 1, following, scope, block)
            elif then + 1 < following and tokens[then + 1].is_word("insert"):
                at = then + 2
                if _op(tokens[at], "("):
                    close = matching(tokens, at, following)
                    self._column_list(tokens, at + 1, close, target)
                    at = close + 1
                if tokens[at].is_word("values"):
                    source_only = _SqlScope([], {})
                    for source in block.sources:
                        if source is not target:
                            source_only.add(source)
                    self._expression(tokens, at + 1, following, scope, source_only)


def _depths(tokens: list[Token], start: int, end: int) -> list[int]:
    """For each token of tokens[start:end], how deep it sits in blocks, declare sections, IFs, LOOPs and
    CASEs opened inside the range (an opener and its END are at the outer depth)."""
    depths: list[int] = []
    stack: list[str] = []
    for index in range(start, end):
        token = tokens[index]
        word = token.text if token.kind == IDENT else ""
        after_end = index > 0 and tokens[index - 1].is_word("end")
        if word == "declare":
            depths.append(len(stack))
            stack.append("declare")
        elif word == "begin":
            if stack and stack[-1] == "declare":
                stack[-1] = "begin"
                depths.append(len(stack) - 1)
            else:
                depths.append(len(stack))
                stack.append("begin")
        elif word in ("case", "if", "loop") and not after_end:
            depths.append(len(stack))
            stack.append(word)
        elif word == "end":
            following = tokens[index + 1] if index + 1 < end else None
            closes = following.text if following is not None and following.is_word("if", "loop", "case") else None
            if closes:
                while stack and stack[-1] != closes:
                    stack.pop()
            if stack:
                stack.pop()
            depths.append(len(stack))
        else:
            depths.append(len(stack))
    return depths


# ---------------------------------------------------------------------------------------------------------
# SQL scopes


@dataclass
class _Source:
    alias: str
    columns: list[str] | None
    label: str
    table: str | None = None
    types: dict[str, str] | None = None      # a column's declared type (a table's) or base type (a query's)
    base_table: str | None = None           # the repository table this source reads, if it is one


class _SqlScope:
    """The sources of one query block, and the blocks around it (correlated subqueries see those)."""

    def __init__(self, outers: list["_SqlScope"], ctes: dict[str, list[str] | None]):
        self.outers = [o for o in outers if o is not None]
        self.ctes = ctes
        self.sources: list[_Source] = []
        self.aliases: set[str] = set()
        self.alias_types: dict[str, str] = {}
        self.in_order_by = False

    def add(self, source: _Source) -> None:
        self.sources.append(source)

    def _chain(self) -> list["_SqlScope"]:
        chain = [self]
        pending = list(self.outers)
        while pending:
            scope = pending.pop(0)
            if scope not in chain:
                chain.append(scope)
                pending.extend(scope.outers)
        return chain

    def source(self, name: str) -> _Source | None:
        for scope in self._chain():
            for source in scope.sources:
                if source.alias == name or (source.table == name):
                    return source
        return None

    def has_column(self, name: str, allow_aliases: bool) -> bool:
        for scope in self._chain():
            for source in scope.sources:
                if source.columns is not None and name in source.columns:
                    return True
            if allow_aliases and scope is self and self.in_order_by and name in self.aliases:
                return True
        return False

    def open_sources(self) -> bool:
        return any(source.columns is None for scope in self._chain() for source in scope.sources)

    def all_columns(self) -> list[str] | None:
        columns: list[str] = []
        for source in self.sources:
            if source.columns is None:
                return None
            columns.extend(source.columns)
        return columns


def _rollback_blocks(path: Path, lines: list[int]) -> list[Statement]:
    """The anonymous blocks of `--rollback` lines (Oracle-supplied calls in them are checked too)."""
    text = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Statement] = []
    for number in lines:
        body = text[number - 1].strip()[len("--rollback"):].strip()
        if body.lower().startswith(("begin", "declare")):
            blocks.append(Statement(body, number))
    return blocks


def analyse(repo: Path, files: list[Path] | None = None, signatures: Signatures | None = None) -> list[Finding]:
    """The findings of every Oracle file of `repo` (or only those in `files`; all files are read anyway)."""
    resolver = Resolver(repo, signatures)
    resolver.load()
    findings = resolver.analyse()
    if files is not None:
        wanted = {path.resolve() for path in files}
        findings = [f for f in findings if f.path.resolve() in wanted]
    return sorted(findings, key=lambda f: (f.path.as_posix(), f.line, f.message))
