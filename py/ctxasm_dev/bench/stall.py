"""python -m ctxasm_dev.bench.stall: how long another tenant's assembly and a new tenant's registration take while
one tenant's transaction sits idle holding its locks (figures printed, nothing asserted).

Tenant A (acme) assembles and writes a turn, then idles inside its transaction. Meanwhile a new tenant is
registered (`tenant create`'s work, as the owner, with a 60 s statement timeout as a bound) and, a moment later,
tenant B (bravo) assembles. Each is timed; `--rounds` repeats the whole with new tenants. The database is made
again first (CTXASM_PG_DATABASE, default ctxasm_stall) and the demo loaded.

    python -m ctxasm_dev.bench.stall [--rounds 3] [--database ctxasm_stall]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import deploy, pgconn
from ctxasm.services import load, tenants
from ctxasm.services.assemble import assemble, parse_time

DEMO = Path(__file__).resolve().parents[3] / "db" / "tests" / "scenarios" / "acme_demo.json"
QUESTION = "Is Helios-RAG still the one to beat?"
AT = parse_time("2026-09-28T12:00:00")
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _register(target, tenant_id: str, outcome: dict) -> None:
    started = time.perf_counter()
    try:
        with pgconn.connect(target, pgconn.owner_login()) as connection:
            connection.execute("SET statement_timeout = '60s'")
            connection.commit()
            tenants.create_tenant(PostgresStore(connection), tenant_id, tenant_id, START)
        outcome["result"] = "ok"
    except Exception as exc:  # the figure says how it ended
        outcome["result"] = f"{type(exc).__name__}: {str(exc)[:80]}"
    outcome["seconds"] = time.perf_counter() - started


def one_round(target, number: int) -> tuple[float, str, float, str]:
    """(B's assembly seconds, how it ended, the registration's seconds, how it ended)."""
    bravo = f"bravo_{number}"
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        tenants.create_tenant(PostgresStore(connection), bravo, bravo, START)
    with pgconn.connect(target, pgconn.app_login()) as idle, pgconn.connect(target, pgconn.app_login()) as other:
        store = PostgresStore(idle)
        store.set_tenant("acme")
        store.select_window("acme", WindowScope("jane", "research-assistant", "thread_jane_research", "fact_check",
                                                AT, QUESTION))
        store.add_turn({"id": f"turn_idle_{number}", "role": "user", "content": "Still thinking...",
                        "user_id": "jane", "agent_id": "research-assistant", "thread_id": "thread_jane_research"})
        outcome: dict = {}
        registration = threading.Thread(target=_register, args=(target, f"charlie_{number}", outcome))
        registration.start()
        time.sleep(1.0)
        started = time.perf_counter()
        try:
            assemble(PostgresStore(other), WindowSpec(bravo, None, None, None, "fact_check", QUESTION), AT)
            ended = "ok"
        except Exception as exc:
            ended = f"{type(exc).__name__}: {str(exc)[:80]}"
        assembly = time.perf_counter() - started
        registration.join(120)
        try:
            idle.rollback()
        except Exception:  # the server may have ended the idle transaction (its idle timeout)
            pass
    return assembly, ended, outcome.get("seconds", float("nan")), outcome.get("result", "still waiting")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.bench.stall", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default="ctxasm_stall")
    args = parser.parse_args()
    target = pgconn.resolve_target(args.database, start=True)
    deploy.deploy_postgres(target, fresh=True)
    load.load_file(target, DEMO)
    rows = [one_round(target, number) for number in range(args.rounds)]
    print("| round | B's assembly s | ended | registration s | ended |")
    print("|---|---|---|---|---|")
    for number, (assembly, ended, registration, result) in enumerate(rows):
        print(f"| {number} | {assembly:.2f} | {ended} | {registration:.2f} | {result} |")
    print(f"B's assembly p50 {statistics.median(r[0] for r in rows):.2f} s, "
          f"registration p50 {statistics.median(r[2] for r in rows):.2f} s")


if __name__ == "__main__":
    main()
