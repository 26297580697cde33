"""Erasure follows provenance a claim could have written, and the chunks of a document.

Finding (high): a claim for one user could make the erasure of its own row reach a row of the whole tenant. The
application may write context_source_ref rows itself (put_memory('source_ref', ...)), so Jane's claim wrote one
saying the tenant's guideline was derived from her own fact, erased her fact, and erasure followed the reference
and scrubbed the guideline. The report also listed rows of another user as erased that row level security had
left untouched. Now a context_source_ref row is followed only to a derived row its own user and agent could have
written (for a manifest: one of theirs), and the report lists only the rows erased. A row's own source_refs are
still followed whatever its scope: a tenant summary made from Jane's turn goes when her turn does.

Finding (medium): erasing a kb_document left its kb_chunk rows (a chunk names its document by document_id, not by
source_refs). Now the chunks go with their document, and whatever was made from them too.

The Oracle twin (CTX_MEMORY.copies_of, erase_report) is checked statically at the end, as test_oracle_static.py
does for the rest of erasure."""

from __future__ import annotations

import json

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from .helpers import admin_session, app_session, as_owner, claim, every_table_containing
from .test_oracle_static import ORACLE, code, routine

AT = parse_time("2026-09-28T12:00:00")
SECRET = "Pangolin-Harbour-9182"
JANE = {"user_id": "jane", "agent_id": "research-assistant"}
PUT = "SELECT ctx_memory.put_memory(%s, %s::jsonb)"
ERASE = "SELECT ctx_memory.erase_report(%s, %s)"


def as_claim(target, who: str, *calls: tuple[str, tuple]) -> list:
    """Each (query, params) in one transaction of the application role under the claim `who`, committed; the
    first column of each one's row."""
    with app_session(target) as app:
        app.execute("SELECT ctx_session.set_tenant(%s)", (who,))
        results = [app.execute(query, params).fetchone()[0] for query, params in calls]
        app.commit()
    return results


def put(memory_type: str, record: dict) -> tuple[str, tuple]:
    return PUT, (memory_type, json.dumps(record))


def jane() -> str:
    return claim("acme", "jane", "research-assistant")


