"""Load: N concurrent assemblies over a connection pool, then the manifests counted in the database.

psycopg_pool is not among the project's dependencies, so the pool is a small one of our own: a queue of
open application connections, each returned in a clean state (PostgresStore leaves no transaction open
after an assembly: the manifest write commits, a failure rolls back).

Each worker first runs `warm_up` untimed assemblies on its own connection of the pool (the embedding model
loads on the first one; PostgreSQL plans a routine's statements once per connection, so a new connection's
first assemblies cost several times a later one's), and the clock starts when all are done: the figures are a
warm pool's, as a server that keeps its connections has. The warm-up asks the workload's own questions (the
demo has four). The latency of a load assembly is the whole call as an agent sees it, the question embedding
included (reported apart too).
"""

from __future__ import annotations

import queue
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time
from ctxasm_dev import timing
from ctxasm_dev.bench import generate, runner

DEMO_AT = "2026-09-28T12:00:00"
DEMO_QUESTIONS = (
    "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR.",
    "What does the Letta paper say about eviction?",
    "Which reranker did we settle on, and why?",
    "Summarise what we know about contamination in BEIR evaluations.",
)
CONCURRENCY = (1, 8, 32)
#: untimed assemblies per worker's connection before the clock starts (scripts/bench --load-warm-up): the plan
#: cache of a PostgreSQL connection settles after about five executions of each statement
WARM_UP = 5


class Pool:
    """A fixed set of application connections handed out one at a time."""

    def __init__(self, target: Any, size: int):
        self._idle: queue.Queue[Any] = queue.Queue()
        self._all = [pgconn.connect(target, pgconn.app_login()) for _ in range(size)]
        for connection in self._all:
            self._idle.put(connection)

    @property
    def connections(self) -> list[Any]:
        return list(self._all)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        connection = self._idle.get()
        try:
            yield connection
        finally:
            if not connection.closed:
                connection.rollback()  # nothing is open after an assembly; this only guards a failure
            self._idle.put(connection)

    def close(self) -> None:
        for connection in self._all:
            connection.close()


@dataclass(frozen=True)
class Workload:
    """Whose windows a load run assembles: the tenant, its questions, the evaluation time, the spec of a
    question, and how a pooled connection's store is wrapped (bench tenants: synthetic question vectors)."""

    tenant_id: str
    label: str
    questions: tuple[str, ...]
    at: datetime
    spec: Callable[[str], WindowSpec]
    wrap: Callable[[PostgresStore], Any] = field(default=lambda store: store)


def jane(question: str) -> WindowSpec:
    return WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check", question=question)


def demo_workload() -> Workload:
    """Jane's research thread in the demo tenant (real all-MiniLM-L6-v2 embeddings throughout)."""
    return Workload("acme", "demo", DEMO_QUESTIONS, parse_time(DEMO_AT), jane)


def bench_workload(size: int, dimensions: int, questions: list[str]) -> Workload:
    """The benchmark tenant of `size` rows, its scope and questions, synthetic question vectors."""
    tenant = generate.plan(size).tenant_id

    def wrap(store: PostgresStore) -> Any:
        wrapped = runner.SyntheticQuestions(store, dimensions)
        wrapped.prepare(questions)
        return wrapped

    return Workload(tenant, generate.size_label(size), tuple(questions), generate.EVALUATION_TIME,
                    lambda question: runner.spec_for(tenant, question), wrap)


@dataclass
class LoadResult:
    concurrency: int
    workload: str
    succeeded: int
    failed: int
    errors: list[str]
    seconds: float
    latencies: list[float]
    embedding_seconds: list[float]
    manifest_ids: list[str]
    manifests_counted: int
    lost: int
    duplicated: int
    warm_up: int = 0

    def summary(self) -> dict[str, Any]:
        return {"kind": "load", "workload": self.workload, "concurrency": self.concurrency,
                "assemblies": self.succeeded, "failed": self.failed, "errors": self.errors[:5],
                "seconds": self.seconds, "throughput": self.succeeded / self.seconds if self.seconds else 0.0,
                "p50_ms": 1000 * runner.percentile(self.latencies, 50),
                "p95_ms": 1000 * runner.percentile(self.latencies, 95),
                "mean_ms": 1000 * statistics.mean(self.latencies) if self.latencies else float("nan"),
                "question_embedding_ms": 1000 * runner.percentile(self.embedding_seconds, 50),
                "manifests_counted": self.manifests_counted, "lost": self.lost, "duplicated": self.duplicated,
                "warm_up": self.warm_up}


def manifest_rows(target: Any, tenant_id: str = "acme") -> list[str]:
    """Every context_manifest id of the tenant, as the database holds them (duplicates would repeat). Read as
    the owner (the application role reads no table), with the tenant set: RLS applies to the owner too."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant(tenant_id)
        rows = connection.execute("SELECT id FROM ctxasm.conversation_memory "
                                  "WHERE tenant_id = %s AND event_type = 'context_manifest'", (tenant_id,)).fetchall()
        connection.rollback()
    return [row[0] for row in rows]


def run_load(target: Any, concurrency: int, per_worker: int, workload: Workload | None = None,
             warm_up: int = WARM_UP) -> LoadResult:
    """`concurrency` threads, each doing `warm_up` untimed assemblies on its own connection and then
    `per_worker` timed ones over a pool of as many connections; then the manifests in the database are compared
    with the ids the successes returned."""
    work = workload or demo_workload()
    pool = Pool(target, concurrency)
    stores = {id(connection): work.wrap(PostgresStore(connection)) for connection in pool.connections}
    lock = threading.Lock()
    latencies: list[float] = []
    embedding_seconds: list[float] = []
    ids: list[str] = []
    errors: list[str] = []
    ready = threading.Barrier(concurrency + 1)  # the workers, warmed up, and the clock
    go = threading.Event()

    def worker(number: int) -> None:
        # warm-up on this worker's own connection (no other worker holds it before the clock starts); the
        # manifests are written before the count starts, so they are not counted
        connection = pool.connections[number]
        try:
            for i in range(warm_up):
                assemble(stores[id(connection)], work.spec(work.questions[(number + i) % len(work.questions)]),
                         work.at)
        except Exception as exc:
            with lock:
                errors.append(f"warm-up: {type(exc).__name__}: {exc}")
        finally:
            if not connection.closed:
                connection.rollback()
        ready.wait()
        go.wait()
        for i in range(per_worker):
            question = work.questions[(number + i) % len(work.questions)]
            t0 = time.perf_counter()
            try:
                with pool.connection() as connection, timing.collect() as seconds:
                    window = assemble(stores[id(connection)], work.spec(question), work.at)
            except Exception as exc:  # counted and reported: a load run must not stop at the first failure
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - t0
            with lock:
                latencies.append(elapsed)
                embedding_seconds.append(seconds.get(runner.EMBEDDING_PHASE, 0.0))
                ids.append(window.manifest_id)

    threads = [threading.Thread(target=worker, args=(n,), name=f"load-{n}") for n in range(concurrency)]
    for thread in threads:
        thread.start()
    ready.wait()
    before = set(manifest_rows(target, work.tenant_id))
    started = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    pool.close()
    after = manifest_rows(target, work.tenant_id)
    new = [m for m in after if m not in before]
    counted = len(new)
    lost = len(set(ids) - set(new))
    duplicated = (len(new) - len(set(new))) + len(set(new) - set(ids)) + (len(ids) - len(set(ids)))
    return LoadResult(concurrency, work.label, len(ids), len(errors), errors, seconds, latencies,
                      embedding_seconds, ids, counted, lost, duplicated, warm_up)
