"""The base type of a SQL expression, as far as a static reader can tell, for the rules of oracle_semantics.

A column has the type its table (or the query it comes from) declares; a PL/SQL variable the type it is
declared with; a call to a built-in function the type Oracle documents for it (CAST and the RETURNING clause of
the JSON functions included); a call to a repository routine its RETURN type; a concatenation is CLOB when one
operand is. Anything else is '' (not known), and a rule never reports what it cannot type: a rule built on this
misses some faults, it does not invent them.
"""

from __future__ import annotations

from ctxasm_dev.gates.plsql_resolver import base_type
from ctxasm_dev.gates.plsql_tokens import BIND, IDENT, NUMBER, OP, STRING, Token, matching, split_top_level

LOB_TYPES = frozenset({"clob", "nclob", "blob", "bfile"})
_NUMERIC = {"integer", "int", "smallint", "pls_integer", "binary_integer", "natural", "naturaln", "positive",
            "positiven", "signtype", "simple_integer", "float", "decimal", "dec", "numeric", "real", "double",
            "binary_float", "binary_double"}
_SYNONYMS = {"varchar": "varchar2", "string": "varchar2", "character": "char", "long": "varchar2"}
# built-in functions whose result has the type of their first argument
_AS_FIRST = {"nvl", "coalesce", "nullif", "greatest", "least", "lower", "upper", "initcap", "trim", "ltrim",
             "rtrim", "replace", "regexp_replace", "substr", "regexp_substr", "translate", "lpad", "rpad", "min",
             "max", "any_value", "first_value", "last_value", "lag", "lead", "concat"}
# built-in functions and their result type (when no RETURNING clause says otherwise)
_RETURNS = {
    "to_clob": "clob", "empty_clob": "clob", "to_nclob": "nclob", "to_blob": "blob", "empty_blob": "blob",
    "to_char": "varchar2", "to_nchar": "nvarchar2", "rawtohex": "varchar2", "sys_context": "varchar2",
    "listagg": "varchar2", "dump": "varchar2", "chr": "varchar2",
    "to_number": "number", "count": "number", "length": "number", "lengthb": "number", "instr": "number",
    "sum": "number", "avg": "number", "round": "number", "trunc": "number", "mod": "number", "abs": "number",
    "ceil": "number", "floor": "number", "power": "number", "exp": "number", "ln": "number", "sign": "number",
    "row_number": "number", "rank": "number", "dense_rank": "number", "score": "number", "contains": "number",
    "regexp_instr": "number", "regexp_count": "number", "ora_hash": "number",
    "to_date": "date", "sysdate": "date", "to_timestamp": "timestamp", "to_timestamp_tz": "timestamp",
    "systimestamp": "timestamp", "current_timestamp": "timestamp", "sys_extract_utc": "timestamp",
    "standard_hash": "raw", "hextoraw": "raw", "sys_guid": "raw",
    "json": "json", "json_scalar": "json",
    "json_object": "varchar2", "json_array": "varchar2", "json_objectagg": "varchar2", "json_arrayagg": "varchar2",
    "json_query": "varchar2", "json_value": "varchar2", "json_serialize": "varchar2", "from_vector": "varchar2",
    "to_vector": "vector", "vector_embedding": "vector", "vector_distance": "binary_double",
    "to_boolean": "boolean",
}
# package functions of Oracle-supplied packages the code calls inside SQL
_PACKAGE_RETURNS = {("dbms_lob", "substr"): "varchar2", ("dbms_lob", "getlength"): "number",
                    ("dbms_lob", "instr"): "number", ("dbms_lob", "compare"): "number"}
# words that end an operand when a comparison's operands are read from the token stream
_LEFT_STOPS = {"and", "or", "not", "when", "then", "else", "where", "on", "having", "case", "select", "by",
               "between", "in", "exists", "start", "with", "connect", "prior", "return", "if", "elsif", "is",
               "like", "escape", "set", "values", "using", "from", "into", "distinct", "all", "any", "some"}
_RIGHT_STOPS = {"and", "or", "then", "else", "end", "when", "group", "order", "having", "fetch", "offset", "union",
                "minus", "intersect", "except", "connect", "start", "escape", "is", "like", "not", "in", "between",
                "from", "where", "into", "loop", "returning", "for", "window", "model", "asc", "desc", "nulls",
                "as"}
COMPARISON_OPERATORS = ("=", "<>", "!=", "^=", "<", ">", "<=", ">=")


def base(name: str | None) -> str:
    """A datatype's base name in one spelling: 'varchar2(64 byte)' -> 'varchar2', 'pls_integer' -> 'number'."""
    first = base_type(name)
    first = _SYNONYMS.get(first, first)
    return "number" if first in _NUMERIC else first


def unwrap(tokens: list[Token], start: int, stop: int) -> tuple[int, int]:
    """The range without parentheses that enclose all of it (a subquery's are kept)."""
    while stop - start >= 2 and tokens[start].kind == OP and tokens[start].text == "(" \
            and matching(tokens, start, stop) == stop - 1 and not tokens[start + 1].is_word("select", "with"):
        start, stop = start + 1, stop - 1
    return start, stop


