"""Tokens of Oracle SQL and PL/SQL, for the static gates oracle_api and oracle_names.

The lexer keeps what name resolution needs: identifiers (lower-cased; a quoted identifier keeps its case),
numbers, string literals (their text is never a name), bind variables, and operators, each with its file
line. Comments are dropped. It does not validate syntax: oracle_parse (sqlfluff) does that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IDENT = "ident"
NUMBER = "number"
STRING = "string"
BIND = "bind"
OP = "op"

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")
_NUMBER = re.compile(r"(\d+(\.(?!\.)\d*)?|\.\d+)([eE][-+]?\d+)?[fFdD]?")
_BIND = re.compile(r":[A-Za-z0-9_$#]+")
_OPERATORS = (":=", "=>", "||", "..", "<=", ">=", "<>", "!=", "^=", "~=", "**", "<<", ">>")
_Q_CLOSERS = {"[": "]", "{": "}", "(": ")", "<": ">"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str          # identifiers lower-cased (quoted ones as written), strings without their quotes
    line: int

    def is_word(self, *words: str) -> bool:
        return self.kind == IDENT and self.text in words

    def __str__(self) -> str:
        return self.text


def tokenize(text: str, first_line: int = 1) -> list[Token]:
    """The tokens of `text`, whose first line is file line `first_line`."""
    tokens: list[Token] = []
    line = first_line
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == "\n":
            line += 1
            index += 1
            continue
        if char.isspace():
            index += 1
            continue
        if text.startswith("--", index):
            end = text.find("\n", index)
            index = length if end < 0 else end
            continue
        if text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = length if end < 0 else end + 2
            line += text.count("\n", index, end)
            index = end
            continue
        start_line = line
        # q'[...]' and n'...' literals
        quote = re.match(r"[nN]?[qQ]'(.)", text[index:index + 4])
        if quote:
            opener = quote.group(1)
            closer = _Q_CLOSERS.get(opener, opener) + "'"
            body_start = index + quote.end()
            end = text.find(closer, body_start)
            end = length if end < 0 else end + len(closer)
            line += text.count("\n", index, end)
            tokens.append(Token(STRING, text[body_start:max(body_start, end - len(closer))], start_line))
            index = end
            continue
        if char == "'" or (char in "nN" and text.startswith("'", index + 1)):
            index += 0 if char == "'" else 1
            end = index + 1
            while end < length:
                if text[end] == "'":
                    if text.startswith("''", end):
                        end += 2
                        continue
                    break
                end += 1
            line += text.count("\n", index, end)
            tokens.append(Token(STRING, text[index + 1:end].replace("''", "'"), start_line))
            index = end + 1
            continue
        if char == '"':
            end = text.find('"', index + 1)
            end = length if end < 0 else end
            tokens.append(Token(IDENT, text[index + 1:end], start_line))
            index = end + 1
            continue
        match = _IDENT.match(text, index)
        if match:
            tokens.append(Token(IDENT, match.group(0).lower(), start_line))
            index = match.end()
            continue
        match = _NUMBER.match(text, index)
        if match and (char.isdigit() or (char == "." and index + 1 < length and text[index + 1].isdigit())):
            tokens.append(Token(NUMBER, match.group(0), start_line))
            index = match.end()
            continue
        match = _BIND.match(text, index)
        if match and not text.startswith(":=", index):
            tokens.append(Token(BIND, match.group(0).lower(), start_line))
            index = match.end()
            continue
        operator = next((op for op in _OPERATORS if text.startswith(op, index)), char)
        tokens.append(Token(OP, operator, start_line))
        index += len(operator)
    return tokens


def matching(tokens: list[Token], open_index: int, stop: int | None = None) -> int:
    """The index of the ')' that closes the '(' at open_index; `stop` (exclusive) when it never closes."""
    depth = 0
    end = len(tokens) if stop is None else stop
    for index in range(open_index, end):
        token = tokens[index]
        if token.kind == OP and token.text == "(":
            depth += 1
        elif token.kind == OP and token.text == ")":
            depth -= 1
            if depth == 0:
                return index
    return end


def split_top_level(tokens: list[Token], start: int, stop: int, separator: str = ",") -> list[tuple[int, int]]:
    """(start, stop) ranges of tokens[start:stop] separated by `separator` outside parentheses."""
    parts: list[tuple[int, int]] = []
    depth = 0
    begin = start
    for index in range(start, stop):
        token = tokens[index]
        if token.kind == OP and token.text == "(":
            depth += 1
        elif token.kind == OP and token.text == ")":
            depth -= 1
        elif depth == 0 and token.kind == OP and token.text == separator:
            parts.append((begin, index))
            begin = index + 1
    if begin < stop:
        parts.append((begin, stop))
    return parts
