"""Findings 4 and 5 of the operator's-view review. Erasure missed what was made from the erased row: the answer a
model wrote from an erased chunk (stored as the thread's next assistant turn) survived and was rendered again; a
summary whose source_refs cited an erased fact survived and was rendered. `ctxasm erase --vacuum` reported
success while another session's older snapshot kept the dead row versions, and the GIN index kept the erased
text's words after VACUUM, undocumented.

Now erasure follows derivation by the stored provenance (every table's source_refs, context_source_ref, the
windows that showed the text and what was made from them), and `--vacuum` checks VACUUM's horizon against the
erasure, exits non-zero when it had to keep versions, and rebuilds the text and vector indexes it touched."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from ctxasm.agent.loop import ANSWERED, AgentLoop
from ctxasm.agent.model_clients import OpenAIClient
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.services.erase import vacuum_tables

from ..chat_server import ChatServer
from ..conftest import TEST_DATABASE
from .helpers import QUESTION, admin_session, as_owner, every_table_containing

AT = parse_time("2026-09-28T12:00:00")
SECRET = "Wombat-Lantern-4471"
JANE = {"user_id": "jane", "agent_id": "research-assistant", "thread_id": "thread_jane_research"}


def window(target, question: str = QUESTION):
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", question)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, AT)


def statuses(target, table: str, ids: tuple[str, ...]) -> dict[str, str]:
    with admin_session(target) as admin:
        return dict(admin.execute(f"SELECT id, status FROM ctxasm.{table} WHERE tenant_id = 'acme' AND id = ANY (%s)",
                                  (list(ids),)).fetchall())


def test_an_answer_the_model_wrote_from_an_erased_chunk_is_erased_and_not_shown_again(demo_target):
    as_owner(demo_target, lambda store: store.put_memory("kb_document", {
        "id": "doc_wombat", "title": "Helios-RAG BEIR briefing", "valid_from": "2026-09-01T00:00:00Z",
        "content": f"Helios-RAG BEIR results were first shared in the {SECRET} briefing on nDCG@10."}))
    shown = window(demo_target)
    assert any(m["ref"][:2] == ["kb_document", "doc_wombat"] for m in shown.manifest["memories"])
    cites = [{"type": "manifest", "id": shown.manifest_id, "version": 1}]

    def turns(store):  # what the agent loop stores when the answer comes: the question, then the answer
        store.add_turn({"id": "turn_question", "role": "user", "content": QUESTION, "source_refs": cites, **JANE})
        store.add_turn({"id": "turn_answer", "role": "assistant", "source_refs": cites, **JANE,
                        "content": f"It was first shared in the {SECRET} briefing."})
    as_owner(demo_target, turns)
    assert SECRET in json.dumps(window(demo_target, "Where were the BEIR results first shared?").request)

    report = as_owner(demo_target, lambda store: store.erase_report("kb_document", "doc_wombat"))

    assert ["conversation", "turn_answer"] in report["erased"]
    assert statuses(demo_target, "conversation_memory", ("turn_question", "turn_answer")) == {
        "turn_question": "active", "turn_answer": "erased"}, "the user's own question stays; the answer goes"
    later = window(demo_target, "Where were the BEIR results first shared?")
    assert SECRET not in json.dumps(later.request) and SECRET not in json.dumps(later.manifest)


def test_an_answer_the_agent_loop_wrote_from_an_erased_chunk_is_erased_and_not_shown_again(demo_target):
    """The same, end to end: the agent loop itself (what `ask` and the API run) assembles the window, sends it to
    an OpenAI-compatible server over HTTP, records the request and the response, and stores the question and the
    answer as the thread's next turns. Erasing the chunk the window showed takes the answer and what recorded it,
    and leaves the user's question."""
    as_owner(demo_target, lambda store: store.put_memory("kb_document", {
        "id": "doc_wombat_loop", "title": "Helios-RAG BEIR briefing", "valid_from": "2026-09-01T00:00:00Z",
        "content": f"Helios-RAG BEIR results were first shared in the {SECRET} briefing on nDCG@10."}))
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", QUESTION)
    with ChatServer() as server, pgconn.connect(demo_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        client = OpenAIClient(api_key="local-test-server", base_url=server.base_url, max_retries=0)
        run = asyncio.run(AgentLoop(store, spec, AT, client, roles=("researcher",)).run())
        store.commit()
    assert run.status == ANSWERED and run.answer and len(server.requests) == 1
    assert any(m["ref"][:2] == ["kb_document", "doc_wombat_loop"] for m in run.window.manifest["memories"])
    question, answer = (turn.id for turn in run.turns)
    records = (run.rounds[0].request_record, run.rounds[0].response_record)
    tag = run.answer.split(":")[0]  # "Canned summary <digest>": this answer's own words, in no other row
    assert every_table_containing(demo_target, tag), "the loop stored its answer"
    assert tag in json.dumps(window(demo_target, "What did you answer about Helios-RAG?").request)

    report = as_owner(demo_target, lambda store: store.erase_report("kb_document", "doc_wombat_loop"))

    assert ["conversation", answer] in report["erased"]
    assert statuses(demo_target, "conversation_memory", (question, answer, *records)) == {
        question: "active", answer: "erased", records[0]: "erased", records[1]: "erased"}
    assert every_table_containing(demo_target, tag) == []
    later = window(demo_target, "What did you answer about Helios-RAG?")
    assert tag not in json.dumps(later.request) and SECRET not in json.dumps(later.request)


def test_a_summary_made_from_an_erased_fact_is_erased_and_not_rendered(demo_target):
    def seed(store):
        store.put_memory("entity", {"id": "fact_wombat", "subject": "model:helios-rag", "predicate": "briefing",
                                    "content": f"Helios-RAG was briefed as {SECRET}.",
                                    "valid_from": "2026-08-01T00:00:00Z"})
        # One summary names its source in source_refs, another only through a context_source_ref row (as a
        # model-written summary may record it): both are provenance.
        store.put_memory("summary", {"id": "summary_by_refs", "valid_from": "2026-08-02T00:00:00Z",
                                     "source_refs": [{"type": "entity", "id": "fact_wombat", "version": 1}],
                                     "content": f"In August Helios-RAG, briefed as {SECRET}, led the evaluation."})
        store.put_memory("summary", {"id": "summary_by_link", "valid_from": "2026-08-03T00:00:00Z",
                                     "content": f"The {SECRET} briefing decided the Helios-RAG evaluation."})
        store.put_memory("source_ref", {"id": "link_summary_wombat", "derived_type": "summary",
                                        "derived_id": "summary_by_link", "derived_version": 1,
                                        "source_type": "entity", "source_id": "fact_wombat", "source_version": 1,
                                        "relation": "summarized_from", "content": "summary of fact_wombat"})
    as_owner(demo_target, seed)
    question = "What did the August Helios-RAG evaluation decide?"
    assert SECRET in json.dumps(window(demo_target, question).request)

    report = as_owner(demo_target, lambda store: store.erase_report("entity", "fact_wombat"))

    assert {("summary", "summary_by_refs"), ("summary", "summary_by_link")} <= {tuple(i) for i in report["erased"]}
    assert set(statuses(demo_target, "summarization_memory", ("summary_by_refs", "summary_by_link")).values()) == {
        "erased"}
    assert SECRET not in json.dumps(window(demo_target, question).request)


def _erase_with_vacuum(memory_id: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    return subprocess.run([sys.executable, "-m", "ctxasm.cli", "erase", "kb_document", memory_id, "--tenant", "acme",
                           "--vacuum", "--json"], env=env, capture_output=True, text=True)


def _index_pages_holding(target, table: str, word: str) -> int:
    """Pages of the GIN indexes of acme's partition of `table` whose raw bytes hold `word` (as admin)."""
    with admin_session(target) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        indexes = [row[0] for row in admin.execute(
            "SELECT i.indexrelid::regclass::text FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
            "JOIN pg_am AS a ON a.oid = c.relam WHERE a.amname = 'gin' "
            "AND i.indrelid = format('ctxasm.%%I', ctxasm.tenant_partition('acme', %s))::regclass", (table,))]
        found = 0
        for index in indexes:
            pages = admin.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int",
                                  (index,)).fetchone()[0]
            for page in range(pages):
                found += admin.execute("SELECT position(convert_to(%s, 'UTF8') IN get_raw_page(%s, %s)) > 0",
                                       (word, index, page)).fetchone()[0]
        return found


def test_erase_vacuum_says_so_when_an_older_snapshot_keeps_the_erased_versions(demo_target):
    as_owner(demo_target, lambda store: store.put_memory("kb_document", {
        "id": "doc_kept", "title": "Kept", "valid_from": "2026-09-01T00:00:00Z",
        "content": f"The {SECRET} note about retrieval baselines."}))
    with admin_session(demo_target) as other:  # any session's snapshot older than the erasure, any tenant's
        other.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        other.execute("SELECT count(*) FROM ctxasm.ctx_tenant").fetchone()
        held = _erase_with_vacuum("doc_kept")
        other.execute("ROLLBACK")
    # The report on stdout, then the error: anything else failed before the report (its message on stderr).
    assert held.returncode == 1 and held.stdout.strip(), held.stderr
    report = json.loads(held.stdout)
    assert report["complete"] is False and report["removable_cutoff"] is not None
    assert "vacuum_incomplete" in held.stderr
    # Once that transaction has ended, the vacuum completes.
    again = vacuum_tables(demo_target, "acme", list(report["tables"]), report["erased_xid"])
    assert again.complete, again


def test_erase_vacuum_rebuilds_the_text_index_that_kept_the_erased_words(demo_target):
    word = "quokkavellumite"
    as_owner(demo_target, lambda store: store.put_memory("kb_document", {
        "id": "doc_words", "title": "Words", "valid_from": "2026-09-01T00:00:00Z",
        "content": f"The {word} benchmark compares retrievers."}))
    with admin_session(demo_target) as admin:  # the lexeme the GIN index keeps (English stemming)
        lexeme = admin.execute("SELECT (tsvector_to_array(to_tsvector('english', %s)))[1]", (word,)).fetchone()[0]
    assert _index_pages_holding(demo_target, "knowledge_base_document", lexeme) > 0
    erased = _erase_with_vacuum("doc_words")
    assert erased.returncode == 0, erased.stderr
    report = json.loads(erased.stdout)
    assert report["complete"] is True and report["reindexed"]
    assert _index_pages_holding(demo_target, "knowledge_base_document", lexeme) == 0
