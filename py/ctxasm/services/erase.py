"""`ctxasm erase`: what an erasure removed, and the VACUUM that removes what it leaves behind.

The database erases every copy it keeps and everything made from it (CTX_MEMORY.erase_report); PostgreSQL still
holds the old row versions as dead tuples, the planner statistics may hold samples of the old text, and the
indexes keep what they were built from: a GIN index keeps the words of erased text as keys (VACUUM removes the
rows from their posting lists, never the keys), an HNSW graph keeps an erased row's vector in its element until
the slot is reused. So `--vacuum` vacuums and analyses the tenant's partitions the erasure touched, checks that
VACUUM could remove the erased versions, and rebuilds those partitions' text and vector indexes. That needs
the owner, so it runs here, on the trusted side, after the erasure committed.

VACUUM cannot remove a row version that a snapshot older than the erasure may still see: another session's
open transaction (of any tenant: the horizon is the database's) keeps it. VACUUM says so ("dead but not yet
removable", and its removable cutoff); then the erasure is reported incomplete, with the count, and the command
exits non-zero: run `--vacuum` again once that transaction has ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from ctxasm.local import pgconn

_FINISHED = re.compile(r'finished vacuuming "[^"]*?\.([^".]+)"')
_KEPT = re.compile(r"(\d+) are dead but not yet removable")
_CUTOFF = re.compile(r"removable cutoff: (\d+)")
#: Index methods whose pages keep what erased rows held: the words of the text, the vectors.
_REBUILT_METHODS = ("gin", "hnsw", "ivfflat")
#: How long one index rebuild may wait for the transactions before it.
REINDEX_LOCK_TIMEOUT = "60s"


@dataclass
class VacuumReport:
    vacuumed: list[str] = field(default_factory=list)
    reindexed: list[str] = field(default_factory=list)
    #: relation -> dead row versions VACUUM had to keep (an older snapshot may still see them)
    kept: dict[str, int] = field(default_factory=dict)
    #: VACUUM's removable cutoff when the erasing transaction was not older than it: its versions stayed
    cutoff: int | None = None
    #: whether the erasing transaction was known (PostgreSQL's erase_report says it)
    checked: bool = True
    #: text and vector indexes that could not be rebuilt in time
    not_rebuilt: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every erased version could go: the erasure is older than every vacuum's removable cutoff (without
        the erasing transaction: no dead version was kept at all), and every index was rebuilt."""
        removed = self.cutoff is None if self.checked else not self.kept
        return removed and not self.not_rebuilt

    def as_json(self) -> dict[str, Any]:
        return {"vacuumed": self.vacuumed, "reindexed": self.reindexed, "complete": self.complete,
                "not_removed": self.kept, "removable_cutoff": self.cutoff, "not_rebuilt": self.not_rebuilt}


def describe_erasure(memory_type: str, memory_id: str, report: dict[str, Any]) -> str:
    erased = report.get("erased", [])
    lines = [f"erased {memory_type} {memory_id}: {report.get('total', 0)} row versions in {len(erased)} memories "
             "(the row and everything made from it)" if report.get("total") else
             f"{memory_type} {memory_id} was erased already: nothing left to scrub"]
    for table, counts in sorted(report.get("tables", {}).items()):
        lines.append(f"  {table:<24} {counts['rows']:>5} row versions scrubbed, "
                     f"{counts['history_rows']:>5} history copies deleted")
    lines.append(f"  manifests marked: {report.get('manifests_marked', 0)} (their windows can no longer be replayed)")
    if "vacuumed" in report:
        lines.append(f"  vacuumed and analysed: {', '.join(report['vacuumed'])}")
        lines.append(f"  text and vector indexes rebuilt: {', '.join(report['reindexed']) or 'none'}")
        if report.get("removable_cutoff") is not None:
            kept = ", ".join(f"{name} {count}" for name, count in sorted(report["not_removed"].items()))
            lines.append(f"  NOT COMPLETE: VACUUM had to keep dead row versions ({kept or 'the erased ones'}): an "
                         "open transaction older than the erasure may still see them; run again with --vacuum "
                         "when it has ended")
        if report.get("not_rebuilt"):
            lines.append(f"  NOT COMPLETE: not rebuilt in time (other transactions held them): "
                         f"{', '.join(report['not_rebuilt'])}; run again with --vacuum")
    else:
        lines.append("  dead row versions, planner statistics and index entries keep the old text until VACUUM "
                     "and a rebuild of the indexes: run again with --vacuum, or let autovacuum reach the rows "
                     "(docs/security.md)")
    return "\n".join(lines)


