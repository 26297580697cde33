"""Compression during assembly against a real OpenAI-compatible server on 127.0.0.1 (tests/chat_server.py) and the
real database: summaries written, stored and shown in the same window; replay with the server stopped; stale
compressions replaced; providers that fail, answer garbage or are slow; the budget's limits; erasure."""

from __future__ import annotations

import hashlib
import time

import pytest

from ctxasm.core.refs import Ref
from ctxasm.engines.store import WindowScope
from ctxasm.ml.summarizer import COMPRESSION_PROMPT, ExtractiveSummarizer, compression_message
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.services.replay import replay

from ..chat_server import MODEL, ChatServer, canned_summary
from ..conftest import read_as_owner
from . import summaries_data as data
from .summaries_data import summarizer

ON = {"enabled": True, "time_budget_ms": 5000, "token_budget": 20000, "summary_tokens": 40}



def window(target, chosen=None):
    with data.app_store(target) as store:
        return assemble(store, data.spec(), parse_time(data.AT), summarizer=chosen)


def replayed(target, manifest_id: str):
    with data.app_store(target) as store:
        return replay(store, data.TENANT, manifest_id)


def facts(manifest) -> dict[str, dict]:
    return {m["ref"][1]: m for m in manifest["memories"] if m["slice"] == "durable_facts"}


def compressions(target) -> list[tuple]:
    return read_as_owner(target, data.TENANT,
                         "SELECT id, version, source_type, source_id, source_version, source_hash, generating_model, "
                         "prompt_version, content, status, source_refs, user_id, agent_id "
                         "FROM ctxasm.context_compression ORDER BY source_id, created_at")


def test_a_window_short_of_room_asks_for_summaries_stores_them_and_shows_them(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db, summarizer(server))

    report = made.manifest["compression"]
    assert report["summarizer"] == MODEL and report["failed"] == [] and report["written"], report
    written = {Ref.of(w["ref"]).key: Ref.of(w["summary_ref"]) for w in report["written"]}
    assert len(server.requests) == report["asked"] == len(written)
    shown = [m for m in facts(made.manifest).values() if m["tier"] == "summary"]
    assert shown, facts(made.manifest)
    for memory in shown:
        assert memory["summary_written"] is True
        assert memory["summary_by"] == {"model": MODEL, "prompt_version": COMPRESSION_PROMPT.version}
        assert Ref.of(memory["summary_ref"]) == written[Ref.of(memory["ref"]).key]
        # The request shows the text the server wrote for this very fact.
        text = data.fact_text(memory["ref"][1].removeprefix("fact_"))
        expected = canned_summary(compression_message(text, ON["summary_tokens"]))
        assert expected in made.request["messages"][-1]["content"]

    stored = {row[3]: row for row in compressions(clean_db)}
    assert set(stored) == {Ref.of(key).id for key in written}
    for source_id, row in stored.items():
        text = data.fact_text(source_id.removeprefix("fact_"))
        assert row[1:8] == (1, "entity", source_id, 1, hashlib.sha256(text.encode()).hexdigest(), MODEL,
                            COMPRESSION_PROMPT.version)
        assert row[9] == "active" and row[10] == [{"type": "entity", "id": source_id, "version": 1}]
        assert (row[11], row[12]) == (data.USER, data.AGENT)  # written with the caller's claim and scope
    provenance = read_as_owner(clean_db, data.TENANT,
                               "SELECT derived_id, source_id, relation FROM ctxasm.context_source_ref "
                               "WHERE derived_type = 'compression'")
    assert sorted(provenance) == sorted((row[0], source_id, "compressed_from") for source_id, row in stored.items())


def test_replay_reads_the_stored_compressions_with_the_server_stopped(clean_db, tmp_path):
    data.load_tenant(clean_db, tmp_path, ON)
    with ChatServer() as server:
        made = window(clean_db, summarizer(server))
    assert any(m.get("summary_written") for m in made.manifest["memories"])
    result = replayed(clean_db, made.manifest_id)
    assert result.status == "match", result.reason

    # The next window finds the compressions stored: it shows them without asking (a stopped server would fail).
    again = window(clean_db, summarizer(server))
    assert "compression" not in again.manifest
    reused = [m for m in facts(again.manifest).values() if m["tier"] == "summary"]
    assert reused and all("summary_written" not in m and m["summary_by"]["model"] == MODEL for m in reused)
    assert replayed(clean_db, again.manifest_id).status == "match"


