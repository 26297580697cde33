"""What the benchmark loader needs to know about the schema, read from the catalog instead of assumed:
which memory tables have an `embedding` column (and its width), and which vector indexes (HNSW, IVFFlat)
sit on the memory tables or on their partitions, so a large load can drop them and build them again.

A memory table may be partitioned by tenant: its vector index is then a partitioned index with one
child index per partition. A child cannot be dropped on its own, so the whole index is dropped and built
again the way it was: the parent `ON ONLY` the table, each child on its partition, each child attached.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ctxasm.ml.embedding import DIMENSIONS
from ctxasm.progress import progress

_EMBEDDING_COLUMNS = """
SELECT c.table_name, a.atttypmod
  FROM information_schema.columns AS c
  JOIN ctxasm.memory_type AS m ON m.table_name = c.table_name
  JOIN pg_catalog.pg_attribute AS a
    ON a.attrelid = to_regclass(quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))
   AND a.attname = c.column_name AND NOT a.attisdropped
 WHERE c.table_schema = 'ctxasm' AND c.column_name = 'embedding' AND c.udt_name = 'vector'
 ORDER BY m.ordinal
"""

_VECTOR_INDEXES = """
SELECT quote_ident(ns.nspname) || '.' || quote_ident(ic.relname) AS index_name,
       pg_catalog.pg_get_indexdef(i.indexrelid) AS definition,
       quote_ident(ts.nspname) || '.' || quote_ident(t.relname) AS table_name,
       (SELECT quote_ident(pns.nspname) || '.' || quote_ident(pic.relname)
          FROM pg_catalog.pg_inherits AS h
          JOIN pg_catalog.pg_class AS pic ON pic.oid = h.inhparent
          JOIN pg_catalog.pg_namespace AS pns ON pns.oid = pic.relnamespace
         WHERE h.inhrelid = i.indexrelid) AS parent_index
  FROM pg_catalog.pg_index AS i
  JOIN pg_catalog.pg_class AS ic ON ic.oid = i.indexrelid
  JOIN pg_catalog.pg_namespace AS ns ON ns.oid = ic.relnamespace
  JOIN pg_catalog.pg_am AS am ON am.oid = ic.relam
  JOIN pg_catalog.pg_class AS t ON t.oid = i.indrelid
  JOIN pg_catalog.pg_namespace AS ts ON ts.oid = t.relnamespace
  JOIN pg_catalog.pg_class AS root ON root.oid = coalesce(pg_catalog.pg_partition_root(i.indrelid), i.indrelid)
  JOIN pg_catalog.pg_namespace AS rs ON rs.oid = root.relnamespace
 WHERE am.amname IN ('hnsw', 'ivfflat')
   AND rs.nspname = 'ctxasm' AND root.relname IN (SELECT m.table_name FROM ctxasm.memory_type AS m)
 ORDER BY 1
"""


def embedding_tables(connection: Any) -> dict[str, int]:
    """Memory tables (as ctxasm.memory_type lists them) with a pgvector `embedding` column, and its width."""
    return {table: (width if width and width > 0 else DIMENSIONS)
            for table, width in connection.execute(_EMBEDDING_COLUMNS).fetchall()}


@dataclass(frozen=True)
class VectorIndex:
    name: str
    definition: str
    table: str
    parent: str | None


def vector_indexes(connection: Any) -> list[VectorIndex]:
    """Every vector index of a memory table or of one of its partitions, parents before their children."""
    found = [VectorIndex(*row) for row in connection.execute(_VECTOR_INDEXES).fetchall()]
    by_name = {index.name: index for index in found}

    def depth(index: VectorIndex) -> int:
        return 0 if index.parent is None or index.parent not in by_name else 1 + depth(by_name[index.parent])

    return sorted(found, key=lambda index: (depth(index), index.name))


def drop(connection: Any, indexes: list[VectorIndex]) -> None:
    """Drop the top-level indexes (a partitioned index takes its children with it) and commit."""
    for index in indexes:
        if index.parent is None:
            connection.execute(f"DROP INDEX IF EXISTS {index.name}")
    connection.commit()


def rebuild(connection: Any, watcher_connect: Callable[[], Any], indexes: list[VectorIndex],
            log: Callable[[str], None]) -> float:
    """Build the dropped indexes again, as they were; returns the seconds taken. The tuples the server
    reports building (pg_stat_progress_create_index) drive a progress line."""
    started = time.perf_counter()
    connection.execute("SET maintenance_work_mem = '2GB'")
    for index in indexes:
        log(f"building {index.name} on {index.table}")
        with _build_progress(watcher_connect, connection.info.backend_pid, f"building {index.name}"):
            connection.execute(index.definition)
            if index.parent is not None:
                connection.execute(f"ALTER INDEX {index.parent} ATTACH PARTITION {index.name}")
            connection.commit()
    connection.execute("RESET maintenance_work_mem")
    connection.commit()
    return time.perf_counter() - started


@contextmanager
def _build_progress(watcher_connect: Callable[[], Any], pid: int, label: str) -> Iterator[None]:
    """A progress line for the block, fed by polling the server's index-build progress of backend `pid`
    from a second connection. Only a display: if the polling fails, the build goes on without it."""
    stop = threading.Event()

    def poll() -> None:
        import psycopg

        try:
            with progress(label) as bar, watcher_connect() as watcher:
                watcher.autocommit = True
                while not stop.wait(1.0):
                    row = watcher.execute("SELECT tuples_done, tuples_total "
                                          "FROM pg_catalog.pg_stat_progress_create_index WHERE pid = %s",
                                          (pid,)).fetchone()
                    if row:
                        done, total = row
                        if total and not bar.total:
                            bar.total = total
                        if done and done > bar.done:
                            bar(done - bar.done)
        except psycopg.Error as exc:
            print(f"bench: no build progress for {label}: {exc}", file=sys.stderr)

    thread = threading.Thread(target=poll, name="index-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
