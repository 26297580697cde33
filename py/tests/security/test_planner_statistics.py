"""Finding 2: planner statistics leaked other tenants' text. With SELECT on the tables, EXPLAIN's row estimates
over range predicates on title or content recover another tenant's text one character at a time, with no tenant
set at all: the estimates come from statistics over every tenant's rows.

Now the application role has no privilege on any table or view: it cannot plan a query over them, and
pg_stats shows it no row of theirs (the view lists only columns the user may read)."""

from __future__ import annotations

import re

from ctxasm import pgconn

from .helpers import app_session, refusal


def memory_relations(owner) -> list[str]:
    rows = owner.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                         "WHERE n.nspname = 'ctxasm' AND c.relkind IN ('r', 'v') ORDER BY 1").fetchall()
    return [name for (name,) in rows]


def analysed(target) -> None:
    with pgconn.connect(target, pgconn.owner_login(), autocommit=True) as owner:
        owner.execute("ANALYZE")


def estimated_rows(app, predicate: str) -> int | None:
    """The review's probe: the planner's row estimate for a range predicate, or None when it is refused."""
    try:
        plan = app.execute(f"EXPLAIN SELECT 1 FROM ctxasm.knowledge_base_document WHERE {predicate}").fetchone()[0]
    except Exception:
        app.rollback()
        return None
    return int(re.search(r"rows=(\d+)", plan).group(1))


def test_explain_of_any_memory_table_or_view_is_refused(demo_target, owner_conn):
    analysed(demo_target)
    with app_session(demo_target) as app:
        for relation in memory_relations(owner_conn):
            answer = refusal(app, f"EXPLAIN SELECT * FROM ctxasm.{relation} WHERE content < 'M'")
            assert answer is not None and answer[0] == "42501", (relation, answer)


def test_the_range_probe_learns_nothing_without_a_tenant(demo_target):
    """stripe's documents are not the caller's; with no tenant set, the probe of the review must get no answer."""
    analysed(demo_target)
    with app_session(demo_target) as app:
        assert estimated_rows(app, "title < 'M'") is None
        assert estimated_rows(app, "content >= 'Refund'") is None


def test_pg_stats_shows_the_application_role_no_memory_column(demo_target):
    analysed(demo_target)
    with app_session(demo_target) as app:
        visible = app.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'ctxasm'").fetchone()[0]
        assert visible == 0
        extended = app.execute("SELECT count(*) FROM pg_stats_ext WHERE schemaname = 'ctxasm'").fetchone()[0]
        assert extended == 0
