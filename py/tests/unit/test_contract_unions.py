"""The per-type memory-row shapes the generator derives from the catalogue, and what a new type changes."""

from __future__ import annotations

import json
from pathlib import Path

from ctxasm import memory_types
from ctxasm_dev.contract import catalogue, generate, unions
from ctxasm_dev.contract.targets import TARGETS

REPO = Path(__file__).resolve().parents[3]


def test_each_slot_is_filled_by_the_column_that_names_it_and_the_rest_is_extra() -> None:
    cat = catalogue.load(REPO)
    chunk = next(t for t in cat.types if t.name == "kb_chunk")
    filled = {slot.name: column.name for slot, column in unions.slot_columns(cat, chunk) if column}
    assert filled == {"key_name": "document_id", "turn_index": "chunk_index", "title": "title",
                      "embedding": "embedding"}
    assert [slot.name for slot, _ in unions.slot_columns(cat, chunk)] == [s.name for s in cat.row_slots]
    assert [c.name for c in unions.extra_columns(chunk)] == ["document_version"]
    assert memory_types.BY_NAME["kb_chunk"].extra == ("document_version",)
    assert memory_types.BY_NAME["kb_chunk"].slot("turn_index") == "chunk_index"
    assert memory_types.BY_NAME["guideline"].slot("title") is None
    assert [t.name for t in unions.renderable(cat)] == [t.name for t in memory_types.MEMORY_TYPES if t.slice]


def test_the_memory_row_shape_ends_with_the_columns_the_catalogue_adds() -> None:
    names = unions.pg_row_names(catalogue.load(REPO))
    assert names[:3] == ["memory_type", "table_name", "tenant_id"]
    assert names[-4:] == ["embedding", "search_text", "text_key", "pointer_text"]
    assert "created_at" not in names and "retired_xid" not in names


def test_retrieval_reads_a_slice_s_embedded_types_first() -> None:
    by_slice = unions.searchable_by_slice(catalogue.load(REPO))
    assert [t.name for t in by_slice["evidence"]] == ["kb_chunk", "kb_document"]
    assert [t.name for t in by_slice["recalled_history"]] == ["conversation", "summary"]


def test_the_scenario_schema_lists_the_catalogue_types() -> None:
    schema = json.loads((REPO / TARGETS["py_scenario_schema"]).read_text(encoding="utf-8"))
    assert schema["$defs"]["memory"]["properties"]["type"]["enum"] == [t.name for t in memory_types.MEMORY_TYPES]


def test_a_new_memory_type_gets_its_view_its_branches_and_its_registry_row(catalogue_copy: Path) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    # a new type goes at the end: the deployed per-table changesets (Oracle VPD policies) keep their order
    path.write_text(path.read_text(encoding="utf-8") + """
[[type]]
name = "note"
table = "note_memory"
slice = "evidence"
authority = 3
searchable = false
embedded = false
columns = [
  { name = "note_key", pg = "varchar(128)", oracle = "varchar2(128)", nullable = false, row = "key_name" },
  { name = "origin_uri", pg = "varchar(1024)", oracle = "varchar2(1024)", nullable = true },
]
""", encoding="utf-8")
    generate.write(catalogue_copy)
    rows = (catalogue_copy / TARGETS["pg_memory_row"]).read_text(encoding="utf-8")
    assert "CREATE OR REPLACE VIEW ctxasm.memory_row_note WITH (security_invoker = TRUE) AS" in rows
    assert "    note_key AS key_name,\n" in rows
    assert "    jsonb_build_object('origin_uri', origin_uri) AS extra,\n" in rows
    assert "SELECT * FROM ctxasm.memory_row_note;" in rows
    assert "FROM ctxasm.note_memory_history;" in rows
    sources = (catalogue_copy / TARGETS["pg_sources"]).read_text(encoding="utf-8")
    assert "'summary', 'note']::varchar[];" in sources  # live_source_rows reads the new type's view too
    registry = (catalogue_copy / TARGETS["pg_memory_type_registry"]).read_text(encoding="utf-8")
    assert "('note', 'note_memory', 12)" in registry
    schema = json.loads((catalogue_copy / TARGETS["py_scenario_schema"]).read_text(encoding="utf-8"))
    assert "note" in schema["$defs"]["memory"]["properties"]["type"]["enum"]
    assert generate.stale(catalogue_copy) == []
