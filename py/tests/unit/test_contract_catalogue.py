"""The contract catalogue (contract/*.toml) and what Python reads of it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm import contract_constants, error_bases, error_classes, errors, memory_types
from ctxasm.core import budget, render
from ctxasm_dev.contract import catalogue, generate, versions
from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS
from ctxasm_dev.gates import contract_check, contract_generated, oracle_api, oracle_names, oracle_parse

REPO = Path(__file__).resolve().parents[3]
ERRORS = catalogue.load(REPO).errors


@pytest.mark.parametrize("entry", ERRORS, ids=[e.name for e in ERRORS])
def test_every_catalogue_error_has_its_class_mapped_both_ways(entry: catalogue.ContractError) -> None:
    cls = getattr(errors, entry.python_class)
    assert cls.__module__ == "ctxasm.error_classes"
    assert (cls.code, cls.number, cls.summary) == (entry.name, entry.number, entry.message)
    assert cls.__bases__ == (getattr(error_bases, entry.python_base or
                                     ("DatabaseError" if entry.engines else "NumberedError")),)
    assert str(cls()) == f"{entry.name}: {entry.message}"
    if entry.engines:
        assert cls.sqlstate == entry.sqlstate
        assert type(errors.from_sqlstate(entry.sqlstate, f"{entry.name}: x")) is cls
        assert type(errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x")) is cls
        assert str(errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x")) == f"{entry.name}: x"
    else:
        assert errors.from_sqlstate(entry.sqlstate, "x") is None
        assert errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x") is None
    assert error_classes.CONTRACT_ERRORS == tuple(getattr(errors, e.python_class) for e in ERRORS)


def test_hand_written_behaviour_comes_from_the_base_the_catalogue_names() -> None:
    refused = errors.InvalidBudget.at("shares.fact_check", "must be a JSON object")
    assert isinstance(refused, errors.FieldProblemError) and isinstance(refused, errors.DatabaseError)
    assert (str(refused), refused.field, refused.problem) == \
        ("invalid_budget: shares.fact_check: must be a JSON object", "shares.fact_check", "must be a JSON object")
    from_database = errors.from_sqlstate("CX112", "invalid_budget: two budgets are in effect")
    assert isinstance(from_database, errors.InvalidBudget) and from_database.field is None


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


@pytest.fixture()
def repo_copy(tmp_path: Path) -> Path:
    """What the generator and the static gates read: the catalogue, db/, liquibase/, docs/ and the package."""
    for folder in (CATALOGUE_DIR, "db", "liquibase", "docs", "py/ctxasm"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_new_error_is_one_catalogue_edit(repo_copy: Path, capsys) -> None:
    copy = repo_copy
    _append(copy / "contract/errors.toml", '\n[[error]]\nname = "window_too_large"\nnumber = 120\n'
                                           'python_class = "WindowTooLarge"\npython_base = "FieldProblemError"\n'
                                           'message = "the window is too large"\nwhen = "a test"\n')
    generate.write(copy)
    spec = (copy / "db/oracle/internal/ctx_errors.spec.sql").read_text()
    assert "co_window_too_large constant pls_integer := -20120;" in spec.replace("  ", " ").replace("  ", " ")
    assert "pragma exception_init(e_window_too_large, -20120);" in spec
    body = (copy / "db/oracle/internal/ctx_errors.body.sql").read_text()
    assert "when co_window_too_large then 'the window is too large'" in body
    assert "THEN 'CX120'" in (copy / TARGETS["pg_errors"]).read_text()
    docs = (copy / "docs/contract.md").read_text()
    assert "| `window_too_large` | -20120 | CX120 | `WindowTooLarge` | a test |" in docs
    # the copy's package, imported afresh: the generated class derives from the base the entry names, and a
    # raised CX120 / ORA-20120 maps to it
    probe = ("from ctxasm import errors, error_bases\n"
             "cls = errors.WindowTooLarge\n"
             "assert cls.__module__ == 'ctxasm.error_classes', cls.__module__\n"
             "assert cls.__bases__ == (error_bases.FieldProblemError,), cls.__bases__\n"
             "assert type(errors.from_sqlstate('CX120', 'window_too_large: x')) is cls\n"
             "assert type(errors.from_oracle_message('ORA-20120: window_too_large: x')) is cls\n"
             "print(cls.at('max_tokens', 'too many'), '|', cls())\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=copy,
                         env={**os.environ, "PYTHONPATH": str(copy / "py")})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "window_too_large: max_tokens: too many | window_too_large: the window is too large"
    # the gates pass on the copy (oracle_parse on the files the edit changed: the others are as in the repository)
    changed = [TARGETS["ora_errors_spec"], TARGETS["ora_errors_body"]]
    for gate, argv in ((contract_generated, []), (contract_check, []), (oracle_api, []), (oracle_names, []),
                       (oracle_parse, [str(copy / path) for path in changed])):
        assert gate.main(["--repo", str(copy), *argv]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("python_class, base, need", [
    ("InvalidClaim", "NoSuchBase", "DatabaseError"),
    ("InvalidClaim", "NumberedError", "DatabaseError"),
    ("ToolRefused", "FieldProblemError", "NumberedError and not from DatabaseError"),
])
def test_a_python_base_must_derive_from_the_plain_base(copy: Path, python_class: str, base: str, need: str) -> None:
    path = copy / "contract/errors.toml"
    path.write_text(path.read_text().replace(f'python_class = "{python_class}"\n',
                                             f'python_class = "{python_class}"\npython_base = "{base}"\n'))
    with pytest.raises(catalogue.CatalogueError, match=f"python_base '{base}' is not a class of ctxasm.error_bases "
                                                       f"deriving from {need}"):
        generate.generate(copy)


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
