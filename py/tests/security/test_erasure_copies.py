"""Finding 4: erasure missed copies. After `ctxasm erase` of a chunk a tool result had quoted, the tool_result
event still held the chunk's text (erase did not follow conversation_memory.source_refs); model responses that
quoted it stayed; context_compression.source_hash kept the sha256 of the erased text (which confirms a guess);
provider requests of later rounds were not followed. Dead row versions kept the text until a VACUUM nobody ran.

Now erase follows every copy until nothing new turns up, clears source_hash, reports what it removed per table,
and `ctxasm erase --vacuum` vacuums what it touched. (Oracle's reads AS OF an older SCN: test_oracle_static.)"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time, record_provider_request

from ..conftest import TEST_DATABASE
from .helpers import QUESTION, admin_session, as_owner, every_table_containing

SECRET = "Quokka-Vellum-9152"
CONTENT = f"Helios-RAG BEIR results were first shared in the {SECRET} briefing."


def seeded_window(target):
    """A document holding the secret, its compression, a window that rendered it and its recorded request."""
    def seed(store):
        store.put_memory("kb_document", {"id": "doc_secret", "title": f"{SECRET} briefing",
                                         "valid_from": "2026-09-01T00:00:00Z", "content": CONTENT})
        store.put_memory("compression", {
            "id": "cmp_secret", "source_type": "kb_document", "source_id": "doc_secret", "source_version": 1,
            "source_hash": hashlib.sha256(CONTENT.encode()).hexdigest(), "generating_model": "extractive",
            "prompt_version": "p1", "content": "A briefing, in short."})
    as_owner(target, seed)
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_research", "fact_check", QUESTION)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, parse_time("2026-09-28T12:00:00"))
        record_provider_request(store, window)
    assert any(m["ref"] == ["kb_document", "doc_secret", 1] for m in window.manifest["memories"])
    return window


def record_copies(target, window) -> None:
    """What the agent loop writes: a tool result quoting the document (its source_refs name it), the model's
    response quoting it (linked to the window), and a later round's request, linked to a round manifest."""
    doc = {"type": "kb_document", "id": "doc_secret", "version": 1}
    manifest = {"type": "manifest", "id": window.manifest_id, "version": 1}

    def write(store):
        event = {"role": "event", "user_id": "jane", "agent_id": "research-assistant",
                 "thread_id": "thread_jane_research"}
        store.put_memory("conversation", {**event, "id": "tool_result_1", "event_type": "tool_result",
                                          "content": f"<tool_result>{CONTENT}</tool_result>",
                                          "content_json": {"tool": "search_memory"}, "source_refs": [doc]})
        store.put_memory("conversation", {**event, "id": "model_response_1", "event_type": "model_response",
                                          "content": "model response, round 1",
                                          "content_json": {"response": {"text": f"It was the {SECRET} briefing."}},
                                          "source_refs": [manifest]})
        store.put_memory("conversation", {**event, "id": "request_round_2", "event_type": "provider_request",
                                          "content": "provider request, round 2",
                                          "content_json": {"manifest_id": "manifest_round_2",
                                                           "request": {"messages": [{"role": "tool",
                                                                                     "content": CONTENT}]}},
                                          "source_refs": [{"type": "manifest", "id": "manifest_round_2",
                                                           "version": 1}]})
        # The round manifest rendered the tool result: its source refs say so.
        store.put_memory("source_ref", {"id": "manifest_round_2:1", "derived_type": "manifest",
                                        "derived_id": "manifest_round_2", "derived_version": 1,
                                        "source_type": "conversation", "source_id": "tool_result_1",
                                        "source_version": 1, "relation": "rendered",
                                        "content": "manifest_round_2 rendered conversation:tool_result_1@1"})
    as_owner(target, write)


