"""The manifest's one type and schema, and the budget's schema: Ref's two forms, a composed window and a tool
round validate, a broken manifest is refused naming the JSON path, and the budget schema agrees with
budget_problems on the budgets the budget tests use."""

from __future__ import annotations

import copy
import json

import pytest

from ctxasm.core import schemas
from ctxasm.core.budget import budget_problems
from ctxasm.core.compose import compose
from ctxasm.core.manifest import Manifest, manifest_problems, tool_result_entry, validate_manifest
from ctxasm.core.refs import Ref
from ctxasm.core.schema_compiler import compile_check
from ctxasm.core.tool_results import FittedResult, ToolItem
from ctxasm.errors import InvalidManifest

from .test_budget import ARTICLE, BROKEN, article
from .test_window import SPEC, candidate, selection


# -- Ref -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ref", [["entity", "fact_x", 2], ("kb_chunk", "chunk:with:colons", 1), ["guideline", "g", 0]])
def test_a_ref_round_trips_through_both_forms(ref):
    parsed = Ref.of(ref)
    assert parsed.as_json() == list(ref)
    assert Ref.of(parsed.key) == parsed == Ref.of(parsed.as_json())
    assert parsed.key == f"{ref[0]}:{ref[1]}:{ref[2]}" == str(parsed)
    assert parsed.as_source_ref() == {"type": ref[0], "id": ref[1], "version": ref[2]}
    assert json.loads(json.dumps(parsed)) == list(ref)  # a Ref serializes as the list form


@pytest.mark.parametrize("bad", [["entity", "x"], ["entity", "x", "two"], ["entity", "x", True], "entity:x",
                                 "entity::1", 42, None])
def test_a_malformed_ref_is_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match="row reference"):
        Ref.of(bad)
    assert Ref.maybe(bad) is None


# -- the manifest ----------------------------------------------------------------------------------------------


def composed() -> Manifest:
    chosen = selection([candidate(["entity", "f1", 2]), candidate(["kb_chunk", "c1", 1], "evidence", rank=1)])
    return compose(chosen, SPEC).manifest


def test_a_composed_window_validates_and_reads_through_its_accessors():
    manifest = composed()
    assert isinstance(manifest, Manifest) and manifest_problems(manifest) == []
    assert manifest.budget_ref == Ref("guideline", "budget", 3)
    assert manifest.round == 1 and manifest.turns == [] and manifest.first_manifest_id is None
    assert manifest.tool_results == []
    assert [m["position"] for m in manifest.memories] == list(range(1, len(manifest.memories) + 1))


def test_only_the_very_sources_a_selection_checked_are_not_walked_again():
    manifest = composed()
    good = {"ref": ["kb_chunk", "c1", 1], "origin": "retrieval", "slice": "evidence"}
    bad = {"ref": ["kb_chunk", "c1"], "origin": "retrieval", "slice": "evidence"}
    manifest["retrieval"]["items"] = [good, bad]
    # Not the selection's objects (an equal copy, a list of other length, another order): walked, bad refused.
    for checked in ((), (good, copy.deepcopy(bad)), (good,), (bad, good)):
        with pytest.raises(InvalidManifest, match=r"retrieval\.items\[1\]"):
            validate_manifest(manifest, checked_sources=checked)
    # The very objects the selection's check passed: not walked again (this one could not have passed it).
    validate_manifest(manifest, checked_sources=(good, bad))
    # What is not a retrieval source is checked as before.
    manifest["request_hash"] = "not hex"
    with pytest.raises(InvalidManifest, match="request_hash"):
        validate_manifest(manifest, checked_sources=(good, bad))


def test_a_tool_round_extends_the_manifest_only_through_its_type():
    first = composed()
    item = ToolItem(ref=("kb_chunk", "c9", 1), type="kb_chunk", status="evidence", text="more")
    fitted = FittedResult("<result/>", 12, (item,), (), "full")
    entry = tool_result_entry("evt_1", "search_memory", fitted, 1, "call_1", {"query": "x"})
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search_memory", "arguments": "{\"query\": \"x\"}"}}]}
    request = {"model": "m", "messages": [{"role": "user", "content": "q"}, assistant,
                                          {"role": "tool", "tool_call_id": "call_1", "content": "<result/>"}],
               "tool_choice": "none"}
    second = first.next_round("ctx_first", request, 4600, assistant, [entry])
    validate_manifest(second)
    assert second.round == 2 and second.first_manifest_id == "ctx_first"
    assert second.turns == [{"round": 1, "assistant": assistant, "tool_results": ["evt_1"]}]
    assert second["request_options"] == {"tool_choice": "none"}
    (result,) = second.tool_results
    assert result["position"] == len(second.memories) and result["items"][0]["ref"] == ["kb_chunk", "c9", 1]
    assert "round" not in first and len(first.memories) == len(second.memories) - 1  # the first is unchanged
    third = second.next_round("ctx_first", request, 4600, assistant, [dict(entry, round=2)])
    assert third.round == 3 and [t["round"] for t in third.turns] == [1, 2]
    validate_manifest(third)


@pytest.mark.parametrize(("change", "path"), [
    (lambda m: m["memories"][0].update(tier="huge"), "$.memories[0].tier"),
    (lambda m: m["memories"][1]["ref"].pop(), "$.memories[1].ref"),
    (lambda m: m["budget_ref"].__setitem__(2, "3"), "$.budget_ref[2]"),
    (lambda m: m["allocation"]["slices"]["evidence"].pop("used"), "$.allocation.slices.evidence"),
    (lambda m: m["excluded"].append({"ref": ["entity", "x", 1], "rule": "whim"}), "$.excluded[0].rule"),
    (lambda m: m.update(request_hash="abc"), "$.request_hash"),
    (lambda m: m.update(colour="blue"), "$"),
    (lambda m: m.update(round=2), "$"),  # a round's manifest names its first window and turns
])
def test_a_broken_manifest_is_refused_naming_the_json_path(change, path):
    manifest = copy.deepcopy(composed())
    change(manifest)
    with pytest.raises(InvalidManifest) as raised:
        Manifest.checked(manifest)
    assert str(raised.value).startswith(f"invalid_manifest: {path}: ")
    assert raised.value.code == "invalid_manifest"