def test_compression_is_off_by_default(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, None)
    made = window(clean_db, summarizer(server))
    assert server.requests == [] and "compression" not in made.manifest
    assert [m["tier"] for m in facts(made.manifest).values()].count("summary") == 0
    assert compressions(clean_db) == []


def test_without_a_model_the_offline_summarizer_writes_and_says_so(clean_db, tmp_path, monkeypatch):
    monkeypatch.delenv("CTXASM_SUMMARY_MODEL", raising=False)
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db)  # the deployment's summarizer: no model configured
    shown = [m for m in facts(made.manifest).values() if m["tier"] == "summary"]
    assert made.manifest["compression"]["summarizer"] == "extractive-lead-1" and shown
    assert all(m["summary_by"] == {"model": "extractive-lead-1", "prompt_version": "extractive-1"} for m in shown)
    assert replayed(clean_db, made.manifest_id).status == "match"


def test_a_stale_compression_is_replaced_by_a_fresh_one(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, ON)
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        store.put_memory("compression", {
            "id": "cmp_stale_latency", "source_type": "entity", "source_id": "fact_latency", "source_version": 1,
            "source_hash": hashlib.sha256(b"an older text of the latency fact").hexdigest(),
            "generating_model": "older-model", "prompt_version": "compress-000000000000",
            "content": "The latency study is summarized here from an older text.", "user_id": data.USER,
            "agent_id": data.AGENT})
        store.commit()
    made = window(clean_db, summarizer(server))
    latency = facts(made.manifest)["fact_latency"]
    assert Ref.of(latency["ref"]).key in {Ref.of(w["ref"]).key for w in made.manifest["compression"]["written"]}
    if latency["tier"] == "summary":
        assert latency["summary_ref"][1] != "cmp_stale_latency" and latency["summary_written"]
    assert "from an older text" not in made.request["messages"][-1]["content"]
    fresh = [row for row in compressions(clean_db) if row[3] == "fact_latency" and row[0] != "cmp_stale_latency"]
    assert len(fresh) == 1 and fresh[0][5] == hashlib.sha256(data.fact_text("latency").encode()).hexdigest()


def test_a_window_shows_the_newest_active_compression_of_a_row(clean_db, tmp_path):
    """Of several fresh compressions of one row version, the window's summary tier is the newest by valid_from
    (not the first id), one per row; another row's compression stays with that row."""
    data.load_tenant(clean_db, tmp_path)
    fresh = hashlib.sha256(data.fact_text("latency").encode()).hexdigest()
    rows = [("cmp_b_older", "fact_latency", "2026-09-02T00:00:00Z", fresh, "The older latency summary."),
            ("cmp_a_newer", "fact_latency", "2026-09-03T00:00:00Z", fresh, "The newer latency summary."),
            ("cmp_c_eviction", "fact_eviction", "2026-09-04T00:00:00Z",
             hashlib.sha256(data.fact_text("eviction").encode()).hexdigest(), "The eviction summary.")]
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        for cid, source, valid_from, digest, content in rows:
            store.put_memory("compression", {
                "id": cid, "source_type": "entity", "source_id": source, "source_version": 1, "source_hash": digest,
                "generating_model": MODEL, "prompt_version": "compress-000000000000", "content": content,
                "valid_from": valid_from, "user_id": data.USER, "agent_id": data.AGENT})
        store.commit()
        spec = data.spec()
        selection = store.select_window(data.TENANT, WindowScope(
            spec.user_id, spec.agent_id, spec.thread_id, spec.intent, parse_time(data.AT), spec.question, None))
    by_id = {c.ref.id: c for c in selection.candidates}
    assert (by_id["fact_latency"].summary_ref.id, by_id["fact_latency"].tiers.summary) == (
        "cmp_a_newer", "The newer latency summary.")
    assert (by_id["fact_eviction"].summary_ref.id, by_id["fact_eviction"].tiers.summary) == (
        "cmp_c_eviction", "The eviction summary.")
    assert by_id["fact_sharding"].summary_ref is None and by_id["fact_sharding"].tiers.summary is None
    assert len([c for c in selection.candidates if c.ref.id == "fact_latency"]) == 1