def rows(target, table: str, ids: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """id -> (status, content) of the newest version of each, as admin (no policy filters it)."""
    with admin_session(target) as admin:
        return {i: (s, c) for i, s, c in admin.execute(
            f"SELECT DISTINCT ON (id) id, status, content FROM ctxasm.{table} "
            "WHERE tenant_id = 'acme' AND id = ANY (%s) ORDER BY id, version DESC", (list(ids),)).fetchall()}


def source_ref(ref_id: str, source: tuple[str, str], derived: tuple[str, str], **scope) -> dict:
    return {"id": ref_id, "source_type": source[0], "source_id": source[1], "source_version": 1,
            "derived_type": derived[0], "derived_id": derived[1], "derived_version": 1, "relation": "derived",
            "content": f"{derived[0]} {derived[1]} from {source[0]} {source[1]}", **scope}


def janes_fact(fact_id: str) -> dict:
    return {"id": fact_id, "subject": "s", "predicate": "p", "content": f"Jane's note {SECRET}", **JANE}


def test_a_reference_a_users_claim_wrote_does_not_make_her_erasure_reach_a_tenant_row(demo_target):
    """The attack: Jane's own fact, her own context_source_ref naming the tenant's guideline as derived
    from it, then the erasure of her fact."""
    before = rows(demo_target, "guideline_memory", ("guideline_cite_sources",))
    report = as_claim(demo_target, jane(),
                      put("entity", janes_fact("j1")),
                      put("source_ref", source_ref("sr1", ("entity", "j1"), ("guideline", "guideline_cite_sources"),
                                                   **JANE)),
                      (ERASE, ("entity", "j1")))[-1]

    assert report["erased"] == [["entity", "j1"]], report
    assert rows(demo_target, "guideline_memory", ("guideline_cite_sources",)) == before
    assert before["guideline_cite_sources"][0] == "active"
    assert rows(demo_target, "entity_memory", ("j1",))["j1"][0] == "erased"


def test_the_report_lists_no_row_of_another_user_that_row_level_security_left_alone(demo_target):
    """Bob's fact, named as derived from Jane's by a reference Jane wrote, and by one a tenant-wide claim wrote:
    neither erasure under Jane's claim touches it, and the report does not say it went. A tenant-wide claim's
    erasure of Jane's fact does follow the tenant-wide reference to it (right to erasure)."""
    as_owner(demo_target, lambda store: store.put_memory("entity", {
        "id": "bob_fact", "subject": "s", "predicate": "p", "content": "Bob's note",
        "user_id": "bob", "agent_id": "research-assistant"}))
    as_claim(demo_target, jane(),
             put("entity", janes_fact("j2")),
             put("source_ref", source_ref("sr_bob_by_jane", ("entity", "j2"), ("entity", "bob_fact"), **JANE)))
    as_owner(demo_target, lambda store: store.put_memory("source_ref", source_ref(
        "sr_bob_by_tenant", ("entity", "j2"), ("entity", "bob_fact"))))

    report = as_claim(demo_target, jane(), (ERASE, ("entity", "j2")))[0]

    assert report["erased"] == [["entity", "j2"]], report
    assert report["tables"] == {"entity_memory": {"rows": 1, "history_rows": 0}}
    assert rows(demo_target, "entity_memory", ("bob_fact",))["bob_fact"][0] == "active"

    wide = as_owner(demo_target, lambda store: store.erase_report("entity", "j2"))
    assert ["entity", "bob_fact"] in wide["erased"]
    assert rows(demo_target, "entity_memory", ("bob_fact",))["bob_fact"][0] == "erased"


def test_a_tenant_row_made_from_janes_turn_still_goes_with_it(demo_target):
    """What stays: a tenant summary whose own source_refs cite Jane's turn, and one a tenant-wide claim linked to
    it by a context_source_ref, are erased with her turn under her own claim, though wider than her claim. A
    summary linked only by a reference Jane's claim wrote is not (her claim could not have written it)."""
    as_claim(demo_target, jane(), put("conversation", {
        "id": "turn_jane", "role": "user", "turn_index": 1, "content": f"My code name is {SECRET}.", **JANE}))

    def seed(store):
        store.put_memory("summary", {"id": "summary_refs", "content": f"Jane's code name is {SECRET}.",
                                     "source_refs": [{"type": "conversation", "id": "turn_jane", "version": 1}]})
        store.put_memory("summary", {"id": "summary_tenant_link", "content": f"A user goes by {SECRET}."})
        store.put_memory("source_ref", source_ref("sr_tenant_link", ("conversation", "turn_jane"),
                                                  ("summary", "summary_tenant_link")))
        store.put_memory("summary", {"id": "summary_jane_link", "content": "The tenant's quarterly summary."})
    as_owner(demo_target, seed)
    as_claim(demo_target, jane(), put("source_ref", source_ref(
        "sr_jane_link", ("conversation", "turn_jane"), ("summary", "summary_jane_link"), **JANE)))

    report = as_claim(demo_target, jane(), (ERASE, ("conversation", "turn_jane")))[0]

    assert sorted(map(tuple, report["erased"])) == [
        ("conversation", "turn_jane"), ("summary", "summary_refs"), ("summary", "summary_tenant_link")], report
    states = rows(demo_target, "summarization_memory", ("summary_refs", "summary_tenant_link", "summary_jane_link"))
    assert {i: s for i, (s, _) in states.items()} == {
        "summary_refs": "erased", "summary_tenant_link": "erased", "summary_jane_link": "active"}
    assert every_table_containing(demo_target, SECRET) == []


def test_a_reference_jane_wrote_to_a_tenant_window_does_not_erase_what_was_made_from_it(demo_target):
    """The same through a window: a window of the agent for no one user, and the answer stored from it; Jane's
    claim writes a reference saying that window rendered her fact. Erasing her fact leaves the window unmarked and
    the answer in place."""
    spec = WindowSpec("acme", None, "research-assistant", None, "fact_check", "Which guideline applies?")
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        manifest_id = assemble(PostgresStore(connection), spec, AT).manifest_id
    as_owner(demo_target, lambda store: store.put_memory("conversation", {
        "id": "answer_tenant", "role": "assistant", "content": "Cite your sources.", "agent_id": "research-assistant",
        "source_refs": [{"type": "manifest", "id": manifest_id, "version": 1}]}))
    forged = source_ref("sr_window", ("entity", "j3"), ("manifest", manifest_id), **JANE) | {"relation": "rendered"}

    report = as_claim(demo_target, jane(), put("entity", janes_fact("j3")), put("source_ref", forged),
                      (ERASE, ("entity", "j3")))[-1]

    assert report["erased"] == [["entity", "j3"]] and report["manifests_marked"] == 0, report
    assert rows(demo_target, "conversation_memory", ("answer_tenant",))["answer_tenant"][0] == "active"


def test_erasing_a_document_erases_its_chunks_and_what_was_made_from_them(demo_target):
    def seed(store):
        store.put_memory("kb_document", {"id": "doc_pangolin", "title": "Pangolin briefing",
                                         "content": f"The {SECRET} briefing, in full."})
        store.put_memory("kb_document", {"id": "doc_other", "title": "Other", "content": "Another briefing."})
        for index in (1, 2):
            store.put_memory("kb_chunk", {"id": f"chunk_pangolin_{index}", "document_id": "doc_pangolin",
                                          "document_version": 1, "chunk_index": index,
                                          "content": f"Part {index} of the {SECRET} briefing."})
        store.put_memory("kb_chunk", {"id": "chunk_other", "document_id": "doc_other", "document_version": 1,
                                      "chunk_index": 1, "content": "Another briefing."})
        store.put_memory("summary", {"id": "summary_of_chunk", "content": f"The {SECRET} briefing, summarized.",
                                     "source_refs": [{"type": "kb_chunk", "id": "chunk_pangolin_2", "version": 1}]})
    as_owner(demo_target, seed)
    assert len(every_table_containing(demo_target, SECRET)) >= 3

    report = as_owner(demo_target, lambda store: store.erase_report("kb_document", "doc_pangolin"))

    assert {("kb_chunk", "chunk_pangolin_1"), ("kb_chunk", "chunk_pangolin_2"),
            ("summary", "summary_of_chunk")} <= set(map(tuple, report["erased"])), report
    assert ["kb_chunk", "chunk_other"] not in report["erased"]
    chunks = rows(demo_target, "knowledge_base_chunk", ("chunk_pangolin_1", "chunk_pangolin_2", "chunk_other"))
    assert {i: s for i, (s, _) in chunks.items()} == {
        "chunk_pangolin_1": "erased", "chunk_pangolin_2": "erased", "chunk_other": "active"}
    assert every_table_containing(demo_target, SECRET) == []


def test_the_oracle_twin_follows_the_same_rules():
    """CTX_MEMORY on Oracle (no Oracle database here): copies_of follows a context_source_ref only where its scope
    covers the derived row and takes a document's chunks; erase_report follows a manifest reference only to a
    manifest of its scope and reports only rows it erased."""
    memory = code(ORACLE / "api" / "ctx_memory.body.sql")
    copies = routine(memory, "copies_of")
    assert "provenance_covers(" in copies
    assert "from knowledge_base_chunk k" in copies and "k.document_id = in_id" in copies
    covers = routine(memory, "provenance_covers")
    assert "d.user_id <> :b_user_id" in covers and "d.agent_id <> :b_agent_id" in covers
    report = routine(memory, "erase_report")
    assert "m.user_id <> r.user_id" in report and "m.agent_id <> r.agent_id" in report
    assert "if l_rows > 0 then" in report