# -- the budget ------------------------------------------------------------------------------------------------

#: What JSON Schema cannot say, so only budget_problems refuses it: sums and comparisons across fields.
ACROSS_FIELDS = {"reserves leave nothing", "reserves exceed", "tool result above tool reserve", "weights above one",
                 "shares sum above one", "shares sum barely above one"}


def schema_errors(data):
    return list(schemas.validator(schemas.BUDGET).iter_errors(data))


@pytest.mark.parametrize("data", [ARTICLE, article(require_current_facts=False, reclaim_unused=True,
                                                  compression={"enabled": True, "time_budget_ms": 1,
                                                               "token_budget": 1, "summary_tokens": 8},
                                                  tier_limits={"evidence": {"full": 3, "summary": 2}},
                                                  candidate_limits={"evidence": 1000, "durable_facts": 1}),
                                  article(usable_context=5000.0), article(tool_reserve=0, max_tool_result_tokens=0)])
def test_the_budget_schema_accepts_what_budget_problems_accepts(data):
    assert budget_problems(data) == [] and schema_errors(data) == []


def _is_json(mutate) -> bool:
    data = article()
    mutate(data)
    try:
        json.dumps(data, allow_nan=False)
    except ValueError:
        return False
    return True


#: The broken budgets of the budget tests that JSON can carry (NaN and infinity it cannot).
JSON_BROKEN = [case for case in BROKEN if _is_json(case[1])]


def test_only_nan_and_infinity_are_left_out():
    assert {case[0] for case in BROKEN} - {case[0] for case in JSON_BROKEN} == {"weight NaN", "recency_days infinite"}


@pytest.mark.parametrize(("name", "mutate", "field"), JSON_BROKEN, ids=[case[0] for case in JSON_BROKEN])
def test_the_budget_schema_refuses_what_budget_problems_refuses_at_the_same_field(name, mutate, field):
    data = article()
    mutate(data)
    assert [p.field for p in budget_problems(data)], name
    errors = schema_errors(data)
    if name in ACROSS_FIELDS:
        assert errors == [], "a check across fields the schema cannot say"
        return
    assert errors, name
    top = field.split(".")[0].split("[")[0]
    named = [e for e in errors if e.json_path.startswith(f"$.{top}") or f"'{top}'" in e.message]
    assert named, (field, [(e.json_path, e.message) for e in errors])


def test_the_budget_schema_has_the_candidate_limit_bound():
    assert budget_problems(article(candidate_limits={"evidence": 1001}))
    assert [e.json_path for e in schema_errors(article(candidate_limits={"evidence": 1001}))] == [
        "$.candidate_limits.evidence"]



# -- the compiled check agrees with jsonschema -----------------------------------------------------------------

#: Values put in place of each node of a manifest in turn: every JSON type, and the edges the schemas draw.
REPLACEMENTS = (None, True, 0, -1, 1.5, 5.0, "", "x", "full", [], ["entity", "x", 1], {})


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(document, path, new):
    copied = copy.deepcopy(document)
    node = copied
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return copied


def _round_manifest() -> Manifest:
    first = composed()
    item = ToolItem(ref=("kb_chunk", "c9", 1), type="kb_chunk", status="evidence", text="more")
    entry = tool_result_entry("evt_1", "search_memory", FittedResult("r", 3, (item,), (), "truncated"), 1, "c1", None)
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search_memory", "arguments": "{}"}}]}
    return first.next_round("ctx_first", {"model": "m", "messages": [assistant]}, 4600, assistant, [entry])


@pytest.mark.slow  # every node of a manifest replaced, each checked twice
@pytest.mark.parametrize("which", ["first window", "tool round"])
def test_the_compiled_manifest_check_agrees_with_jsonschema_on_every_node_replaced(which):
    document = json.loads(json.dumps(composed() if which == "first window" else _round_manifest()))
    check, full = schemas.checker(schemas.MANIFEST), schemas.validator(schemas.MANIFEST)
    tried = disagreements = 0
    for path in list(_paths(document))[1:]:
        for new in REPLACEMENTS:
            candidate_document = _replaced(document, path, new)
            tried += 1
            if check(candidate_document) != full.is_valid(candidate_document):
                disagreements += 1
                pytest.fail(f"{path} = {new!r}: compiled {check(candidate_document)}, jsonschema "
                            f"{full.is_valid(candidate_document)}")
    assert tried > 1000 and disagreements == 0


def test_the_compiled_budget_check_agrees_with_jsonschema():
    check, full = schemas.checker(schemas.BUDGET), schemas.validator(schemas.BUDGET)
    documents = [ARTICLE] + [_mutated(mutate) for _, mutate, _ in JSON_BROKEN]
    documents += [_replaced(ARTICLE, path, new) for path in list(_paths(ARTICLE))[1:] for new in REPLACEMENTS]
    assert [check(d) for d in documents] == [full.is_valid(d) for d in documents]


def test_the_compiled_check_refuses_a_keyword_it_does_not_know():
    with pytest.raises(ValueError, match="patternProperties"):
        compile_check({"type": "object", "patternProperties": {"^x": {"type": "string"}}})


def _mutated(mutate):
    data = article()
    mutate(data)
    return data
