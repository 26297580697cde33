"""How a manifest is stored and read is outside the selection version.

ctx_assembly.selection_version() is a digest of the selection code's files (contract/selection.toml), and replay
refuses a manifest recorded under another version. Manifest storage (record_manifest, read_manifest,
latest_manifest_id, ctxasm.manifest_refs) lives in files of its own on both engines (PostgreSQL
api/ctx_manifest_store.sql; Oracle internal/ctx_manifest_store.*, which CTX_ASSEMBLY's wrappers call), so changing
it keeps every recorded manifest replayable. The bounds of record_manifest are the same on both engines.
"""

from __future__ import annotations

import re

import pytest

from ctxasm import contract_constants
from ctxasm_dev.contract import catalogue, versions
from ctxasm_dev.contract.targets import target
from ctxasm_dev.gates.formatted_sql import strip_sql_comments

from ..conftest import REPO

pytestmark = pytest.mark.unit

PG_STORE = "db/postgresql/api/ctx_manifest_store.sql"
ORA_STORE_SPEC = "db/oracle/internal/ctx_manifest_store.spec.sql"
ORA_STORE_BODY = "db/oracle/internal/ctx_manifest_store.body.sql"
ROUTINES = ("record_manifest", "read_manifest", "latest_manifest_id")


def selection_rules() -> dict[str, catalogue.VersionRule]:
    return {rule.key: rule for rule in catalogue.load(REPO).versions if rule.prefix == "selection"}


def version_texts(rule: catalogue.VersionRule) -> dict[str, str]:
    return {target(key): (REPO / target(key)).read_text(encoding="utf-8") for key in rule.files}


def code(text: str) -> str:
    return strip_sql_comments(text).lower()


def test_the_storage_files_are_not_among_the_selection_versions_files() -> None:
    rules = selection_rules()
    assert set(rules) == {"postgresql", "oracle"}
    for rule in rules.values():
        assert not {PG_STORE, ORA_STORE_SPEC, ORA_STORE_BODY} & set(version_texts(rule)), rule.key


def test_postgresql_version_files_hold_no_manifest_routine() -> None:
    for path, text in version_texts(selection_rules()["postgresql"]).items():
        for name in (*ROUTINES, "manifest_refs"):
            assert name not in text, f"{path} mentions {name}"
    store = code((REPO / PG_STORE).read_text(encoding="utf-8"))
    for name in ROUTINES:
        assert f"create or replace function ctx_assembly.{name}(" in store, name
    assert "create or replace function ctxasm.manifest_refs(" in store


def test_oracle_version_files_only_delegate_the_manifest_routines() -> None:
    texts = version_texts(selection_rules()["oracle"])
    body = code(texts["db/oracle/api/ctx_assembly.body.sql"])
    for name in ROUTINES:
        found = re.search(rf"\bfunction\s+{name}\b.*?\bend\s+{name}\s*;", body, re.DOTALL)
        assert found, name
        statements = found.group(0).split(" is", 1)[1]
        # one statement: the store's routine of the same name, its result returned
        assert re.fullmatch(rf"\s*begin\s+return ctx_manifest_store\.{name}\([^;]*\);\s*end\s+{name}\s*;",
                            statements), statements
    for path, text in texts.items():
        lowered = code(text)
        for table in ("conversation_memory", "context_source_ref"):
            assert not re.search(rf"\binsert\s+into\s+{table}\b", lowered), f"{path} writes {table}"
        assert "context_manifest" not in lowered, f"{path} reads manifests"


def test_a_change_to_manifest_storage_keeps_the_selection_version() -> None:
    rule = selection_rules()["postgresql"]
    texts = version_texts(rule)
    before = versions.digest(rule, texts)
    # the storage file is not an input: the version over the files it names is all there is
    assert versions.digest(rule, texts) == before
    changed = dict(texts)
    host = target(rule.host)
    changed[host] = changed[host] + "\nSELECT 1;\n"
    assert versions.digest(rule, changed) != before, "the digest must see a change of its own files"


def _declared(path: str, name: str) -> int:
    text = (REPO / path).read_text(encoding="utf-8")
    found = re.findall(rf"(?im)^\s*{name}\s+constant\s+[^:;\n]*:=\s*(\d+)\s*;", text)
    assert len(found) == 1, f"{path} declares {name} {len(found)} times"
    return int(found[0])


@pytest.mark.parametrize("path", [PG_STORE, ORA_STORE_BODY])
def test_record_manifest_is_bounded_alike_on_both_engines(path: str) -> None:
    # the manifest's text: what put_memory stores in one JSON field (the catalogue's max_json_chars)
    assert _declared(path, "co_max_json_chars") == contract_constants.MAX_JSON_CHARS
    assert _declared(path, "co_max_manifest_refs") == 20000
