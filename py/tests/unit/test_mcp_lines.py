"""The MCP server's stdin guard (ctxasm.agent.mcp_server.line_problem): every line the SDK would drop or leave
unanswered gets a JSON-RPC error, and nothing a client sends can end the server."""

from __future__ import annotations

import json

import pytest

from ctxasm.agent.mcp_server import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, answers, line_problem


def test_a_valid_request_and_a_notification_pass_unchanged():
    assert line_problem('{"jsonrpc":"2.0","id":7,"method":"ping"}') is None
    assert line_problem('{"jsonrpc":"2.0","id":"a","method":"tools/list"}') is None
    assert line_problem('{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert not answers('{"jsonrpc":"2.0","method":"notifications/initialized"}')


@pytest.mark.parametrize("request_id", [True, None, 1.5, [1], {"a": 1}])
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_answered(request_id):
    """The SDK reads it as a notification, which nobody answers: the client would wait for ever."""
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    code, message, answer_id = line_problem(line)
    assert (code, answer_id) == (INVALID_REQUEST, None) and "the id must be a string or an integer" in message
    assert answers(line)


@pytest.mark.parametrize("depth", [300, 500, 100_000])
def test_a_deeply_nested_line_is_answered_not_fatal(depth):
    line = "[" * depth + "]" * depth
    code, message, answer_id = line_problem(line)
    assert code in (PARSE_ERROR, INVALID_REQUEST) and answer_id is None
    assert answers(line)


def test_text_that_cannot_be_stored_and_text_that_is_not_json_are_named():
    surrogate = '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"q":"\\ud800"}}}'
    assert line_problem(surrogate)[0::2] == (INVALID_PARAMS, 4)
    assert line_problem("not json")[0] == PARSE_ERROR
