"""`ctxasm inspect` on what the agent loop recorded: a round-2 window, and provider requests, model responses and
tool results opened by their ids."""

from __future__ import annotations

import re

import pytest

from ctxasm.local import pgconn
from ctxasm.interfaces.inspector import describe_manifest, load_by_id, load_inspection
from ctxasm.engines.postgres import PostgresStore

from .test_agent_loop import run_transcript
from .test_inspector import cli


@pytest.fixture(scope="module")
def run(corpus_once):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        _, _, result = run_transcript(PostgresStore(connection), "missing_detail")
    return result


def test_a_round_two_window_shows_its_tool_result(corpus_once, run):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        inspection = load_inspection(PostgresStore(connection), "acme", run.rounds[1].manifest_id)
    assert inspection.request == run.final_request
    text = describe_manifest(inspection)
    (call,) = run.rounds[0].tool_calls
    reserve = run.manifests[0]["allocation"]["reserves"]["tools"]
    assert f"-- tool_results (1 result(s), {call['tokens']} tokens, paid from the tool reserve of {reserve}) --" in text
    tool_message = next(m for m in run.final_request["messages"] if m["role"] == "tool")
    assert f"seen: {' '.join(tool_message['content'].split())}" in text
    assert "? of allowance ?" not in text and "not readable" not in text
    assert re.search(rf"tool reserve left +{reserve - run.tool_tokens_used:,} +{run.tool_tokens_used:,} of "
                     rf"{reserve:,} used", text)


def test_records_open_by_id(run, tmp_path):
    first = run.rounds[0]
    request = cli(first.request_record, "--tenant", "acme")
    assert request.returncode == 0, request.stderr
    assert request.stdout.startswith(f"== manifest {run.window.manifest_id} (tenant acme) ==")
    assert f"literal request: the provider request recorded as {first.request_record}" in request.stdout

    response = cli(first.response_record, "--tenant", "acme")
    assert response.returncode == 0, response.stderr
    assert response.stdout.startswith(f"== model_response {first.response_record} (tenant acme) ==")
    assert "tool call call_search_1: search_memory(" in response.stdout

    record = first.tool_calls[0]["ref"][1]
    result = cli(record, "--tenant", "acme")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"== tool_result {record} (tenant acme) ==")
    assert "call call_search_1: search_memory(" in result.stdout and "<tool_result" in result.stdout

    page = tmp_path / "result.html"
    written = cli(record, "--tenant", "acme", "--html", str(page))
    assert written.returncode == 0, written.stderr
    assert "As the model received it" in page.read_text(encoding="utf-8")

    refused = cli(record, "--tenant", "acme", "--why", "entity:x")
    assert refused.returncode == 2 and "is a tool_result" in refused.stderr
    other = cli(first.response_record, "--tenant", "initech")
    assert other.returncode == 1 and "Helios" not in other.stdout + other.stderr


def test_load_by_id_gives_the_window_of_a_provider_request(corpus_once, run):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        found = load_by_id(PostgresStore(connection), "acme", run.rounds[1].request_record)
    assert found.manifest_id == run.rounds[1].manifest_id and found.request == run.final_request
