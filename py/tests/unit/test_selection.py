"""The typed selection document: its schema agrees with the manifest's where they share definitions and with the
classes field for field, a document parses into the classes, and a malformed one is refused naming the JSON path
(invalid_selection)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from ctxasm.core import schemas
from ctxasm.core.refs import Ref
from ctxasm.core.selection import (Annotation, Authorship, CandidateRow, FixedRow, Retrieval, SelectedBudget, Selection,
                                   Tiers, ToolExtra)
from ctxasm.errors import InvalidSelection

from .test_window import candidate, document

#: Definitions the selection schema copies from the manifest schema, word for word.
SHARED = ["ref", "dynamic_slice", "fixed_slice", "slice", "scores", "source", "generated_by", "count",
          "per_dynamic_slice_count"]


def a_document() -> dict:
    note = {"source": ["entity", "f1", 1], "current": ["entity", "f1", 2], "current_content": "0.78"}
    return document([candidate(["entity", "f1", 2], annotations=[note], summary_ref=["compression", "c1", 1],
                               summary_by={"model": "m", "prompt_version": "p"}, content_tokens=7),
                     candidate(["conversation", "t1", 1], "volatile_tail", role="user", turn_index=3)])


def test_the_shared_definitions_are_the_manifests():
    selection, manifest = schemas.schema(schemas.SELECTION), schemas.schema(schemas.MANIFEST)
    for name in SHARED:
        assert selection["$defs"][name] == manifest["$defs"][name], name
    for name in ("retrieval", "candidate_cuts"):
        assert selection["properties"][name] == manifest["properties"][name], name


def _properties(definition: dict) -> set[str]:
    return set(definition["properties"])


@pytest.mark.parametrize("cls, where", [
    (Selection, None), (CandidateRow, "candidate"), (FixedRow, "fixed_row"), (Tiers, None), (Annotation, "annotation"),
    (ToolExtra, "tool_extra"), (Authorship, "generated_by")])
def test_each_class_has_a_field_for_every_property_of_its_schema(cls, where):
    schema = schemas.schema(schemas.SELECTION)
    if cls is Selection:
        definition = schema
    elif cls is Tiers:
        definition = schema["$defs"]["candidate"]["properties"]["tiers"]
    else:
        definition = schema["$defs"][where]
    assert definition["additionalProperties"] is False, "every field of the document is typed"
    own = {"summary_written"} if cls is CandidateRow else set()  # marked by compression, never sent by an engine
    assert {f.name for f in dataclasses.fields(cls)} - own == _properties(definition)


def test_a_document_parses_into_the_classes():
    parsed = Selection.parse(a_document())
    assert parsed.budget == SelectedBudget(Ref("guideline", "budget", 3), parsed.budget.content_json)
    assert parsed.retrieval == Retrieval("lexical", 50, ())
    fact, turn = parsed.candidates
    assert fact.ref == Ref("entity", "f1", 2) and fact.slice == "durable_facts" and fact.required is False
    assert fact.annotations == (Annotation(Ref("entity", "f1", 1), Ref("entity", "f1", 2), "0.78"),)
    assert fact.summary_ref == Ref("compression", "c1", 1) and fact.summary_by == Authorship("m", "p")
    assert fact.content_tokens == 7 and fact.summary_tokens is None and fact.priority == 0.5
    assert fact.tiers.text("pointer") == fact.tiers.pointer and fact.tiers.text("nonsense") is None
    assert turn.role == "user" and turn.turn_index == 3
    assert parsed.fixed[1].extra == ToolExtra("Search memory.", {"type": "object"})
    assert parsed.candidate_limits == {} and parsed.candidate_cuts == ()


def _broken(change) -> dict:
    data = copy.deepcopy(a_document())
    change(data)
    return data


def test_a_parsed_candidate_is_the_one_its_init_would_build():
    """CandidateRow.of fills an instance without __init__ (selection._built): every field must be there."""
    for row in Selection.parse(a_document()).candidates:
        for value in (row, row.tiers):
            assert set(vars(value)) == {f.name for f in dataclasses.fields(value)}
            assert type(value)(**vars(value)) == value
        with pytest.raises(dataclasses.FrozenInstanceError):
            row.slice = "evidence"  # type: ignore[misc]


@pytest.mark.parametrize("change, path", [
    (lambda d: d.pop("snapshot"), "$"),
    (lambda d: d["candidates"][0]["tiers"].update(full=5), "$.candidates[0].tiers.full"),
    (lambda d: d["candidates"][1].update(slice="guidelines"), "$.candidates[1].slice"),
    (lambda d: d["candidates"][0].update(surprise=1), "$.candidates[0]"),
    (lambda d: d["candidates"][0]["annotations"][0].update(source=["entity", "f1"]),
     "$.candidates[0].annotations[0].source"),
    (lambda d: d["fixed"][1].update(extra=None), "$.fixed[1].extra"),
    (lambda d: d["budget"].update(ref="guideline:budget:3"), "$.budget.ref"),
    (lambda d: d["retrieval"].pop("depth"), "$.retrieval"),
    (lambda d: d.update(engine="sqlite"), "$.engine"),
])
def test_a_malformed_document_is_refused_naming_the_field(change, path):
    with pytest.raises(InvalidSelection) as caught:
        Selection.parse(_broken(change))
    assert caught.value.code == "invalid_selection"
    assert caught.value.field == path
    assert str(caught.value).startswith(f"invalid_selection: {path}: ")


def test_the_checker_and_jsonschema_agree_on_documents():
    good = a_document()
    assert schemas.checker(schemas.SELECTION)(good)
    assert not list(schemas.validator(schemas.SELECTION).iter_errors(json.loads(json.dumps(good))))


@pytest.mark.slow  # every node of a selection document replaced, each checked twice
def test_the_compiled_selection_check_agrees_with_jsonschema_on_every_node_replaced():
    from .test_manifest_schema import REPLACEMENTS, _paths, _replaced

    good = json.loads(json.dumps(a_document()))
    check, full = schemas.checker(schemas.SELECTION), schemas.validator(schemas.SELECTION)
    verdicts = [(path, new, check(changed), full.is_valid(changed)) for path in list(_paths(good))[1:]
                for new in REPLACEMENTS for changed in [_replaced(good, path, new)]]
    assert len(verdicts) > 1000
    assert [v for v in verdicts if v[2] != v[3]] == []
    assert {v[3] for v in verdicts} == {True, False}  # some replacements are still valid, most are not
