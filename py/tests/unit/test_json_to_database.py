"""to_json writes what json.dumps writes, or text that reads back as the same value; never a changed value."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.engines.checks import to_json

#: JSON-shaped values with what json.dumps writes differently from orjson or not at all: NaN and infinity,
#: integers beyond 64 bits, tuples, datetimes, keys that are not strings, lone surrogates.
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30) | st.floats()
    | st.text() | st.datetimes(timezones=st.just(timezone.utc)),
    lambda inner: (st.lists(inner, max_size=5) | st.lists(inner, max_size=3).map(tuple)
                   | st.dictionaries(st.text() | st.integers(-5, 5), inner, max_size=5)),
    max_leaves=30,
)


def _dumped(value):
    return json.dumps(value, default=lambda v: v.isoformat(), ensure_ascii=False)


def _same(left, right) -> bool:
    """Equal JSON values, NaN equal to NaN, an int never equal to a float."""
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right))
    return left == right


@settings(max_examples=400, deadline=None)
@given(_VALUE)
def test_to_json_reads_back_as_json_dumps_text_does(value):
    expected = _dumped(value)
    assert _same(json.loads(to_json(value)), json.loads(expected))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_number_is_written_as_json_dumps_writes_it_not_as_null(value):
    # The database refuses the token, as it always did: the value is never stored as null.
    text = to_json({"confidence": value, "nested": [1, {"x": value}]})
    assert text == _dumped({"confidence": value, "nested": [1, {"x": value}]})
    assert "null" not in text


def test_a_dict_subclass_and_a_large_document_are_written_as_their_values():
    class Document(dict):
        pass

    document = Document(memories=[{"ref": ["conversation", f"turn-{i}", 1], "tokens": i, "score": i / 7,
                                   "text": "café " * 3} for i in range(500)])
    assert json.loads(to_json(document)) == json.loads(_dumped(document))


def test_a_datetime_is_written_as_isoformat():
    at = datetime(2026, 9, 28, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert json.loads(to_json({"valid_from": at})) == {"valid_from": at.isoformat()}


def test_what_json_cannot_hold_is_refused_as_before():
    @dataclass
    class Row:
        id: str

    with pytest.raises(TypeError, match="Row is not JSON serialisable"):
        to_json({"row": Row("a")})


def test_unstorable_text_skips_a_list_of_numbers_and_still_finds_text_among_numbers():
    from ctxasm.engines.checks import unstorable_text

    assert unstorable_text({"embedding": [0.5] * 384, "n": [1, 2.5]}, "$") is None
    assert unstorable_text({"embedding": [0.5, 1, "a\x00b"]}, "$") == "$.embedding[2]: contains a NUL character"
    assert unstorable_text([True, "\udc80"], "$") == "$[1]: not valid Unicode text (lone surrogate at offset 0)"


def test_unstorable_text_walks_a_value_nested_deeper_than_the_recursion_limit():
    from ctxasm.engines.checks import unstorable_text

    deep: object = "fine"
    for _ in range(50_000):
        deep = [deep]
    assert unstorable_text(deep, "v") is None
    bad: object = {"k": "a\x00b"}
    for _ in range(50_000):
        bad = [bad]
    assert unstorable_text(bad, "v") == "v" + "[0]" * 50_000 + ".k: contains a NUL character"