def _precedes(first: int, second: int) -> bool:
    """PostgreSQL's TransactionIdPrecedes for 32-bit xids (modulo 2^32)."""
    return ((first - second) & 0xFFFFFFFF) >= 0x80000000


def _one(connection: psycopg.Connection, query: str, params: tuple[Any, ...]) -> Any:
    """The one value a query that always returns one row answers."""
    row = connection.execute(query, params).fetchone()
    assert row is not None, query
    return row[0]


def _relations(connection: psycopg.Connection, tenant_id: str, table: str) -> list[str]:
    """The tenant's partitions of the table and of its history (the tables themselves where not partitioned)."""
    names = []
    for name in (table, f"{table}_history"):
        partition = _one(connection, "SELECT ctxasm.tenant_partition(%s, %s)", (tenant_id, name))
        exists = _one(connection, "SELECT to_regclass(%s) IS NOT NULL", (f"ctxasm.{partition}",))
        names.append(partition if exists else name)
    return names


def vacuum_tables(target: pgconn.Target, tenant_id: str, tables: list[str], erased_xid: str | None) -> VacuumReport:
    """VACUUM (ANALYZE) the tenant's partitions of each memory table and its history, as the owner (VACUUM needs
    the table's owner and no transaction around it); check that the erased versions could go; rebuild the text
    and vector indexes of those partitions (REINDEX CONCURRENTLY: reads and writes go on meanwhile). Only names
    of the memory tables are accepted."""
    report = VacuumReport(checked=bool(erased_xid))
    notices: list[str] = []
    with pgconn.connect(target, pgconn.owner_login(), autocommit=True) as connection:
        connection.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        known = {row[0] for row in connection.execute("SELECT table_name FROM ctxasm.memory_type")}
        relations = []
        for table in sorted(set(tables) & known):
            for name, relation in zip((table, f"{table}_history"), _relations(connection, tenant_id, table)):
                notices.clear()
                connection.execute(sql.SQL("VACUUM (VERBOSE, ANALYZE) {}.{}").format(
                    sql.Identifier("ctxasm"), sql.Identifier(relation)))
                report.vacuumed.append(name)
                relations.append(relation)
                for notice in notices:
                    finished, kept = _FINISHED.search(notice), _KEPT.search(notice)
                    if finished and kept and int(kept.group(1)):
                        report.kept[finished.group(1)] = report.kept.get(finished.group(1), 0) + int(kept.group(1))
                    cutoff = _CUTOFF.search(notice)
                    if cutoff and erased_xid and not _precedes(int(erased_xid) & 0xFFFFFFFF, int(cutoff.group(1))):
                        report.cutoff = int(cutoff.group(1))
        # A concurrent rebuild waits for every transaction older than it: while one keeps the erased versions,
        # it would wait for that one too. Then nothing is rebuilt, and the next --vacuum does it.
        if report.complete:
            for relation in relations:
                rebuilt, missed = _rebuild_indexes(connection, relation)
                report.reindexed += rebuilt
                report.not_rebuilt += missed
    return report


def _rebuild_indexes(connection: psycopg.Connection, relation: str) -> tuple[list[str], list[str]]:
    """REINDEX CONCURRENTLY each text and vector index of the relation; a rebuild that cannot get its locks
    within REINDEX_LOCK_TIMEOUT is given up (its half-built copy dropped) and left out of the result."""
    indexes = [row[0] for row in connection.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_catalog.pg_index AS i "
        "JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid JOIN pg_catalog.pg_am AS a ON a.oid = c.relam "
        "WHERE i.indrelid = %s::regclass AND a.amname = ANY (%s) ORDER BY 1",
        (f"ctxasm.{relation}", list(_REBUILT_METHODS)))]
    rebuilt, missed = [], []
    connection.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(REINDEX_LOCK_TIMEOUT)))
    for index in indexes:
        try:
            connection.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.SQL(index)))
            rebuilt.append(index)
        except psycopg.errors.LockNotAvailable:
            missed.append(index)
            for (leftover,) in connection.execute(
                    "SELECT i.indexrelid::regclass::text FROM pg_catalog.pg_index AS i "
                    "WHERE i.indrelid = %s::regclass AND NOT i.indisvalid", (f"ctxasm.{relation}",)).fetchall():
                connection.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.SQL(leftover)))
    connection.execute("RESET lock_timeout")
    return rebuilt, missed
