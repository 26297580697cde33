"""The Oracle semantics gate: what Oracle's compiler and DDL would refuse, read from the code without a database.

The other gates check names, signatures and layout; this one checks SQL semantics and Oracle's limits, each
rule general (a class of fault, not a list of lines) and each finding naming file, line, rule and the Oracle
error it stands for (docs/oracle-gates.md, "8. oracle_semantics"):

  plsql-only-in-sql   a PL/SQL-only construct inside a SQL statement: a method, constructor or value of a
                      PL/SQL JSON object type (ORA-40573), SQLCODE / SQLERRM, a function the package spec does not
                      declare (PLS-00231), a procedure, a collection of a type declared in a package body or a
                      block (PLS-00642), and, before release 23, a BOOLEAN anywhere but a PL/SQL function argument
  sql-only-in-plsql   a SQL-only function in a PL/SQL expression: DECODE, an aggregate, SCORE (PLS-00204)
  boolean-conversion  a BOOLEAN compared with a character or number (implicit conversion, off by default)
  text-score          SCORE(n) without a CONTAINS(..., n) of the same label in the same query block (ORA-29908);
                      a label used by two CONTAINS of one block
  text-index          CONTAINS on a column no CONTEXT index covers (DRG-10599), or on a query's column
  text-filter         an Oracle Text FILTER BY / ORDER BY column of a type it cannot take, or wider than 249
                      bytes under the deployment's length semantics (DRG-11309)
  lob                 a LOB in a comparison, IN, BETWEEN, ORDER BY, GROUP BY, PARTITION BY, SELECT DISTINCT,
                      UNION / INTERSECT / MINUS or MIN / MAX (ORA-00932); a JSON-type value compared (ORA-40796)
  limits              an identifier over 128 bytes (ORA-00972), a text literal over the SQL or PL/SQL limit
                      (ORA-01704, PLS-00172), a VARCHAR2 / RAW / CHAR / NUMBER size Oracle refuses
                      (ORA-00910, PLS-00215, ORA-01727), which depend on MAX_STRING_SIZE and the release

    python -m ctxasm_dev.gates.oracle_semantics [--repo DIR] [--release N] [--max-string-size STANDARD|EXTENDED]
                                               [--length-semantics CHAR|BYTE] [FILE ...]

Exit code 0 when no rule fires, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ctxasm_dev.gates.oracle_deployment import Deployment, for_repository, length_semantics_of
from ctxasm_dev.gates.oracle_schema import read_schema
from ctxasm_dev.gates.plsql_resolver import Finding, Resolver, _SqlScope
from ctxasm_dev.gates.plsql_tokens import IDENT, NUMBER, OP, STRING, Token, matching, split_top_level, tokenize
from ctxasm_dev.gates.sql_types import LOB_TYPES, SqlTyping, base, comparisons

REPO = Path(__file__).resolve().parents[3]
SEMANTICS = "semantics"
# PL/SQL Language Reference, "Error-Reporting Functions": a SQL statement cannot invoke them (PLS-00231)
PLSQL_ONLY_FUNCTIONS = {"sqlcode", "sqlerrm"}
# PLS-00204: function or pseudo-column may be used inside a SQL statement only
SQL_ONLY_FUNCTIONS = {"decode", "score", "contains", "listagg", "json_arrayagg", "json_objectagg", "row_number",
                      "rank", "dense_rank", "avg", "sum", "count", "median", "stddev", "variance", "lag", "lead"}
_CHARACTER = {"varchar2", "nvarchar2", "char", "nchar", "number", "date", "timestamp", "binary_double",
              "binary_float"}
# what an Oracle Text FILTER BY / ORDER BY column may not be ("invalid filter by column ... of datatype")
_NOT_STRUCTURED = LOB_TYPES | {"json", "vector", "xmltype", "long", "boolean"}
_UNIONS = {"union", "intersect", "minus", "except"}
_BY_ENDS = {"having", "fetch", "offset", "rows", "range", "groups", "for", "window", "union", "minus", "intersect",
            "except", "model", "order", "group"}
_SIZED = re.compile(r"^(n?varchar2|varchar|n?char|raw|number|float)$")


class SemanticResolver(SqlTyping, Resolver):
    """The name resolver with the semantic rules on its hooks (plsql_resolver.Resolver)."""

    def __init__(self, repo: Path, deployment: Deployment, signatures=None):
        super().__init__(repo, signatures)
        self.deployment = deployment
        self.schema = read_schema(repo)
        self.text_indexes = {(i.table, i.column): i for i in self.schema.current_text_indexes()}

    def finding(self, token: Token, rule: str, message: str) -> None:
        self.report(SEMANTICS, token, f"[{rule}] {message}")

    # -- the whole repository ----------------------------------------------------------------------------

    def analyse(self) -> list[Finding]:
        super().analyse()
        for unit in self.units:
            self.path = unit.path
            self._identifiers(unit.tokens)
        for ddl in self.schema.statements:
            self.path = ddl.path
            tokens = tokenize(ddl.text, ddl.line)
            self._identifiers(tokens)
            self._ddl_sizes(tokens, ddl.dynamic)
        self._text_filters()
        return self.findings

    def _identifiers(self, tokens: list[Token]) -> None:
        limit = self.deployment.identifier_bytes
        for token in tokens:
            if token.kind == IDENT and len(token.text.encode("utf-8")) > limit:
                self.finding(token, "limits", f"identifier {token.text[:40]}... is "
                             f"{len(token.text.encode('utf-8'))} bytes; Oracle allows {limit} (ORA-00972, "
                             "'Database Object Names and Qualifiers')")

    def _ddl_sizes(self, tokens: list[Token], dynamic: bool) -> None:
        for index, token in enumerate(tokens):
            if token.kind == IDENT and _SIZED.match(token.text) and index + 1 < len(tokens) \
                    and tokens[index + 1].kind == OP and tokens[index + 1].text == "(":
                self._size(tokens, index, len(tokens), in_sql=True)
            elif token.kind == STRING and not dynamic:
                self._literal(token, in_sql=True)

    def _text_filters(self) -> None:
        limit = self.deployment.text_structured_bytes
        for index in self.schema.text_indexes:
            self.path = index.path
            anchor = Token(IDENT, index.name, index.line)
            indexed = index.column_types.get(index.column)
            if indexed is None:
                self.finding(anchor, "text-index", f"{index.name} indexes {index.table}.{index.column}, which does "
                             "not exist when the index is created")
            elif base(indexed) not in ("clob", "blob", "varchar2", "char", "bfile", "xmltype", "uritype"):
                self.finding(anchor, "text-index", f"{index.name} indexes {index.table}.{index.column}, a "
                             f"{indexed}: a CONTEXT index takes VARCHAR2, CHAR, CLOB, BLOB, BFILE, XMLType or "
                             "URIType ('Supported Column Types', Oracle Text Application Developer's Guide)")
            for column in (*index.filter_by, *index.order_by):
                declared = index.column_types.get(column)
                if declared is None:
                    self.finding(anchor, "text-filter", f"{index.name}: {index.table} has no column {column} "
                                 "when the index is created")
                    continue
                if base(declared) in _NOT_STRUCTURED:
                    self.finding(anchor, "text-filter", f"{index.name}: FILTER BY / ORDER BY column "
                                 f"{index.table}.{column} is {declared}, which Oracle Text cannot take as a "
                                 "structured column (DRG-11309)")
                    continue
                width = self.deployment.column_bytes(declared)
                if width is not None and width > limit:
                    self.finding(anchor, "text-filter", f"{index.name}: FILTER BY / ORDER BY column "
                                 f"{index.table}.{column} is {declared}, up to {width} bytes under "
                                 f"NLS_LENGTH_SEMANTICS={self.deployment.length_semantics} in a "
                                 f"{self.deployment.bytes_per_char}-byte character set; Oracle Text takes at most "
                                 f"{limit} (DRG-11309, ORA-29855): declare it in BYTE, or leave it out of the "
                                 "filter")

    # -- hooks of the resolver --------------------------------------------------------------------------

    def _literal(self, token: Token, in_sql: bool) -> None:
        if token.kind == IDENT:
            if in_sql and self.deployment.release < 23:
                self.finding(token, "plsql-only-in-sql", f"the BOOLEAN literal {token.text.upper()} in SQL: "
                             f"release {self.deployment.release} has no SQL BOOLEAN ('BOOLEAN Data Type', PL/SQL "
                             "Language Reference)")
            return
        size = len(token.text.encode("utf-8"))
        limit = self.deployment.sql_literal_bytes() if in_sql else self.deployment.plsql_string_bytes
        if size > limit:
            where = "SQL" if in_sql else "PL/SQL"
            error = "ORA-01704" if in_sql else "PLS-00172"
            self.finding(token, "limits", f"a {size}-byte text literal in {where}: at most {limit} bytes "
                         f"(MAX_STRING_SIZE={self.deployment.max_string_size}; {error})")

    def _declared_type(self, tokens: list[Token], start: int, stop: int, in_sql: bool) -> None:
        if start < stop and tokens[start].kind == IDENT and _SIZED.match(tokens[start].text):
            self._size(tokens, start, stop, in_sql)

    def _size(self, tokens: list[Token], at: int, stop: int, in_sql: bool) -> None:
        """VARCHAR2(n [BYTE|CHAR]), RAW(n), CHAR(n), NUMBER(p[, s]) within Oracle's limits for SQL or PL/SQL."""
        name = tokens[at].text
        if at + 2 >= stop or tokens[at + 1].kind != OP or tokens[at + 1].text != "(":
            return
        close = matching(tokens, at + 1, stop)
        numbers = [t for t in tokens[at + 2:close] if t.kind == NUMBER]
        if not numbers or tokens[at + 2].kind != NUMBER:
            return
        size = int(float(numbers[0].text))
        if name in ("number", "float"):
            if name == "number" and not 1 <= size <= 38:
                self.finding(tokens[at], "limits", f"NUMBER precision {size}: 1 to 38 (ORA-01727)")
            negative = any(t.kind == OP and t.text == "-" for t in tokens[at + 2:close])
            if name == "number" and len(numbers) > 1:
                scale = -int(numbers[1].text) if negative else int(numbers[1].text)
                if not -84 <= scale <= 127:
                    self.finding(tokens[at], "limits", f"NUMBER scale {scale}: -84 to 127 (ORA-01728)")
            return
        base_name = "varchar2" if name == "varchar" else name
        limit = self.deployment.sql_bytes(base_name) if in_sql else self.deployment.plsql_string_bytes
        if in_sql and base_name in ("nvarchar2", "nchar"):
            # sized in characters of the national character set, AL16UTF16: two bytes each
            limit //= 2
        if not 1 <= size <= limit:
            where = f"SQL (MAX_STRING_SIZE={self.deployment.max_string_size})" if in_sql else "PL/SQL"
            error = "ORA-00910" if in_sql else "PLS-00215"
            self.finding(tokens[at], "limits", f"{name.upper()}({size}) in {where}: 1 to {limit} ({error})")

    def _type_tokens(self, tokens, start, stop, scope):
        super()._type_tokens(tokens, start, stop, scope)
        name = tokens[start].text if start < stop else ""
        # the resolver reads CAST's type up to its '(': the size is checked here
        self._declared_type(tokens, start, stop, in_sql=self._sql_depth > 0)
        oracle_type = self.signatures.types.get(name)
        if self._sql_depth > 0 and oracle_type is not None and not oracle_type.sql:
            self.finding(tokens[start], "plsql-only-in-sql", f"{name.upper()} in SQL: {oracle_type.sql_doc}")

    def _chain_step(self, state: tuple, token: Token, step: str, sql: _SqlScope | None) -> None:
        kind = state[0]
        if sql is None:
            if step == "call" and kind == "done" and token.text in SQL_ONLY_FUNCTIONS:
                self.finding(token, "sql-only-in-plsql", f"{token.text.upper()} in a PL/SQL expression: it may be "
                             "used inside a SQL statement only (PLS-00204); select it INTO a variable")
            return
        if step == "first" and token.text in PLSQL_ONLY_FUNCTIONS and kind == "done":
            self.finding(token, "plsql-only-in-sql", f"{token.text.upper()} in a SQL statement: assign it to a "
                         "local first (PLS-00231; 'Error-Reporting Functions', PL/SQL Language Reference)")
        elif kind == "ora_member":
            member = state[1]
            oracle_type = self.signatures.types.get(member.owner)
            if oracle_type is not None and not oracle_type.sql:
                self.finding(token, "plsql-only-in-sql", f"{member.owner.upper()}.{member.name} in a SQL statement: "
                             f"{oracle_type.sql_doc}; read the value into a local first")
        elif kind == "routine" and step in ("first", "member"):
            self._routine_in_sql(state[1], state[2], token)

    def _routine_in_sql(self, entity, package: str | None, token: Token) -> None:
        if all(not routine.is_function for routine in entity.routines):
            self.finding(token, "plsql-only-in-sql", f"{token.text} is a procedure; a SQL statement can call "
                         "functions only")
        elif package is None and entity.where != "spec":
            where = "declared in a routine or block" if entity.where == "" else "private to the package body"
            self.finding(token, "plsql-only-in-sql", f"{token.text} is {where}: a SQL statement can call only "
                         "functions a package spec declares (PLS-00231)")

    def _chain_end(self, state: tuple, first: Token, sql: _SqlScope | None) -> None:
        if sql is None or state[0] != "value":
            return
        kind = state[1]
        oracle_type = self.signatures.types.get(kind.name) if kind.kind in ("object", "collection") else None
        if oracle_type is not None and not oracle_type.sql:
            self.finding(first, "plsql-only-in-sql", f"a {kind.name.upper()} value in a SQL statement: "
                         f"{oracle_type.sql_doc}")
        elif kind.kind == "collection" and kind.origin in ("body", "local"):
            where = "a package body" if kind.origin == "body" else "a routine or block"
            self.finding(first, "plsql-only-in-sql", f"{first.text} is a collection of a type declared in {where}: "
                         "SQL sees only types of a package spec or the schema (PLS-00642)")
        elif kind.kind == "scalar" and kind.name == "boolean" and self.deployment.release < 23 \
                and self._routine_arguments == 0:
            self.finding(first, "plsql-only-in-sql", f"the BOOLEAN {first.text} in SQL: release "
                         f"{self.deployment.release} allows a BOOLEAN there only as a PL/SQL function's argument")

    def _after_query(self, tokens: list[Token], branches: list[tuple[int, int]], results: list) -> None:
        for position, (_, end) in enumerate(branches[:-1]):
            operator = tokens[end]
            if operator.text not in _UNIONS or tokens[end + 1].is_word("all"):
                continue
            for columns in (results[position], results[position + 1]):
                for number, name in enumerate(columns or [], start=1):
                    if base(getattr(columns, "types", {}).get(name)) in LOB_TYPES:
                        self.finding(operator, "lob", f"column {name or number} is a LOB in "
                                     f"{operator.text.upper()}: only UNION ALL takes LOBs (ORA-00932; 'LOB "
                                     "Restrictions')")

    def _after_query_block(self, tokens, start, stop, block, scope, items, clauses, distinct) -> None:
        nested = _nested_queries(tokens, start, stop)
        if distinct:
            for a, b in items:
                self._no_lob(tokens, a, b, block, scope, "SELECT DISTINCT")
        self._by_lists(tokens, start, stop, nested, block, scope, items)
        self._compared(tokens, start, stop, nested, block, scope)
        self._text_operators(tokens, start, stop, nested, block)

    def _condition(self, tokens, start, stop, block, scope) -> None:
        nested = _nested_queries(tokens, start, stop)
        self._compared(tokens, start, stop, nested, block, scope)
        self._text_operators(tokens, start, stop, nested, block)

    # -- the rules over a query block ---------------------------------------------------------------------

    def _no_lob(self, tokens, a, b, block, scope, where: str) -> None:
        kind = self._expression_type(tokens, a, b, block, scope)
        if kind in LOB_TYPES:
            self.finding(tokens[a], "lob", f"a {kind.upper()} in {where} (ORA-00932; 'LOB Restrictions', "
                         "SecureFiles and Large Objects Developer's Guide)")

    def _by_lists(self, tokens, start, stop, nested, block, scope, items) -> None:
        """Every ORDER BY, GROUP BY and PARTITION BY of the block (an aggregate's and a window's included)."""
        for index in _own(start, stop, nested):
            token = tokens[index]
            if not (token.is_word("order", "group", "partition") and index + 1 < stop
                    and tokens[index + 1].is_word("by")):
                continue
            end = _by_end(tokens, index + 2, stop)
            for a, b in split_top_level(tokens, index + 2, end):
                while b > a and tokens[b - 1].is_word("asc", "desc", "first", "last", "nulls"):
                    b -= 1
                if b - a == 1 and tokens[a].kind == NUMBER and token.is_word("order"):
                    position = int(tokens[a].text) - 1
                    if 0 <= position < len(items):
                        self._no_lob(tokens, *items[position], block, scope, "ORDER BY")
                    continue
                if b - a == 1 and tokens[a].kind == IDENT and token.is_word("order") \
                        and tokens[a].text in block.alias_types and not block.has_column(tokens[a].text, False):
                    kind = base(block.alias_types[tokens[a].text])
                    if kind in LOB_TYPES:
                        self.finding(tokens[a], "lob", f"a {kind.upper()} in ORDER BY (ORA-00932; 'LOB "
                                     "Restrictions')")
                    continue
                self._no_lob(tokens, a, b, block, scope, f"{token.text.upper()} BY")
        for index in _own(start, stop, nested):
            token = tokens[index]
            if token.is_word("min", "max") and index + 1 < stop and tokens[index + 1].kind == OP \
                    and tokens[index + 1].text == "(" and not (index > start and tokens[index - 1].text == "."):
                close = matching(tokens, index + 1, stop)
                self._no_lob(tokens, index + 2, close, block, scope, f"{token.text.upper()}()")
            elif token.is_word("distinct", "unique") and index > start and tokens[index - 1].kind == OP \
                    and tokens[index - 1].text == "(":
                # an aggregate's DISTINCT: COUNT(DISTINCT x), LISTAGG(DISTINCT x, ...)
                close = matching(tokens, index - 1, stop)
                first = split_top_level(tokens, index + 1, close)
                if first:
                    self._no_lob(tokens, *first[0], block, scope, "an aggregate's DISTINCT")
            elif token.is_word("case") and index + 1 < stop and not tokens[index + 1].is_word("when"):
                # a simple CASE compares its selector with each WHEN value
                selector_end = next((i for i in range(index + 1, stop) if tokens[i].is_word("when")), stop)
                self._no_lob(tokens, index + 1, selector_end, block, scope, "a simple CASE's selector")

    def _compared(self, tokens, start, stop, nested, block, scope) -> None:
        for operator, operands in comparisons(tokens, start, stop, nested):
            kinds = [self._expression_type(tokens, a, b, block, scope) for a, b in operands]
            text = operator.text.upper()
            for (a, _), kind in zip(operands, kinds):
                if kind in LOB_TYPES:
                    self.finding(tokens[a], "lob", f"a {kind.upper()} compared with {text}: SQL compares no LOBs "
                                 "(ORA-00932); use DBMS_LOB.COMPARE, or compare a VARCHAR2 part")
                elif kind == "json":
                    self.finding(tokens[a], "lob", f"a JSON-type value compared with {text} (ORA-40796): compare "
                                 "JSON_VALUE(...) or use JSON_EQUAL")
            if "boolean" in kinds and any(k in _CHARACTER for k in kinds):
                self.finding(operator, "boolean-conversion", f"a BOOLEAN compared with {text} to a "
                             f"{next(k for k in kinds if k in _CHARACTER).upper()}: the implicit conversion needs "
                             "PLSQL_IMPLICIT_CONVERSION_BOOL=TRUE; convert explicitly (TO_BOOLEAN, TO_CHAR)")

    def _text_operators(self, tokens, start, stop, nested, block) -> None:
        """SCORE(n) needs CONTAINS(..., n) in the same query block; CONTAINS needs a CONTEXT-indexed column."""
        labels: dict[str, Token] = {}
        scores: list[Token] = []
        for index in _own(start, stop, nested):
            token = tokens[index]
            if not (token.kind == IDENT and index + 1 < stop and tokens[index + 1].kind == OP
                    and tokens[index + 1].text == "(") or (index > start and tokens[index - 1].text == "."):
                continue
            close = matching(tokens, index + 1, stop)
            arguments = split_top_level(tokens, index + 2, close)
            if token.text == "score":
                if len(arguments) == 1 and arguments[0][1] - arguments[0][0] == 1:
                    scores.append(tokens[arguments[0][0]])
            elif token.text == "contains" and arguments:
                self._contains_column(tokens, *arguments[0], block, token)
                label = arguments[2] if len(arguments) >= 3 else None
                if label is not None and label[1] - label[0] == 1 and tokens[label[0]].kind == NUMBER:
                    text = tokens[label[0]].text
                    if text in labels:
                        self.finding(tokens[label[0]], "text-score", f"two CONTAINS of one query block use label "
                                     f"{text}: each SCORE names one operator")
                    labels[text] = tokens[label[0]]
        for label in scores:
            if label.text not in labels:
                self.finding(label, "text-score", f"SCORE({label.text}) without a CONTAINS(..., {label.text}) in the "
                             "same query block (ORA-29908: missing primary invocation for ancillary operator)")

    def _contains_column(self, tokens, a, b, block, operator: Token) -> None:
        if b - a == 3 and tokens[a + 1].text == ".":
            source, column = block.source(tokens[a].text), tokens[a + 2].text
        elif b - a == 1 and tokens[a].kind == IDENT:
            column = tokens[a].text
            source = next((s for scope in block._chain() for s in scope.sources
                           if s.columns is not None and column in s.columns), None)
        else:
            self.finding(operator, "text-score", "CONTAINS needs a column as its first argument")
            return
        if source is None:
            return
        if source.base_table is None:
            self.finding(operator, "text-index", f"CONTAINS on {source.label}.{column}: the operator needs the column "
                         "of a table with a CONTEXT index, not a query's")
        elif (source.base_table, column) not in self.text_indexes:
            indexed = sorted(f"{t}.{c}" for t, c in self.text_indexes)
            self.finding(operator, "text-index", f"CONTAINS on {source.base_table}.{column}, which no CONTEXT index "
                         f"covers (DRG-10599, column is not indexed: 'CREATE INDEX', Oracle Text Reference); "
                         f"indexed: {', '.join(indexed) or 'none'}")


