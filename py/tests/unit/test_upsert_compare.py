"""load --upsert's comparison of a file's memory with a stored row, as either engine gives the row back."""

from __future__ import annotations

from ctxasm.services.upsert import difference, final_state, same


def test_values_are_compared_as_stored_json_gives_them_back():
    assert same("2026-06-01T00:00:00Z", "2026-06-01T00:00:00+00:00")  # PostgreSQL's to_jsonb
    assert same("2026-06-01T00:00:00", "2026-06-01T00:00:00.000000Z")  # no offset reads as UTC; Oracle's JSON
    assert not same("2026-06-01T00:00:00Z", "2026-06-01T00:00:01Z")
    assert same(0.78, 0.78000000000001) and same(3, 3.0) and not same(0.78, 0.79)
    assert same({"value": 0.78, "unit": "ndcg"}, '{"unit": "ndcg", "value": 0.78}')  # a JSON document as text
    assert not same({"value": 0.78}, {"value": 0.78, "unit": "ndcg"})
    assert same([{"type": "kb_chunk", "id": "c", "version": 1}], [{"type": "kb_chunk", "id": "c", "version": 1}])
    assert not same(True, 1) and same(None, None) and not same("", None)
    assert not same("2026", "2026.0")  # text that is not a timestamp is compared as text


def test_difference_names_only_what_changed_and_never_the_derived_columns():
    stored = {"id": "f", "version": 2, "status": "active", "content": "old", "confidence": 0.9,
              "valid_from": "2026-09-28T12:00:00+00:00", "content_tokens": 1, "embedding": "[0.1]"}
    final = {"id": "f", "content": "old", "confidence": 0.9, "valid_from": "2026-06-01T00:00:00Z",
             "embedding": [0.2]}
    # the file's earlier valid_from is what an earlier upsert superseded: no change
    assert difference(final, stored) == {}
    changed = difference({**final, "content": "new"}, stored)
    assert changed == {"content": "new", "embedding": [0.2]}
    later = difference({**final, "valid_from": "2026-10-01T00:00:00Z"}, stored)
    assert later["valid_from"] == "2026-10-01T00:00:00Z"


def test_a_version_reference_to_a_rows_last_version_in_the_file_follows_the_stored_version():
    compression = {"type": "compression", "id": "cmp_c", "source_type": "kb_chunk", "source_id": "c",
                   "source_version": 1, "source_refs": [{"type": "kb_chunk", "id": "c", "version": 1}],
                   "versions": [{"content": "shorter"}]}
    state = final_state(compression, {("kb_chunk", "c"): (1, 3)})
    assert state["source_version"] == 3 and state["source_refs"][0]["version"] == 3
    assert state["content"] == "shorter" and "versions" not in state and "type" not in state
    # a reference to an earlier version of the file stays as it is
    assert final_state({**compression, "source_version": 0}, {("kb_chunk", "c"): (1, 3)})["source_version"] == 0
