"""Shared fixtures: a real PostgreSQL (embedded unless CTXASM_PG_DSN is set), deployed fresh by Liquibase."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
SCENARIOS = REPO / "db" / "tests" / "scenarios"
CORPUS_FILE = REPO / "db" / "tests" / "corpus" / "research_corpus.json"
#: The pytest-xdist worker running this process (gw0, gw1, ...), empty when pytest runs alone.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def worker_database(name: str) -> str:
    """The name of a database this test process may create or drop: under pytest-xdist each worker has its own
    (`name_gw0`, ...), so that two workers never drop or fill each other's."""
    return f"{name}_{WORKER}" if WORKER else name


TEST_DATABASE = worker_database(os.environ.get("CTXASM_TEST_DATABASE", "ctxasm_test"))

# --- tiers (docs/testing.md) -----------------------------------------------------------------------------------
# Markers are given here, at collection, so a new test file gets them without saying anything: `db` to a test that
# uses the database fixtures (pg_target, or any fixture built on it) or lives in a folder of database tests,
# `browser` to the browser folder, `oracle` to a case that needs a reachable Oracle database (the conformance
# suite's oracle engine), `unit` to every other test, and `slow` to a test that uses a fixture that loads torch.
# Otherwise `slow` is written on the test (or its module), where it was measured. A test may also carry db,
# browser or oracle itself.

#: Folders under tests/ whose every test needs the database, whatever fixtures it names.
DB_FOLDERS = {"integration", "conformance"}
#: Fixtures that import torch and build or load a model with it (seconds before the test starts).
SLOW_FIXTURES = {"tiny_cross_encoder", "pytorch_model"}
#: The env variable scripts/test sets to the static gates it ran (and passed) before pytest: a test marked
#: repo_gate(NAME) runs NAME over the whole checkout again, so it is skipped when NAME is listed there.
GATES_PASSED = "CTXASM_GATES_PASSED"


def _tier_markers(item: pytest.Item) -> set[str]:
    own = {mark.name for mark in item.iter_markers()}
    folder = item.path.parts[len(TESTS.parts)] if item.path.is_relative_to(TESTS) else ""
    params = getattr(item, "callspec", None)
    wanted: set[str] = set()
    if "oracle" in own or (params is not None and params.params.get("engine") == "oracle"):
        wanted.add("oracle")
    elif "db" in own or "pg_target" in getattr(item, "fixturenames", ()) or folder in DB_FOLDERS:
        wanted.add("db")
    if "browser" in own or folder == "browser":
        wanted.add("browser")
    tiers = wanted or {"unit"}
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        tiers.add("slow")
    return tiers


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    passed = set(os.environ.get(GATES_PASSED, "").split())
    for item in items:
        for name in _tier_markers(item):
            item.add_marker(name)
        gate = item.get_closest_marker("repo_gate")
        if gate is not None and gate.args[0] in passed:
            item.add_marker(pytest.mark.skip(
                reason=f"scripts/test ran the gate {gate.args[0]} over this checkout before pytest ({GATES_PASSED})"))


@pytest.fixture(scope="session")
def pg_target():
    """This test process's database, freshly deployed once per session: a copy of the deployed template
    (tests/database_template.py), which Liquibase deploys again only when the deployed sources change."""
    from ctxasm.local import pgconn

    from .database_template import fresh_copy

    return fresh_copy(pgconn.resolve_target(TEST_DATABASE, start=True))


def empty_database(target) -> None:
    """Empty every memory table, its history and the tenant registry (as admin, which bypasses RLS).

    DELETE, not TRUNCATE: a test holds a few hundred rows, while a TRUNCATE of a partitioned table gives every
    partition (one per memory table for each tenant ever registered, each with its indexes) new files, which took
    seconds per call and left tens of thousands of files for the next checkpoint to fsync. The history triggers
    and foreign keys are off for the deletes (session_replication_role), as they are for a TRUNCATE."""
    import psycopg

    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as admin:
        tables = [row[0] for row in admin.execute("SELECT table_name FROM ctxasm.memory_type")]
        with admin.transaction():
            admin.execute("SET LOCAL session_replication_role = replica")
            for table in [*tables, *(f"{t}_history" for t in tables), "ctx_tenant"]:
                admin.execute(f"DELETE FROM ctxasm.{table}")



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


