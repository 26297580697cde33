"""Shared fixtures: a real PostgreSQL (embedded unless CTXASM_PG_DSN is set), deployed fresh by Liquibase."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "db" / "tests" / "scenarios"
TEST_DATABASE = os.environ.get("CTXASM_TEST_DATABASE", "ctxasm_test")


@pytest.fixture(scope="session")
def pg_target():
    """A freshly deployed test database; dropped and redeployed once per test session."""
    from ctxasm.local import deploy, pgconn

    target = pgconn.resolve_target(TEST_DATABASE, start=True)
    pgconn.drop_database(target)
    deploy.deploy_postgres(target)
    return target


def empty_database(target) -> None:
    """Empty every memory table and the tenant registry (as admin, which bypasses RLS)."""
    import psycopg

    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        tables = [row[0] for row in admin.execute("SELECT table_name FROM ctxasm.memory_type")]
        names = ", ".join(f"ctxasm.{t}, ctxasm.{t}_history" for t in tables)
        admin.execute(f"TRUNCATE {names}, ctxasm.ctx_tenant")



def jane_mcp_over_stdio(database: str):
    """`ctxasm mcp` for Jane's research thread as a separate process, on the given database, over stdio."""
    from fastmcp.client.transports import StdioTransport

    env = {**os.environ, "CTXASM_PG_DATABASE": database, "FASTMCP_CHECK_FOR_UPDATES": "off"}
    return StdioTransport(command=sys.executable, args=[
        "-m", "ctxasm.cli", "mcp", "--tenant", "acme", "--user", "jane", "--agent", "research-assistant",
        "--thread", "thread_jane_research", "--role", "researcher", "--at", "2026-09-28T12:00:00"],
        env=env, cwd=str(REPO))

def read_as_owner(target, tenant_id: str, query: str, params: tuple = ()) -> list[tuple]:
    """Rows of `query` as the owner with `tenant_id` set (RLS applies to the owner too): for tests that check
    what the database holds. The application role reads no table; it calls the contract routines."""
    from ctxasm.local import pgconn
    from ctxasm.engines.postgres import PostgresStore

    with pgconn.connect(target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant(tenant_id)
        rows = connection.execute(query, params).fetchall()
        connection.rollback()
    return rows


@pytest.fixture()
def clean_db(pg_target):
    """Each test starts from nothing."""
    empty_database(pg_target)
    return pg_target


@pytest.fixture(scope="module")
def corpus_once(pg_target):
    """The demo and the research corpus, loaded once for a module (loading embeds 137 chunks): for modules
    whose tests write nothing the later ones read."""
    from ctxasm.services import load

    empty_database(pg_target)
    load.load_file(pg_target, SCENARIOS / "acme_demo.json")
    load.load_file(pg_target, REPO / "db" / "tests" / "corpus" / "research_corpus.json")
    return pg_target


@pytest.fixture()
def app_conn(clean_db) -> Iterator:
    from ctxasm.local import pgconn

    with pgconn.connect(clean_db, pgconn.app_login()) as connection:
        yield connection


@pytest.fixture()
def owner_conn(clean_db) -> Iterator:
    from ctxasm.local import pgconn

    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        yield connection


@pytest.fixture()
def demo_loaded(clean_db):
    from ctxasm.services import load

    return load.load_file(clean_db, SCENARIOS / "acme_demo.json")


@pytest.fixture()
def demo_target(demo_loaded, clean_db):
    """The test database with the Acme demo scenario loaded."""
    return clean_db


@pytest.fixture()
def spans(monkeypatch):
    """ctxasm's spans, caught by the OpenTelemetry SDK's in-memory exporter (content not allowed unless a test
    sets CTXASM_TELEMETRY_CONTENT)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ctxasm.services import telemetry

    monkeypatch.delenv("CTXASM_TELEMETRY_CONTENT", raising=False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)
    provider.shutdown()


@pytest.fixture()
def catalogue_copy(tmp_path: Path) -> Path:
    """A copy of the catalogue and of every file generated from it (or holding generated values), for tests
    that edit the catalogue and regenerate without touching the repository."""
    from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS

    shutil.copytree(REPO / CATALOGUE_DIR, tmp_path / CATALOGUE_DIR)
    for path in TARGETS.values():
        if (REPO / path).exists():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / path, tmp_path / path)
    return tmp_path
