"""docs/api.md's example, run as printed on the embedded PostgreSQL with the Acme demo loaded, and the
asyncio variant and the pool it relies on."""

from __future__ import annotations

import asyncio
import re

from ..conftest import REPO


def doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(), flags=re.S)


def test_the_documented_example_runs(demo_target, monkeypatch, capsys):
    monkeypatch.setenv("CTXASM_PG_DATABASE", demo_target.database)
    exec(compile(doc_blocks()[0], "docs/api.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "remembered ('entity', 'fact_helios_rag_beir_ndcg10', 3)" in printed
    assert re.search(r"erased \d+ row versions", printed)


def test_the_asyncio_calls_share_the_pool(demo_target):
    from ctxasm.api import Memory

    namespace: dict = {}
    exec(compile(doc_blocks()[1], "docs/api.md", "exec"), namespace)
    with Memory.open(database=demo_target.database, pool_size=2) as memory:
        session = memory.session("acme", user_id="jane", agent_id="research-assistant",
                                 thread_id="thread_jane_research")
        window, found = asyncio.run(namespace["two_windows"](session))
        assert window.manifest_id.startswith("manifest_") or window.manifest_id
        assert found.items, found.notes
        # two calls at once opened at most the pool's size, and both connections came back
        assert memory.pool._opened <= 2 and memory.pool._idle.qsize() == memory.pool._opened


def test_turns_of_a_thread_get_consecutive_indexes(demo_target):
    from ctxasm.api import Memory

    with Memory.open(database=demo_target.database) as memory:
        session = memory.session("acme", user_id="jane", agent_id="research-assistant", thread_id="thread_new")
        turns = [session.add_turn("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(3)]
    assert [t.turn_index for t in turns] == [1, 2, 3]


def test_a_turn_without_a_thread_is_refused(demo_target):
    import pytest

    from ctxasm.api import Memory
    from ctxasm.errors import CtxasmError

    with Memory.open(database=demo_target.database) as memory:
        session = memory.session("acme", user_id="jane", agent_id="research-assistant")
        with pytest.raises(CtxasmError) as caught:
            session.add_turn("user", "no thread")
    assert caught.value.code == "invalid_field" and "thread_id" in str(caught.value)
