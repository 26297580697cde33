"""Episode summaries of threads against a real OpenAI-compatible server on 127.0.0.1 and the real database:
which threads are due, what is written (text, provenance, model and prompt version), a new version after new
turns, failures, the caller's claim, a window that seats the summary, its replay with the server stopped, and
`ctxasm summarize-threads`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from ctxasm.api import Memory
from ctxasm.core.refs import Ref
from ctxasm.interfaces import cli
from ctxasm.interfaces.inspector import describe_manifest
from ctxasm.ml.summarizer import EPISODE_PROMPT, episode_message
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.services.episodes import Thresholds, summarize_threads, summary_id
from ctxasm.services.inspection import load_inspection
from ctxasm.services.replay import replay

from ..chat_server import MODEL, ChatServer, canned_summary
from ..conftest import read_as_owner
from . import summaries_data as data
from .summaries_data import summarizer

NOW = datetime(2026, 9, 28, 12, 0, tzinfo=timezone.utc)
#: the long thread's first summary: it covers the thread's 30 turns
SUMMARY = summary_id(data.LONG_THREAD, [{"ref": ["conversation", f"turn_zephyr_{n:03d}", 1]} for n in range(1, 31)])



def run(target, chosen, thresholds: Thresholds | None = None, now: datetime = NOW, **scope):
    with data.app_store(target) as store:
        return summarize_threads(store, data.TENANT, chosen, now=now, thresholds=thresholds or Thresholds(),
                                 **scope)


def summary_rows(target) -> list[tuple]:
    return read_as_owner(target, data.TENANT,
                         "SELECT id, version, status, summary_key, user_id, agent_id, thread_id, content, "
                         "content_json, valid_from, source_refs FROM ctxasm.summarization_memory ORDER BY id, version")


def add_turns(target, count: int, start: int) -> None:
    with Memory.open(database=target.database, pool_size=1) as memory:
        session = memory.session(data.TENANT, user_id=data.USER, agent_id=data.AGENT, thread_id=data.LONG_THREAD)
        for n in range(start, start + count):
            session.add_turn("user" if n % 2 else "assistant", data.turn_text(n),
                             at=datetime(2026, 9, 20, 9, 0, tzinfo=timezone.utc) + timedelta(minutes=n))


def test_a_grown_thread_gets_a_model_written_episode_summary_with_its_provenance(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path)
    result = run(clean_db, summarizer(server))
    assert (result.written, result.failed) == (1, 0), result.describe()
    done = result.threads[0]
    assert (done.thread_id, done.reason, done.turns, done.ref) == (data.LONG_THREAD, "grown", 30,
                                                                  Ref("summary", SUMMARY, 1))
    sent = server.requests[0]["messages"]
    assert sent[0]["content"] == EPISODE_PROMPT.text and len(server.requests) == 1
    turns = [("user" if n % 2 else "assistant", data.turn_text(n)) for n in range(1, 31)]
    assert sent[1]["content"] == episode_message(turns, None, Thresholds().summary_tokens)

    (row,) = summary_rows(clean_db)
    assert row[:7] == (SUMMARY, 1, "active", f"thread:{data.LONG_THREAD}", data.USER, data.AGENT, None)
    assert row[7] == canned_summary(sent[1]["content"])
    assert row[8] == {"episode": {"thread_id": data.LONG_THREAD, "first_turn": 1, "last_turn": 30, "turns": 30},
                      "generated_by": {"model": MODEL, "prompt_version": EPISODE_PROMPT.version}}
    assert row[9] == datetime(2026, 9, 1, 9, 30, tzinfo=timezone.utc)  # valid from its last turn
    assert row[10] == []  # not cited history: the turns are its provenance, not claims it makes
    provenance = read_as_owner(clean_db, data.TENANT,
                               "SELECT derived_version, source_type, source_id, source_version, relation "
                               "FROM ctxasm.context_source_ref WHERE derived_type = 'summary' AND derived_id = %s "
                               "ORDER BY source_id", (SUMMARY,))
    assert provenance == [(1, "conversation", f"turn_zephyr_{n:03d}", 1, "summarizes") for n in range(1, 31)]

    again = run(clean_db, summarizer(server))
    assert (again.written, again.failed, again.waiting, len(server.requests)) == (0, 0, 0, 1)


def test_a_written_summary_is_an_upsert_memory_span(clean_db, tmp_path, server, spans):
    data.load_tenant(clean_db, tmp_path)
    assert run(clean_db, summarizer(server)).written == 1
    (span,) = [s for s in spans.get_finished_spans() if s.attributes.get("ctxasm.operation") == "summarize_threads"]
    assert span.name == "upsert_memory" and span.attributes["ctxasm.memory_type"] == "summary"
    assert span.attributes["gen_ai.memory.record.count"] == 1
    assert "gen_ai.memory.record.id" not in span.attributes  # the id names the thread: content, not shown by default


def test_new_turns_make_a_new_version_that_continues_the_last(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path)
    run(clean_db, summarizer(server))
    first = summary_rows(clean_db)[0]
    add_turns(clean_db, 5, 31)
    just_after = datetime(2026, 9, 20, 9, 40, tzinfo=timezone.utc)
    assert run(clean_db, summarizer(server), now=just_after).written == 0  # 5 new turns: not grown, not quiet yet
    quiet = run(clean_db, summarizer(server), now=datetime(2026, 9, 21, tzinfo=timezone.utc))
    assert [(t.reason, t.turns, t.ref) for t in quiet.threads] == [("quiet", 5, Ref("summary", SUMMARY, 2))]

    sent = server.requests[-1]["messages"][1]["content"]
    new_turns = [("user" if n % 2 else "assistant", data.turn_text(n)) for n in range(31, 36)]
    assert sent == episode_message(new_turns, first[7], Thresholds().summary_tokens)
    old, new = summary_rows(clean_db)
    assert (old[1], old[2], new[1], new[2]) == (1, "superseded", 2, "active")
    assert new[8]["episode"] == {"thread_id": data.LONG_THREAD, "first_turn": 1, "last_turn": 35, "turns": 35,
                                 "continues": 1}
    provenance = read_as_owner(clean_db, data.TENANT,
                               "SELECT source_type, source_id, source_version, relation FROM ctxasm.context_source_ref "
                               "WHERE derived_type = 'summary' AND derived_version = 2")
    new_ids = read_as_owner(clean_db, data.TENANT, "SELECT id FROM ctxasm.conversation_memory WHERE turn_index > 30")
    assert sorted(provenance) == sorted([("conversation", turn_id, 1, "summarizes") for (turn_id,) in new_ids]
                                        + [("summary", SUMMARY, 1, "continues")])
    assert len(new_ids) == 5


def test_a_short_thread_waits_until_it_goes_quiet(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path, turns=6)
    early = run(clean_db, summarizer(server), now=datetime(2026, 9, 1, 10, 0, tzinfo=timezone.utc))
    assert (early.written, early.waiting, server.requests) == (0, 1, [])
    later = run(clean_db, summarizer(server), now=datetime(2026, 9, 1, 16, 0, tzinfo=timezone.utc))
    assert [(t.reason, t.turns) for t in later.threads] == [("quiet", 6)]


@pytest.mark.parametrize("mode", ["error", "not_json", "empty"])
def test_a_failing_provider_writes_nothing_and_says_why(clean_db, tmp_path, server, mode):
    data.load_tenant(clean_db, tmp_path)
    server.mode = mode
    result = run(clean_db, summarizer(server))
    assert (result.written, result.failed) == (0, 1)
    assert result.threads[0].problem.startswith("provider_error:")
    assert summary_rows(clean_db) == []
    assert read_as_owner(clean_db, data.TENANT,
                         "SELECT count(*) FROM ctxasm.context_source_ref WHERE derived_type = 'summary'") == [(0,)]


def test_a_claim_for_one_user_summarizes_that_users_threads_only(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path)
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        bob = memory.session(data.TENANT, user_id="bob", agent_id=data.AGENT)
        assert bob.summarize_threads(summarizer=summarizer(server), at=NOW).written == 0
        jane = memory.session(data.TENANT, user_id=data.USER, agent_id=data.AGENT)
        written = jane.summarize_threads(summarizer=summarizer(server), at=NOW)
    assert written.written == 1 and summary_rows(clean_db)[0][4] == data.USER


ASKED = "What did we decide about Zephyr cache eviction under load?"


def summarized_then_asked(target, tmp_path):
    """The long thread summarized by the server, which then stops; then a window in another thread asks about it."""
    data.load_tenant(target, tmp_path)
    with ChatServer() as server:
        assert run(target, summarizer(server)).written == 1
    with data.app_store(target) as store:
        return assemble(store, data.spec(question=ASKED), parse_time(data.AT))


def test_a_window_in_another_thread_seats_the_summary_and_replays_with_the_server_stopped(clean_db, tmp_path):
    made = summarized_then_asked(clean_db, tmp_path)
    (seated,) = [m for m in made.manifest["memories"] if m["type"] == "summary"]
    assert seated["ref"] == ["summary", SUMMARY, 1] and seated["slice"] == "recalled_history"
    assert seated["generated_by"] == {"model": MODEL, "prompt_version": EPISODE_PROMPT.version}
    # It stands for its thread's turns: it shares their thread's figure (the best recalled turn's relevance).
    turns = [m for m in made.manifest["memories"] if m["type"] == "conversation" and m["slice"] == "recalled_history"]
    assert seated["scores"]["thread_logit"] == max(m["scores"]["thread_logit"] for m in turns) > 0
    text = summary_rows(clean_db)[0][7]
    assert text in made.request["messages"][-1]["content"]
    with data.app_store(clean_db) as store:
        result = replay(store, data.TENANT, made.manifest_id)
        described = describe_manifest(load_inspection(store, data.TENANT, made.manifest_id, with_request=False))
    assert result.status == "match", result.reason
    assert f"written by {MODEL} (prompt {EPISODE_PROMPT.version})" in described


def test_summarize_threads_from_the_command_line_with_the_configured_model(clean_db, tmp_path, server, monkeypatch,
                                                                           capsys):
    data.load_tenant(clean_db, tmp_path)
    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    monkeypatch.setenv("CTXASM_SUMMARY_MODEL", MODEL)
    monkeypatch.setenv("CTXASM_SUMMARY_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    assert cli.main(["summarize-threads", "--tenant", data.TENANT, "--min-turns", "25", "--json",
                     "--at", "2026-09-28T12:00:00"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["written"] == 1 and printed["threads"][0]["model"] == MODEL
    assert printed["threads"][0]["ref"] == ["summary", SUMMARY, 1] and len(server.requests) == 1

    server.mode = "error"
    # nothing new since: the second pass asks nothing, writes nothing and exits 0
    assert cli.main(["summarize-threads", "--tenant", data.TENANT, "--at", "2026-09-28T12:00:00"]) == 0
    assert "0 episode summaries written, 0 failed" in capsys.readouterr().out


def test_without_a_model_the_offline_summarizer_writes_the_episode(clean_db, tmp_path, monkeypatch):
    monkeypatch.delenv("CTXASM_SUMMARY_MODEL", raising=False)
    data.load_tenant(clean_db, tmp_path)
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        result = memory.session(data.TENANT).summarize_threads(at=NOW)
    assert [(t.model, t.prompt_version) for t in result.threads] == [("extractive-lead-1", "extractive-episode-1")]
    assert summary_rows(clean_db)[0][7].startswith("user: Question 1")


def test_erasing_a_source_turn_erases_the_episode_summary_made_from_it(clean_db, tmp_path):
    made = summarized_then_asked(clean_db, tmp_path)
    assert any(m["type"] == "summary" for m in made.manifest["memories"])
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        report = memory.session(data.TENANT).forget("conversation", "turn_zephyr_007")
    assert ["summary", SUMMARY] in report["erased"], report
    (row,) = summary_rows(clean_db)
    assert row[2] == "erased" and row[7] == "[erased]" and row[8] in ({}, None)
    with data.app_store(clean_db) as store:
        result = replay(store, data.TENANT, made.manifest_id)
        later = assemble(store, data.spec(question=ASKED), parse_time(data.AT))
    assert result.status == "unavailable"
    assert not any(m["type"] == "summary" for m in later.manifest["memories"])
    with ChatServer() as server:  # what is left of the thread is summarized afresh, in a row of its own
        again = run(clean_db, summarizer(server))
    assert again.written == 1 and again.threads[0].turns == 29 and again.threads[0].ref.id != SUMMARY


def test_erasing_a_turn_only_the_first_version_summarized_erases_every_version(clean_db, tmp_path, server):
    data.load_tenant(clean_db, tmp_path)
    run(clean_db, summarizer(server))
    add_turns(clean_db, 5, 31)
    assert run(clean_db, summarizer(server), now=datetime(2026, 9, 21, tzinfo=timezone.utc)).written == 1
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        report = memory.session(data.TENANT).forget("conversation", "turn_zephyr_002")
    assert ["summary", SUMMARY] in report["erased"], report
    assert [(row[1], row[2], row[7]) for row in summary_rows(clean_db)] == [(1, "erased", "[erased]"),
                                                                           (2, "erased", "[erased]")]
