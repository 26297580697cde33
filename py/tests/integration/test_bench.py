"""scripts/bench end to end at tiny sizes: it runs, --json has the documented shape, --help names every flag.
Figures are printed by the benchmark, never asserted here: these tests check behaviour and shape only."""

from __future__ import annotations

import json
from collections import Counter

import psycopg
import pytest

from ctxasm.local import pgconn
from ctxasm_dev.bench import __main__ as bench, catalog, neighbour

from ..conftest import worker_database

pytestmark = pytest.mark.slow  # the benchmark end to end, with its deployments

DATABASE = worker_database("ctxasm_bench_test")
PHASES = {"database_selection", "token_counting", "fitting", "rendering", "manifest_write"}


def _drop(database: str) -> None:
    pgconn.drop_database(pgconn.resolve_target(database, start=True))


@pytest.fixture(scope="module")
def figures(pg_target):
    """One benchmark run: two tiny sizes (so the neighbour figure is made), both assemblers, two load levels."""
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    try:
        with redirect_stdout(out):
            code = bench.main(["--database", DATABASE, "--rebuild", "--sizes", "200,400", "--assemblies", "3",
                               "--token-windows", "1", "--load", "--concurrency", "1,2", "--per-worker", "2",
                               "--warm-up", "2", "--load-warm-up", "1", "--functions", "2", "--json"])
        assert code == 0
        yield json.loads(out.getvalue())
    finally:
        _drop(DATABASE)
        _drop(neighbour.alone_database(DATABASE))


def test_json_has_one_entry_per_size_with_percentiles_and_phases(figures):
    assert figures["format"] == "ctxasm-bench/3"
    assert figures["sizes"] == [200, 400]
    assert figures["warm_up"]["assemblies"] == 2 and figures["warm_up"]["load_assemblies"] == 1
    assert "untimed" in figures["warm_up"]["method"]
    kinds = Counter(e["kind"] for e in figures["entries"])
    assert kinds["size"] == 2 and kinds["neighbour"] == 1 and kinds["question_embedding"] == 1
    assert kinds["load"] == 2 and kinds["token_counts"] == 2 and kinds["target"] >= 1
    assert kinds["build"] == 3  # both sizes, and the small tenant again in the database of its own
    sizes = [e for e in figures["entries"] if e["kind"] == "size"]
    assert [e["size"] for e in sizes] == [200, 400]
    for entry in sizes:
        assert entry["assemblies"] == 3
        for key in ("p50_ms", "p95_ms", "p99_ms", "question_embedding_ms", "round_trips", "candidates",
                    "peak_mib"):
            assert isinstance(entry[key], (int, float)), key
        assert PHASES <= set(entry["phases_ms"]) and PHASES <= set(entry["phases_mean_ms"])
        # the warm-up ran on the measuring connection, untimed, and is reported apart
        assert entry["warm_up"]["assemblies"] == 2
        assert isinstance(entry["warm_up"]["first_ms"], float) and isinstance(entry["warm_up"]["p50_ms"], float)
        assert entry["naive"]["assemblies"] == 3 and "p50_ms" in entry["naive"]
        assert entry["naive_over_assembler"] is not None
        # the synthetic embeddings reach vector retrieval: some evidence has a vector rank
        assert entry["vector_ranked"] > 0
        assert entry["text"]["chunks"] > 0 and entry["text"]["question_matches"] is not None


def test_neighbour_and_load_entries(figures):
    entries = figures["entries"]
    (near,) = [e for e in entries if e["kind"] == "neighbour"]
    assert near["size"] == 200 and near["neighbour_size"] == 400
    assert near["alone"]["database"] == neighbour.alone_database(DATABASE)
    assert near["beside"]["database"] == DATABASE
    assert near["alone"]["assemblies"] == near["beside"]["assemblies"] == 3
    assert near["alone"]["warm_up"]["assemblies"] == near["beside"]["warm_up"]["assemblies"] == 2
    assert isinstance(near["p50_ratio"], float) and isinstance(near["p95_ratio"], float)
    (embedding,) = [e for e in entries if e["kind"] == "question_embedding"]
    assert embedding["n"] == 6 and embedding["model"] == "all-MiniLM-L6-v2"
    loads = [e for e in entries if e["kind"] == "load"]
    assert [e["concurrency"] for e in loads] == [1, 2]
    for entry in loads:
        assert entry["assemblies"] == 2 * entry["concurrency"] and entry["failed"] == 0
        assert entry["manifests_counted"] == entry["assemblies"]
        assert entry["lost"] == 0 and entry["duplicated"] == 0 and entry["warm_up"] == 1
        assert isinstance(entry["throughput"], float)
    builds = [e for e in entries if e["kind"] == "build"]
    assert {(b["database"], b["size"]) for b in builds} == {
        (DATABASE, 200), (DATABASE, 400), (neighbour.alone_database(DATABASE), 200)}
    assert all(b["rows"] == b["size"] for b in builds)