def _nested_queries(tokens: list[Token], start: int, stop: int) -> list[tuple[int, int]]:
    """The (open, after close) ranges of the subqueries inside tokens[start:stop]: their own blocks check them."""
    ranges: list[tuple[int, int]] = []
    index = start
    while index < stop:
        token = tokens[index]
        if token.kind == OP and token.text == "(" and index + 1 < stop and tokens[index + 1].is_word("select", "with"):
            close = matching(tokens, index, stop)
            ranges.append((index, close + 1))
            index = close + 1
            continue
        index += 1
    return ranges


def _own(start: int, stop: int, nested: list[tuple[int, int]]):
    """The positions of tokens[start:stop] outside the nested queries."""
    index = start
    while index < stop:
        inside = next((b for a, b in nested if a <= index < b), None)
        if inside is not None:
            index = inside
            continue
        yield index
        index += 1


def _by_end(tokens: list[Token], start: int, stop: int) -> int:
    """Where the list after ORDER BY / GROUP BY / PARTITION BY ends: the enclosing ')' or the next clause."""
    depth = 0
    for index in range(start, stop):
        token = tokens[index]
        if token.kind == OP and token.text == "(":
            depth += 1
        elif token.kind == OP and token.text == ")":
            if depth == 0:
                return index
            depth -= 1
        elif depth == 0 and (token.kind == OP and token.text == ";"):
            return index
        elif depth == 0 and token.kind == IDENT and token.text in _BY_ENDS and index > start:
            return index
        elif depth == 0 and index > start and _json_aggregate_clause(tokens, index, stop):
            return index
    return stop