def top_level(tokens: list[Token], start: int, stop: int, *operators: str) -> list[int]:
    """Positions of the operators outside parentheses and CASE ... END in tokens[start:stop]."""
    found: list[int] = []
    depth = 0
    cases = 0
    for index in range(start, stop):
        token = tokens[index]
        if token.kind == OP and token.text == "(":
            depth += 1
        elif token.kind == OP and token.text == ")":
            depth -= 1
        elif depth == 0 and token.is_word("case"):
            cases += 1
        elif depth == 0 and token.is_word("end") and cases:
            cases -= 1
        elif depth == 0 and cases == 0 and token.kind == OP and token.text in operators:
            found.append(index)
    return found


def returning_type(tokens: list[Token], open_at: int, close: int) -> str:
    """The type a RETURNING clause inside a call's parentheses names ('' when there is none)."""
    depth = 0
    for index in range(open_at + 1, close):
        token = tokens[index]
        if token.kind == OP and token.text in "()":
            depth += 1 if token.text == "(" else -1
        elif depth == 0 and token.is_word("returning") and index + 1 < close and tokens[index + 1].kind == IDENT:
            return base(tokens[index + 1].text)
    return ""


def cast_target(tokens: list[Token], open_at: int, close: int) -> str:
    """The type of CAST(x AS type) / TREAT(x AS type)."""
    depth = 0
    for index in range(open_at + 1, close):
        token = tokens[index]
        if token.kind == OP and token.text in "()":
            depth += 1 if token.text == "(" else -1
        elif depth == 0 and token.is_word("as") and index + 1 < close:
            return base(tokens[index + 1].text)
    return ""


def operand_left(tokens: list[Token], at: int, floor: int) -> int:
    """Where the operand that ends just before tokens[at] begins (not before floor)."""
    index = at - 1
    while index >= floor:
        token = tokens[index]
        if token.kind == OP and token.text == ")":
            depth = 0
            while index >= floor:
                if tokens[index].kind == OP and tokens[index].text == ")":
                    depth += 1
                elif tokens[index].kind == OP and tokens[index].text == "(":
                    depth -= 1
                    if depth == 0:
                        break
                index -= 1
            index -= 1
            continue
        if token.kind == OP and (token.text in ("(", ",", ";", ":=") or token.text in COMPARISON_OPERATORS):
            break
        if token.kind == IDENT and token.text in _LEFT_STOPS:
            break
        index -= 1
    return index + 1


def operand_right(tokens: list[Token], at: int, ceiling: int) -> int:
    """Where the operand that starts at tokens[at] ends (exclusive; not after ceiling)."""
    index = at
    cases = 0
    while index < ceiling:
        token = tokens[index]
        if token.kind == OP and token.text == "(":
            index = matching(tokens, index, ceiling) + 1
            continue
        if token.is_word("case"):
            cases += 1
        elif token.is_word("end") and cases:
            cases -= 1
            index += 1
            continue
        if cases == 0:
            if token.kind == OP and (token.text in (")", ",", ";") or token.text in COMPARISON_OPERATORS):
                break
            if token.kind == IDENT and token.text in _RIGHT_STOPS and index > at:
                break
        index += 1
    return index


def comparisons(tokens: list[Token], start: int, stop: int, skip: list[tuple[int, int]]
                ) -> list[tuple[Token, list[tuple[int, int]]]]:
    """Every comparison in tokens[start:stop] outside the ranges in skip (nested queries): the operator
    token and the ranges of its operands (=, <>, <, ..., [NOT] IN (list), BETWEEN x AND y)."""
    found: list[tuple[Token, list[tuple[int, int]]]] = []
    index = start
    while index < stop:
        inside = next((b for a, b in skip if a <= index < b), None)
        if inside is not None:
            index = inside
            continue
        token = tokens[index]
        if token.kind == OP and token.text in COMPARISON_OPERATORS:
            left = operand_left(tokens, index, start)
            right_end = operand_right(tokens, index + 1, stop)
            if left < index and index + 1 < right_end:
                found.append((token, [(left, index), (index + 1, right_end)]))
        elif token.is_word("in") and index + 1 < stop and tokens[index + 1].kind == OP \
                and tokens[index + 1].text == "(" and index > start:
            left_end = index - 1 if tokens[index - 1].is_word("not") else index
            left = operand_left(tokens, left_end, start)
            close = matching(tokens, index + 1, stop)
            operands = [(left, left_end)] if left < left_end else []
            if not tokens[index + 2].is_word("select", "with"):
                operands += split_top_level(tokens, index + 2, close)
            if len(operands) > 1:
                found.append((token, operands))
        elif token.is_word("between") and index > start:
            left_end = index - 1 if tokens[index - 1].is_word("not") else index
            left = operand_left(tokens, left_end, start)
            low_end = operand_right(tokens, index + 1, stop)
            high_end = operand_right(tokens, low_end + 1, stop) if low_end < stop else low_end
            found.append((token, [(left, left_end), (index + 1, low_end), (low_end + 1, high_end)]))
        index += 1
    return found


