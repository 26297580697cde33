"""A PostgresStore reads the database's JSON through from_json: exactly the values stored, integers beyond 64 bits
included (orjson alone would read them as floats)."""

from __future__ import annotations

from psycopg.pq import Format

from ctxasm.engines.checks import from_json
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn


def test_a_store_reads_json_exactly_and_through_from_json(clean_db):
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        for name in ("json", "jsonb"):
            oid = connection.adapters.types[name].oid
            loader = connection.adapters.get_loader(oid, Format.TEXT)(oid, connection)
            assert loader.loads is from_json
        store.register_tenant("acme", "Acme")
        store.set_tenant("acme")
        content_json = {"limits": {"huge": 123456789012345678901234567890, "u64": 18446744073709551615,
                                   "ratio": 0.1, "tiny": 5e-324},
                        "name": "Zoë \u2014 ☃", "flags": [True, False, None]}
        store.put_memory("entity", {"id": "f1", "subject": "acme", "predicate": "limits", "content": "limits",
                                    "content_json": content_json})
        store.commit()
        store.set_tenant("acme")
        rows = store.rows_as_of("entity", store.capture_snapshot())
    (row,) = [r for r in rows if r["id"] == "f1"]
    assert row["content_json"] == content_json
    assert isinstance(row["content_json"]["limits"]["huge"], int)
