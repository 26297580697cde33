"""The contract catalogue (contract/*.toml) and what Python reads of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxasm import contract_constants, error_codes, errors, memory_types
from ctxasm.core import budget, render
from ctxasm_dev.contract import catalogue, generate, versions
from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS

REPO = Path(__file__).resolve().parents[3]


def test_every_engine_error_maps_to_its_class_both_ways() -> None:
    for entry in error_codes.CONTRACT_ERRORS:
        cls = getattr(errors, entry.python_class)
        assert (cls.code, cls.number) == (entry.name, entry.number)
        if entry.engines:
            assert isinstance(errors.from_sqlstate(entry.sqlstate, "x"), cls)
            assert isinstance(errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x"), cls)
        else:
            assert errors.from_sqlstate(entry.sqlstate, "x") is None


def test_python_reads_the_catalogue_constants() -> None:
    assert budget.MAX_CANDIDATE_LIMIT == contract_constants.MAX_CANDIDATE_LIMIT
    assert memory_types.TABLE_OF["kb_chunk"] == "knowledge_base_chunk"
    assert render.RENDERER_VERSION.startswith("renderer-")


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / CATALOGUE_DIR, tmp_path / CATALOGUE_DIR)
    for path in TARGETS.values():
        if (REPO / path).exists():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / path, tmp_path / path)
    return tmp_path


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_a_new_error_is_one_catalogue_edit(copy: Path) -> None:
    _append(copy / "contract/errors.toml", '\n[[error]]\nname = "window_too_large"\nnumber = 120\n'
                                           'python_class = "WindowTooLarge"\nmessage = "the window is too large"\n'
                                           'when = "a test"\n')
    generate.write(copy)
    assert "co_window_too_large constant pls_integer := -20120;" in \
        (copy / "db/oracle/internal/ctx_errors.spec.sql").read_text().replace("  ", " ").replace("  ", " ")
    assert "pragma exception_init(e_window_too_large, -20120);" in \
        (copy / "db/oracle/internal/ctx_errors.spec.sql").read_text()
    assert "THEN 'CX120'" in (copy / "db/postgresql/internal/ctx_errors.sql").read_text()
    assert "| `window_too_large` | -20120 | CX120 | a test |" in (copy / "docs/contract.md").read_text()
    assert "'WindowTooLarge'" in (copy / "py/ctxasm/error_codes.py").read_text()
    assert generate.stale(copy) == []


def test_a_column_for_every_memory_type_is_one_catalogue_edit(copy: Path) -> None:
    _append(copy / "contract/memory_types.toml", "")
    text = (copy / "contract/memory_types.toml").read_text()
    text = text.replace("\n[[type]]", '\n[[shared_column]]\nname = "origin"\npg = "varchar(64)"\n'
                                      'oracle = "varchar2(64)"\nnullable = true\nddl = "catalogue"\n'
                                      'note = "where the row came from"\n\n[[type]]', 1)
    (copy / "contract/memory_types.toml").write_text(text)
    generate.write(copy)
    pg = (copy / "db/postgresql/schema/catalogue/catalogue_columns.sql").read_text()
    oracle = (copy / "db/oracle/schema/catalogue/catalogue_columns.sql").read_text()
    tables = [t.table for t in catalogue.load(copy).types]
    for table in tables:
        assert f"ALTER TABLE ctxasm.{table} ADD COLUMN origin varchar(64);" in pg
        assert f"ALTER TABLE ctxasm.{table}_history ADD COLUMN origin varchar(64);" in pg
        assert f"alter table {table} add (origin varchar2(64));" in oracle
    assert "| origin | varchar(64) | varchar2(64) | where the row came from |" in (copy / "docs/contract.md").read_text()


def test_a_catalogue_error_names_file_entry_and_field(copy: Path) -> None:
    path = copy / "contract/memory_types.toml"
    path.write_text(path.read_text().replace('name = "guideline"\ntable = "guideline_memory"',
                                             'name = "guideline"\ntable = "Guideline Memory"'))
    with pytest.raises(catalogue.CatalogueError, match="memory_types.toml: type guideline: table 'Guideline Memory'"):
        catalogue.load(copy)


def test_the_version_ignores_comments_and_the_version_literal_itself() -> None:
    rule = catalogue.VersionRule("t", "selection", ("a",), "a")
    code = "SELECT 'selection-000000000000';\nSELECT 1;\n"
    same = "-- a comment\nSELECT 'selection-0123456789ab';   \n\n/* a\nblock */SELECT 1;\n"
    other = "SELECT 'selection-000000000000';\nSELECT 2;\n"
    assert versions.digest(rule, {"x.sql": code}) == versions.digest(rule, {"x.sql": same})
    assert versions.digest(rule, {"x.sql": code}) != versions.digest(rule, {"x.sql": other})


@pytest.mark.parametrize("path", ["db/postgresql/api/ctx_assembly.sql",
                                  "db/oracle/api/ctx_assembly.body.sql"])
def test_select_window_runs_the_catalogue_steps_in_order(path: str) -> None:
    import re

    text = (REPO / path).read_text(encoding="utf-8")
    declared = [m.group(1) for m in re.finditer(r"^\s*(?:,\s*)?step_(\w+) as \(", text, re.MULTILINE | re.IGNORECASE)]
    assert tuple(declared) == contract_constants.SELECTION_STEPS
