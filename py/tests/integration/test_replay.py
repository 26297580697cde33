"""Replay (match, mismatch, each unavailable reason) and erasure, on the real database."""

from __future__ import annotations

import hashlib
import json
import re

import psycopg

from ctxasm.core.compose import WindowSpec, code_hash
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time, record_provider_request
from ctxasm.services.replay import replay

from .test_assembly import AT, jane

SECRET = "Zebra-Quartz-4471"


def window_for(target, spec: WindowSpec = None):
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec or jane(), parse_time(AT))


def replay_of(target, manifest_id: str, tenant: str = "acme"):
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return replay(PostgresStore(connection), tenant, manifest_id)


def as_owner(target, work):
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        result = work(store, connection)
        store.commit()
        return result


def test_replay_matches(demo_target):
    window = window_for(demo_target)
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("match", 0), result.reason
    assert result.rebuilt_hash == result.recorded_hash == window.manifest["request_hash"]


def test_replay_holds_after_the_sources_change(demo_target):
    old = window_for(demo_target)

    def change(store, _):
        store.supersede("entity", "fact_letta_eviction_policy",
                        {"content": "The Letta paper pages old messages out to archival memory.",
                         "valid_from": "2026-09-20T00:00:00Z"})
        store.put_memory("kb_document", {"id": "doc_new_benchmark", "title": "A newer benchmark report",
                                         "valid_from": "2026-09-25T00:00:00Z",
                                         "content": "Helios-RAG scores 0.78 on BEIR; a newer router beats it."})
        store.delete_memory("conversation", "turn_jane_0001", "2026-09-27T00:00:00Z")
    as_owner(demo_target, change)

    result = replay_of(demo_target, old.manifest_id)
    assert result.status == "match", result.reason
    assert any("turn_jane_0001" in note and "deleted now" in note for note in result.notes)
    fresh = window_for(demo_target)
    assert fresh.manifest["request_hash"] != old.manifest["request_hash"]


def tamper(target, manifest_id: str, mutate) -> None:
    def work(_, connection):
        stored = connection.execute("SELECT content_json FROM ctxasm.conversation_memory WHERE id = %s",
                                    (manifest_id,)).fetchone()[0]
        mutate(stored)
        connection.execute("UPDATE ctxasm.conversation_memory SET content_json = %s WHERE id = %s",
                           (json.dumps(stored), manifest_id))
    as_owner(target, work)


def test_tampered_manifest_is_a_mismatch_naming_the_difference(demo_target):
    window = window_for(demo_target)
    durable = next(i for i, m in enumerate(window.manifest["memories"]) if m["slice"] == "durable_facts")

    def demote(manifest):
        manifest["memories"][durable]["tier"] = "pointer"
    tamper(demo_target, window.manifest_id, demote)
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("mismatch", 5)
    assert f"memories[{durable}].tier: recorded 'pointer', rebuilt 'full'" in result.reason


def test_tampered_hash_is_a_mismatch(demo_target):
    window = window_for(demo_target)
    tamper(demo_target, window.manifest_id, lambda m: m.update(request_hash="0" * 64))
    result = replay_of(demo_target, window.manifest_id)
    assert result.status == "mismatch" and "request hash differs" in result.reason


def test_other_renderer_version_is_unavailable(demo_target):
    window = window_for(demo_target)
    tamper(demo_target, window.manifest_id, lambda m: m.update(renderer_version="context-renderer-0"))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6)
    assert "renderer version context-renderer-0" in result.reason


def test_a_window_of_the_previous_selection_is_unavailable_naming_the_version(demo_target):
    """Windows recorded by the selection rules of before (context-selection-1) cannot be rebuilt by today's:
    replay says so first, before it reads any row, naming both versions."""
    window = window_for(demo_target)
    running = window.manifest["selection_version"]
    assert re.fullmatch(r"selection-[0-9a-f]{12}", running), running
    tamper(demo_target, window.manifest_id, lambda m: m.update(selection_version="context-selection-1"))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6)
    assert f"selection version context-selection-1 is not the running {running}" in result.reason


#: the versions this engine ran before thread-aware scoring and year lines (their windows ranked and framed
#: recalled turns differently, so today's code cannot rebuild them)
EARLIER_SELECTION, EARLIER_RENDERER = "selection-7f5e67183813", "renderer-fa39faf8113c"


def test_a_window_of_the_earlier_selection_and_renderer_is_unavailable_naming_them(demo_target):
    window = window_for(demo_target)
    assert window.manifest["selection_version"] != EARLIER_SELECTION
    assert window.manifest["renderer_version"] != EARLIER_RENDERER
    tamper(demo_target, window.manifest_id, lambda m: m.update(selection_version=EARLIER_SELECTION))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6)
    assert f"selection version {EARLIER_SELECTION} is not the running" in result.reason
    tamper(demo_target, window.manifest_id, lambda m: m.update(selection_version=window.manifest["selection_version"],
                                                               renderer_version=EARLIER_RENDERER))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6)
    assert f"renderer version {EARLIER_RENDERER}" in result.reason


def test_other_code_is_unavailable(demo_target):
    window = window_for(demo_target)
    tamper(demo_target, window.manifest_id, lambda m: m.update(code_hash="f" * 64))
    assert "assembly code changed" in replay_of(demo_target, window.manifest_id).reason


