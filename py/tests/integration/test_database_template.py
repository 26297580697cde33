"""Test databases as copies of one deployed template (tests/database_template.py): the copy holds the deployment,
the template is named after the deployed sources, and a stale template is dropped when a copy is made."""

from __future__ import annotations

import shutil

import psycopg
import pytest
from psycopg import sql

from ctxasm.local import pgconn

from .. import database_template
from ..conftest import REPO, worker_database


def _admin(target: pgconn.Target) -> psycopg.Connection:
    return psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True)


def _changesets(target: pgconn.Target, database: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(target.conninfo(target.admin, database)) as connection:
        return connection.execute("SELECT id, filename, md5sum FROM liquibase.databasechangelog "
                                  "ORDER BY orderexecuted").fetchall()


def test_the_test_database_is_a_copy_of_the_current_template(pg_target):
    template = database_template.PREFIX + database_template.digest()
    with _admin(pg_target) as admin:
        marked = dict(admin.execute("SELECT datname, datistemplate FROM pg_database WHERE datname IN (%s, %s)",
                                    (template, pg_target.database)).fetchall())
    assert marked == {template: True, pg_target.database: False}
    changesets = _changesets(pg_target, pg_target.database)
    assert len(changesets) > 30 and changesets == _changesets(pg_target, template)


@pytest.mark.slow  # a database copied and dropped (a checkpoint)
def test_a_copy_drops_the_templates_of_other_sources(pg_target):
    stale = database_template.PREFIX + "0" * 12
    scratch = pgconn.Target(pg_target.host, pg_target.port, worker_database("ctxasm_template_check"),
                            pg_target.admin, pg_target.admin_database, pg_target.embedded, pg_target.extra)
    with _admin(pg_target) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(stale)))
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER {} IS_TEMPLATE true").format(
            sql.Identifier(stale), sql.Identifier(pgconn.OWNER_ROLE)))
    try:
        database_template.fresh_copy(scratch)
        with _admin(pg_target) as admin:
            names = {n for (n,) in admin.execute("SELECT datname FROM pg_database")}
        assert stale not in names and scratch.database in names
        assert _changesets(pg_target, scratch.database) == _changesets(pg_target, pg_target.database)
    finally:
        pgconn.drop_database(scratch)


def test_the_template_digest_follows_the_deployed_sources_only(tmp_path):
    for folder in database_template.SOURCES:
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = database_template.digest(tmp_path)
    (tmp_path / "db" / "tests").mkdir()
    (tmp_path / "db" / "tests" / "scenario.json").write_text("{}")
    assert database_template.digest(tmp_path) == before, "db/tests is not deployed"
    body = tmp_path / "db" / "postgresql" / "api" / "ctx_assembly.sql"
    body.write_text(body.read_text() + "\n-- a comment\n")
    assert database_template.digest(tmp_path) != before
