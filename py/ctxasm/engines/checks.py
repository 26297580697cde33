"""The write path's checks, shared by every engine: text a database cannot store is refused with the field that
holds it, records go out as JSON, and a record's content brings its o200k_base token count.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import orjson

from ctxasm.errors import InvalidField

#: A run of digits orjson may not read exactly (it turns an integer beyond 64 bits into a float) is found by
#: mapping every ASCII digit to one marker byte and looking for 19 markers in a row: two passes at memory speed.
#: A regular expression for the same run took about 15 times as long, 2.6 ms on a 280 kB selection document,
#: longer than orjson takes to read it. The marker byte itself is mapped away, so only digits make markers.
_DIGIT_MARKS = bytes.maketrans(b"0123456789\x01", b"\x01" * 10 + b"\x00")
_LONG_DIGITS = b"\x01" * 19


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


#: What orjson leaves to to_json's fallback instead of writing it its own way: a datetime (json.dumps's default
#: writes isoformat) and a dataclass (json.dumps refuses one).
_ORJSON_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def to_json(record: Any) -> str:
    """`record` as JSON text: the text json.dumps writes, or one that reads back as the same value.

    orjson writes a manifest of a large budget (a few hundred kB) in a tenth of json.dumps's time, but it writes
    NaN and infinity as null, where json.dumps writes a token the database refuses. Its text is used only when
    reading it back gives `record` exactly (one comparison in C; with the write, under half json.dumps's time);
    anything else (a non-finite float, a tuple, a datetime, a key that is not a string, an integer beyond 64
    bits, a lone surrogate) goes through json.dumps, as before."""
    try:
        raw = orjson.dumps(record, option=_ORJSON_PASSTHROUGH)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        raw = None
    if raw is not None and orjson.loads(raw) == record:
        return raw.decode("utf-8")
    return json.dumps(record, default=_json_default, ensure_ascii=False)


def from_json(data: bytes | bytearray | memoryview | str) -> Any:
    """A JSON document from the database as Python values, the same values json.loads gives: orjson (a
    selection document of a large budget is a few hundred kB, which json.loads reads in about three times the
    time), except when the text holds a run of 19 or more digits, which json.loads reads exactly."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if _LONG_DIGITS in raw.translate(_DIGIT_MARKS):
        return json.loads(raw)
    return orjson.loads(raw)


#: The types of values that hold no text: a list of nothing else (an embedding's 384 numbers) is not walked.
_PLAIN_NUMBERS = frozenset({int, float})


def unstorable_text(value: Any, path: str) -> str | None:
    """The first string in `value` that PostgreSQL (and Oracle) cannot store, as "path: problem", or None
    (found by the hostile-input tests): NUL, which no text or jsonb value may hold, and lone surrogates,
    which are not UTF-8 text. Keys are checked too, a dict's before its values. Walked with a list of its own,
    not by recursion: a value nested deeper than Python's recursion limit is checked like any other."""
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return f"{path}: contains a NUL character"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"{path}: not valid Unicode text (lone surrogate at offset {exc.start})"
        elif isinstance(value, dict):
            pairs = [(path, key) for key in value] + [(f"{path}.{key}", item) for key, item in value.items()]
            pending.extend(reversed(pairs))
        elif isinstance(value, list) and not all(type(item) in _PLAIN_NUMBERS for item in value):
            pending.extend(reversed([(f"{path}[{index}]", item) for index, item in enumerate(value)]))
    return None


def prepared(memory_type: str, record: dict[str, Any]) -> dict[str, Any]:
    """A record as the write path sends it: checked for unstorable text, with its token count."""
    if isinstance(record, dict):
        for key, value in record.items():
            problem = unstorable_text(value, key)
            if problem:
                raise InvalidField(f"invalid_field: {memory_type}.{problem}")
        return with_token_count(record)
    return record


def with_token_count(record: dict[str, Any]) -> dict[str, Any]:
    """The record with `content_tokens`, the o200k_base count of its content, added when it brings a text
    and no count of its own: assembly then joins the stored count instead of encoding the text again."""
    content = record.get("content")
    if not isinstance(content, str) or not content or "content_tokens" in record:
        return record
    from ctxasm.core.tokens import count_tokens

    return {**record, "content_tokens": count_tokens(content)}
