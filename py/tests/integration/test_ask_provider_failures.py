"""`ctxasm ask` against a provider that misbehaves, over real HTTP through the OpenAI SDK: an answer that is not a
chat completion (a proxy's HTML page with HTTP 200, a body that is not JSON, an object with no choices) is one line
and exit code 7, and a model that keeps asking for tools ends with status rounds_exhausted, not a claim that no
model was called."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ctxasm.agent.model_clients import chat_completion
from ctxasm.errors import ProviderError
from ctxasm.interfaces import cli

#: the provider's answer to a request body: (status, content type, body)
Answer = Callable[[dict[str, Any]], tuple[int, str, bytes]]

ASK = ["ask", "--tenant", "acme", "--user", "jane", "--agent", "research-assistant", "--thread",
       "thread_jane_research", "--role", "researcher", "--at", "2026-09-28T12:00:00Z", "--question",
       "What nDCG@10 does Helios-RAG reach on BEIR?"]


@contextmanager
def provider(answer: Answer) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible server on 127.0.0.1 that answers every POST with `answer`; yields its base URL and the
    request bodies it received."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802 (the http.server name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            received.append(body)
            status, content_type, data = answer(body)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()


def completion(message: dict[str, Any]) -> bytes:
    return json.dumps({"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
                       "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                                    "message": {"role": "assistant", **message}}]}).encode()


@pytest.fixture()
def with_key(demo_target, monkeypatch):
    monkeypatch.setenv("CTXASM_PG_DATABASE", demo_target.database)
    monkeypatch.setenv("OPENAI_API_KEY", "local-test-server")
    for name in ("OPENAI_BASE_URL", "CONTEXT_PROVIDER_COUNT"):
        monkeypatch.delenv(name, raising=False)
    return demo_target


@pytest.mark.parametrize(("content_type", "body", "says"), [
    ("text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>", "a str: '<html><body><h1>502 Bad Gateway"),
    ("application/json", b"<html>upstream proxy says hello</html>", "a body that is not JSON"),
    ("application/json", b'{"id": "x", "object": "chat.completion"}', "no choices"),
    ("application/json", b"[1, 2]", "a list"),
], ids=["html_page", "json_type_html_body", "no_choices", "json_list"])
def test_an_answer_that_is_not_a_chat_completion_is_one_line_and_exit_code_7(with_key, capsys, content_type, body,
                                                                                says):
    with provider(lambda request: (200, content_type, body)) as (base_url, received):
        code = cli.main([*ASK, "--base-url", base_url, "--json"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 7, captured.err
    assert len(err) == 1, err
    assert err[0].startswith(f"ctxasm: error: provider_error: the answer from {base_url} is not a chat completion ("), \
        err
    assert says in err[0], err
    assert captured.out == "" and len(received) == 1


def test_a_model_that_keeps_asking_for_tools_ends_with_rounds_exhausted(with_key, capsys):
    def tool_call(request: dict[str, Any]) -> tuple[int, str, bytes]:
        number = sum(1 for m in request["messages"] if m["role"] == "assistant" and m.get("tool_calls")) + 1
        return 200, "application/json", completion({"content": None, "tool_calls": [
            {"id": f"call_{number}", "type": "function",
             "function": {"name": "search_memory", "arguments": json.dumps({"query": "Helios-RAG BEIR"})}}]})

    with provider(tool_call) as (base_url, received):
        code = cli.main([*ASK, "--base-url", base_url, "--json"])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    rounds = result["rounds"]

    assert result["status"] == "rounds_exhausted" and result["answer"] is None and result["turns"] == []
    assert code == 1, "no answer came: the command did not do what it was asked"
    assert len(rounds) == len(received) >= 2
    assert all(r["response_record"] for r in rounds), "every round sent its request and recorded the response"
    # the last request forbade tools; the calls the model made anyway were not run (no round left for them)
    assert received[-1].get("tool_choice") == "none" and "tool_choice" not in received[0]
    assert all(r["tool_calls"] for r in rounds[:-1]) and rounds[-1]["tool_calls"] == []
    assert "no model was called" not in captured.err and "OPENAI_API_KEY is not set" not in captured.err
    assert f"rounds_exhausted: the model still asked for tools in round {len(rounds)}" in captured.err
    assert rounds[-1]["response_record"] in captured.err

    with provider(tool_call) as (base_url, _):
        assert cli.main([*ASK, "--base-url", base_url]) == 1
    text = capsys.readouterr().out
    assert "(no answer: the rounds ran out)" in text and "no model was called" not in text
    assert f"round {len(rounds)}: " in text and "tool calls not run: no round left" in text


@pytest.mark.parametrize(("response", "says"), [
    ({"choices": [{"message": "x"}]}, "the first choice has no message"),
    ({"choices": [{"message": {"content": 3}}]}, "the message content is not text"),
    ({"choices": [{"message": {"content": None, "tool_calls": {"id": "c"}}}]}, "tool_calls is not a list"),
    ({"choices": [{"message": {"content": None, "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]},
     "a tool call without"),
    ("<html></html>", "a str: '<html></html>'"),
])
def test_a_misshapen_completion_is_a_provider_error(response, says):
    with pytest.raises(ProviderError, match="not a chat completion") as raised:
        chat_completion(response, "http://127.0.0.1:9/v1")
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_a_well_formed_completion_passes_as_it_is():
    response = json.loads(completion({"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "expand", "arguments": "{}"}}]}))
    assert chat_completion(response, "api.openai.com") == response