#: the code_hash of windows composed before the fitting passes moved out of compose.py into modules of their own
#: (window_records, window_fit, window_manifest) and the selection became typed (selection.py): moving code
#: changes the digest, so those windows replay as unavailable, by design (nothing proves the moved code the same)
EARLIER_CODE_HASH = "3fe22c8c306976b569ebf66d985ee80efbd47356f39a0373660b4508bb2a5f51"


def test_a_window_of_the_assembly_code_before_the_split_is_unavailable(demo_target):
    window = window_for(demo_target)
    assert window.manifest["code_hash"] == code_hash() != EARLIER_CODE_HASH
    tamper(demo_target, window.manifest_id, lambda m: m.update(code_hash=EARLIER_CODE_HASH))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6)
    assert f"(code_hash {EARLIER_CODE_HASH[:12]} vs {code_hash()[:12]})" in result.reason


def test_lost_history_is_unavailable(demo_target):
    window = window_for(demo_target)
    as_owner(demo_target, lambda store, _: store.delete_memory("conversation", "turn_jane_0002"))
    with psycopg.connect(demo_target.conninfo(demo_target.admin), autocommit=True) as admin:
        admin.execute("DELETE FROM ctxasm.conversation_memory_history WHERE id = 'turn_jane_0002'")
    result = replay_of(demo_target, window.manifest_id)
    assert result.status == "unavailable"
    assert "history gone: dependency conversation:turn_jane_0002:1" in result.reason


def test_another_tenant_cannot_replay_it(demo_target):
    window = window_for(demo_target)
    result = replay_of(demo_target, window.manifest_id, tenant="stripe")
    assert result.status == "unavailable"
    assert result.reason == f"no manifest {window.manifest_id} is visible to tenant stripe"


def every_table_containing(target, text: str) -> list[str]:
    with psycopg.connect(target.conninfo(target.admin)) as admin:
        tables = admin.execute(
            "SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')").fetchall()
        return [name for (name,) in tables
                if admin.execute(f"SELECT count(*) FROM {name} AS t WHERE t::text LIKE %s",
                                 (f"%{text}%",)).fetchone()[0]]


def test_erasure_leaves_no_copy_and_replay_names_it(demo_target):
    content = f"Helios-RAG BEIR results were first shared in the {SECRET} briefing."

    def seed(store, _):
        store.put_memory("kb_document", {"id": "doc_briefing", "title": f"{SECRET} briefing",
                                         "valid_from": "2026-09-01T00:00:00Z", "content": content})
        store.supersede("kb_document", "doc_briefing", {"content": content + " Revised.",
                                                        "valid_from": "2026-09-02T00:00:00Z"})
        store.put_memory("compression", {
            "id": "cmp_briefing", "source_type": "kb_document", "source_id": "doc_briefing", "source_version": 2,
            "source_hash": hashlib.sha256((content + " Revised.").encode()).hexdigest(),
            "generating_model": "extractive", "prompt_version": "p1", "content": f"{SECRET} in short."})
    as_owner(demo_target, seed)
    window = window_for(demo_target)
    assert any(m["ref"] == ["kb_document", "doc_briefing", 2] for m in window.manifest["memories"])
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        record_provider_request(PostgresStore(connection), window)
    assert set(every_table_containing(demo_target, SECRET)) >= {
        "ctxasm.knowledge_base_document", "ctxasm.knowledge_base_document_history",
        "ctxasm.context_compression", "ctxasm.conversation_memory"}

    erased = as_owner(demo_target, lambda store, _: store.erase("kb_document", "doc_briefing"))
    assert erased >= 4  # two versions, the compression, the recorded request
    assert every_table_containing(demo_target, SECRET) == []

    result = replay_of(demo_target, window.manifest_id)
    assert result.status == "unavailable"
    assert "kb_document:doc_briefing:2 was erased" in result.reason
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        manifest = PostgresStore(connection).read_manifest("acme", window.manifest_id)
    assert manifest["erased_dependencies"] == [["kb_document", "doc_briefing"]]
    fresh = window_for(demo_target)
    assert all(m["ref"][1] != "doc_briefing" for m in fresh.manifest["memories"])


def test_erasing_a_row_the_window_read_but_did_not_show_makes_it_unavailable_naming_the_row(demo_target):
    """Not a mismatch: the erased row is read again, scrubbed, and changes what the selection decides (its
    numbering, its scores), so the window cannot be rebuilt as it ran. The row: a second copy of a document,
    which dedup leaves out."""
    text = "Helios-RAG BEIR notes: the corrected run puts Helios-RAG at 0.78 nDCG@10 on BEIR, not 0.92."

    def seed(store, _):
        store.put_memory("kb_document", {"id": "doc_beir_notes", "title": "BEIR notes",
                                         "valid_from": "2026-09-10T00:00:00Z", "content": text})
        store.put_memory("kb_document", {"id": "doc_beir_notes_copy", "title": "BEIR notes",
                                         "valid_from": "2026-09-05T00:00:00Z", "content": text})
    as_owner(demo_target, seed)
    window = window_for(demo_target)
    excluded = {tuple(entry["ref"]): entry for entry in window.manifest["excluded"]}
    assert ("kb_document", "doc_beir_notes_copy", 1) in excluded, window.manifest["excluded"]
    assert replay_of(demo_target, window.manifest_id).status == "match"
    as_owner(demo_target, lambda store, _: store.erase("kb_document", "doc_beir_notes_copy"))
    result = replay_of(demo_target, window.manifest_id)
    assert (result.status, result.exit_code) == ("unavailable", 6), result.reason
    assert "kb_document:doc_beir_notes_copy:1, which the selection read but did not show, was erased" \
        in result.reason
