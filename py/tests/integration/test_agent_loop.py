"""The agent loop, offline: recorded provider transcripts replayed through the real loop, MCP server and database."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm.agent import answer_checks
from ctxasm.agent.loop import ANSWERED, AgentLoop, NO_MODEL
from ctxasm.agent.model_clients import RecordedClient, TranscriptMismatch, apply_setup, read_transcript
from ctxasm.core import render
from ctxasm.core.compose import WindowSpec
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import parse_time
from ctxasm.services.replay import replay

from ..conftest import REPO, TEST_DATABASE, read_as_owner

TRANSCRIPTS = REPO / "db" / "tests" / "transcripts"


@pytest.fixture()
def store(corpus_once):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        yield PostgresStore(connection)


def run_transcript(store: PostgresStore, name: str, client=None, elicitation_handler=None):
    transcript = read_transcript(TRANSCRIPTS / f"{name}.json")
    spec_fields = transcript["run"]
    apply_setup(store, spec_fields["tenant"], transcript.get("setup", []))
    spec = WindowSpec(spec_fields["tenant"], spec_fields["user"], spec_fields["agent"], spec_fields["thread"],
                      spec_fields["intent"], spec_fields["question"])
    client = client if client is not None else RecordedClient.load(TRANSCRIPTS / f"{name}.json")
    loop = AgentLoop(store, spec, parse_time(spec_fields["at"]), client, roles=tuple(spec_fields["roles"]),
                     elicitation_handler=elicitation_handler)
    return transcript, client, asyncio.run(loop.run())


def thread_events(target, thread: str) -> list[str]:
    rows = read_as_owner(target, "acme",
                         "SELECT event_type FROM ctxasm.conversation_memory WHERE thread_id = %s AND role = 'event' "
                         "ORDER BY created_at, id", (thread,))
    return [r[0] for r in rows]


def check_answer(store, transcript, run) -> None:
    checks = transcript["checks"]
    if "value" in checks:
        result = answer_checks.corrected_value_present(run.answer, checks["value"], checks.get("stale", ()))
        assert result.passed, result.detail
    assert answer_checks.citations_present(run.answer).passed
    assert answer_checks.citations(run.answer) == checks["cites"]
    traced = answer_checks.citations_traceable(run.answer, run.manifests, store, "acme")
    assert traced.passed, traced.detail


def test_missing_detail_is_fetched_through_the_tool_results_slice(store, corpus_once):
    transcript, client, run = run_transcript(store, "missing_detail")
    assert run.status == ANSWERED and client.exhausted
    retention = ["kb_chunk", "chunk_agentcore_memory_03", 1]
    first = run.manifests[0]
    assert first["budget_ref"] == ["guideline", "context_budget_thread_jane_missing", 1]
    assert retention not in [m["ref"] for m in first["memories"]], "the first window has no room for it"
    assert first["allocation"]["slices"]["evidence"]["share"] == 0

    assert [r.number for r in run.rounds] == [1, 2]
    (call,) = run.rounds[0].tool_calls
    assert call["origin"] == "tool:search_memory" and call["slice"] == "tool_results"
    assert render.memory_id(retention) in [item["id"] for item in call["items"]]
    assert call["tokens"] <= first["allocation"]["tool_rounds"]["max_tool_result_tokens"]
    assert run.tool_tokens_used <= first["allocation"]["reserves"]["tools"]

    second = run.manifests[1]
    assert second["first_manifest_id"] == run.window.manifest_id and second["round"] == 2
    tool_entries = [m for m in second["memories"] if m["slice"] == "tool_results"]
    assert [m["call_id"] for m in tool_entries] == ["call_search_1"]
    assert tool_entries[0]["position"] == len(second["memories"])
    final_tokens = count_tokens(render.serialize(run.final_request))
    assert final_tokens == second["request_tokens"] <= second["request_limit"]
    assert second["request_hash"] == render.request_hash(run.final_request)
    assert run.rounds[1].request_hash == second["request_hash"]

    assert replay(store, "acme", run.window.manifest_id).status == "match"
    round_replay = replay(store, "acme", run.rounds[1].manifest_id)
    assert round_replay.status == "match", round_replay.reason
    assert round_replay.rebuilt_hash == run.rounds[1].request_hash

    events = thread_events(corpus_once, "thread_jane_missing")
    assert events.count("context_manifest") == 2
    assert events.count("provider_request") == 2 and events.count("model_response") == 2
    assert events.count("tool_result") == 1
    check_answer(store, transcript, run)


def test_the_corrected_value_comes_from_lookup_entity(store):
    transcript, client, run = run_transcript(store, "corrected_fact")
    assert run.status == ANSWERED and client.exhausted
    check_answer(store, transcript, run)
    stale = answer_checks.corrected_value_present("It scored 0.92 [M688929830468].", "0.78", ["0.92"])
    assert not stale.passed


def test_clarification_is_asked_through_elicitation_and_stored_for_the_thread(store, corpus_once):
    asked = []

    async def answer(message, response_type, params, context):
        asked.append(message)
        return {"value": "the July evaluation"}

    transcript, client, run = run_transcript(store, "clarify", elicitation_handler=answer)
    assert asked == ["Do you mean the June run or the July evaluation?"]
    assert run.status == ANSWERED and client.exhausted
    assert "clarification" in thread_events(corpus_once, "thread_jane_research")
    check_answer(store, transcript, run)


def test_the_tool_reserve_is_shared_by_rounds_and_max_rounds_forces_an_answer(store):
    transcript, client, run = run_transcript(store, "tool_reserve_and_rounds")
    assert run.status == ANSWERED and client.exhausted
    limits = run.manifests[0]["allocation"]
    calls = [c for r in run.rounds for c in r.tool_calls]
    assert len(calls) == 2 == limits["tool_rounds"]["max_rounds"]
    assert all(c["tokens"] <= 500 for c in calls)
    assert calls[0]["tier"] == "truncated" and calls[0]["dropped"], "eight results do not fit 500 tokens"
    assert sum(c["tokens"] for c in calls) <= run.tool_tokens_used <= limits["reserves"]["tools"] == 900
    assert client.sent[-1]["tool_choice"] == "none"
    last = replay(store, "acme", run.rounds[-1].manifest_id)
    assert (last.status, last.rebuilt_hash) == ("match", run.rounds[-1].request_hash)
    store.set_tenant("acme")
    store.erase("conversation", calls[0]["ref"][1])
    store.commit()
    gone = replay(store, "acme", run.rounds[-1].manifest_id)
    assert gone.status == "unavailable" and calls[0]["ref"][1] in gone.reason
    check_answer(store, transcript, run)


def test_without_a_model_the_request_is_prepared_and_recorded(store):
    spec = WindowSpec("acme", "jane", "research-assistant", "thread_jane_nomodel", "fact_check",
                      "Is Helios-RAG still the one to beat?")
    run = asyncio.run(AgentLoop(store, spec, parse_time("2026-09-28T12:00:00"), None, roles=("researcher",)).run())
    assert run.status == NO_MODEL and run.answer is None and len(run.rounds) == 1
    recorded = store.read_event("acme", run.rounds[0].request_record)["content_json"]
    assert recorded["request_hash"] == run.window.manifest["request_hash"] == render.request_hash(recorded["request"])


def test_a_request_the_transcript_does_not_expect_fails(store, tmp_path: Path):
    data = json.loads((TRANSCRIPTS / "corrected_fact.json").read_text())
    data["responses"][1]["expect"]["answers_call"] = "call_never_made"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(TranscriptMismatch, match="no tool message answers call 'call_never_made'"):
        run_transcript(store, "corrected_fact", client=RecordedClient.load(bad))


@pytest.mark.slow  # two ctxasm processes
def test_ctxasm_ask_replays_a_transcript_and_says_when_no_model_is_called(corpus_once):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(CTXASM_PG_DATABASE=TEST_DATABASE)
    base = [sys.executable, "-m", "ctxasm.cli", "ask", "--tenant", "acme", "--user", "jane", "--agent",
            "research-assistant", "--role", "researcher", "--at", "2026-09-28T12:00:00Z"]
    replayed = subprocess.run(base + ["--thread", "thread_jane_research", "--question",
                                      "Good. For the retrieval side, is Helios-RAG still the one to beat? You told "
                                      "us it scored 0.92 on BEIR.", "--transcript",
                                      str(TRANSCRIPTS / "corrected_fact.json"), "--json"],
                              capture_output=True, text=True, env=env, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    assert "0.78" in json.loads(replayed.stdout)["answer"]
    offline = subprocess.run(base + ["--thread", "thread_jane_cli", "--question", "Anything new on Letta?"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert offline.returncode == 0, offline.stderr
    assert "no model was called" in offline.stderr and "(no model was called)" in offline.stdout


def test_the_question_and_the_answer_become_the_threads_next_turns(store, corpus_once):
    transcript, _, run = run_transcript(store, "missing_detail")
    thread = transcript["run"]["thread"]
    assert run.status == ANSWERED
    question, answer = run.turns
    assert (question.role, answer.role) == ("user", "assistant")
    assert answer.turn_index == question.turn_index + 1
    rows = read_as_owner(corpus_once, "acme",
                         "SELECT id, role, turn_index, content FROM ctxasm.conversation_memory "
                         "WHERE thread_id = %s AND role IN ('user', 'assistant') ORDER BY turn_index", (thread,))
    assert [tuple(r) for r in rows[-2:]] == [(question.id, "user", question.turn_index, transcript["run"]["question"]),
                                             (answer.id, "assistant", answer.turn_index, run.answer)]
    assert question.turn_index == max(r[2] for r in rows[:-2] or [(None, None, 0)]) + 1
    assert run.as_json()["turns"][1]["turn_index"] == answer.turn_index
