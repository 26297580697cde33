"""Finding 7: any application session could pg_terminate_backend another tenant's session (they share the one
application role), and read its current query in pg_stat_activity; the MCP server sent no reply at all to a
tools/call whose arguments held a lone surrogate.

Now PUBLIC may not signal backends nor read other sessions' activity (revoked in the database by the deployment;
on the embedded cluster the application role may connect to no other database), and the MCP server answers
every request, malformed or not."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import psycopg
import pytest

from ..conftest import TEST_DATABASE
from .helpers import app_session, refusal


def test_an_application_session_cannot_signal_another(demo_target):
    with app_session(demo_target, autocommit=True) as victim, app_session(demo_target) as attacker:
        pid = victim.execute("SELECT pg_backend_pid()").fetchone()[0]
        for signal in ("pg_cancel_backend(%s)", "pg_terminate_backend(%s)"):
            answer = refusal(attacker, f"SELECT {signal}", (pid,))
            assert answer is not None and answer[0] == "42501", (signal, answer)
        assert victim.execute("SELECT 1").fetchone() == (1,)


def test_an_application_session_cannot_read_another_sessions_activity(demo_target):
    with app_session(demo_target, autocommit=True) as other, app_session(demo_target) as attacker:
        pid = other.execute("SELECT pg_backend_pid()").fetchone()[0]
        for query in ("SELECT query FROM pg_stat_activity", "SELECT pg_stat_get_backend_activity(1)",
                      "SELECT * FROM pg_stat_get_activity(NULL)"):
            answer = refusal(attacker, query)
            assert answer is not None and answer[0] == "42501", (query, answer)
        assert pid


def test_an_application_session_cannot_read_another_transactions_outcome(demo_target):
    with app_session(demo_target) as other, app_session(demo_target) as attacker:
        xid = other.execute("SELECT pg_current_xact_id()").fetchone()[0]
        for query in ("SELECT pg_xact_status(%s::xid8)", "SELECT txid_status(%s::text::bigint)"):
            answer = refusal(attacker, query, (str(xid),))
            assert answer is not None and answer[0] == "42501", (query, answer)


def test_the_application_role_connects_to_the_ctxasm_database_only(demo_target):
    """Signals are revoked per database: in another database of the cluster they would still be PUBLIC's."""
    if not demo_target.embedded:  # a server of its own: the deployment does not touch its other databases
        return
    from ctxasm.local import pgconn

    try:
        psycopg.connect(demo_target.conninfo(pgconn.app_login(), "postgres")).close()
    except psycopg.OperationalError as exc:
        assert "permission denied for database" in str(exc)
    else:
        raise AssertionError("the application role reached the postgres database")


def mcp_replies(lines: list[str]) -> list[dict | None]:
    """Start `ctxasm mcp`, initialise, send each line and read one reply per line (None after 60 s)."""
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxasm.cli", "mcp", "--tenant", "acme", "--user", "jane", "--agent",
         "research-assistant", "--thread", "thread_jane_research", "--role", "researcher", "--at",
         "2026-09-28T12:00:00"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(text: str) -> None:
        process.stdin.write(text.encode("utf-8") + b"\n")
        process.stdin.flush()

    def receive() -> dict | None:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        return json.loads(process.stdout.readline()) if ready else None

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}))
        assert receive()["id"] == 0
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        replies = []
        for line in lines:
            send(line)
            replies.append(receive())
        return replies
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow  # ctxasm mcp as a process
def test_the_mcp_server_answers_every_request_malformed_or_not(demo_target):
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup_entity","arguments":%s}}'
    replies = mcp_replies([
        call % (1, '{"subject":"\\ud800","predicate":"beir_ndcg10"}'),   # a lone surrogate (escaped, as JSON has it)
        "this is not JSON",
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"nope"}',
        call % (4, '{"subject":"model:helios-rag","predicate":"beir_ndcg10"}'),
    ])
    assert all(reply is not None for reply in replies), replies
    surrogate, garbage, invalid, good = replies
    assert surrogate["id"] == 1 and "lone surrogate" in surrogate["error"]["message"]
    assert garbage["id"] is None and garbage["error"]["code"] == -32700
    assert invalid["id"] == 3 and "error" in invalid
    assert good["id"] == 4 and "0.78" in good["result"]["content"][0]["text"]
