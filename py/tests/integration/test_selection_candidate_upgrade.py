"""A database deployed before the selection's candidate row had `length_logit` takes it where a fresh deployment
has it, after memory_row's columns, with no attribute taken off (a hole every row would carry), so the function
that builds the rows by position (ctxasm.candidate_rows) builds them right; and windows assemble on it."""

from __future__ import annotations

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import deploy, pgconn

from ..conftest import load_scenario
from .earlier_deployment import earlier_deployment
from .test_turn_length import TENANT, TURNS, scenario_document, window_scope

pytestmark = pytest.mark.slow  # three Liquibase deployments

_ATTRIBUTES = """
    SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attisdropped
      FROM pg_attribute AS a
     WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > 0
     ORDER BY a.attnum
"""


def _attributes(target: pgconn.Target) -> list[tuple[str, str]]:
    """The type's attributes in order; one taken off shows as ("dropped", "")."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        return [("dropped", "") if dropped else (name, kind)
                for name, kind, dropped in connection.execute(_ATTRIBUTES).fetchall()]


def test_an_earlier_deployment_takes_length_logit_at_the_end_without_holes(pg_target, tmp_path, monkeypatch):
    with earlier_deployment("ctxasm_candidate_upgrade", tmp_path, monkeypatch,
                            "-S", "length_logit", "--", "db/postgresql/schema/ctx_selection_candidate.sql") as target:
        old = _attributes(target)
        deploy.deploy_postgres(target)
        deploy.deploy_postgres(target)  # and again: the change is made once
        upgraded = _attributes(target)
        load_scenario(target, tmp_path, scenario_document())
        with pgconn.connect(target, pgconn.app_login()) as connection:
            document = PostgresStore(connection).select_window_document(TENANT, window_scope())
            connection.rollback()
    assert "length_logit" not in dict(old) and "dropped" not in dict(old)
    assert upgraded == [*old, ("length_logit", "numeric")]
    assert upgraded == _attributes(pg_target), "an upgraded database has a fresh one's candidate row"
    recalled = [c for c in document["candidates"] if c["slice"] == "recalled_history"]
    assert {c["ref"][1] for c in recalled} == set(TURNS)
    assert all("length_logit" in c["scores"] for c in recalled)
