"""Scenario files mutated at random: a ScenarioError that names the file and a JSON path, never a traceback,
and nothing loaded; or a valid file that loads completely."""

from __future__ import annotations

import copy
import itertools
import json

import psycopg
from hypothesis import given
from hypothesis import strategies as st

from ctxasm.engines.postgres import PostgresStore
from ctxasm.errors import ScenarioError
from ctxasm.local import pgconn
from ctxasm.services import load

from .conftest import SCENARIOS

DEMO = json.loads((SCENARIOS / "acme_demo.json").read_text())
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30) | st.sampled_from(["", "\x00", "'; DROP TABLE x; --", "</content>", "2026-13-45"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)
_names = itertools.count(1)
tried = {"cases": 0, "refused": 0, "loaded": 0}


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, prefix + (index,))


@st.composite
def mutated(draw):
    document = copy.deepcopy(DEMO)
    for _ in range(draw(st.integers(1, 3))):
        every = [p for p in paths(document) if p]
        path = draw(st.sampled_from(every))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "delete", "add_key"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(JSON_VALUES)
    return document


def tenant_rows(target, tenant_ids) -> int:
    with psycopg.connect(target.conninfo(target.admin)) as admin:
        return admin.execute("SELECT (SELECT count(*) FROM ctxasm.ctx_tenant WHERE tenant_id = ANY(%s)) + "
                             "(SELECT count(*) FROM ctxasm.memory_row WHERE tenant_id = ANY(%s))",
                             (tenant_ids, tenant_ids)).fetchone()[0]


@given(document=mutated())
def test_mutated_scenario_is_refused_by_path_or_loaded_whole(two_tenants, tmp_path_factory, document):
    tried["cases"] += 1
    path = tmp_path_factory.mktemp("scenario") / "mutated.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8", errors="surrogatepass")
    try:
        valid = load.read_scenario(path)
    except ScenarioError as exc:
        tried["refused"] += 1
        assert str(exc).startswith(f"{path}: $") or str(exc).startswith(f"{path}: line "), str(exc)
        return
    # Valid: load it under fresh tenant ids (never Acme's or Globex's) and check all-or-nothing.
    names = {}
    for tenant in valid["tenants"]:
        names[tenant["tenant_id"]] = f"prop_{next(_names)}"
        tenant["tenant_id"] = names[tenant["tenant_id"]]
    load.compress_chunks(valid)
    with pgconn.connect(two_tenants, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        try:
            load.load_document(store, valid, str(path))
        except ScenarioError as exc:
            tried["refused"] += 1
            assert "$.tenants[" in str(exc), str(exc)
            assert tenant_rows(two_tenants, list(names.values())) == 0, "a refused file must load nothing"
            return
        tried["loaded"] += 1
        for tenant_id in names.values():
            store.purge_tenant(tenant_id)
        store.commit()


@given(raw=st.one_of(
    st.binary(max_size=200),
    st.just(json.dumps(DEMO).encode()[:-7]),
    st.just(b"\xff\xfe" + json.dumps(DEMO).encode("utf-16-le")),
    st.just(json.dumps(DEMO).encode().replace(b"Helios", b"H\xc3\x28lios")),
))
def test_broken_files_are_refused_by_location(tmp_path_factory, raw):
    """Invalid UTF-8, truncated JSON, other encodings: ScenarioError with a location, nothing else."""
    tried["cases"] += 1
    path = tmp_path_factory.mktemp("scenario") / "broken.json"
    path.write_bytes(raw)
    try:
        load.read_scenario(path)
    except ScenarioError as exc:
        tried["refused"] += 1
        assert str(exc).startswith(f"{path}: "), str(exc)
