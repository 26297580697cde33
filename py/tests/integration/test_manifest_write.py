"""record_manifest on the real database: the event row and its source refs written by static statements, what
each bad manifest is refused with (naming the field or the relation), and that a refused manifest leaves nothing."""

from __future__ import annotations

import copy

import pytest

from ctxasm import contract_constants, errors
from ctxasm.contract_constants import MAX_MANIFEST_REFS
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import read_as_owner

QUESTION = "Which reranker did we settle on, and why?"


@pytest.fixture()
def window(demo_target):
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check", question=QUESTION)
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, parse_time("2026-09-28T12:00:00"))


def record(target, manifest: dict) -> str:
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        return store.record_manifest(manifest)


def manifests(target) -> int:
    return read_as_owner(target, "acme", "SELECT count(*) FROM ctxasm.conversation_memory "
                                         "WHERE event_type = 'context_manifest'")[0][0]


def test_the_event_row_carries_its_scope_summary_and_stored_text_columns(demo_target, window):
    row = read_as_owner(demo_target, "acme",
                        "SELECT version, status, user_id, agent_id, thread_id, role, content, content_json, "
                        "text_key IS NOT NULL, pointer_text IS NOT NULL, search_text IS NOT NULL "
                        "FROM ctxasm.conversation_memory WHERE id = %s", (window.manifest_id,))
    assert len(row) == 1
    version, status, user_id, agent_id, thread_id, role, content, stored, *computed = row[0]
    assert (version, status, user_id, agent_id, thread_id, role) == (
        1, "active", "jane", "research-assistant", "thread_jane_research", "event")
    manifest = window.manifest
    assert content == (f"context manifest: {len(manifest['memories'])} memories rendered, "
                       f"{len(manifest['excluded'])} excluded, request {manifest['request_hash']}")
    assert stored == manifest
    # the generated columns are the database's, as for any other row: the stored text columns, and no search
    # text (only messages are searched)
    assert computed == [True, True, False]


def test_every_dependency_is_one_source_ref_numbered_without_a_gap(demo_target, window):
    refs = read_as_owner(demo_target, "acme",
                         "SELECT id, relation, user_id, agent_id, thread_id, content FROM ctxasm.context_source_ref "
                         "WHERE derived_type = 'manifest' AND derived_id = %s", (window.manifest_id,))
    manifest = window.manifest
    expected = (len(manifest["memories"]) + len(manifest["excluded"]) + 1
                + sum(1 for m in manifest["memories"] if m.get("summary_ref"))
                + sum(len(m.get("annotation_refs") or []) for m in manifest["memories"]))
    assert sorted(int(r[0].rsplit(":", 1)[1]) for r in refs) == list(range(1, expected + 1))
    assert {r[2:5] for r in refs} == {("jane", "research-assistant", "thread_jane_research")}
    budget = [r for r in refs if r[1] == "budget"]
    assert [r[5] for r in budget] == [f"manifest {window.manifest_id} budget guideline:context_context_budget@1"]


@pytest.mark.parametrize(("change", "error", "named"), [
    (lambda m: m["scope"].update(thread_id="t" * 65), errors.InvalidField, "conversation.thread_id: longer than 64"),
    (lambda m: m["excluded"].append({"ref": ["entity", "x" * 129, 1]}), errors.InvalidField,
     "source_ref.source_id: longer than 128"),
    (lambda m: m["excluded"].append({"ref": ["e" * 33, "x", 1]}), errors.InvalidField,
     "source_ref.source_type: longer than 32"),
    (lambda m: m["excluded"].append({"ref": ["entity", "x"]}), errors.InvalidManifest,
     "a excluded reference must be [type, id, version]"),
    (lambda m: m["memories"][0].update(ref="entity:x"), errors.InvalidManifest,
     "a rendered reference must be [type, id, version]"),
])
def test_a_bad_manifest_is_refused_naming_what_is_wrong_and_leaves_nothing(demo_target, window, change, error, named):
    before = manifests(demo_target)
    bad = copy.deepcopy(window.manifest)
    change(bad)
    with pytest.raises(error) as raised:
        record(demo_target, bad)
    assert named in str(raised.value)
    assert manifests(demo_target) == before


def test_the_first_bad_reference_in_manifest_order_is_the_one_named(demo_target, window):
    bad = copy.deepcopy(window.manifest)
    bad["excluded"].append({"ref": ["entity", "y" * 129, 1]})  # too long, but after the rendered one
    bad["memories"][-1]["ref"] = ["entity", "z"]  # the wrong shape, and first in order
    with pytest.raises(errors.InvalidManifest, match="a rendered reference"):
        record(demo_target, bad)


# --- the bounds: a manifest's text and its dependency references, as the write path bounds other JSON -----------


def dependency_count(manifest: dict) -> int:
    """The context_source_ref rows record_manifest writes for `manifest` (ctxasm.manifest_refs)."""
    return (len(manifest["memories"]) + len(manifest["excluded"]) + 1
            + sum(1 for m in manifest["memories"] if isinstance(m.get("summary_ref"), list))
            + sum(len(m.get("annotation_refs") or []) for m in manifest["memories"]))


def with_references(manifest: dict, total: int) -> dict:
    """`manifest` with excluded rows added until it has `total` dependency references."""
    grown = copy.deepcopy(manifest)
    missing = total - dependency_count(grown)
    assert missing > 0
    grown["excluded"] += [{"ref": ["entity", f"probe_{n}", 1], "rule": "limit"} for n in range(missing)]
    assert dependency_count(grown) == total
    return grown


def source_refs(target, manifest_id: str) -> int:
    return read_as_owner(target, "acme", "SELECT count(*) FROM ctxasm.context_source_ref "
                                         "WHERE derived_type = 'manifest' AND derived_id = %s", (manifest_id,))[0][0]


def test_a_manifest_longer_than_a_stored_json_field_is_refused_and_leaves_nothing(demo_target, window):
    """A 10,000,000-character manifest was once stored whole: the manifest is a JSON field of its event row, so
    it may be as long as put_memory lets any JSON field be (max_json_chars), no longer."""
    before = manifests(demo_target)
    bad = copy.deepcopy(window.manifest)
    bad["question"] = "x" * contract_constants.MAX_JSON_CHARS
    with pytest.raises(errors.InvalidManifest) as raised:
        record(demo_target, bad)
    assert f"characters of JSON, more than {contract_constants.MAX_JSON_CHARS}" in str(raised.value)
    assert manifests(demo_target) == before


def test_a_manifest_is_recorded_with_as_many_references_as_the_bound_and_refused_with_one_more(demo_target, window):
    """One call once wrote 200,000 reference rows: at most MAX_MANIFEST_REFS are written, counted before
    anything is (the message names the count), and a manifest at the bound is recorded whole."""
    before = manifests(demo_target)
    with pytest.raises(errors.InvalidManifest) as raised:
        record(demo_target, with_references(window.manifest, MAX_MANIFEST_REFS + 1))
    assert (f"the manifest has {MAX_MANIFEST_REFS + 1} dependency references, more than {MAX_MANIFEST_REFS}"
            in str(raised.value))
    assert manifests(demo_target) == before
    manifest_id = record(demo_target, with_references(window.manifest, MAX_MANIFEST_REFS))
    assert source_refs(demo_target, manifest_id) == MAX_MANIFEST_REFS
