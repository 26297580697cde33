"""Load: N concurrent assemblies over a connection pool, then the manifests counted in the database.

psycopg_pool is not among the project's dependencies, so the pool is a small one of our own: a queue of
open application connections, each returned in a clean state (PostgresStore leaves no transaction open
after an assembly: the manifest write commits, a failure rolls back).
"""

from __future__ import annotations

import queue
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import pgconn
from ..assembler import assemble, parse_time
from ..store import PostgresStore
from ..window import WindowSpec

DEMO_AT = "2026-09-28T12:00:00"
DEMO_QUESTIONS = (
    "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR.",
    "What does the Letta paper say about eviction?",
    "Which reranker did we settle on, and why?",
    "Summarise what we know about contamination in BEIR evaluations.",
)


class Pool:
    """A fixed set of application connections handed out one at a time."""

    def __init__(self, target: Any, size: int):
        self._idle: queue.Queue[Any] = queue.Queue()
        self._all = [pgconn.connect(target, pgconn.app_login()) for _ in range(size)]
        for connection in self._all:
            self._idle.put(connection)

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


@dataclass
class LoadResult:
    concurrency: int
    succeeded: int
    failed: int
    errors: list[str]
    seconds: float
    latencies: list[float]
    manifest_ids: list[str]
    manifests_counted: int
    lost: int
    duplicated: int

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pick(q: float) -> float:
            return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")

        return {"concurrency": self.concurrency, "succeeded": self.succeeded, "failed": self.failed,
                "errors": self.errors[:5], "seconds": self.seconds,
                "throughput": self.succeeded / self.seconds if self.seconds else 0.0,
                "p50_ms": pick(0.5), "p95_ms": pick(0.95),
                "mean_ms": 1000 * statistics.mean(self.latencies) if self.latencies else float("nan"),
                "manifests_counted": self.manifests_counted, "lost": self.lost, "duplicated": self.duplicated}


def jane(question: str) -> WindowSpec:
    return WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check", question=question)


def manifest_rows(target: Any, tenant_id: str = "acme") -> list[str]:
    """Every context_manifest id of the tenant, as the database holds them (duplicates would repeat). Read as
    the owner (the application role reads no table), with the tenant set: RLS applies to the owner too."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant(tenant_id)
        rows = connection.execute("SELECT id FROM ctxasm.conversation_memory "
                                  "WHERE event_type = 'context_manifest'").fetchall()
        connection.rollback()
    return [row[0] for row in rows]


def run_load(target: Any, concurrency: int, per_worker: int) -> LoadResult:
    """`concurrency` threads, each doing `per_worker` assemblies of the demo tenant over a pool of as many
    connections; then the manifests in the database are compared with the ids the successes returned."""
    before = set(manifest_rows(target))
    pool = Pool(target, concurrency)
    at = parse_time(DEMO_AT)
    lock = threading.Lock()
    latencies: list[float] = []
    ids: list[str] = []
    errors: list[str] = []
    start_line = threading.Barrier(concurrency)

    def worker(number: int) -> None:
        start_line.wait()
        for i in range(per_worker):
            question = DEMO_QUESTIONS[(number + i) % len(DEMO_QUESTIONS)]
            t0 = time.perf_counter()
            try:
                with pool.connection() as connection:
                    window = assemble(PostgresStore(connection), jane(question), at)
            except Exception as exc:  # counted and reported: a load run must not stop at the first failure
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - t0
            with lock:
                latencies.append(elapsed)
                ids.append(window.manifest_id)

    threads = [threading.Thread(target=worker, args=(n,), name=f"load-{n}") for n in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    pool.close()
    after = manifest_rows(target)
    new = [m for m in after if m not in before]
    counted = len(new)
    lost = len(set(ids) - set(new))
    duplicated = (len(new) - len(set(new))) + len(set(new) - set(ids)) + (len(ids) - len(set(ids)))
    return LoadResult(concurrency, len(ids), len(errors), errors, seconds, latencies, ids, counted, lost, duplicated)
