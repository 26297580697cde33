"""`ctxasm load`: valid files load through the write API; bad ones name file, JSON path and problem, and load nothing."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.errors import ScenarioError
from ctxasm.services import load

from ..conftest import SCENARIOS, TEST_DATABASE

DEMO = json.loads((SCENARIOS / "acme_demo.json").read_text())


def acme_row(row_id: str) -> int:
    """Where a row sits in acme's memories (so the cases follow the demo when rows are added before it)."""
    return next(i for i, m in enumerate(DEMO["tenants"][0]["memories"]) if m["id"] == row_id)


FACT = acme_row("fact_helios_rag_beir_ndcg10")  # an entity with versions
LETTA = acme_row("fact_letta_eviction_policy")
TURN = acme_row("turn_jane_0001")  # a conversation turn


def write(tmp_path: Path, document, name: str = "scenario.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def total_rows(target, *, registry: bool = True) -> int:
    """Memory rows of every tenant, and the registered tenants unless `registry` is False (a load registers its
    tenants in transactions of their own, before its rows: a failed load may leave them registered)."""
    import psycopg

    with psycopg.connect(target.conninfo(target.admin)) as admin:
        tables = [t for (t,) in admin.execute("SELECT table_name FROM ctxasm.memory_type")]
        return sum(admin.execute(f"SELECT count(*) FROM ctxasm.{t}").fetchone()[0] for t in tables) + \
            (admin.execute("SELECT count(*) FROM ctxasm.ctx_tenant").fetchone()[0] if registry else 0)


def test_demo_scenario_loads_every_row(demo_loaded, app_conn):
    memories = sum(len(t["memories"]) for t in DEMO["tenants"])
    assert sum(demo_loaded.rows.values()) == memories
    assert demo_loaded.versions == 1
    counts = {(r["memory_type"], r["status"]): r["rows"] for r in PostgresStore(app_conn).inventory("acme")}
    assert counts[("toolbox", "active")] == 4
    assert "acme" in demo_loaded.describe()


def broken(mutate) -> dict:
    document = copy.deepcopy(DEMO)
    mutate(document)
    return document


def _set(path, value):
    def mutate(document):
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def _delete(path):
    def mutate(document):
        node = document
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


SCHEMA_CASES = [
    ("wrong format", _set(["format"], "ctxasm-scenario/9"), "$.format"),
    ("confidence above 1", _set(["tenants", 0, "memories", FACT, "confidence"], 1.5), f"$.tenants[0].memories[{FACT}].confidence"),
    ("unknown field", _set(["tenants", 0, "memories", LETTA, "colour"], "red"), f"$.tenants[0].memories[{LETTA}]"),
    ("missing content", _delete(["tenants", 0, "memories", 1, "content"]), "$.tenants[0].memories[1]"),
    ("unknown type", _set(["tenants", 1, "memories", 0, "type"], "gossip"), "$.tenants[1].memories[0].type"),
    ("bad tenant id", _set(["tenants", 2, "tenant_id"], "Not A Tenant"), "$.tenants[2].tenant_id"),
    ("bad timestamp", _set(["tenants", 0, "memories", FACT, "valid_from"], "yesterday"),
     f"$.tenants[0].memories[{FACT}].valid_from"),
    ("missing entity subject", _delete(["tenants", 1, "memories", 1, "subject"]), "$.tenants[1].memories[1]"),
    ("bad role", _set(["tenants", 0, "memories", TURN, "role"], "narrator"), f"$.tenants[0].memories[{TURN}].role"),
    ("version with an id", _set(["tenants", 0, "memories", FACT, "versions", 0, "id"], "other"),
     f"$.tenants[0].memories[{FACT}].versions[0]"),
]


@pytest.mark.parametrize("case, mutate, json_path", SCHEMA_CASES, ids=[c[0] for c in SCHEMA_CASES])
def test_schema_errors_name_the_path_and_load_nothing(clean_db, tmp_path, case, mutate, json_path):
    path = write(tmp_path, broken(mutate))
    with pytest.raises(ScenarioError) as caught:
        load.load_file(clean_db, path)
    assert caught.value.path == str(path)
    assert caught.value.json_path == json_path, str(caught.value)
    assert str(path) in str(caught.value)
    assert total_rows(clean_db) == 0


def test_invalid_json_names_line_and_column(clean_db, tmp_path):
    path = write(tmp_path, '{\n  "format": "ctxasm-scenario/1",\n  "name": oops\n}')
    with pytest.raises(ScenarioError, match=r"line 3 column 11.*not valid JSON"):
        load.load_file(clean_db, path)


#: Values Python's JSON reader takes and no store can hold: (field of a fact of the demo's acme tenant, the value as
#: written in the file, the JSON path its refusal names below the fact, what the refusal says).
UNSTORABLE_CASES = [
    ("confidence", "NaN", "confidence", "NaN is not a JSON number"),
    ("confidence", "-Infinity", "confidence", "-Infinity is not a JSON number"),
    ("content_json", '{"score": 1e999}', "content_json.score", "a number beyond the range of a double"),
    ("content", '"bad \\ud800 text"', "content", "not valid Unicode text (a lone surrogate \\ud800"),
]


@pytest.mark.parametrize("field, raw, below, problem", UNSTORABLE_CASES, ids=[c[1] for c in UNSTORABLE_CASES])
def test_what_json_cannot_carry_is_named_at_its_path_with_exit_4(clean_db, tmp_path, monkeypatch, capsys, field,
                                                                  raw, below, problem):
    """Python's reader takes NaN, Infinity, 1e999 (as infinity) and a lone \\ud800 escape; the database refused
    the numbers with a traceback, and the embedding model the text (TypeError in the tokenizer)."""
    from ctxasm.interfaces.cli import main

    document = copy.deepcopy(DEMO)
    document["tenants"][0]["memories"][FACT][field] = "RAW_VALUE"
    path = write(tmp_path, json.dumps(document).replace('"RAW_VALUE"', raw, 1))
    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert main(["load", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path}: $.tenants[0].memories[{FACT}].{below}: {problem}" in err, err
    assert total_rows(clean_db) == 0


def test_a_directory_is_refused_as_a_scenario_file_with_exit_4(clean_db, tmp_path, monkeypatch, capsys):
    from ctxasm.interfaces.cli import main

    monkeypatch.setenv("CTXASM_PG_DATABASE", clean_db.database)
    assert main(["load", str(tmp_path)]) == 4
    assert capsys.readouterr().err.strip() == f"ctxasm: error: {tmp_path}: $: is a directory, not a scenario file"


def test_duplicate_ids_are_refused(clean_db, tmp_path):
    def duplicate(document):
        document["tenants"][0]["memories"].append(copy.deepcopy(document["tenants"][0]["memories"][FACT]))
    with pytest.raises(ScenarioError, match="appears twice") as caught:
        load.load_file(clean_db, write(tmp_path, broken(duplicate)))
    assert caught.value.json_path == f"$.tenants[0].memories[{len(DEMO['tenants'][0]['memories'])}].id"


def test_database_rejection_rolls_back_everything(clean_db, tmp_path):
    """Valid by the schema, refused by ctx_memory (a version earlier than its predecessor): nothing stays."""
    late = broken(_set(["tenants", 2, "memories", 1, "versions"],
                       [{"valid_from": "2020-01-01T00:00:00Z", "content": "Moved to us-east-1."}]))
    with pytest.raises(ScenarioError) as caught:
        load.load_file(clean_db, write(tmp_path, late))
    assert caught.value.json_path == "$.tenants[2].memories[1].versions[0]"
    assert "invalid_field: entity.valid_from" in str(caught.value)
    assert total_rows(clean_db, registry=False) == 0


def test_a_refusal_inside_a_batch_of_new_memories_names_its_memory_and_loads_nothing(clean_db, tmp_path):
    """New memories without versions are written together (PostgresStore.put_memories); the database refusing one
    of them, valid by the schema, still names that memory's JSON path, and nothing of the file stays."""
    memories = DEMO["tenants"][0]["memories"]
    plain = [i for i, m in enumerate(memories) if not m.get("versions") and "deleted_at" not in m]
    assert len(plain) >= 5
    bad = plain[len(plain) // 2]
    late = broken(_set(["tenants", 0, "memories", bad, "valid_until"], "1990-01-01T00:00:00Z"))
    with pytest.raises(ScenarioError) as caught:
        load.load_file(clean_db, write(tmp_path, late))
    assert caught.value.json_path == f"$.tenants[0].memories[{bad}]"
    assert "valid_until" in str(caught.value)
    assert total_rows(clean_db, registry=False) == 0


@pytest.mark.slow  # ctxasm processes
def test_cli_load_reports_and_exits_4(clean_db, tmp_path):
    path = write(tmp_path, broken(_set(["tenants", 0, "memories", FACT, "confidence"], "high")))
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    result = subprocess.run([sys.executable, "-m", "ctxasm.cli", "load", str(path)], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 4
    assert f"{path}: $.tenants[0].memories[{FACT}].confidence:" in result.stderr
    assert result.stdout == ""
    good = subprocess.run([sys.executable, "-m", "ctxasm.cli", "load", str(SCENARIOS / "acme_demo.json")],
                          env=env, capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert "3 tenants" in good.stdout
