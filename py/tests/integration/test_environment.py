"""The deployment paths: CTXASM_PG_DSN instead of the embedded cluster, idempotent redeploys, status."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxasm.local import pgconn

from ..conftest import worker_database

pytestmark = pytest.mark.slow  # Liquibase deployments, fresh and again, through ctxasm processes

DSN_DATABASE = worker_database("ctxasm_dsn_check")


def counts(summary: str) -> tuple[int, int]:
    """(changesets run, already applied) from the deploy summary line."""
    run = int(summary.split(" changesets run")[0].rsplit(" ", 1)[1])
    applied = int(summary.split(" already applied")[0].rsplit(" ", 1)[1])
    return run, applied


def ctxasm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxasm.cli", *args], env=env, capture_output=True, text=True)


def test_pg_dsn_points_everything_at_another_server(pg_target):
    """Any PostgreSQL 16+ with pgvector: here the same server, reached only through an admin DSN."""
    admin = pg_target.admin
    dsn = f"postgresql://{admin.user}:{admin.password}@{pg_target.host}:{pg_target.port}/{pg_target.admin_database}"
    env = dict(os.environ, CTXASM_PG_DSN=dsn, CTXASM_PG_DATABASE=DSN_DATABASE)
    target = pgconn.resolve_target()
    try:
        first = ctxasm("db", "deploy", "--fresh", env=env)
        assert first.returncode == 0, first.stderr
        assert "CTXASM_PG_DSN PostgreSQL" in first.stdout
        run, applied = counts(first.stdout)
        assert run > 30 and applied == 0
        again = ctxasm("db", "deploy", env=env)
        assert again.returncode == 0, again.stderr
        # only the runAlways changesets run again: grants, the two pins of definer routines, the partitioning
        # check, the selection candidate type following memory_row's columns
        assert counts(again.stdout) == (5, run - 5)
        status = ctxasm("db", "status", env=env)
        assert status.returncode == 0, status.stderr
        assert f"database {DSN_DATABASE}:" in status.stdout and "changesets applied" in status.stdout
        listed = next(line for line in status.stdout.splitlines() if line.startswith("databases on this server: "))
        assert f"{DSN_DATABASE}," in listed or f"{DSN_DATABASE};" in listed, listed
        # the top-level --database picks the database, as for every other command
        named = ctxasm("--database", DSN_DATABASE, "db", "status",
                       env={k: v for k, v in env.items() if k != "CTXASM_PG_DATABASE"})
        assert named.returncode == 0 and f"database {DSN_DATABASE}:" in named.stdout, named.stdout + named.stderr
        up = ctxasm("db", "up", env=env)
        assert up.returncode == 0 and "CTXASM_PG_DSN is set" in up.stderr
    finally:
        pgconn.drop_database(pgconn.Target(target.host, target.port, DSN_DATABASE, target.admin,
                                           target.admin_database, embedded=True))


def test_redeploy_runs_only_what_changed(pg_target):
    from ctxasm.local import deploy

    run, applied = counts(deploy.deploy_postgres(pg_target))
    assert applied > 30
    # only the runAlways changesets: grants, the pinned settings and diagnostics of definer routines, the
    # tenant partitioning (nothing to do once the tables are partitioned by slot) and the selection candidate type
    # following memory_row's columns (nothing to add once it has them)
    assert run == 5
