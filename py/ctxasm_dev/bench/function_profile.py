"""Where the database's time goes inside an assembly: each routine's own time and its time with what it calls,
per window, from PostgreSQL's function statistics (`track_functions = all`).

The tracking times every routine call, which costs time of its own, so it runs in a pass apart from the timed
one: it is turned on for the benchmark database (`ALTER DATABASE ... SET`, which only sessions opened after it
take), the statistics are reset, one application connection runs the assemblies, and the setting is removed
again, also when the pass fails. A session's figures reach the statistics when the session ends, so they are
read once the assemblies' session has gone. Setting `track_functions` takes a superuser (or a grant of it), as
the embedded cluster's admin is; without it the entry says why and the benchmark goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from ctxasm_dev.bench import runner

#: the schemas of the routines an assembly runs
SCHEMAS = ("ctx_assembly", "ctx_session", "ctxasm")
#: routines listed, by their own time
TOP = 15
#: how long to wait for the assemblies' session to end and report (seconds)
REPORT_WAIT = 10.0


def _admin(target: Any) -> psycopg.Connection:
    return psycopg.connect(target.conninfo(target.admin), autocommit=True)


def reset_tracking(target: Any) -> None:
    """Remove the database's track_functions setting."""
    with _admin(target) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} RESET track_functions").format(sql.Identifier(target.database)))


def clear_leftover(target: Any) -> None:
    """Before the timed runs: remove the setting a profiling pass that was killed may have left on (it would
    time every routine call of the timed assemblies too). An admin who may not change it cannot have set it."""
    try:
        reset_tracking(target)
    except psycopg.errors.InsufficientPrivilege:
        pass


def profile(target: Any, tenant_id: str, size: int, questions: list[str], log: Callable[[str], None]
            ) -> dict[str, Any]:
    """One `functions` entry: the routines of `len(questions)` assemblies of one tenant, by own time."""
    entry: dict[str, Any] = {"kind": "functions", "size": size, "tenant": tenant_id, "assemblies": len(questions),
                             "routines": [], "unavailable": None}
    try:
        with _admin(target) as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(
                sql.Identifier(target.database)))
            admin.execute("SELECT pg_stat_reset()")
    except psycopg.errors.InsufficientPrivilege as exc:
        entry["unavailable"] = f"the admin may not turn on function statistics: {exc.diag.message_primary}"
        clear_leftover(target)  # set, when only the statistics' reset was refused
        return entry
    try:
        with runner.assembler_session(target, tenant_id, size, questions) as session:
            for question in questions:
                session.time(question)
        entry["routines"] = _read(target, len(questions))
    finally:
        reset_tracking(target)
    log(f"{tenant_id}: function statistics of {len(questions)} assemblies read")
    return entry


def _read(target: Any, windows: int) -> list[dict[str, Any]]:
    """The routines' figures per window once the assemblies' session has reported all of them (its
    select_window calls counted), the largest own time first."""
    query = ("SELECT schemaname || '.' || funcname, calls, self_time, total_time FROM pg_stat_user_functions "
             "WHERE schemaname = ANY (%s) ORDER BY self_time DESC, funcname")
    deadline = time.monotonic() + REPORT_WAIT
    with _admin(target) as admin:
        while True:
            rows = admin.execute(query, (list(SCHEMAS),)).fetchall()
            selected = sum(calls for name, calls, _, _ in rows if name == "ctx_assembly.select_window")
            if selected >= windows or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    return [{"routine": name, "calls": calls / windows, "self_ms": self_time / windows,
             "total_ms": total_time / windows} for name, calls, self_time, total_time in rows[:TOP]]