def test_a_compression_not_in_effect_at_the_evaluation_time_is_not_the_summary_tier(clean_db, tmp_path):
    """As every row the window reads: one that takes effect after the evaluation time, or ended before it, is not
    shown; a compression in effect then is."""
    data.load_tenant(clean_db, tmp_path)
    digest = {topic: hashlib.sha256(data.fact_text(topic).encode()).hexdigest() for topic in data.TOPICS}
    rows = [("cmp_future", "fact_latency", "2026-10-01T00:00:00Z", None),
            ("cmp_ended", "fact_eviction", "2026-09-01T00:00:00Z", "2026-09-10T00:00:00Z"),
            ("cmp_in_effect", "fact_sharding", "2026-09-01T00:00:00Z", None)]
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        for cid, source, valid_from, valid_until in rows:
            store.put_memory("compression", {
                "id": cid, "source_type": "entity", "source_id": source, "source_version": 1,
                "source_hash": digest[source.removeprefix("fact_")], "generating_model": MODEL,
                "prompt_version": "compress-000000000000", "content": f"{cid} in short.", "valid_from": valid_from,
                **({"valid_until": valid_until} if valid_until else {}), "user_id": data.USER, "agent_id": data.AGENT})
        store.commit()
        spec = data.spec()
        selection = store.select_window(data.TENANT, WindowScope(
            spec.user_id, spec.agent_id, spec.thread_id, spec.intent, parse_time(data.AT), spec.question, None))
    by_id = {c.ref.id: c for c in selection.candidates}
    assert by_id["fact_latency"].summary_ref is None and by_id["fact_eviction"].summary_ref is None
    assert by_id["fact_sharding"].summary_ref.id == "cmp_in_effect"


@pytest.mark.parametrize("mode, problem", [
    ("error", "InternalServerError 500"),
    ("not_json", "not a chat completion"),
    ("no_choices", "no summary text"),
    ("empty", "no summary text"),
    ("echo", "where at most 40 were asked for"),
])
def test_a_provider_that_fails_or_answers_garbage_leaves_the_pointers(clean_db, tmp_path, server, mode, problem):
    data.load_tenant(clean_db, tmp_path, None)
    plain = window(clean_db)
    data.change_budget(clean_db, ON)  # the same rows; the budget now asks for compression
    server.mode = mode
    made = window(clean_db, summarizer(server))
    report = made.manifest["compression"]
    assert report["written"] == [] and len(report["failed"]) == report["asked"] > 0, report
    assert all(problem in failure["problem"] for failure in report["failed"]), report["failed"]
    assert {k: m["tier"] for k, m in facts(made.manifest).items()} == \
        {k: m["tier"] for k, m in facts(plain.manifest).items()}
    assert compressions(clean_db) == []
    assert replayed(clean_db, made.manifest_id).status == "match"


def test_a_slow_provider_costs_the_time_budget_not_the_window(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, {**ON, "time_budget_ms": 600})
    server.mode, server.delay = "slow", 5.0
    started = time.monotonic()
    made = window(clean_db, summarizer(server))
    took = time.monotonic() - started
    report = made.manifest["compression"]
    assert took < 3.0, f"the window took {took:.1f} s with a time budget of 0.6 s"
    assert report["written"] == [] and report["failed"], report
    assert all("0.6 s" in f["problem"] or "time budget" in f["problem"] for f in report["failed"])
    assert not any(m.get("summary_written") for m in made.manifest["memories"])
    assert compressions(clean_db) == []


