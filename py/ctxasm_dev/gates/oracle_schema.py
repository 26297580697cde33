"""The Oracle schema as a deployment builds it, for the rules of oracle_semantics (docs/oracle-gates.md).

The files are read in the order liquibase/changelog-master.yaml deploys them (then the utPLSQL changelog's),
statement by statement, so a rule sees a column's declared type as it is when a later statement uses it: an
Oracle Text index created before an ALTER TABLE ... MODIFY sees the type it had then. Data definition that
runs by EXECUTE IMMEDIATE from an anonymous block (sqlfluff parses neither CREATE INDEX ... INDEXTYPE IS nor
CREATE VECTOR INDEX, so the schema writes them that way) is read from the block's string literals: the
literals joined by `||` that begin with CREATE or DROP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ctxasm_dev.gates.formatted_sql import Statement, oracle_files, read_changelog, statements_of
from ctxasm_dev.gates.plsql_tokens import IDENT, OP, STRING, Token, matching, split_top_level, tokenize

MASTER_CHANGELOG = "liquibase/changelog-master.yaml"
UTPLSQL_CHANGELOG = "liquibase/changelog-utplsql.yaml"
# `path:` of an includeAll and `file:` of an include in a YAML changelog (paths relative to the search path)
_INCLUDED = re.compile(r"^\s*-?\s*(?P<kind>path|file):\s*['\"]?(?P<path>[^'\"\s#]+)")
_CONSTRAINT_WORDS = {"constraint", "primary", "unique", "foreign", "check", "supplemental", "period"}
# where a column's datatype ends in a column definition
_TYPE_END = {"default", "not", "null", "constraint", "primary", "unique", "check", "references", "generated",
             "collate", "visible", "invisible", "encrypt", "as", "annotations", "domain"}
_DDL_START = re.compile(r"^\s*(create|drop|alter)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DdlStatement:
    path: Path
    changeset: str
    line: int
    text: str
    dynamic: bool          # read from the string literals of an anonymous block (EXECUTE IMMEDIATE)


@dataclass(frozen=True)
class TextIndex:
    """An Oracle Text index (CONTEXT, CTXCAT or CTXRULE) and the declared types of its structured columns
    when it was created."""

    name: str
    indextype: str
    table: str
    column: str
    filter_by: tuple[str, ...]
    order_by: tuple[str, ...]
    column_types: dict[str, str | None]
    path: Path
    line: int
    changeset: str


@dataclass
class Schema:
    """Declared column types (lower case, spaces normalised: 'varchar2(64 byte)', 'clob'), as deployed last."""

    types: dict[str, dict[str, str]] = field(default_factory=dict)
    text_indexes: list[TextIndex] = field(default_factory=list)      # every creation, in deployment order
    dropped: set[str] = field(default_factory=set)
    statements: list[DdlStatement] = field(default_factory=list)

    def column_type(self, table: str, column: str) -> str | None:
        return self.types.get(table, {}).get(column)

    def current_text_indexes(self) -> list[TextIndex]:
        """The text indexes that exist after the deployment: the last creation of each name not dropped since."""
        last: dict[str, TextIndex] = {}
        for index in self.text_indexes:
            last[index.name] = index
        return [index for name, index in last.items() if name not in self.dropped]


def deployment_files(repo: Path) -> list[Path]:
    """The Oracle files in the order the master changelog (then the utPLSQL changelog) deploys them; a file
    neither names comes last, by path."""
    ordered: list[Path] = []
    for changelog in (MASTER_CHANGELOG, UTPLSQL_CHANGELOG):
        path = repo / changelog
        if not path.exists():
            continue
        for match in map(_INCLUDED.match, path.read_text(encoding="utf-8").split("\n")):
            if not match:
                continue
            target = repo / match["path"]
            if match["kind"] == "path" and target.is_dir():
                ordered.extend(sorted(target.rglob("*.sql"), key=lambda p: p.relative_to(repo).as_posix()))
            elif target.is_file():
                ordered.append(target)
    oracle = oracle_files(repo)
    chosen = [path for path in dict.fromkeys(ordered) if path in oracle]
    return chosen + [path for path in oracle if path not in chosen]


def ddl_statements(repo: Path) -> list[DdlStatement]:
    """Every data-definition statement of the Oracle files, in deployment order: the plain ones and those an
    anonymous block runs from string literals."""
    found: list[DdlStatement] = []
    for path in deployment_files(repo):
        for changeset in read_changelog(path).changesets:
            statements, _ = statements_of(changeset)
            for statement in statements:
                found.extend(_ddl_of(path, changeset.id, statement))
    return found


def _ddl_of(path: Path, changeset: str, statement: Statement) -> list[DdlStatement]:
    head = statement.text.lstrip().split(None, 1)[0].lower() if statement.text.strip() else ""
    if head in ("create", "alter", "drop"):
        words = statement.text.lower().split()
        if words[:3] != ["create", "or", "replace"] or "package" not in words[:5]:
            return [DdlStatement(path, changeset, statement.line, statement.text, dynamic=False)]
        return []
    if head not in ("begin", "declare"):
        return []
    tokens = tokenize(statement.text, statement.line)
    found: list[DdlStatement] = []
    index = 0
    while index < len(tokens):
        if tokens[index].kind != STRING:
            index += 1
            continue
        parts = [tokens[index].text]
        end = index + 1
        while end + 1 < len(tokens) and tokens[end].kind == OP and tokens[end].text == "||" \
                and tokens[end + 1].kind == STRING:
            parts.append(tokens[end + 1].text)
            end += 2
        text = "".join(parts)
        if _DDL_START.match(text):
            found.append(DdlStatement(path, changeset, tokens[index].line, text, dynamic=True))
        index = end
    return found


def read_schema(repo: Path) -> Schema:
    schema = Schema()
    for ddl in ddl_statements(repo):
        schema.statements.append(ddl)
        _apply(schema, ddl)
    return schema


def column_type_text(tokens: list[Token], start: int, stop: int) -> str:
    """The datatype of a column definition tokens[start:stop] (after the name), normalised."""
    end = start
    while end < stop and not (tokens[end].kind == IDENT and tokens[end].text in _TYPE_END):
        if tokens[end].kind == OP and tokens[end].text == "(":
            end = matching(tokens, end, stop) + 1
            continue
        end += 1
    return type_text(tokens[start:end])


def type_text(tokens: list[Token]) -> str:
    text = " ".join(t.text for t in tokens)
    return re.sub(r"\s*([(),])\s*", lambda m: m.group(1) + (" " if m.group(1) == "," else ""), text).strip()


def _apply(schema: Schema, ddl: DdlStatement) -> None:
    tokens = tokenize(ddl.text, ddl.line)
    words = [t.text for t in tokens[:6] if t.kind == IDENT]
    if words[:2] == ["create", "table"] or words[:4] == ["create", "global", "temporary", "table"]:
        at = next(i for i, t in enumerate(tokens) if t.is_word("table")) + 1
        name = tokens[at].text
        open_at = next((i for i in range(at, len(tokens)) if tokens[i].kind == OP and tokens[i].text == "("), None)
        if open_at is None:
            return
        columns = schema.types.setdefault(name, {})
        for a, b in split_top_level(tokens, open_at + 1, matching(tokens, open_at)):
            if tokens[a].kind == IDENT and tokens[a].text not in _CONSTRAINT_WORDS:
                columns[tokens[a].text] = column_type_text(tokens, a + 1, b)
    elif words[:2] == ["alter", "table"] and len(tokens) > 4 and tokens[3].is_word("add", "modify"):
        columns = schema.types.setdefault(tokens[2].text, {})
        if tokens[4].kind == OP and tokens[4].text == "(":
            items = split_top_level(tokens, 5, matching(tokens, 4))
        else:
            items = [(4, len(tokens))]
        for a, b in items:
            declared = column_type_text(tokens, a + 1, b) if a + 1 < b else ""
            # MODIFY (c NULL) changes no type
            if tokens[a].kind == IDENT and tokens[a].text not in _CONSTRAINT_WORDS and declared:
                columns[tokens[a].text] = declared
    elif words[:2] == ["drop", "index"] and len(tokens) > 2:
        schema.dropped.add(tokens[2].text)
    elif words[:1] == ["create"] and "index" in words[:3]:
        index = _text_index(schema, ddl, tokens)
        if index is not None:
            schema.text_indexes.append(index)
            schema.dropped.discard(index.name)


def _text_index(schema: Schema, ddl: DdlStatement, tokens: list[Token]) -> TextIndex | None:
    """CREATE INDEX name ON table (column) INDEXTYPE IS ctxsys.context [FILTER BY ...] [ORDER BY ...] ..."""
    indextype_at = next((i for i, t in enumerate(tokens) if t.is_word("indextype")), None)
    on_at = next((i for i, t in enumerate(tokens) if t.is_word("on")), None)
    if indextype_at is None or on_at is None or on_at < 2:
        return None
    kind = next((tokens[i].text for i in range(indextype_at, len(tokens))
                 if tokens[i].kind == IDENT and tokens[i].text in ("context", "ctxcat", "ctxrule")), None)
    if kind is None:
        return None
    name = tokens[on_at - 1].text
    table = tokens[on_at + 1].text
    open_at = on_at + 2
    column = tokens[open_at + 1].text if tokens[open_at].kind == OP and tokens[open_at].text == "(" else ""
    filter_by = _by_list(tokens, indextype_at, "filter")
    order_by = _by_list(tokens, indextype_at, "order")
    types = {c: schema.column_type(table, c) for c in (column, *filter_by, *order_by)}
    return TextIndex(name, kind, table, column, filter_by, order_by, types, ddl.path, ddl.line, ddl.changeset)


def _by_list(tokens: list[Token], start: int, word: str) -> tuple[str, ...]:
    """The columns after FILTER BY / ORDER BY in an Oracle Text index (ASC|DESC dropped)."""
    at = next((i for i in range(start, len(tokens) - 1) if tokens[i].is_word(word) and tokens[i + 1].is_word("by")),
              None)
    if at is None:
        return ()
    columns: list[str] = []
    index = at + 2
    while index < len(tokens) and tokens[index].kind == IDENT:
        columns.append(tokens[index].text)
        index += 1
        while index < len(tokens) and tokens[index].is_word("asc", "desc"):
            index += 1
        if index < len(tokens) and tokens[index].kind == OP and tokens[index].text == ",":
            index += 1
            continue
        break
    return tuple(columns)