def _json_aggregate_clause(tokens: list[Token], index: int, stop: int) -> bool:
    """A clause that follows a JSON aggregate's ORDER BY list inside its parentheses (JSON_ARRAYAGG(x ORDER BY y
    NULL ON NULL RETURNING CLOB)): RETURNING, or NULL / ABSENT ON NULL. Read as part of the last sort key, it
    would hide that key's type."""
    token = tokens[index]
    if token.is_word("returning"):
        return True
    return token.is_word("null", "absent") and index + 1 < stop and tokens[index + 1].is_word("on")


def analyse(repo: Path, deployment: Deployment, files: list[Path] | None = None) -> list[Finding]:
    resolver = SemanticResolver(repo, deployment)
    resolver.load()
    findings = [f for f in resolver.analyse() if f.gate == SEMANTICS]
    semantics = length_semantics_of(repo)
    if semantics and semantics != deployment.length_semantics:
        findings.append(Finding(repo / "scripts/oracle-dev", 1, SEMANTICS,
                                f"[text-filter] the gate checks NLS_LENGTH_SEMANTICS={deployment.length_semantics}, "
                                f"the deployment sets {semantics}"))
    if files is not None:
        wanted = {path.resolve() for path in files}
        findings = [f for f in findings if f.path.resolve() in wanted]
    return sorted(findings, key=lambda f: (f.path.as_posix(), f.line, f.message))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.oracle_semantics",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    parser.add_argument("--release", type=int, help="the Oracle release checked against (default 23)")
    parser.add_argument("--max-string-size", choices=("STANDARD", "EXTENDED"), help="default STANDARD")
    parser.add_argument("--length-semantics", choices=("CHAR", "BYTE"),
                        help="default: what scripts/oracle-dev sets")
    parser.add_argument("files", nargs="*", type=Path, help="report only these files (all are read)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    deployment = for_repository(repo, release=args.release, max_string_size=args.max_string_size,
                                length_semantics=args.length_semantics)
    findings = analyse(repo, deployment, [f.resolve() for f in args.files] or None)
    for finding in findings:
        print(finding.render(repo))
    status = "FAIL" if findings else "OK"
    print(f"oracle_semantics: {status}: release {deployment.release}, MAX_STRING_SIZE={deployment.max_string_size}, "
          f"NLS_LENGTH_SEMANTICS={deployment.length_semantics}; {len(findings)} problems")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