def test_the_token_budget_bounds_what_is_sent(clean_db, tmp_path, server):
    one_call = summarizer(server).cost(data.fact_text("latency"), ON["summary_tokens"])
    data.load_tenant(clean_db, tmp_path, {**ON, "token_budget": one_call + one_call // 2})
    made = window(clean_db, summarizer(server))
    report = made.manifest["compression"]
    assert report["asked"] == len(server.requests) == 1 and report["tokens"] <= one_call + one_call // 2
    assert report["skipped"] and {s["reason"] for s in report["skipped"]} == {"token_budget"}


def test_erasing_the_source_erases_its_compression_and_the_window_is_no_longer_replayable(clean_db, tmp_path,
                                                                                          server):
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db, summarizer(server))
    shown = next(m for m in facts(made.manifest).values() if m.get("summary_written"))
    source_id = shown["ref"][1]
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        report = store.erase_report("entity", source_id)
        store.commit()
    assert ["compression", shown["summary_ref"][1]] in report["erased"]
    row = next(r for r in compressions(clean_db) if r[0] == shown["summary_ref"][1])
    assert row[9] == "erased" and row[8] == "[erased]" and row[5] is None
    result = replayed(clean_db, made.manifest_id)
    assert result.status == "unavailable" and source_id in result.reason


def test_a_window_whose_compression_was_erased_is_unavailable(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db, summarizer(server))
    written = made.manifest["compression"]["written"][0]["summary_ref"]
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        store.erase_report("compression", written[1])
        store.commit()
    result = replayed(clean_db, made.manifest_id)
    assert result.status == "unavailable" and f"compression {Ref.of(written).key} was erased" in result.reason


def test_the_offline_summarizer_is_instant_and_keeps_lead_sentences():
    text = data.fact_text("eviction")
    written = ExtractiveSummarizer().compress(text, max_tokens=40)
    assert text.startswith(written.text.removesuffix("...")) and written.prompt_version == "extractive-1"


def test_the_inspector_shows_a_compression_written_during_the_window(clean_db, tmp_path, server):
    from ctxasm.interfaces import inspector
    from ctxasm.services.inspection import load_inspection

    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db, summarizer(server))
    shown = next(m for m in facts(made.manifest).values() if m.get("summary_written"))
    with data.app_store(clean_db) as store:
        inspection = load_inspection(store, data.TENANT, made.manifest_id, with_request=False)
    text, what = inspection.seen_text(shown)
    assert what == "summary tier: the stored compression" and text in made.request["messages"][-1]["content"]
    described = inspector.describe_manifest(inspection)
    assert f"written by {MODEL} (prompt {COMPRESSION_PROMPT.version}) during this window's assembly" in described


def test_a_model_configured_without_its_key_costs_the_compressions_not_the_window(clean_db, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXASM_SUMMARY_MODEL", "gpt-4.1-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db)
    report = made.manifest["compression"]
    assert report["summarizer"] == "gpt-4.1-mini" and report["asked"] == 0 and report["written"] == []
    assert report["failed"] and all("needs OPENAI_API_KEY" in f["problem"] for f in report["failed"])
    assert compressions(clean_db) == []


def test_each_compression_written_is_a_create_memory_span_inside_the_windows_search(clean_db, tmp_path, server,
                                                                                     spans):
    data.load_tenant(clean_db, tmp_path, ON)
    made = window(clean_db, summarizer(server))
    finished = spans.get_finished_spans()
    def named(name: str, call: str) -> list:
        return [s for s in finished if s.name == name and s.attributes.get("ctxasm.operation") == call]

    created = named("create_memory", "compress")
    (search,) = named("search_memory", "assemble")
    written = [w["summary_ref"][1] for w in made.manifest["compression"]["written"]]
    assert sorted(s.attributes["gen_ai.memory.record.id"] for s in created) == sorted(written)
    assert all(s.attributes["ctxasm.memory_type"] == "compression" and s.parent.span_id == search.context.span_id
               and s.attributes["gen_ai.memory.store.id"] == data.TENANT for s in created)


def test_the_inspector_says_a_persisted_compression_the_window_showed_was_erased(clean_db, tmp_path, server):
    from ctxasm.services.inspection import load_inspection

    data.load_tenant(clean_db, tmp_path, ON)
    window(clean_db, summarizer(server))  # writes the compressions
    again = window(clean_db, summarizer(server))  # shows them as stored rows
    shown = next(m for m in facts(again.manifest).values() if m.get("summary_ref") and not m.get("summary_written"))
    with data.app_store(clean_db) as store:
        store.set_tenant(data.TENANT)
        store.erase_report("compression", shown["summary_ref"][1])
        store.commit()
    with data.app_store(clean_db) as store:
        inspection = load_inspection(store, data.TENANT, again.manifest_id, with_request=False)
    assert inspection.state(shown["summary_ref"]) == "erased"
    assert any("erased since" in note for note in inspection.notes)
    # asked about by its own reference, the compression is found where the window showed it
    from ctxasm.interfaces.inspector.exclusions import why_not

    kind, compression_id, version = shown["summary_ref"]
    answer = why_not(inspection, f"{kind}:{compression_id}:{version}")
    assert answer[0].startswith(f"compression / {compression_id} / version {version}: the stored compression "
                                f"shown as the summary tier of ") and f"({shown['id']})" in answer[0]
