"""Faults in the middle of an assembly: the backend terminated during select_window and during the manifest
write (held there by a conflicting lock another session holds), and the server itself killed.

Each time: a clear DatabaseUnavailable naming PostgreSQL, no manifest (and no source_ref row) written, and
the next assembly on a new connection succeeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from ctxasm import errors
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services import load
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import REPO, SCENARIOS, empty_database

QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
SPEC = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                  thread_id="thread_jane_research", intent="fact_check", question=QUESTION)
AT = parse_time("2026-09-28T12:00:00")


@pytest.fixture(scope="module")
def demo_once(pg_target):
    empty_database(pg_target)
    load.load_file(pg_target, SCENARIOS / "acme_demo.json")
    return pg_target


def written(target) -> tuple[int, int]:
    """(manifest events, manifest source_ref rows) of the demo tenant."""
    with psycopg.connect(target.conninfo(target.admin)) as admin:
        return admin.execute(
            "SELECT (SELECT count(*) FROM ctxasm.conversation_memory WHERE event_type = 'context_manifest'), "
            "       (SELECT count(*) FROM ctxasm.context_source_ref WHERE derived_type = 'manifest')").fetchone()


def assemble_in_thread(target) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            with pgconn.connect(target, pgconn.app_login()) as connection:
                outcome["window"] = assemble(PostgresStore(connection), SPEC, AT)
        except BaseException as exc:  # the test inspects whatever came out
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="assembly")
    thread.start()
    return thread, outcome


def waiting_backend(admin, timeout: float = 90.0) -> int:
    """The application backend that is blocked on a lock (the assembly, held mid-statement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND usename = %s "
            "AND wait_event_type = 'Lock'", (pgconn.app_login().user,)).fetchone()
        if row:
            return row[0]
        time.sleep(0.05)
    raise AssertionError("the assembly never blocked on the held lock")


@pytest.mark.parametrize("table, mode, where", [
    # select_window reads every memory table: an ACCESS EXCLUSIVE lock holds it inside its one statement
    ("entity_memory", "ACCESS EXCLUSIVE", "select_window"),
    # reads pass a SHARE lock, inserts do not: the manifest event is written, its source refs wait
    ("context_source_ref", "SHARE", "record_manifest"),
])
def test_backend_terminated_mid_assembly(demo_once, table, mode, where):
    target = demo_once
    before = written(target)
    with psycopg.connect(target.conninfo(target.admin)) as holder, \
            psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        holder.execute(f"LOCK TABLE ctxasm.{table} IN {mode} MODE")
        thread, outcome = assemble_in_thread(target)
        pid = waiting_backend(admin)
        query = admin.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
        assert where in query
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        thread.join(60)
        holder.rollback()
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, errors.DatabaseUnavailable), repr(error)
    assert str(error).startswith("PostgreSQL: ") and "terminat" in str(error)
    assert written(target) == before, "a terminated assembly must leave no manifest and no source refs"
    # The next assembly, on a new connection, succeeds and records exactly one manifest.
    with pgconn.connect(target, pgconn.app_login()) as connection:
        window = assemble(PostgresStore(connection), SPEC, AT)
    assert window.manifest_id.startswith("manifest_")
    assert written(target)[0] == before[0] + 1


def test_dead_connection_is_reported_not_leaked(demo_once):
    """A connection that died between assemblies: the error is DatabaseUnavailable, never a raw driver error."""
    with pgconn.connect(demo_once, pgconn.app_login()) as connection, \
            psycopg.connect(demo_once.conninfo(demo_once.admin), autocommit=True) as admin:
        pid = connection.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        time.sleep(0.2)
        with pytest.raises(errors.DatabaseUnavailable, match="^PostgreSQL: "):
            assemble(PostgresStore(connection), SPEC, AT)


@pytest.mark.slow  # a private cluster of its own: initdb, a deployment, a restart
def test_server_killed_mid_assembly(tmp_path):
    """A private cluster (CTXASM_HOME in a temporary directory), never the shared one: its postmaster is
    killed while an assembly waits inside select_window; then it is started again and assembly succeeds."""
    env = dict(os.environ, CTXASM_HOME=str(tmp_path / "home"), CTXASM_PG_DATABASE="ctxasm_fault")
    env.pop("CTXASM_PG_DSN", None)
    result = subprocess.run([sys.executable, "-m", "ctxasm_dev.bench.server_kill"], env=env, cwd=REPO / "py",
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["shared_cluster_untouched"]
    assert report["error_class"] == "DatabaseUnavailable", report
    assert report["error"].startswith("PostgreSQL: ") or "cannot connect" in report["error"]
    assert report["manifests_before"] == report["manifests_after_kill"]
    assert report["after_restart"]["manifest_id"].startswith("manifest_")
    assert report["manifests_after_restart"] == report["manifests_before"] + 1
