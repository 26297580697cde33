"""python -m ctxasm_dev.bench: the benchmark behind scripts/bench (figures printed, nothing asserted).

Tenants of each --sizes are built (once; kept in the benchmark database) with corpus-like text and synthetic
embeddings, all of them before any is measured, so each size is measured beside the others; each is assembled
--assemblies times with different questions by the assembler and by a naive read-everything baseline (what
earlier runs recorded in the tenant is removed first). The smallest tenant is also measured in a database of
its own and beside the largest (the noisy-neighbour figure), and --load adds N concurrent assemblies over a
connection pool.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import deploy, pgconn
from ctxasm.ml.embedding import MODEL_NAME
from ctxasm_dev.bench import function_profile, generate, load, neighbour, report, runner

EXAMPLE = """examples:
  scripts/bench                                   # 1e3..1e6 rows: scale, neighbour, token-count gain
  scripts/bench --sizes 1e3,1e4 --assemblies 20   # a quick run (the neighbour is then the 1e4 tenant)
  scripts/bench --load                            # also N = 1, 8, 32 concurrent assemblies
  scripts/bench --json > bench.json               # figures as one JSON object on stdout
  scripts/bench --sizes 1e6 --functions 40        # also the database routines' own time, routine by routine

--json prints {"format": "ctxasm-bench/3", "database", "sizes", "warm_up", "entries": [...], "max_rss_mib",
"finished"}; "warm_up" says how the timed figures were warmed (--warm-up, --load-warm-up); each entry has a
"kind":
  build               a tenant built by this run: size, tenant, database, rows, by_type, history_rows,
                      seconds, index_seconds
  size                one per size: size, label, tenant, assemblies, p50_ms, p95_ms, p99_ms, mean_ms,
                      phases_ms (p50 per phase), phases_mean_ms, question_embedding_ms, round_trips,
                      candidates, retrieved, vector_ranked, peak_mib, warm_up {assemblies, first_ms, p50_ms}
                      (the untimed warm-up: its first assembly, cold for the connection, and its median),
                      text (the generated text's profile), naive (the baseline's figures, or null),
                      naive_over_assembler (p50 ratio, or null)
  neighbour           size, neighbour_size, alone {p50_ms, p95_ms, ..., warm_up}, beside {...}, p50_ratio,
                      p95_ratio, method
  question_embedding  the real model's question embedding, apart from assembly: model, n, p50_ms, p95_ms
  token_counts        size, stored / counted {token_counting_ms, compose_ms}, identical_requests, windows
  functions           with --functions: size, tenant, assemblies, routines [{routine, calls, self_ms,
                      total_ms}] (per window, the 15 with the most own time), unavailable (why none, or null)
  load                workload, concurrency, assemblies, failed, throughput (per second), p50_ms, p95_ms,
                      question_embedding_ms, manifests_counted, lost, duplicated, warm_up (assemblies per
                      worker)
  target              a figure of the scaling goals: figure, measured, goal, met