def test_erase_reaches_tool_results_responses_requests_and_hashes(demo_target):
    window = seeded_window(demo_target)
    record_copies(demo_target, window)
    assert {"ctxasm.knowledge_base_document", "ctxasm.conversation_memory"} <= set(
        every_table_containing(demo_target, SECRET))

    report = as_owner(demo_target, lambda store: store.erase_report("kb_document", "doc_secret"))

    assert every_table_containing(demo_target, SECRET) == []
    assert every_table_containing(demo_target, "first shared in the") == []
    with admin_session(demo_target) as admin:
        hashes = admin.execute("SELECT source_hash, status FROM ctxasm.context_compression WHERE id = 'cmp_secret' "
                               "UNION ALL SELECT source_hash, status FROM ctxasm.context_compression_history "
                               "WHERE id = 'cmp_secret'").fetchall()
        assert hashes == [(None, "erased")]
        statuses = dict(admin.execute(
            "SELECT id, status FROM ctxasm.conversation_memory WHERE id IN "
            "('tool_result_1', 'model_response_1', 'request_round_2')").fetchall())
    assert statuses == {"tool_result_1": "erased", "model_response_1": "erased", "request_round_2": "erased"}
    erased = {tuple(item) for item in report["erased"]}
    assert {("kb_document", "doc_secret"), ("compression", "cmp_secret"), ("conversation", "tool_result_1"),
            ("conversation", "model_response_1"), ("conversation", "request_round_2")} <= erased
    assert report["tables"]["conversation_memory"]["rows"] >= 4  # three copies and the first request
    assert report["tables"]["knowledge_base_document"]["rows"] == 1
    assert report["manifests_marked"] >= 1


@pytest.mark.slow  # ctxasm processes
def test_ctxasm_erase_reports_per_table_and_vacuums_the_dead_versions(demo_target):
    window = seeded_window(demo_target)
    record_copies(demo_target, window)
    with admin_session(demo_target) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")

    def tuples_holding(text: str) -> int:
        """Row versions, live or dead, whose bytes hold `text` (heap pages read raw, as admin)."""
        with admin_session(demo_target) as admin:
            total = 0
            for table in ("knowledge_base_document", "conversation_memory", "knowledge_base_document_history",
                          "conversation_memory_history"):
                # A table partitioned by tenant keeps its rows in its partitions.
                relations = [row[0] for row in admin.execute(
                    "SELECT c.oid::regclass::text FROM pg_class AS c WHERE c.oid = %s::regclass AND c.relkind = 'r' "
                    "UNION ALL SELECT i.inhrelid::regclass::text FROM pg_inherits AS i "
                    "WHERE i.inhparent = %s::regclass", (f"ctxasm.{table}", f"ctxasm.{table}")).fetchall()]
                for relation in relations:
                    pages = admin.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int",
                                          (relation,)).fetchone()[0]
                    for page in range(pages):
                        total += admin.execute(
                            "SELECT count(*) FROM heap_page_items(get_raw_page(%s, %s)) "
                            "WHERE position(convert_to(%s, 'UTF8') IN t_data) > 0",
                            (relation, page, text)).fetchone()[0]
            return total

    assert tuples_holding(SECRET) > 0
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    erased = subprocess.run([sys.executable, "-m", "ctxasm.cli", "erase", "kb_document", "doc_secret", "--tenant",
                             "acme", "--vacuum", "--json"], env=env, capture_output=True, text=True)
    assert erased.returncode == 0, erased.stderr
    report = json.loads(erased.stdout)
    assert {"knowledge_base_document", "conversation_memory", "context_compression"} <= set(report["tables"])
    assert {"knowledge_base_document", "knowledge_base_document_history", "conversation_memory"} <= set(
        report["vacuumed"])
    assert tuples_holding(SECRET) == 0
    text = subprocess.run([sys.executable, "-m", "ctxasm.cli", "erase", "conversation", "turn_jane_0001", "--tenant",
                           "acme"], env=env, capture_output=True, text=True)
    assert text.returncode == 0, text.stderr
    assert "conversation_memory" in text.stdout and "--vacuum" in text.stdout
