"""The embedded cluster's memory options: sized to the machine, overridable, a bad override named."""

import pytest

from ctxasm.errors import ConfigError
from ctxasm.local import pgcluster


def _mib(setting: str) -> int:
    return int(setting.split("=", 1)[1].removesuffix("MB"))


def test_shared_buffers_are_an_eighth_of_memory_within_bounds(monkeypatch):
    monkeypatch.delenv("CTXASM_PG_SHARED_BUFFERS", raising=False)
    settings = pgcluster.memory_settings()
    shared = _mib(next(s for s in settings if "shared_buffers" in s))
    assert 128 <= shared <= 2048
    cache = next((s for s in settings if "effective_cache_size" in s), None)
    if cache is not None:
        assert _mib(cache) >= shared


def test_override_is_used_and_a_bad_one_is_named(monkeypatch):
    monkeypatch.setenv("CTXASM_PG_SHARED_BUFFERS", "512MB")
    assert "-c shared_buffers=512MB" in pgcluster.memory_settings()
    monkeypatch.setenv("CTXASM_PG_SHARED_BUFFERS", "a lot")
    with pytest.raises(ConfigError, match="CTXASM_PG_SHARED_BUFFERS"):
        pgcluster.memory_settings()


def test_the_lock_table_has_room_for_many_tenants(monkeypatch):
    monkeypatch.delenv("CTXASM_PG_SHARED_BUFFERS", raising=False)
    locks = next(s for s in pgcluster.memory_settings() if "max_locks_per_transaction" in s)
    assert int(locks.split("=", 1)[1]) >= 1024
