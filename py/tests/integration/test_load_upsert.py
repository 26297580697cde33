"""`ctxasm load --upsert`: a second load of the same file writes nothing; a changed memory gets a new version
through supersede (its old version stays, for replay); an erased memory in the file is refused, naming it."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm.errors import ScenarioError
from ctxasm.services import load

from ..conftest import SCENARIOS, TEST_DATABASE, embedded_json, read_as_owner

DEMO = json.loads((SCENARIOS / "acme_demo.json").read_text())


def versions(target, table: str, memory_id: str) -> list[tuple]:
    """(version, status, content) of every stored version of one acme row."""
    return read_as_owner(target, "acme", f"SELECT version, status, content FROM ctxasm.{table} "
                         "WHERE tenant_id = 'acme' AND id = %s ORDER BY version", (memory_id,))


def row_versions(target) -> tuple[int, int]:
    """acme's row versions in every memory table, and the row images in their history tables (an update of a
    row, such as retiring a version, copies the old image there): what any write adds to."""
    tables = [t for (t,) in read_as_owner(target, "acme", "SELECT table_name FROM ctxasm.memory_type")]
    counts = [read_as_owner(target, "acme", f"SELECT (SELECT count(*) FROM ctxasm.{t} WHERE tenant_id = 'acme'), "
                            f"(SELECT count(*) FROM ctxasm.{t}_history WHERE tenant_id = 'acme')")[0]
              for t in tables]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    return path


def memory_index(document: dict, memory_id: str) -> int:
    return next(i for i, m in enumerate(document["tenants"][0]["memories"]) if m["id"] == memory_id)


def test_loading_the_same_file_twice_changes_nothing(demo_target):
    before = row_versions(demo_target)
    report = load.load_file(demo_target, SCENARIOS / "acme_demo.json", upsert=True)
    assert row_versions(demo_target) == before
    total = sum(len(t["memories"]) for t in DEMO["tenants"])
    assert report.unchanged == sum(report.rows.values()) >= total
    assert (report.changed, report.versions, report.deletions) == (0, 0, 0)
    assert "0 new, 0 changed" in report.describe()


def test_a_changed_memory_gets_a_new_version_and_keeps_the_old(demo_target, tmp_path):
    document = copy.deepcopy(DEMO)
    chunk = document["tenants"][0]["memories"][memory_index(document, "fact_letta_eviction_policy")]
    old_content = chunk["content"]
    chunk["content"] = "Letta evicts the oldest messages first once the context window is 70% full."
    path = write(tmp_path, document)
    before = row_versions(demo_target)

    report = load.load_file(demo_target, path, upsert=True)
    assert (report.changed, report.versions) == (1, 1)
    after = row_versions(demo_target)
    assert after[0] == before[0] + 1 and after[1] > before[1]
    stored = versions(demo_target, "entity_memory", "fact_letta_eviction_policy")
    assert [(v, s) for v, s, _ in stored] == [(1, "superseded"), (2, "active")]
    assert stored[0][2] == old_content and stored[1][2] == chunk["content"]

    again = load.load_file(demo_target, path, upsert=True)
    assert (again.changed, again.versions) == (0, 0)
    assert row_versions(demo_target) == after


def test_a_new_memory_is_added_and_a_file_deletion_applied(demo_target, tmp_path):
    document = copy.deepcopy(DEMO)
    memories = document["tenants"][0]["memories"]
    memories.append({"type": "entity", "id": "fact_upsert_new", "subject": "upsert", "predicate": "works",
                     "content": "Loading with --upsert adds the memories the database does not have yet.",
                     "valid_from": "2026-09-01T00:00:00Z"})
    memories[memory_index(document, "fact_letta_eviction_policy")]["deleted_at"] = "2026-09-20T00:00:00Z"
    report = load.load_file(demo_target, write(tmp_path, document), upsert=True)
    assert report.deletions == 1 and report.changed == 1 and report.versions == 0
    assert "1 new" in report.describe()
    assert [(v, s) for v, s, _ in versions(demo_target, "entity_memory", "fact_upsert_new")] == [(1, "active")]
    assert [(v, s) for v, s, _ in versions(demo_target, "entity_memory", "fact_letta_eviction_policy")] == \
        [(1, "deleted")]
    # loaded again, the deleted memory stays as it is; without the deletion in the file it is not brought back
    assert load.load_file(demo_target, write(tmp_path, document), upsert=True).changed == 0
    del memories[memory_index(document, "fact_letta_eviction_policy")]["deleted_at"]
    with pytest.raises(ScenarioError, match="fact_letta_eviction_policy.*was deleted in the database"):
        load.load_file(demo_target, write(tmp_path, document), upsert=True)


def test_an_erased_memory_is_refused_naming_it_and_its_tenant(demo_target, tmp_path):
    from ctxasm.engines.postgres import PostgresStore
    from ctxasm.local import pgconn

    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        store.erase("entity", "fact_letta_eviction_policy")
        store.commit()
    before = row_versions(demo_target)
    with pytest.raises(ScenarioError) as refused:
        load.load_file(demo_target, SCENARIOS / "acme_demo.json", upsert=True)
    message = str(refused.value)
    assert "entity 'fact_letta_eviction_policy' of tenant 'acme'" in message and "erased" in message
    assert f"memories[{memory_index(DEMO, 'fact_letta_eviction_policy')}]" in message
    assert row_versions(demo_target) == before


def test_without_upsert_a_second_load_is_refused_as_before(demo_target):
    with pytest.raises(ScenarioError, match="already exists|duplicate"):
        load.load_file(demo_target, SCENARIOS / "acme_demo.json")


@pytest.mark.slow  # ctxasm processes
def test_cli_load_upsert_reports_unchanged(demo_target):
    env = {**os.environ, "CTXASM_PG_DATABASE": TEST_DATABASE}
    done = subprocess.run([sys.executable, "-m", "ctxasm.cli", "load", "--upsert",
                           str(SCENARIOS / "acme_demo.json")], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "(upsert)" in done.stdout and "0 new, 0 changed" in done.stdout


def test_a_file_with_long_chunks_loads_twice_and_the_second_writes_nothing(clean_db, embedded_files):
    """The loader adds a compression and a source_ref for every long chunk (load.compress_chunks); those rows
    are not in the memory-row view that row_states reads, and the second --upsert took them for new
    (duplicate_memory at $.tenants[0].memories[160] of a file of 160 memories)."""
    first = load.load_file(clean_db, embedded_files["corpus"], upsert=True)
    assert first.rows[("acme", "compression")] > 0
    before = row_versions(clean_db)
    again = load.load_file(clean_db, embedded_files["corpus"], upsert=True)
    assert again.unchanged == sum(again.rows.values()) == sum(first.rows.values())
    assert (again.changed, again.versions, again.deletions) == (0, 0, 0)
    assert row_versions(clean_db) == before


LONG_TEXT = ("The Letta paper starts from a simple observation: a language model's context window is a small, fixed "
             "working space, while a useful agent needs to remember far more than fits. It borrows the operating-system "
             "idea of virtual memory, and the agent decides what to page in and out through its own function calls.")


def chunk_document(*extra: dict) -> dict:
    """One document and one chunk long enough to get a compression from the loader, then `extra`."""
    return {"format": "ctxasm-scenario/1", "name": "long-chunk", "tenants": [{
        "tenant_id": "acme", "display_name": "Acme", "memories": [
            {"type": "kb_document", "id": "doc_letta", "title": "Letta", "collection": "papers",
             "valid_from": "2026-06-02T09:00:00Z", "content": "The Letta paper."},
            {"type": "kb_chunk", "id": "chunk_letta_00", "document_id": "doc_letta", "document_version": 1,
             "chunk_index": 0, "title": "Letta", "valid_from": "2026-06-02T09:00:00Z", "content": LONG_TEXT},
            *extra]}]}


def test_an_error_at_a_row_the_loader_adds_names_the_chunk_it_is_for(clean_db, tmp_path):
    """The file's own compression takes the id the loader gives the chunk's: the refusal names the chunk (a place
    in the file), not a memory past the file's last one."""
    from ctxasm.core import extractive

    fact = {"type": "entity", "id": "fact_letta", "subject": "paper:letta", "predicate": "idea",
            "valid_from": "2026-06-02T09:00:00Z", "content": LONG_TEXT}
    taken = {"type": "compression", "id": "cmp_chunk_letta_00", "source_type": "entity", "source_id": "fact_letta",
             "source_version": 1, "source_hash": extractive.source_hash(LONG_TEXT),
             "generating_model": extractive.GENERATING_MODEL, "prompt_version": extractive.PROMPT_VERSION,
             "valid_from": "2026-06-02T09:00:00Z", "content": "Letta: virtual memory for a context window."}
    path = tmp_path / "scenario.json"
    path.write_text(embedded_json(chunk_document(fact, taken)))
    with pytest.raises(ScenarioError) as refused:
        load.load_file(clean_db, path)
    assert refused.value.json_path.startswith("$.tenants[0].memories[1] (the compression cmp_chunk_letta_00"), \
        str(refused.value)
    assert "duplicate_memory" in str(refused.value)


def test_an_erased_chunk_is_refused_with_the_rows_the_loader_added_for_it(clean_db, tmp_path):
    from ctxasm.engines.postgres import PostgresStore
    from ctxasm.local import pgconn

    path = tmp_path / "scenario.json"
    path.write_text(embedded_json(chunk_document()))
    load.load_file(clean_db, path, upsert=True)
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        store.erase("kb_chunk", "chunk_letta_00")
        store.commit()
    with pytest.raises(ScenarioError) as refused:
        load.load_file(clean_db, path, upsert=True)
    message = str(refused.value)
    assert "2 memories were erased" in message, message  # the chunk and its compression
    assert "$.tenants[0].memories[1] (the compression cmp_chunk_letta_00" in message
    assert "memories[2]" not in message and "memories[3]" not in message
