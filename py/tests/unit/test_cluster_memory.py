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


def test_a_server_started_without_the_safety_settings_is_told_apart(monkeypatch, tmp_path):
    """`db up` restarts a private cluster an older ctxasm started without today's server-wide limits: it reads
    the options pg_ctl recorded in postmaster.opts."""
    monkeypatch.setenv("CTXASM_HOME", str(tmp_path))
    data = tmp_path / "pg" / "data"
    data.mkdir(parents=True)
    assert not pgcluster._lacks_safety_settings()  # nothing recorded: nothing to say
    opts = data / "postmaster.opts"
    opts.write_text('/bin/postgres "-D" "/d" "-p" "5432" "-c" "shared_buffers=128MB"\n')
    assert pgcluster._lacks_safety_settings()
    recorded = " ".join(f'"-c" "{option.removeprefix("-c ")}"' for option in pgcluster.safety_settings())
    opts.write_text(f'/bin/postgres "-D" "/d" "-p" "5432" {recorded}\n')
    assert not pgcluster._lacks_safety_settings()
