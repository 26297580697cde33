"""ctx_memory: the write API's validation, versioning and error contract on the real database."""

from __future__ import annotations

import pytest

from ctxasm import errors
from ctxasm.store import PostgresStore

from ..conftest import read_as_owner


@pytest.fixture()
def store(clean_db, app_conn, owner_conn):
    PostgresStore(owner_conn).register_tenant("acme", "Acme")
    owner_conn.commit()
    store = PostgresStore(app_conn)
    store.set_tenant("acme")
    return store


def fact(**extra) -> dict:
    return {"id": "f1", "content": "Helios-RAG scores 0.92.", "subject": "model:helios-rag",
            "predicate": "beir_ndcg10", "confidence": 0.92, **extra}


@pytest.mark.parametrize("record, error, field", [
    (fact(colour="red"), errors.InvalidField, "entity.colour: unknown field"),
    (fact(confidence=1.5), errors.InvalidField, "entity.confidence: out of range"),
    (fact(confidence="high"), errors.InvalidField, "entity.confidence: invalid input syntax"),
    (fact(valid_from="soon"), errors.InvalidField, "entity.valid_from"),
    (fact(content=""), errors.InvalidField, "entity.content: must be a non-empty string"),
    (fact(content={"text": "x"}), errors.InvalidField, "entity.content"),
    (fact(version=7), errors.InvalidField, "entity.version: set by the database"),
    (fact(status="superseded"), errors.InvalidField, "entity.status: set by the database"),
    ({"id": "f1", "content": "no subject", "predicate": "p"}, errors.InvalidField, "entity.subject: required"),
    ({"content": "no id", "subject": "s", "predicate": "p"}, errors.InvalidField, "entity.id: required"),
    (fact(valid_from="2026-09-01T00:00:00Z", valid_until="2026-08-01T00:00:00Z"), errors.InvalidField,
     "entity.valid_until: out of range"),
    (fact(source_refs={"type": "x"}), errors.InvalidField, "entity.source_refs"),
])
def test_put_memory_names_the_bad_field(store, record, error, field):
    with pytest.raises(error, match=field.replace("(", r"\(")):
        store.put_memory("entity", record)


def test_unknown_memory_type_lists_the_known_ones(store):
    with pytest.raises(errors.InvalidMemoryType, match="'gossip' is not one of guideline, persona"):
        store.put_memory("gossip", fact())


def test_no_tenant_no_writes(clean_db, app_conn):
    with pytest.raises(errors.TenantNotSet):
        PostgresStore(app_conn).put_memory("entity", fact())


def test_duplicate_is_refused(store):
    store.put_memory("entity", fact())
    with pytest.raises(errors.DuplicateMemory, match="'f1'"):
        store.put_memory("entity", fact())


def test_supersede_retires_and_inserts_next_version(store, clean_db):
    store.put_memory("entity", fact(valid_from="2026-05-12T09:00:00Z"))
    assert store.supersede("entity", "f1", {"content": "0.78 (corrected)", "confidence": 0.78,
                                            "valid_from": "2026-08-17T10:00:00Z"}) == 2
    store.commit()
    rows = read_as_owner(clean_db, "acme",
                         "SELECT version, status, valid_until, confidence, subject, content FROM ctxasm.entity_memory "
                         "WHERE id = 'f1' ORDER BY version")
    (v1, s1, until1, c1, subj1, _), (v2, s2, until2, c2, subj2, content2) = rows
    assert (v1, s1, float(c1)) == (1, "superseded", 0.92)
    assert until1.isoformat() == "2026-08-17T10:00:00+00:00"
    assert (v2, s2, until2, float(c2), subj2, content2) == (2, "active", None, 0.78, subj1, "0.78 (corrected)")


def test_failed_supersede_leaves_the_active_version(store, clean_db):
    store.put_memory("entity", fact())
    store.commit()
    store.set_tenant("acme")
    with pytest.raises(errors.InvalidField, match="entity.confidence"):
        store.supersede("entity", "f1", {"confidence": 2})
    store.rollback()
    assert read_as_owner(clean_db, "acme", "SELECT version, status FROM ctxasm.entity_memory") == [(1, "active")]


def test_supersede_and_delete_need_an_active_version(store):
    with pytest.raises(errors.MemoryNotFound, match="no active entity 'ghost'"):
        store.supersede("entity", "ghost", {"content": "x"})
    store.rollback()
    store.set_tenant("acme")
    store.put_memory("entity", fact())
    store.delete_memory("entity", "f1", "2026-09-01T00:00:00Z")
    with pytest.raises(errors.MemoryNotFound):
        store.delete_memory("entity", "f1")


def test_supersede_cannot_go_back_in_time_or_change_the_id(store):
    store.put_memory("entity", fact(valid_from="2026-05-12T09:00:00Z"))
    with pytest.raises(errors.InvalidField, match="entity.id"):
        store.supersede("entity", "f1", {"id": "f2"})
    store.rollback()
    store.set_tenant("acme")
    store.put_memory("entity", fact(valid_from="2026-05-12T09:00:00Z"))
    with pytest.raises(errors.InvalidField, match="entity.valid_from: .* is earlier than version 1"):
        store.supersede("entity", "f1", {"valid_from": "2026-01-01T00:00:00Z"})


def test_every_memory_type_accepts_a_minimal_row(store, owner_conn):
    minimal = {
        "guideline": {"guideline_key": "k"}, "persona": {"persona_key": "k"},
        "toolbox": {"tool_name": "t", "tool_schema": {"type": "object"}, "usage_notes": "n", "tool_handler": "h"},
        "entity": {"subject": "s", "predicate": "p"}, "workflow": {"workflow_key": "k"},
        "kb_document": {"title": "T"}, "kb_chunk": {"document_id": "d", "chunk_index": 0, "embedding": [0.5] * 384},
        "conversation": {"role": "user", "turn_index": 1}, "summary": {},
        "compression": {"source_type": "kb_chunk", "source_id": "c", "source_version": 1, "source_hash": "a" * 64,
                        "generating_model": "extractive", "prompt_version": "p1"},
        "source_ref": {"derived_type": "summary", "derived_id": "s", "derived_version": 1, "source_type": "entity",
                       "source_id": "e", "source_version": 1, "relation": "cites"},
    }
    types = [t for (t,) in owner_conn.execute("SELECT memory_type FROM ctxasm.memory_type ORDER BY ordinal")]
    assert sorted(types) == sorted(minimal)
    for memory_type, fields in minimal.items():
        assert store.put_memory(memory_type, {"id": f"{memory_type}-1", "content": "text", **fields}) == f"{memory_type}-1"
