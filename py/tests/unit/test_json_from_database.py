"""from_json reads the database's JSON as json.loads does, including what orjson alone would read otherwise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.engines.checks import from_json

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_from_json_gives_the_values_json_loads_gives(value):
    text = json.dumps(value, ensure_ascii=False)
    for data in (text, text.encode("utf-8"), memoryview(text.encode("utf-8"))):
        loaded = from_json(data)
        assert loaded == json.loads(text)
        assert json.dumps(loaded) == json.dumps(json.loads(text))  # the same types: an int stays an int


@pytest.mark.parametrize("text", [
    '{"n": 123456789012345678901234567890}',
    '[18446744073709551616, -9223372036854775809]',
    '{"tool_schema": {"maximum": 99999999999999999999}}',
    '{"low": -9223372036854775809}',  # 19 digits: the shortest run orjson reads as a float
])
def test_an_integer_beyond_64_bits_stays_exact(text):
    loaded = from_json(text)
    assert loaded == json.loads(text)
    assert all(isinstance(number, int) for number in _numbers(loaded))


def _numbers(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value