def test_function_statistics_name_the_routines_per_window_and_are_turned_off_after(figures, pg_target):
    functions = [e for e in figures["entries"] if e["kind"] == "functions"]
    assert [(e["size"], e["assemblies"], e["unavailable"]) for e in functions] == [(200, 2, None), (400, 2, None)]
    for entry in functions:
        calls = {r["routine"]: r["calls"] for r in entry["routines"]}
        # each window runs the scoring rule once; the routines are the schemas' own, at most 15
        assert calls["ctxasm.score_step"] == 1.0
        assert all(name.split(".")[0] in ("ctx_assembly", "ctx_session", "ctxasm") for name in calls)
        assert len(entry["routines"]) == 15
        assert all(0 <= r["self_ms"] <= r["total_ms"] + 1e-9 for r in entry["routines"])
        ordered = [r["self_ms"] for r in entry["routines"]]
        assert ordered == sorted(ordered, reverse=True)
    target = pgconn.resolve_target(DATABASE, start=True)
    with psycopg.connect(target.conninfo(target.admin, target.admin_database)) as admin:
        settings = admin.execute(
            "SELECT s.setconfig FROM pg_db_role_setting AS s JOIN pg_database AS d ON d.oid = s.setdatabase "
            "WHERE d.datname = %s", (DATABASE,)).fetchall()
    assert not any("track_functions" in str(config) for config in settings)


def test_help_documents_every_flag(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    text = capsys.readouterr().out
    parser_flags = ("--sizes", "--assemblies", "--warm-up", "--load-warm-up", "--max-seconds", "--database",
                    "--rebuild", "--no-naive",
                    "--no-neighbour", "--load", "--load-only", "--load-tenant", "--concurrency", "--per-worker",
                    "--token-windows", "--token-counts-only", "--functions", "--json")
    for flag in parser_flags:
        assert flag in text, flag
    for kind in ("build", "size", "neighbour", "question_embedding", "token_counts", "functions", "load",
                 "target"):
        assert f"\n  {kind} " in text, kind


SCRATCH = worker_database("ctxasm_bench_catalog_test")


@pytest.fixture()
def scratch(pg_target):
    """A bare database with what the catalog queries read: ctxasm.memory_type and two memory tables with
    embeddings, one plain and one LIST-partitioned by tenant (two partitions), each with an HNSW index."""
    target = pgconn.resolve_target(SCRATCH, start=True)
    pgconn.drop_database(target)
    with psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {SCRATCH}")
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as db:
        db.execute("CREATE EXTENSION vector")
        db.execute("CREATE SCHEMA ctxasm")
        db.execute("CREATE TABLE ctxasm.memory_type (memory_type text, table_name text, ordinal int)")
        db.execute("INSERT INTO ctxasm.memory_type VALUES ('entity', 'entity_memory', 1), "
                   "('kb_chunk', 'knowledge_base_chunk', 2), ('summary', 'summarization_memory', 3)")
        db.execute("CREATE TABLE ctxasm.entity_memory (tenant_id text, id text, embedding vector(8))")
        db.execute("CREATE INDEX entity_memory_embedding ON ctxasm.entity_memory "
                   "USING hnsw (embedding vector_cosine_ops)")
        db.execute("CREATE TABLE ctxasm.knowledge_base_chunk (tenant_id text, id text, embedding vector(4)) "
                   "PARTITION BY LIST (tenant_id)")
        db.execute("CREATE TABLE ctxasm.knowledge_base_chunk_a PARTITION OF ctxasm.knowledge_base_chunk "
                   "FOR VALUES IN ('a')")
        db.execute("CREATE TABLE ctxasm.knowledge_base_chunk_b PARTITION OF ctxasm.knowledge_base_chunk "
                   "FOR VALUES IN ('b')")
        db.execute("CREATE INDEX knowledge_base_chunk_embedding ON ctxasm.knowledge_base_chunk "
                   "USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 32)")
        db.execute("CREATE TABLE ctxasm.summarization_memory (tenant_id text, id text)")
        db.execute("INSERT INTO ctxasm.knowledge_base_chunk VALUES ('a', '1', '[1,0,0,0]'), ('b', '2', '[0,1,0,0]')")
    yield target
    pgconn.drop_database(target)


def test_catalog_finds_embeddings_and_rebuilds_partitioned_vector_indexes(scratch):
    def connect():
        return psycopg.connect(scratch.conninfo(scratch.admin))

    with connect() as connection:
        assert catalog.embedding_tables(connection) == {"entity_memory": 8, "knowledge_base_chunk": 4}
        before = catalog.vector_indexes(connection)
        names = [index.name for index in before]
        # parents first: the plain index and the partitioned one, then the two partitions' own indexes
        assert set(names[:2]) == {"ctxasm.entity_memory_embedding", "ctxasm.knowledge_base_chunk_embedding"}
        assert {index.table for index in before[2:]} == {"ctxasm.knowledge_base_chunk_a",
                                                         "ctxasm.knowledge_base_chunk_b"}
        assert {index.parent for index in before[2:]} == {"ctxasm.knowledge_base_chunk_embedding"}
        connection.commit()
        catalog.drop(connection, before)
        assert catalog.vector_indexes(connection) == []
        connection.commit()
        catalog.rebuild(connection, connect, before, lambda _message: None)
        assert catalog.vector_indexes(connection) == before
        # the partitioned index is whole again: every partition's index attached, so it is valid
        valid = connection.execute("SELECT indisvalid FROM pg_index "
                                   "WHERE indexrelid = 'ctxasm.knowledge_base_chunk_embedding'::regclass").fetchone()
        assert valid == (True,)
