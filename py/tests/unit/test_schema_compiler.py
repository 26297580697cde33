"""The compiled check gives jsonschema's verdict on every keyword it knows, and refuses a schema it cannot check."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ctxasm.core.schema_compiler import compile_check

#: Every keyword the compiler knows, in the combinations our schemas use them (and some they do not).
SCHEMA = {
    "$defs": {
        "ref": {"type": "array", "prefixItems": [{"type": "string", "minLength": 1, "maxLength": 3},
                                                 {"type": "integer", "minimum": 0, "maximum": 9}],
                "minItems": 2, "items": False},
        "tree": {"type": ["object", "null"], "properties": {"child": {"$ref": "#/$defs/tree"},
                                                           "n": {"type": "number", "exclusiveMinimum": 0}}},
        # definitions without loops are written out in place, a chain of them too
        "letter": {"enum": ["x", "y"]},
        "letter_or_small": {"anyOf": [{"$ref": "#/$defs/letter"}, {"$ref": "#/$defs/small"}]},
        "small": {"type": "integer", "maximum": 3},
        # unevaluatedProperties over the names of properties, allOf and $ref (the scenario schema's pattern)
        "common": {"type": "object", "properties": {"n": {"type": "integer"}, "x": {}}},
        "strict": {"type": "object", "properties": {"child": {"type": ["object", "null"]}},
                   "allOf": [{"$ref": "#/$defs/common"}], "unevaluatedProperties": False},
        "typed_rest": {"type": "object", "$ref": "#/$defs/common", "anyOf": [{"required": ["n"]}, {"minProperties": 2}],
                       "unevaluatedProperties": {"type": "string"}},
    },
    "type": "object",
    "required": ["kind"],
    "additionalProperties": {"type": ["string", "number"]},
    "propertyNames": {"maxLength": 6},
    "dependentRequired": {"a": ["b"]},
    "minProperties": 1,
    "properties": {
        "kind": {"enum": ["x", "y"]},
        "c": {"const": "fixed"},
        "p": {"type": "string", "pattern": "^[a-z]+$"},
        "ref": {"$ref": "#/$defs/ref"},
        "tree": {"$ref": "#/$defs/tree"},
        "u": {"type": "array", "uniqueItems": True, "maxItems": 3, "items": {"type": ["integer", "boolean"]}},
        "any": {"anyOf": [{"type": "null"}, {"type": "integer", "exclusiveMaximum": 5}]},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]},
        # null or what null does not satisfy (written as either); null or what null satisfies too (counted)
        "mref": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/ref"}]},
        "mbound": {"oneOf": [{"minimum": 1}, {"type": "null"}]},
        "pick": {"$ref": "#/$defs/letter_or_small"},
        "all": {"allOf": [{"minLength": 2}, {"maxLength": 4}]},
        "cond": {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}},
        "a": True,
        "b": {},
        "never": False,
        "loose": {"minimum": 1, "minLength": 1, "minItems": 1},
        "strict": {"$ref": "#/$defs/strict"},
        "tr": {"$ref": "#/$defs/typed_rest"},
    },
}

_SCALAR = st.none() | st.booleans() | st.integers(-3, 12) | st.sampled_from([0.5, 2.0, 5.0, -1.5]) \
    | st.sampled_from(["", "x", "y", "ab", "abcd", "abcde", "A1", "fixed"])
_VALUE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(["child", "n", "x", "rest"]), inner, max_size=3), max_leaves=8)
_TREE = st.recursive(st.none() | st.fixed_dictionaries({}, optional={"n": st.sampled_from([1, 0, -1.5, "n"])}),
                     lambda inner: st.fixed_dictionaries({}, optional={"child": inner, "n": st.sampled_from([2, 0])}),
                     max_leaves=4)
#: Values near each property's edge, valid and not, so that both verdicts are common.
_PROPERTIES = {
    "c": st.sampled_from(["fixed", "x", 1]),
    "p": st.sampled_from(["ab", "A1", "", None]),
    "ref": st.lists(st.sampled_from(["ab", "", "abcd", 3, 10, -1, True]), max_size=4),
    "tree": _TREE,
    "u": st.lists(st.sampled_from([1, 2, True, False, 1.0, "s"]), max_size=4),
    "extra": _SCALAR,
}
_DOCUMENT = st.fixed_dictionaries({"kind": st.sampled_from(["x", "y", "z"])}, optional={
    **{key: _VALUE for key in ("any", "one", "all", "cond", "a", "b", "loose", "mbound", "pick", "strict", "tr")},
    "mref": st.none() | _PROPERTIES["ref"] | _SCALAR, **_PROPERTIES}) | _VALUE


CHECK, VALIDATOR = compile_check(SCHEMA), Draft202012Validator(SCHEMA)


@settings(max_examples=1500, deadline=None)
@given(_DOCUMENT)
def test_the_compiled_check_gives_jsonschemas_verdict(document):
    assert CHECK(document) == VALIDATOR.is_valid(document)


def test_valid_and_invalid_documents_both_occur():
    check = compile_check(SCHEMA)
    assert check({"kind": "x", "ref": ["ab", 3], "tree": {"child": {"n": 1}}, "u": [1, True], "one": 1,
                  "cond": 4, "extra": "s"})
    assert not check({"kind": "x", "a": 1})  # a needs b
    assert not check({"kind": "x", "ref": ["ab", 3, 4]})  # no items beyond the prefix
    assert not check({"kind": "x", "one": 3})  # an integer of at least 2 is both
    assert not check({"kind": "x", "never": None})
    assert not check({"kind": "x", "toolongkey": "s"})  # a name longer than propertyNames allows
    assert check({"kind": "x", "mref": None}) and check({"kind": "x", "mref": ["ab", 3]})
    assert not check({"kind": "x", "mref": ["ab"]})
    assert not check({"kind": "x", "mbound": None})  # null satisfies both alternatives
    assert check({"kind": "x", "pick": 2}) and check({"kind": "x", "pick": "y"}) and not check({"kind": "x", "pick": 4})


@pytest.mark.parametrize("schema, keyword", [
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
    ({"properties": {"x": {"contains": {"type": "string"}}}}, "contains"),
    # names evaluated on a condition, or by pattern: which are evaluated depends on the document
    ({"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "unevaluatedProperties": False}, "anyOf"),
    ({"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}, "unevaluatedProperties": False}, "then"),
    ({"allOf": [{"additionalProperties": True}], "unevaluatedProperties": False}, "additionalProperties"),
    ({"properties": {"a": {}}, "additionalProperties": True, "unevaluatedProperties": False}, "additionalProperties"),
])
def test_a_keyword_it_does_not_know_is_refused(schema, keyword):
    with pytest.raises(ValueError, match=keyword):
        compile_check(schema)


def test_only_local_definitions_are_followed():
    with pytest.raises(ValueError, match="only local"):
        compile_check({"$ref": "https://example.com/schema.json"})


def test_unevaluated_properties_count_the_names_of_allof_and_ref():
    check = compile_check(SCHEMA)
    assert check({"kind": "x", "strict": {"n": 1, "x": "s", "child": None}})
    assert not check({"kind": "x", "strict": {"n": 1, "other": 2}})  # not a name of strict nor of common
    assert not check({"kind": "x", "strict": {"n": "1"}})  # common's check of n still applies
    assert check({"kind": "x", "tr": {"n": 1, "rest": "s"}})
    assert not check({"kind": "x", "tr": {"n": 1, "rest": 2}})


def test_the_scenario_schema_compiles_and_agrees_on_the_shipped_files_and_their_faults():
    """The loader's check of a file: the compiled one decides (jsonschema only words a failure). On every
    shipped scenario, and on each with one memory given an unknown field, a field of the wrong type, or a
    required field removed, both give the same verdict."""
    import copy
    import json

    from ctxasm.core import schemas

    from ..conftest import REPO

    check, validator = schemas.checker(schemas.SCENARIO), schemas.validator(schemas.SCENARIO)
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(REPO.glob("db/tests/**/*.json"))]
    documents = [d for d in documents if isinstance(d, dict) and str(d.get("format", "")).startswith("ctxasm-scenario")]
    assert len(documents) >= 5
    verdicts = []
    for document in documents:
        memory = next((m for t in document["tenants"] for m in t.get("memories", ())), None)
        variants = [document]
        if memory is not None:
            for change in ("unknown", "type", "required"):
                variant = copy.deepcopy(document)
                target = next(m for t in variant["tenants"] for m in t.get("memories", ()))
                if change == "unknown":
                    target["not_a_field"] = 1
                elif change == "type":
                    target["content"] = 7
                else:
                    target.pop("id")
                variants.append(variant)
        for variant in variants:
            verdicts.append(check(variant))
            assert check(variant) == validator.is_valid(variant)
    assert True in verdicts and False in verdicts
