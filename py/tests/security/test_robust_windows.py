"""Findings 8 and 12 of the operator's-view review: a fact revised 100 times, or history citing an erased row,
made every window of that scope fail with invalid_manifest ($.retrieval.items[20].slice: None: the superseded or
erased row a summary cited had no slice of its own); a 49 MB fact was accepted; replay's source list and score
map were unbounded.

Now a cited row is recorded under the recalled history that cites it, every stored field has a limit
(contract/constants.toml) refused with invalid_field naming the field, and select_window takes at most
max_replay_items sources and scores."""

from __future__ import annotations

import pytest

from ctxasm import contract_constants as limits
from ctxasm import errors
from ctxasm.core.compose import WindowSpec
from ctxasm.core.manifest import validate_manifest
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from .helpers import app_session, as_owner, become, refusal

AT = parse_time("2026-09-28T12:00:00")
QUESTION = "What does Vireo-Search score on the relevance benchmark?"


def window(target):
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", QUESTION)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, AT)


def test_a_fact_revised_a_hundred_times_and_cited_by_history_leaves_every_window_valid(demo_target):
    def revise(store):
        store.put_memory("entity", {"id": "fact_vireo", "subject": "model:vireo-search", "predicate": "score",
                                    "content": "Vireo-Search scores 0.10 on the relevance benchmark.",
                                    "valid_from": "2026-01-02T00:00:00Z"})
        for version in range(2, 102):
            store.supersede("entity", "fact_vireo", {
                "content": f"Vireo-Search scores 0.{version:03d} on the relevance benchmark (revision {version}).",
                "valid_from": f"2026-02-01T{version // 60:02d}:{version % 60:02d}:00Z"})
        # History that cites the first version, which retrieval no longer finds: it comes as a cited source.
        store.put_memory("summary", {"id": "summary_vireo", "valid_from": "2026-01-05T00:00:00Z",
                                     "source_refs": [{"type": "entity", "id": "fact_vireo", "version": 1}],
                                     "content": "Early on we noted Vireo-Search scored 0.10 on the relevance benchmark."})
    as_owner(demo_target, revise)
    shown = window(demo_target)
    validate_manifest(shown.manifest)
    cited = [i for i in shown.manifest["retrieval"]["items"] if i["ref"] == ["entity", "fact_vireo", 1]]
    assert cited and cited[0]["slice"] == "recalled_history"
    assert any(m["ref"] == ["entity", "fact_vireo", 101] for m in shown.manifest["memories"])


def test_history_citing_an_erased_row_leaves_every_window_valid(demo_target):
    def seed(store):
        store.put_memory("entity", {"id": "fact_gone", "subject": "model:vireo-search", "predicate": "score",
                                    "content": "Vireo-Search scores 0.55 on the relevance benchmark.",
                                    "valid_from": "2026-01-02T00:00:00Z"})
        store.erase("entity", "fact_gone")
        # Written after the erasure (erasure took what existed then): it cites a row that is erased now.
        store.put_memory("summary", {"id": "summary_gone", "valid_from": "2026-01-05T00:00:00Z",
                                     "source_refs": [{"type": "entity", "id": "fact_gone", "version": 1}],
                                     "content": "We had a Vireo-Search relevance benchmark score on file."})
    as_owner(demo_target, seed)
    shown = window(demo_target)
    validate_manifest(shown.manifest)
    assert all(i.get("slice") for i in shown.manifest["retrieval"]["items"])


def test_history_citing_an_erased_document_records_it_under_that_history(demo_target):
    """The same with a row that is in no slice of its own once erased (a document: an erased fact of the scope
    still comes as a durable fact, which hid the missing slice): the window cites it under the recalled history
    that cites it, and the manifest is valid."""
    def seed(store):
        store.put_memory("kb_document", {"id": "doc_gone", "title": "Vireo-Search benchmark note",
                                         "content": "Vireo-Search scores 0.55 on the relevance benchmark.",
                                         "valid_from": "2026-01-02T00:00:00Z"})
        store.erase("kb_document", "doc_gone")
        store.put_memory("summary", {"id": "summary_gone", "valid_from": "2026-01-05T00:00:00Z",
                                     "source_refs": [{"type": "kb_document", "id": "doc_gone", "version": 1}],
                                     "content": "We had a Vireo-Search relevance benchmark score on file."})
    as_owner(demo_target, seed)
    shown = window(demo_target)
    validate_manifest(shown.manifest)
    assert any(m["ref"] == ["summary", "summary_gone", 1] for m in shown.manifest["memories"])
    cited = [i for i in shown.manifest["retrieval"]["items"] if i["ref"] == ["kb_document", "doc_gone", 1]]
    assert cited and cited[0]["slice"] == "recalled_history", cited


@pytest.mark.parametrize("memory_type, record, field, limit", [
    ("entity", {"subject": "s", "predicate": "p", "content": "x" * (limits.MAX_TEXT_CHARS + 1)}, "entity.content",
     limits.MAX_TEXT_CHARS),
    ("conversation", {"role": "user", "thread_id": "t", "content": "x" * (limits.MAX_TEXT_CHARS + 1)},
     "conversation.content", limits.MAX_TEXT_CHARS),
    ("kb_document", {"title": "t", "content": "x" * (limits.MAX_DOCUMENT_CHARS + 1)}, "kb_document.content",
     limits.MAX_DOCUMENT_CHARS),
    ("summary", {"content": "s", "content_json": {"blob": "x" * limits.MAX_JSON_CHARS}}, "summary.content_json",
     limits.MAX_JSON_CHARS),
    ("summary", {"content": "s", "source_refs": [{"type": "entity", "id": f"f{i}", "version": 1}
                                                 for i in range(limits.MAX_SOURCE_REFS + 1)]},
     "summary.source_refs", limits.MAX_SOURCE_REFS),
])
def test_every_stored_field_has_a_limit(demo_target, memory_type, record, field, limit):
    with pytest.raises(errors.InvalidField, match=rf"invalid_field: {field}: .*{limit}"):
        as_owner(demo_target, lambda store: store.put_memory(memory_type, {"id": "too_big", **record}))


def test_a_document_within_its_limit_is_stored(demo_target):
    content = "Vireo " * (limits.MAX_TEXT_CHARS // 5)  # longer than a fact may be, well within a document's
    as_owner(demo_target, lambda store: store.put_memory("kb_document", {"id": "doc_long", "title": "Long",
                                                                         "content": content}))


@pytest.mark.parametrize("argument", ["in_sources", "in_scores"])
def test_replay_inputs_are_bounded(demo_target, argument):
    too_many = limits.MAX_REPLAY_ITEMS + 1
    value = ([{"ref": ["entity", f"f{i}", 1], "origin": "scope", "slice": "durable_facts"} for i in range(too_many)]
             if argument == "in_sources" else {f"entity:f{i}:1": 0.5 for i in range(too_many)})
    from psycopg.types.json import Jsonb

    with app_session(demo_target) as app:
        become(app, "acme")
        answer = refusal(app, f"SELECT ctx_assembly.select_window('jane', 'research-assistant', NULL, 'fact_check', "
                              f"%s, 'q', {argument} => %s)", (AT, Jsonb(value)))
    assert answer is not None and answer[0] == "CX108" and str(limits.MAX_REPLAY_ITEMS) in answer[1], answer
