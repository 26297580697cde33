"""python -m ctxasm.bench: the benchmark behind scripts/bench (figures printed, nothing asserted)."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

from .. import deploy, pgconn
from ..store import PostgresStore
from . import generate, load, report, runner

EXAMPLE = """examples:
  scripts/bench                                   # 1e3..1e6 rows, both assemblers, token-count gain
  scripts/bench --sizes 1e3,1e4 --assemblies 20   # a quick run
  scripts/bench --load                            # also N = 1, 8, 32 concurrent assemblies
  scripts/bench --json > bench.json               # figures as one JSON object on stdout
"""


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(float(part)) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: give numbers like 1e3,1e4") from None
    if not sizes or any(size < 100 for size in sizes):
        raise argparse.ArgumentTypeError("--sizes: each size must be at least 100 rows")
    return sizes


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__, epilog=EXAMPLE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("1e3,1e4,1e5,1e6"),
                        help="tenant sizes in memory rows (default 1e3,1e4,1e5,1e6)")
    parser.add_argument("--assemblies", type=int, default=50, help="assemblies per size and assembler (default 50)")
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="stop a size's runs after this long, with at least 3 assemblies (default 120)")
    parser.add_argument("--database", default="ctxasm_bench", help="benchmark database (default ctxasm_bench)")
    parser.add_argument("--rebuild", action="store_true", help="drop the benchmark database and generate again")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    parser.add_argument("--load", action="store_true", help="also run N = 1, 8, 32 concurrent assemblies")
    parser.add_argument("--load-only", action="store_true", help="only the load runs (demo tenant)")
    parser.add_argument("--per-worker", type=int, default=4, help="assemblies per load worker (default 4)")
    parser.add_argument("--token-windows", type=int, default=10,
                        help="selections composed with and without stored counts (default 10)")
    parser.add_argument("--token-counts-only", action="store_true",
                        help="only the stored-token-count gain, on the tenants already built")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object on stdout")
    return parser.parse_args(argv)


def prepare(database: str, rebuild: bool) -> Any:
    target = pgconn.resolve_target(database, start=True)
    if rebuild:
        pgconn.drop_database(target)
    with_schema = False
    try:
        with pgconn.connect(target, pgconn.owner_login()) as connection:
            with_schema = connection.execute("SELECT to_regclass('ctxasm.memory_type') IS NOT NULL").fetchone()[0]
    except Exception:  # no database yet
        with_schema = False
    # deploy is idempotent: Liquibase applies only what is new (a changed package, a new changeset)
    log(f"deploying {database} with Liquibase" + ("" if with_schema else " (new database)"))
    deploy.deploy_postgres(target)
    return target


def ensure_tenant(target: Any, size: int) -> dict[str, Any] | None:
    """Build the tenant of `size` rows unless a complete one is there; returns the build report, or None."""
    plan = generate.plan(size)
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        done = connection.execute("SELECT display_name FROM ctxasm.ctx_tenant WHERE tenant_id = %s",
                                  (plan.tenant_id,)).fetchone()
        connection.rollback()
        if done and done[0].endswith("(complete)"):
            log(f"{plan.tenant_id}: already built")
            return None
        store = PostgresStore(connection)
        if done:
            log(f"{plan.tenant_id}: incomplete, purging")
            store.purge_tenant(plan.tenant_id)
            store.commit()
        log(f"{plan.tenant_id}: generating {size} rows ({plan.users} users)")
        built = generate.build_tenant(connection, plan, log)
        store.register_tenant(plan.tenant_id, f"benchmark tenant, {size} rows (complete)")
        store.commit()
    log(f"{plan.tenant_id}: {built.total} rows, {built.history_rows} history rows, in {built.seconds:.0f} s")
    return {"tenant_id": plan.tenant_id, "total": built.total, "rows": built.rows,
            "history_rows": built.history_rows, "seconds": built.seconds}


def ensure_demo(target: Any) -> None:
    from .. import loader

    with pgconn.connect(target, pgconn.owner_login()) as connection:
        present = connection.execute("SELECT 1 FROM ctxasm.ctx_tenant WHERE tenant_id = 'acme'").fetchone()
    if not present:
        loader.load_file(target, generate.DEMO)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    target = prepare(args.database, args.rebuild)
    figures: dict[str, Any] = {"sizes": args.sizes, "builds": {}, "scale": [], "token_counts": {}, "load": []}
    if args.token_counts_only:
        questions = generate.questions(args.token_windows)
        for size in args.sizes:
            ensure_tenant(target, size)
            figures["token_counts"][size] = runner.token_count_gain(target, generate.plan(size).tenant_id, questions)
    elif not args.load_only:
        questions = generate.questions(args.assemblies)
        for size in args.sizes:
            built = ensure_tenant(target, size)
            if built:
                figures["builds"][size] = built
            tenant = generate.plan(size).tenant_id
            runner.run_assembler(target, tenant, size, questions[:2], 60, lambda _m: None)  # warm-up
            measured = [runner.run_assembler(target, tenant, size, questions, args.max_seconds, log)]
            if not args.no_naive:
                measured.append(runner.run_naive(target, tenant, size, questions, args.max_seconds, log))
            peaks = runner.peak_memory(target, tenant, questions[0])
            for m in measured:
                m.peak_mib = peaks.get(m.assembler)
                figures["scale"].append(m.summary())
            figures["token_counts"][size] = runner.token_count_gain(target, tenant, questions[:args.token_windows])
            log(f"{tenant}: token counting {figures['token_counts'][size]['stored']['token_counting_ms']:.1f} ms "
                f"stored vs {figures['token_counts'][size]['counted']['token_counting_ms']:.1f} ms counted")
    if args.load or args.load_only:
        ensure_demo(target)
        for concurrency in (1, 8, 32):
            result = load.run_load(target, concurrency, args.per_worker)
            figures["load"].append(result.summary())
            log(f"load N={concurrency}: {result.succeeded} ok, {result.failed} failed, "
                f"{result.succeeded / result.seconds:.1f}/s")
    figures["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
        return 0
    if figures["builds"]:
        print("## Tenants built\n\n" + report.build_table(figures["builds"]) + "\n")
    if figures["token_counts"] and not figures["scale"]:
        print("## Stored token counts (compose on identical selections)\n\n"
              + report.token_table(figures["token_counts"]) + "\n")
    if figures["scale"]:
        print("## Assembly per tenant size (latency without the question embedding)\n\n"
              + report.scale_table(figures["scale"]) + "\n")
        print("## Ratio and growth (p50)\n\n" + report.ratio_table(figures["scale"]) + "\n")
        print("## Stored token counts (compose on identical selections)\n\n"
              + report.token_table(figures["token_counts"]) + "\n")
    if figures["load"]:
        print("## Load (demo tenant, concurrent assemblies over a pool)\n\n" + report.load_table(figures["load"]))
    print(f"\nprocess peak RSS {figures['max_rss_mib']:.0f} MiB (getrusage)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
