"""The server-kill fault, run in its own process with CTXASM_HOME pointing at a private directory:

start a private embedded cluster, deploy, load the demo, hold an assembly inside select_window (another
session holds a conflicting lock), SIGKILL that cluster's postmaster, check the error, start the cluster
again and assemble. Prints one JSON object. Refuses to run against the shared cluster.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ctxasm import settings
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import deploy, pgcluster, pgconn
from ctxasm.services import load
from ctxasm.services.assemble import assemble, parse_time
from ctxasm_dev.bench import generate

SHARED_HOME = Path(__file__).resolve().parents[3] / ".ctxasm"
SPEC = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                  thread_id="thread_jane_research", intent="fact_check",
                  question="Is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR.")
AT = parse_time("2026-09-28T12:00:00")


def manifests(target: Any) -> int:
    import psycopg

    with psycopg.connect(target.conninfo(target.admin), connect_timeout=10) as admin:
        return admin.execute("SELECT count(*) FROM ctxasm.conversation_memory "
                             "WHERE event_type = 'context_manifest'").fetchone()[0]


def shared_postmaster() -> int | None:
    """The shared cluster's postmaster pid (from its pid file), to show it was left alone."""
    pidfile = SHARED_HOME / "pg" / "data" / "postmaster.pid"
    try:
        return int(pidfile.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _dead(pid: int) -> bool:
    """Gone, or a zombie: in a container nobody may reap the killed postmaster, and a zombie still
    answers kill(pid, 0), which pg_ctl and the postmaster's lock file check take for a live server."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def _restart(killed: int, deadline: float) -> Any:
    """Start the private cluster again; the killed postmaster's backends may need a moment to exit."""
    while not _dead(killed) and time.monotonic() < deadline:
        time.sleep(0.1)
    pidfile = pgcluster.status().data_dir / "postmaster.pid"
    if _dead(killed) and pidfile.exists() and pidfile.read_text().split("\n", 1)[0].strip() == str(killed):
        pidfile.unlink()  # the private cluster's stale lock file of a dead postmaster
    while True:
        try:
            pgcluster.up()
            return pgconn.resolve_target(start=False)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main() -> int:
    home = settings.state_dir().resolve()
    if home == SHARED_HOME.resolve() or "CTXASM_HOME" not in os.environ or os.environ.get("CTXASM_PG_DSN"):
        print("server_kill: set CTXASM_HOME to a private directory (never the shared cluster)", file=sys.stderr)
        return 2
    shared_before = shared_postmaster()
    target = pgconn.resolve_target(start=True)
    deploy.deploy_postgres(target)
    load.load_file(target, generate.DEMO)
    before = manifests(target)

    import psycopg

    holder = psycopg.connect(target.conninfo(target.admin))
    holder.execute("LOCK TABLE ctxasm.entity_memory IN ACCESS EXCLUSIVE MODE")
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with pgconn.connect(target, pgconn.app_login()) as connection:
                outcome["window"] = assemble(PostgresStore(connection), SPEC, AT)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        deadline = time.monotonic() + 90
        while not admin.execute("SELECT 1 FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'",
                                (pgconn.app_login().user,)).fetchone():
            if time.monotonic() > deadline:
                raise SystemExit("server_kill: the assembly never reached select_window")
            time.sleep(0.05)
    private = pgcluster.status()
    deadline = time.monotonic() + 15
    while private.pid is None and time.monotonic() < deadline:
        # pg_ctl status can answer "not running" for a moment on a loaded machine: ask again before refusing.
        time.sleep(0.5)
        private = pgcluster.status()
    if private.pid is None or private.pid == shared_before or home not in private.data_dir.resolve().parents:
        raise SystemExit(f"server_kill: refusing to kill pid {private.pid} ({private.data_dir})")
    postmaster = private.pid
    os.kill(postmaster, signal.SIGKILL)
    thread.join(120)
    try:
        holder.close()
    except Exception:
        pass
    error = outcome.get("error")
    target = _restart(postmaster, time.monotonic() + 60)
    after_kill = manifests(target)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        window = assemble(PostgresStore(connection), SPEC, AT)
    report = {
        "private_home": str(home), "killed_postmaster_pid": postmaster,
        "shared_cluster_untouched": shared_postmaster() == shared_before
                                    and (shared_before is None or _alive(shared_before)),
        "error_class": type(error).__name__ if error else None, "error": str(error) if error else None,
        "manifests_before": before, "manifests_after_kill": after_kill,
        "after_restart": {"manifest_id": window.manifest_id}, "manifests_after_restart": manifests(target),
    }
    pgcluster.down()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
