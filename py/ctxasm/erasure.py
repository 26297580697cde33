"""`ctxasm erase`: what an erasure removed, and the VACUUM that removes what it leaves behind.

The database erases every copy it keeps (CTX_MEMORY.erase_report); PostgreSQL still holds the old row versions
as dead tuples, and the planner statistics may hold samples of the old text, until the tables are vacuumed and
analysed. That needs the owner, so it runs here, on the trusted side, after the erasure committed.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from . import pgconn


def describe_erasure(memory_type: str, memory_id: str, report: dict[str, Any]) -> str:
    erased = report.get("erased", [])
    lines = [f"erased {memory_type} {memory_id}: {report.get('total', 0)} row versions in {len(erased)} memories "
             "(the row and every copy made from it)"]
    for table, counts in sorted(report.get("tables", {}).items()):
        lines.append(f"  {table:<24} {counts['rows']:>5} row versions scrubbed, "
                     f"{counts['history_rows']:>5} history copies deleted")
    lines.append(f"  manifests marked: {report.get('manifests_marked', 0)} (their windows can no longer be replayed)")
    if "vacuumed" in report:
        lines.append(f"  vacuumed and analysed: {', '.join(report['vacuumed'])}")
    else:
        lines.append("  dead row versions and planner statistics keep the old text until VACUUM (ANALYZE): "
                     "run again with --vacuum, or let autovacuum reach them")
    return "\n".join(lines)


def vacuum_tables(target: pgconn.Target, tables: list[str]) -> list[str]:
    """VACUUM (ANALYZE) each memory table and its history, as the owner (VACUUM needs the table's owner and no
    transaction around it). Returns the tables vacuumed. Only names of the memory tables are accepted."""
    done: list[str] = []
    with pgconn.connect(target, pgconn.owner_login(), autocommit=True) as connection:
        known = {row[0] for row in connection.execute("SELECT table_name FROM ctxasm.memory_type")}
        for table in sorted(set(tables) & known):
            for name in (table, f"{table}_history"):
                connection.execute(sql.SQL("VACUUM (ANALYZE) {}.{}").format(sql.Identifier("ctxasm"),
                                                                          sql.Identifier(name)))
                done.append(name)
    return done
