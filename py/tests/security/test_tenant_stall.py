"""Finding 3 of the operator's-view review: one tenant's idle transaction plus a tenant registration stalled every
other tenant's assembly. register_tenant created each partition with CREATE TABLE ... PARTITION OF, which waits
for ACCESS EXCLUSIVE on the parent behind the idle transaction's ACCESS SHARE; every other tenant's read of that
table then queued behind the waiting registration until its statement timeout; `tenant create` and `load` set
no lock timeout and registered inside their long transaction.

Now a registration creates the partition as a table of its own and attaches it (SHARE UPDATE EXCLUSIVE on the
parent, which no read or write conflicts with), with a lock timeout and retries, in a transaction of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

import psycopg
import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services import tenants
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import TEST_DATABASE
from .helpers import QUESTION, admin_session

AT = parse_time("2026-09-28T12:00:00")
#: Far below the application's statement timeout (30 s) that a stalled assembly used to run into.
PROMPT = 8.0


def _new_tenant(target, tenant_id: str, outcome: dict) -> None:
    """`ctxasm tenant create`'s work (register, then the default rows), as the owner, bounded so that a
    registration that waits forever ends the test instead."""
    started = time.perf_counter()
    try:
        with pgconn.connect(target, pgconn.owner_login()) as connection:
            connection.execute("SET statement_timeout = '25s'")
            connection.commit()
            tenants.create_tenant(PostgresStore(connection), tenant_id, tenant_id.title(),
                                  datetime(2026, 1, 1, tzinfo=timezone.utc))
    except BaseException as exc:  # reported by the test
        outcome["error"] = exc
    outcome["seconds"] = time.perf_counter() - started


def test_an_idle_transaction_of_one_tenant_stalls_neither_another_nor_a_registration(demo_target):
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        tenants.create_tenant(PostgresStore(connection), "bravo", "Bravo", datetime(2026, 1, 1, tzinfo=timezone.utc))
    with pgconn.connect(demo_target, pgconn.app_login()) as idle, \
            pgconn.connect(demo_target, pgconn.app_login()) as other:
        # Tenant A reads and writes, then sits idle inside its transaction, holding its locks.
        store = PostgresStore(idle)
        store.set_tenant("acme")
        store.select_window("acme", _scope())
        store.add_turn({"id": "turn_idle", "role": "user", "content": "Still thinking...", "user_id": "jane",
                        "agent_id": "research-assistant", "thread_id": "thread_jane_research"})
        outcome: dict = {}
        registration = threading.Thread(target=_new_tenant, args=(demo_target, "charlie", outcome))
        registration.start()
        time.sleep(1.0)  # the registration has started; with the old code it waits, queueing B behind it
        started = time.perf_counter()
        window = assemble(PostgresStore(other), WindowSpec("bravo", None, None, None, "fact_check", QUESTION), AT)
        assembly_seconds = time.perf_counter() - started
        registration.join(30)
        idle.rollback()
    assert window.manifest["tenant_id"] == "bravo"
    assert "error" not in outcome, outcome
    assert assembly_seconds < PROMPT, f"B's assembly took {assembly_seconds:.1f} s beside A's idle transaction"
    assert outcome["seconds"] < PROMPT, f"registering a tenant took {outcome['seconds']:.1f} s"
    with psycopg.connect(demo_target.conninfo(demo_target.admin)) as admin:
        assert admin.execute("SELECT count(*) FROM ctxasm.ctx_tenant WHERE tenant_id = 'charlie'").fetchone()[0] == 1


def _scope():
    from ctxasm.engines.store import WindowScope

    return WindowScope("jane", "research-assistant", "thread_jane_research", "fact_check", AT, QUESTION)


def _registration_started(target, process: subprocess.Popen, tenant_id: str) -> None:
    """Wait until `ctxasm load` has registered `tenant_id` or is waiting for a lock (what the old registration
    did behind an idle transaction), or has ended: the moment another tenant's assembly used to queue."""
    deadline = time.monotonic() + 60
    with admin_session(target) as admin:
        while time.monotonic() < deadline and process.poll() is None:
            registered = admin.execute("SELECT count(*) FROM ctxasm.ctx_tenant WHERE tenant_id = %s",
                                       (tenant_id,)).fetchone()[0]
            waiting = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'").fetchone()[0]
            if registered or waiting:
                return
            time.sleep(0.1)


@pytest.mark.slow  # a ctxasm process
def test_ctxasm_load_of_a_new_tenant_beside_an_idle_transaction_stalls_no_one(demo_target, tmp_path):
    """`ctxasm load` of a new tenant's scenario file, as an operator runs it, while tenant A sits idle inside a
    transaction: the load (its registration first, in a transaction of its own) and tenant B's assembly meanwhile
    both finish promptly."""
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        tenants.create_tenant(PostgresStore(connection), "bravo", "Bravo", datetime(2026, 1, 1, tzinfo=timezone.utc))
    document = tenants.new_tenant_document("delta", "Delta Labs", datetime(2026, 1, 1, tzinfo=timezone.utc))
    document["tenants"][0]["memories"].append({
        "type": "entity", "id": "fact_delta_region", "subject": "org:delta", "predicate": "region",
        "content": "Delta Labs runs its retrieval cluster in eu-west-1.", "valid_from": "2026-02-01T00:00:00Z"})
    scenario = tmp_path / "delta.json"
    scenario.write_text(json.dumps(document))
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    with pgconn.connect(demo_target, pgconn.app_login()) as idle, \
            pgconn.connect(demo_target, pgconn.app_login()) as other:
        store = PostgresStore(idle)
        store.set_tenant("acme")
        store.select_window("acme", _scope())
        store.add_turn({"id": "turn_idle_load", "role": "user", "content": "Still thinking...", "user_id": "jane",
                        "agent_id": "research-assistant", "thread_id": "thread_jane_research"})
        load = subprocess.Popen([sys.executable, "-m", "ctxasm.cli", "load", str(scenario)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _registration_started(demo_target, load, "delta")
            started = time.perf_counter()
            window = assemble(PostgresStore(other), WindowSpec("bravo", None, None, None, "fact_check", QUESTION),
                              AT)
            assembly_seconds = time.perf_counter() - started
            out, err = load.communicate(timeout=90)
        finally:
            if load.poll() is None:
                load.kill()
                load.communicate()
            idle.rollback()
    assert load.returncode == 0, err
    assert window.manifest["tenant_id"] == "bravo"
    assert assembly_seconds < PROMPT, f"B's assembly took {assembly_seconds:.1f} s beside A's idle transaction"
    # The load's own time (registration and rows, without the process's start and the embedding model's load).
    load_seconds = float(re.search(r" in ([0-9.]+) s", out).group(1))
    assert load_seconds < PROMPT, f"loading the new tenant took {load_seconds:.1f} s: {out}"
    with admin_session(demo_target) as admin:
        assert admin.execute("SELECT count(*) FROM ctxasm.entity_memory WHERE tenant_id = 'delta' "
                             "AND id = 'fact_delta_region'").fetchone()[0] == 1