@pytest.fixture(scope="session")
def embedded_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{"demo": path, "corpus": path}: copies of the Acme demo and of the research corpus with the embedding of
    every searchable row already in place, computed once per test process by the real model the way the loader
    computes them (load.embed_memories: the same texts in the same batches, so the same vectors). The loader
    embeds only rows that carry no embedding, so loading a copy costs the database's work alone: the corpus's 137
    chunks took most of a load. The loader's own embedding runs in every test that loads another file (the
    conformance scenarios, the CLI's loads, tests/integration/test_retrieval.py::test_chunks_are_embedded_at_load)."""
    import json

    from ctxasm.services import load

    folder = tmp_path_factory.mktemp("embedded")
    files = {}
    for name, source in (("demo", SCENARIOS / "acme_demo.json"), ("corpus", CORPUS_FILE)):
        document = json.loads(source.read_text(encoding="utf-8"))
        load.embed_memories(document)
        files[name] = folder / source.name
        files[name].write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return files


#: embedded_json's answers, by the document's JSON without embeddings.
_EMBEDDED_JSON: dict[str, str] = {}

#: A budget row's content for a tenant of a few rows asked with intent fact_check: no tools, relevance alone.
FACT_CHECK_BUDGET = {
    "usable_context": 6000, "output_reserve": 400, "tool_reserve": 0, "request_overhead_reserve": 600,
    "max_rounds": 1, "max_tool_result_tokens": 0,
    "weights": {"rerank": 1.0, "confidence": 0.0, "recency": 0.0}, "recency_days": 60,
    "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
    "shares": {"fact_check": {"durable_facts": 0.3, "evidence": 0.0, "recalled_history": 0.4, "volatile_tail": 0.3}},
}
#: A budget row's content for intent comparison, most of it evidence, relevance alone.
COMPARISON_BUDGET = {
    "usable_context": 5000, "output_reserve": 400, "tool_reserve": 1000, "request_overhead_reserve": 500,
    "max_rounds": 3, "max_tool_result_tokens": 1000,
    "weights": {"rerank": 1.0, "confidence": 0.0, "recency": 0.0}, "recency_days": 60,
    "shares": {"comparison": {"durable_facts": 0.1, "evidence": 0.8, "volatile_tail": 0.1}},
    "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
}


def load_scenario(target, tmp_path: Path, document: dict, name: str = "scenario.json") -> None:
    """Load `document` (a scenario) into `target` through the loader, from a file, as `ctxasm load` does."""
    import json

    from ctxasm.services import load

    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    load.load_file(target, path)


def embedded_json(document: dict) -> str:
    """`document` (a scenario) as JSON with the embedding of every searchable row in place, computed by
    load.embed_memories once per test process for each distinct document: for tests that load the same generated
    scenario again and again (the loader embeds only rows without an embedding, so those loads skip the model)."""
    import json

    from ctxasm.services import load

    plain = json.dumps(document)
    if plain not in _EMBEDDED_JSON:
        embedded = json.loads(plain)
        load.embed_memories(embedded)
        _EMBEDDED_JSON[plain] = json.dumps(embedded)
    return _EMBEDDED_JSON[plain]


def load_demo_and_corpus(target, embedded_files: dict[str, Path]) -> None:
    """Empty the database, then load the demo and the research corpus (their embedded copies)."""
    from ctxasm.services import load

    empty_database(target)
    load.load_file(target, embedded_files["demo"])
    load.load_file(target, embedded_files["corpus"])


@pytest.fixture(scope="module")
def corpus_once(pg_target, embedded_files):
    """The demo and the research corpus, loaded once for a module: for modules whose tests write nothing the
    later ones read."""
    load_demo_and_corpus(pg_target, embedded_files)
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
def demo_loaded(clean_db, embedded_files):
    from ctxasm.services import load

    return load.load_file(clean_db, embedded_files["demo"])


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