class SqlTyping:
    """The expression typing of the semantic resolver (a mixin over plsql_resolver.Resolver)."""

    def _expression_type(self, tokens, start, stop, block, scope) -> str:  # noqa: C901 - one case per form
        start, stop = unwrap(tokens, start, stop)
        if start >= stop:
            return ""
        if tokens[start].kind == OP and tokens[start].text == "(":
            columns = self._query_columns.get((id(tokens), start + 1))
            return base(columns.types.get(columns[0], "")) if columns else ""
        concatenations = top_level(tokens, start, stop, "||")
        if concatenations:
            parts = [start, *[i + 1 for i in concatenations]]
            ends = [*concatenations, stop]
            kinds = {self._expression_type(tokens, a, b, block, scope) for a, b in zip(parts, ends)}
            return next((k for k in ("nclob", "clob") if k in kinds), "varchar2")
        if top_level(tokens, start, stop, "+", "*", "/") or top_level(tokens, start + 1, stop, "-"):
            return "number"
        first = tokens[start]
        if stop - start == 1:
            if first.kind == STRING:
                return "varchar2"
            if first.kind == NUMBER:
                return "number"
            if first.kind == BIND or first.is_word("null"):
                return ""
            if first.is_word("true", "false"):
                return "boolean"
        if first.is_word("case"):
            return self._case_type(tokens, start, stop, block, scope)
        if first.kind != IDENT:
            return ""
        return self._chain_type(tokens, start, stop, block, scope)

    def _case_type(self, tokens, start, stop, block, scope) -> str:
        depth = 0
        for index in range(start + 1, stop):
            token = tokens[index]
            if token.is_word("case"):
                depth += 1
            elif token.is_word("end"):
                depth -= 1
            elif depth == 0 and token.is_word("then", "else"):
                end = operand_right(tokens, index + 1, stop)
                kind = self._expression_type(tokens, index + 1, end, block, scope)
                if kind:
                    return kind
        return ""

    def _chain_type(self, tokens, start, stop, block, scope) -> str:
        parts = [tokens[start].text]
        index = start + 1
        while index + 1 < stop and tokens[index].kind == OP and tokens[index].text == "." \
                and tokens[index + 1].kind == IDENT:
            parts.append(tokens[index + 1].text)
            index += 2
        called = index < stop and tokens[index].kind == OP and tokens[index].text == "("
        close = matching(tokens, index, stop) if called else index
        if (close + 1 if called else index) != stop:
            return ""
        if parts[0] == "sys" and len(parts) > 1:
            parts = parts[1:]
        if called:
            return self._call_type(parts, tokens, index, close, block, scope)
        if len(parts) == 2:
            source = block.source(parts[0])
            if source is not None and source.types is not None:
                return base(source.types.get(parts[1]))
        if len(parts) == 1:
            for sql_scope in block._chain():
                for source in sql_scope.sources:
                    if source.columns is not None and parts[0] in source.columns:
                        return base((source.types or {}).get(parts[0]))
            if block.in_order_by and parts[0] in block.alias_types:
                return base(block.alias_types[parts[0]])
            if parts[0] in _RETURNS and parts[0] in ("sysdate", "systimestamp", "current_timestamp"):
                return _RETURNS[parts[0]]
        return self._plsql_type(parts, scope)

    def _call_type(self, parts, tokens, open_at, close, block, scope) -> str:
        name = parts[-1]
        if len(parts) == 1:
            if name in ("cast", "treat"):
                return cast_target(tokens, open_at, close)
            if name in _RETURNS or name in _AS_FIRST:
                returned = returning_type(tokens, open_at, close)
                if returned:
                    return returned
                if name in _RETURNS:
                    return _RETURNS[name]
                arguments = split_top_level(tokens, open_at + 1, close)
                return self._expression_type(tokens, *arguments[0], block, scope) if arguments else ""
        if len(parts) == 2 and (parts[0], name) in _PACKAGE_RETURNS:
            return _PACKAGE_RETURNS[(parts[0], name)]
        entity = self._routine_entity(parts, scope)
        if entity is not None and entity.type.kind == "scalar":
            return base(entity.type.name)
        return ""

    def _routine_entity(self, parts, scope):
        if len(parts) == 1:
            entity = scope.lookup(parts[0])
        elif len(parts) == 2 and parts[0] in self.packages:
            entity = self.packages[parts[0]].spec.get(parts[1])
        else:
            return None
        return entity if entity is not None and entity.kind == "routine" else None

    def _plsql_type(self, parts, scope) -> str:
        entity = scope.lookup(parts[0])
        if entity is None and parts[0] in self.packages and len(parts) == 2:
            entity = self.packages[parts[0]].spec.get(parts[1])
            parts = parts[1:]
        if entity is None or entity.kind not in ("var", "routine"):
            return ""
        kind = entity.type
        for field in parts[1:]:
            if kind.kind != "record":
                return ""
            kind = kind.field(field)
            if kind is None:
                return ""
        return base(kind.name) if kind.kind == "scalar" else ""
