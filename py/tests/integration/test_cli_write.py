"""The write path from the command line: `ctxasm add-turn` and `ctxasm remember`, layers over the Python API, on
the embedded PostgreSQL with the Acme demo loaded."""

from __future__ import annotations

import re

import pytest

from ctxasm.api import Memory
from ctxasm.interfaces import cli

from ..conftest import read_as_owner

SCOPE = ["--tenant", "acme", "--user", "jane", "--agent", "research-assistant"]


@pytest.fixture()
def demo(demo_target, monkeypatch):
    monkeypatch.setenv("CTXASM_PG_DATABASE", demo_target.database)
    return demo_target


def test_add_turn_gives_the_thread_its_next_turn_indexes(demo, capsys):
    thread = ["--thread", "thread_cli_turns"]
    assert cli.main(["add-turn", "user", "Which retriever do we use now?", *SCOPE, *thread]) == 0
    assert cli.main(["add-turn", "assistant", "Helios-RAG 2, since July.", *SCOPE, *thread]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [int(re.search(r"turn_index (\d+)$", line).group(1)) for line in printed] == [1, 2], printed
    assert printed[0].startswith("added user turn turn_") and "thread_cli_turns" in printed[0]


def test_add_turn_names_its_speaker(demo, capsys):
    assert cli.main(["add-turn", "user", "The heater is broken.", "--name", "Maya", *SCOPE,
                     "--thread", "thread_cli_named"]) == 0
    assert "added user turn" in capsys.readouterr().out
    rows = read_as_owner(demo, "acme", "SELECT role, speaker, content FROM ctxasm.conversation_memory "
                                       "WHERE thread_id = 'thread_cli_named'")
    assert rows == [("user", "Maya", "The heater is broken.")]


def test_add_turn_refuses_a_role_other_than_user_or_assistant(demo, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["add-turn", "system", "no", *SCOPE, "--thread", "thread_cli_turns"])
    assert done.value.code == 2 and "invalid choice: 'system'" in capsys.readouterr().err


def test_remember_writes_then_supersedes_by_identity(demo, capsys):
    at = ["--at", "2026-09-28T12:00:00"]
    assert cli.main(["remember", "retriever_cli", "in_use", "We use Helios-RAG.", "--tenant", "acme", *at]) == 0
    assert cli.main(["remember", "retriever_cli", "in_use", "We use Helios-RAG 2.", "--tenant", "acme",
                     "--value-json", '{"name": "Helios-RAG 2"}', *at]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\(retriever_cli, in_use\) written as entity (\S+) version 1", first), first
    fact_id = first.split()[-3]
    assert second == f"(retriever_cli, in_use) superseded by entity {fact_id} version 2"
    with Memory.open(database=demo.database, pool_size=1) as memory:
        found = memory.session("acme", user_id="jane", agent_id="research-assistant").lookup(
            "retriever_cli", "in_use", at="2026-09-28T12:00:01")
    assert found.items and "Helios-RAG 2." in found.items[0].text, (found.items, found.notes)


@pytest.mark.parametrize("value", ["{nope", "NaN", '{"score": Infinity}', "1e999"])
def test_remember_refuses_a_value_that_is_not_json(demo, capsys, value):
    """NaN, Infinity and a number beyond a float are what Python's reader takes and JSON does not."""
    assert cli.main(["remember", "retriever_cli", "in_use", "x", "--tenant", "acme", "--value-json", value]) == 2
    assert "--value-json is not JSON" in capsys.readouterr().err
