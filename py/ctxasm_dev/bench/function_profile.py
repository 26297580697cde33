"""Where the database's time goes inside an assembly: each routine's own time and its time with what it calls,
per window, from PostgreSQL's function statistics (`track_functions = all`).

The tracking times every routine call, which costs time of its own, so it runs in a pass apart from the timed
one: it is turned on for the benchmark database (`ALTER DATABASE ... SET`, which only sessions opened after it
take), one application connection runs the assemblies, and the setting is removed again, also when the pass
fails. The figures are the counters' growth over the pass: resetting the database's statistics would zero its
tables' counters too, which autovacuum goes by. A session's figures reach the statistics when the session ends,
so they are read once the assemblies' session has gone. Setting `track_functions` takes a superuser (or a grant
of it), as the embedded cluster's admin is; without it the entry says why and the benchmark goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from ctxasm.local import pgconn
from ctxasm_dev.bench import runner

#: the schemas of the routines an assembly runs
SCHEMAS = ("ctx_assembly", "ctx_session", "ctxasm")
#: routines listed, by their own time
TOP = 15
#: how long to wait for the assemblies' session to end and report (seconds)
REPORT_WAIT = 10.0


def reset_tracking(target: Any) -> None:
    """Remove the database's track_functions setting."""
    with pgconn.connect(target, target.admin, autocommit=True) as admin:
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
        with pgconn.connect(target, target.admin, autocommit=True) as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(
                sql.Identifier(target.database)))
    except psycopg.errors.InsufficientPrivilege as exc:
        entry["unavailable"] = f"the admin may not turn on function statistics: {exc.diag.message_primary}"
        return entry
    try:
        before = _counters(target)
        with runner.assembler_session(target, tenant_id, size, questions) as session:
            for question in questions:
                session.time(question)
        entry["routines"] = _grown(target, before, len(questions))
    finally:
        reset_tracking(target)
    log(f"{tenant_id}: function statistics of {len(questions)} assemblies read")
    return entry


def _counters(target: Any) -> dict[str, tuple[int, float, float]]:
    """Each routine of SCHEMAS: calls, own ms and ms with what it calls, as the statistics hold them now."""
    with pgconn.connect(target, target.admin, autocommit=True) as admin:
        rows = admin.execute("SELECT schemaname || '.' || funcname, calls, self_time, total_time "
                             "FROM pg_stat_user_functions WHERE schemaname = ANY (%s)", (list(SCHEMAS),)).fetchall()
    return {name: (calls, self_time, total_time) for name, calls, self_time, total_time in rows}


def _grown(target: Any, before: dict[str, tuple[int, float, float]], windows: int) -> list[dict[str, Any]]:
    """The counters' growth per window since `before`, once the assemblies' session has reported all of it (its
    select_window calls counted), the largest own time first."""
    deadline = time.monotonic() + REPORT_WAIT
    while True:
        after = _counters(target)
        grown = {name: tuple(now - then for now, then in zip(figures, before.get(name, (0, 0.0, 0.0))))
                 for name, figures in after.items()}
        if grown.get("ctx_assembly.select_window", (0,))[0] >= windows or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    ranked = sorted(((name, g) for name, g in grown.items() if g[0] > 0), key=lambda item: (-item[1][1], item[0]))
    return [{"routine": name, "calls": calls / windows, "self_ms": self_ms / windows, "total_ms": total_ms / windows}
            for name, (calls, self_ms, total_ms) in ranked[:TOP]]
