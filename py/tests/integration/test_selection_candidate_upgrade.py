"""A database deployed before the selection's candidate row had `length_logit` takes it in place: after
`thread_logit`, with every attribute in the order a fresh deployment has, so the rows still end with memory_row's
columns and the functions that build them by position (ctxasm.candidate_rows) build them right; and windows
assemble on it."""

from __future__ import annotations

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import deploy, pgconn

from ..conftest import load_scenario, worker_database
from .earlier_deployment import deploy_from, tree_before
from .test_turn_length import TENANT, TURNS, scenario_document, window_scope

pytestmark = pytest.mark.slow  # three Liquibase deployments

_ATTRIBUTES = """
    SELECT a.attname, format_type(a.atttypid, a.atttypmod)
      FROM pg_attribute AS a
     WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum
"""


def _attributes(target: pgconn.Target) -> list[tuple[str, str]]:
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        return [(name, kind) for name, kind in connection.execute(_ATTRIBUTES).fetchall()]


def test_an_earlier_deployment_takes_length_logit_after_thread_logit(pg_target, tmp_path, monkeypatch):
    before = tmp_path / "before"
    before.mkdir()
    tree_before(before, "-S", "ctxasm:pg-selection-candidate-length-logit", "--",
                "db/postgresql/schema/ctx_selection_candidate.sql")
    target = pgconn.resolve_target(worker_database("ctxasm_candidate_upgrade"), start=True)
    try:
        pgconn.drop_database(target)
        deploy_from(before, target, monkeypatch)
        old = _attributes(target)
        deploy.deploy_postgres(target)
        deploy.deploy_postgres(target)  # and again: the change is made once
        upgraded = _attributes(target)
        load_scenario(target, tmp_path, scenario_document())
        with pgconn.connect(target, pgconn.app_login()) as connection:
            document = PostgresStore(connection).select_window_document(TENANT, window_scope())
            connection.rollback()
    finally:
        pgconn.drop_database(target)
    assert "length_logit" not in dict(old)
    names = [name for name, _ in upgraded]
    assert names[names.index("thread_logit") + 1] == "length_logit"
    assert [a for a in upgraded if a[0] != "length_logit"] == old
    assert upgraded == _attributes(pg_target), "an upgraded database has a fresh one's candidate row"
    recalled = [c for c in document["candidates"] if c["slice"] == "recalled_history"]
    assert {c["ref"][1] for c in recalled} == set(TURNS)
    assert all("length_logit" in c["scores"] for c in recalled)