Latencies of size and neighbour entries leave the question embedding out; load latencies include it.
Timed figures are a warm server's: see --warm-up and --load-warm-up.
"""


#: untimed warm-up assemblies per size (--warm-up). A new connection's first five or so assemblies plan the
#: routines' statements; right after a server restart a 1e6-row tenant then needs a few tens more before its
#: pages are back in the buffer cache (measured: 5 left the timed p50 at about twice the warm figure, 30 reached
#: it)
WARM_UP = 20

#: how the timed figures were warmed, printed above the tables and kept in --json
WARM_UP_METHOD = ("timed figures are a warm server's. Before them, each size's measuring connection, and each side "
                  "of the neighbour figure, ran {n} untimed assemblies with questions of their own (none of them "
                  "timed), and each load worker {load} on its own connection with the workload's questions. A "
                  "server keeps its pooled connections; PostgreSQL plans a routine's statements once per "
                  "connection, and reads a tenant's pages into its buffer cache only as they are used, so a cold "
                  "connection's or a restarted server's first assemblies are not the steady cost. They are "
                  "reported apart: the first warm-up assembly (cold for its connection) and the warm-up median. "
                  "The naive baseline runs after every size's assembler figures: it reads whole tenants through "
                  "the buffer cache, and run in between it would evict the next size's pages (a 1e6 p50 of 203 "
                  "ms right after the 1e5 baseline, 108 ms without it).")


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(float(part)) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: give numbers like 1e3,1e4") from None
    if not sizes or any(size < 100 for size in sizes):
        raise argparse.ArgumentTypeError("--sizes: each size must be at least 100 rows")
    return sizes


def parse_concurrency(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--concurrency {text!r}: give whole numbers like 1,8,32") from None
    if not levels or any(level < 1 for level in levels):
        raise argparse.ArgumentTypeError("--concurrency: each level must be at least 1")
    return levels


def parse_assembly_count(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of assemblies (0 or more)")
    return int(text)


def parse_load_tenant(text: str) -> str | int:
    if text == "demo":
        return text
    try:
        return parse_sizes(text)[0]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"--load-tenant {text!r}: 'demo' or a tenant size like 1e6") from None


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__, epilog=EXAMPLE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("1e3,1e4,1e5,1e6"),
                        help="tenant sizes in memory rows, at least 100 each (default 1e3,1e4,1e5,1e6)")
    parser.add_argument("--assemblies", type=int, default=50,
                        help="timed assemblies per size and assembler, each with its own question (default 50)")
    parser.add_argument("--warm-up", type=parse_assembly_count, default=WARM_UP,
                        help="untimed assemblies before the timed ones, per size and for each side of the "
                             "neighbour figure, with questions of their own (never timed); their first and median "
                             f"latencies are reported apart (default {WARM_UP})")
    parser.add_argument("--load-warm-up", type=parse_assembly_count, default=load.WARM_UP,
                        help="untimed assemblies per load worker on its own connection before the clock starts "
                             f"(default {load.WARM_UP})")
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="stop a size's timed runs after this long, with at least 3 assemblies (default 120)")
    parser.add_argument("--database", default="ctxasm_bench",
                        help="benchmark database (default ctxasm_bench); the neighbour figure's small tenant "
                             "alone lives in DATABASE_alone")
    parser.add_argument("--rebuild", action="store_true",
                        help="drop the benchmark databases and build the tenants again (do it after a schema "
                             "change: purging a big tenant row by row is far slower)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    parser.add_argument("--no-neighbour", action="store_true",
                        help="skip the noisy-neighbour figure (smallest tenant alone, then beside the largest)")
    parser.add_argument("--load", action="store_true", help="also run concurrent assemblies (see --concurrency)")
    parser.add_argument("--load-only", action="store_true", help="only the load runs")
    parser.add_argument("--load-tenant", type=parse_load_tenant, default="demo",
                        help="whose windows the load runs assemble: 'demo' (Jane's research thread in the demo "
                             "tenant, real embeddings; default) or a benchmark tenant size such as 1e6")
    parser.add_argument("--concurrency", type=parse_concurrency, default=list(load.CONCURRENCY),
                        help="concurrent assemblies of the load runs, one run per level (default 1,8,32)")
    parser.add_argument("--per-worker", type=int, default=8,
                        help="timed assemblies per load worker, after its warm-up (default 8)")
    parser.add_argument("--token-windows", type=int, default=10,
                        help="selections composed with and without stored counts (default 10; 0: none)")
    parser.add_argument("--token-counts-only", action="store_true",
                        help="only the stored-token-count gain, on the tenants already built")
    parser.add_argument("--functions", type=parse_assembly_count, default=0, metavar="N",
                        help="also N assemblies per size, apart from the timed ones, with PostgreSQL's function "
                             "statistics on: each database routine's own time per window (default 0: none)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object on stdout")
    return parser.parse_args(argv)


def prepare(database: str, rebuild: bool) -> Any:
    target = pgconn.resolve_target(database, start=True)
    if rebuild:
        pgconn.drop_database(target)
    # deploy is idempotent: Liquibase applies only what is new (a changed package, a new changeset)
    log(f"deploying {database} with Liquibase")
    deploy.deploy_postgres(target)
    function_profile.clear_leftover(target)
    return target


def prepare_alone(target: Any, rebuild: bool) -> Any:
    """The neighbour figure's database of its own. Made as a copy of the benchmark database while that holds
    no tenant yet (just deployed: a copy takes a moment, a deployment many seconds), else deployed."""
    import psycopg
    from psycopg import sql

    alone = pgconn.resolve_target(neighbour.alone_database(target.database), start=True)
    with psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (alone.database,)).fetchone()
        with psycopg.connect(target.conninfo(target.admin), autocommit=True) as main_db:
            empty = main_db.execute("SELECT NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant)").fetchone()[0]
        if (rebuild or not exists) and empty:
            log(f"copying the empty {target.database} to {alone.database}")
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(alone.database)))
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
                sql.Identifier(alone.database), sql.Identifier(target.database), sql.Identifier(pgconn.OWNER_ROLE)))
            pgconn.bootstrap(alone)  # the database's own grants are not part of the copy
            return alone
    return prepare(alone.database, rebuild)


def ensure_tenant(target: Any, size: int) -> dict[str, Any] | None:
    """Build the tenant of `size` rows unless a complete one of this generator is there; returns its build
    entry, or None."""
    plan = generate.plan(size)
    complete = f"(complete, {generate.GENERATOR})"
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        done = connection.execute("SELECT display_name FROM ctxasm.ctx_tenant WHERE tenant_id = %s",
                                  (plan.tenant_id,)).fetchone()
        connection.rollback()
        if done and done[0].endswith(complete):
            log(f"{plan.tenant_id}: already built in {target.database}")
            return None
        store = PostgresStore(connection)
        if done:
            log(f"{plan.tenant_id}: incomplete or made by an older generator, purging (--rebuild is faster)")
            store.purge_tenant(plan.tenant_id)
            store.commit()
        log(f"{plan.tenant_id}: generating {size} rows ({plan.users} users) in {target.database}")
        # The index builds are watched as the admin: the lockdown revokes the progress view's function from
        # PUBLIC, owner included (it would show other sessions' work).
        built = generate.build_tenant(connection, plan, log, lambda: pgconn.connect(target, target.admin))
        store.register_tenant(plan.tenant_id, f"benchmark tenant, {size} rows {complete}")
        store.commit()
    log(f"{plan.tenant_id}: {built.total} rows, {built.history_rows} history rows, in {built.seconds:.0f} s")
    return {"kind": "build", "size": size, "tenant": plan.tenant_id, "database": target.database,
            "rows": built.total, "by_type": built.rows, "history_rows": built.history_rows,
            "seconds": built.seconds, "index_seconds": built.index_seconds}


def ensure_demo(target: Any) -> None:
    from ctxasm.services import load

    with pgconn.connect(target, pgconn.owner_login()) as connection:
        present = connection.execute("SELECT 1 FROM ctxasm.ctx_tenant WHERE tenant_id = 'acme'").fetchone()
    if not present:
        load.load_file(target, generate.DEMO)


def clear_assemblies(target: Any, tenant_id: str) -> None:
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        removed = generate.clear_assemblies(connection, tenant_id)
    if removed:
        log(f"{tenant_id}: removed {removed} manifest rows of earlier runs from {target.database}")


def text_profile(target: Any, size: int, questions: list[str]) -> dict[str, Any]:
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        return generate.text_profile(connection, generate.plan(size).tenant_id, questions)


def measure_sizes(target: Any, args: argparse.Namespace, questions: list[str], warm_up: list[str]
                  ) -> tuple[list[dict[str, Any]], list[float]]:
    """One size entry per size (and the token-count entries); also every question-embedding time seen. Every
    size's assembler figures come first, then the naive baseline's (WARM_UP_METHOD says why)."""
    entries: list[dict[str, Any]] = []
    embedding_seconds: list[float] = []
    assemblers: dict[int, Any] = {}
    tokens: dict[int, dict[str, Any]] = {}
    for size in args.sizes:
        tenant = generate.plan(size).tenant_id
        clear_assemblies(target, tenant)
        assembler = runner.run_assembler(target, tenant, size, questions, args.max_seconds, log, warm_up)
        first = assembler.warm_up_summary()["first_ms"]
        if first is not None:
            log(f"{tenant}: warm-up of {len(warm_up)}, the first {first:.0f} ms")
        embedding_seconds += assembler.embedding_seconds
        assemblers[size] = assembler
        if args.token_windows > 0:  # 0 leaves the stored-count comparison out
            tokens[size] = token_entry(target, size, questions[:args.token_windows])
    for size in args.sizes:
        tenant, assembler = generate.plan(size).tenant_id, assemblers[size]
        naive = None if args.no_naive else runner.run_naive(target, tenant, size, questions, args.max_seconds, log)
        peaks = runner.peak_memory(target, tenant, questions[0], naive=naive is not None)
        assembler.peak_mib = peaks.get("assembler")
        entry = {"kind": "size", "label": generate.size_label(size), **assembler.summary(),
                 "text": text_profile(target, size, questions[:5]), "naive": None, "naive_over_assembler": None}
        del entry["assembler"]
        if naive is not None:
            naive.peak_mib = peaks.get("naive")
            entry["naive"] = naive.summary()
            entry["naive_over_assembler"] = naive.p50_ms() / assembler.p50_ms() if assembler.p50_ms() else None
        entries.append(entry)
        if size in tokens:
            entries.append(tokens[size])
    return entries, embedding_seconds


def token_entry(target: Any, size: int, questions: list[str]) -> dict[str, Any]:
    gain = runner.token_count_gain(target, generate.plan(size).tenant_id, questions)
    log(f"{generate.plan(size).tenant_id}: token counting {gain['stored']['token_counting_ms']:.1f} ms stored "
        f"vs {gain['counted']['token_counting_ms']:.1f} ms counted")
    return {"kind": "token_counts", "size": size, **gain}


def load_entries(target: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.load_tenant == "demo":
        ensure_demo(target)
        workload = load.demo_workload()
        clear_assemblies(target, workload.tenant_id)
    else:
        ensure_tenant(target, args.load_tenant)
        dimensions = runner.question_dimensions(target)
        workload = load.bench_workload(args.load_tenant, dimensions, generate.questions(16, seed=9))
        clear_assemblies(target, workload.tenant_id)
    entries = []
    for concurrency in args.concurrency:
        result = load.run_load(target, concurrency, args.per_worker, workload, warm_up=args.load_warm_up)
        entries.append(result.summary())
        log(f"load {workload.label} N={concurrency}: {result.succeeded} ok, {result.failed} failed, "
            f"{entries[-1]['throughput']:.1f}/s")
    return entries


def finite(value: Any) -> Any:
    """The figures with NaN (a percentile of nothing, e.g. a load run where every assembly failed) as null,
    so --json prints valid JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def embedding_entry(seconds: list[float]) -> dict[str, Any]:
    return {"kind": "question_embedding", "model": MODEL_NAME, "n": len(seconds),
            "p50_ms": 1000 * runner.percentile(seconds, 50), "p95_ms": 1000 * runner.percentile(seconds, 95)}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    target = prepare(args.database, args.rebuild)
    entries: list[dict[str, Any]] = []
    measure = not (args.load_only or args.token_counts_only)
    with_neighbour = measure and len(args.sizes) > 1 and not args.no_neighbour
    alone = prepare_alone(target, args.rebuild) if with_neighbour else None
    if not args.load_only:
        for size in args.sizes:  # every tenant first: each size is measured beside all the others
            built = ensure_tenant(target, size)
            if built:
                entries.append(built)
    if args.token_counts_only:
        questions = generate.questions(args.token_windows)
        entries += [token_entry(target, size, questions) for size in args.sizes]
    if measure:
        # one seeded sequence: the timed questions first (the same as without a warm-up), the warm-up's after
        asked = generate.questions(args.assemblies + args.warm_up)
        questions, warm_up = asked[:args.assemblies], asked[args.assemblies:]
        measured, embedding_seconds = measure_sizes(target, args, questions, warm_up)
        entries += measured
        if args.functions > 0:
            # the timed questions again: the same windows, now with every routine call timed
            entries += [function_profile.profile(target, generate.plan(size).tenant_id, size,
                                                 (questions * args.functions)[:args.functions], log)
                        for size in args.sizes]
        if alone is not None:
            built = ensure_tenant(alone, args.sizes[0])
            if built:
                entries.append(built)
            for database in (alone, target):
                clear_assemblies(database, generate.plan(args.sizes[0]).tenant_id)
            entries.append(neighbour.measure(alone, target, args.sizes[0], args.sizes[-1], questions,
                                             args.max_seconds, log, warm_up))
        entries.append(embedding_entry(embedding_seconds))
    if args.load or args.load_only:
        entries += load_entries(target, args)
    entries += report.targets(entries)
    figures = {"format": "ctxasm-bench/3", "database": args.database, "sizes": args.sizes,
               "warm_up": {"assemblies": args.warm_up, "load_assemblies": args.load_warm_up,
                           "method": WARM_UP_METHOD.format(n=args.warm_up, load=args.load_warm_up)},
               "entries": entries,
               "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.json:
        print(json.dumps(finite(figures), indent=2, default=str, allow_nan=False))
    else:
        print(report.text(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
