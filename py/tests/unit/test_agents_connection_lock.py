"""ContextAssembly serializes on its store's connection, not on itself: two assemblies given one store (two
agents, two tenants) must not interleave their calls on it, or one's manifest is written under the other's
tenant (seen with two tenants' runs gathered on one PostgresStore)."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("agents")

from ctxasm.agent.openai_agents import ContextAssembly, connection_lock  # noqa: E402


class _Connection:
    """Stands in for a database connection: the lock is the connection's (kept as long as it lives)."""


class _Store:
    def __init__(self, connection: _Connection):
        self.connection = connection


def test_assemblies_on_one_connection_share_one_lock_and_others_do_not():
    shared = _Connection()
    one, two = _Store(shared), _Store(shared)
    acme = ContextAssembly(one, tenant_id="acme", user_id="jane")
    stripe = ContextAssembly(two, tenant_id="stripe", user_id="sam")
    elsewhere = ContextAssembly(_Store(_Connection()), tenant_id="acme", user_id="jane")
    assert acme._lock is stripe._lock is connection_lock(one)
    assert elsewhere._lock is not acme._lock


def test_the_shared_lock_keeps_two_threads_apart():
    lock = connection_lock(_Store(_Connection()))
    inside: list[int] = []
    overlap: list[bool] = []

    def work(n: int) -> None:
        with lock:
            inside.append(n)
            overlap.append(len(inside) > 1)
            time.sleep(0.01)
            inside.remove(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlap == [False] * 4
