"""The memory-row views are generated from the catalogue (db/postgresql/schema/memory_row.sql).

An existing deployment made from the hand-written views takes the generated ones without a change of shape:
every view keeps its columns, names, order and types (CREATE OR REPLACE VIEW would refuse anything but new
columns at the end). And a shared column the catalogue adds reaches selection: after one catalogue edit and a
regeneration, it is on every memory table and its history, and at the end of every memory-row shape, on a
fresh deployment and on one brought up to date.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ctxasm.local import deploy, pgconn
from ctxasm_dev.contract import catalogue, generate
from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS
from ctxasm_dev.contract.unions import PG_LATE_STEP_COLUMNS
from ctxasm_dev.gates import contract_generated

from ..conftest import REPO, worker_database
from ..database_template import fresh_copy
from .earlier_deployment import deploy_from, earlier_deployment

pytestmark = pytest.mark.slow  # four Liquibase deployments

# The file that made memory_row.sql generated: the commit before the one that added it holds the hand-written views.
GENERATOR = "py/ctxasm_dev/contract/unions.py"

_VIEW_COLUMNS = """
    SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
      FROM pg_attribute AS a
      JOIN pg_class AS c ON c.oid = a.attrelid
      JOIN pg_namespace AS n ON n.oid = c.relnamespace
     WHERE n.nspname = 'ctxasm' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY c.relname, a.attnum
"""


def _views(target: pgconn.Target) -> dict[str, list[tuple[str, str]]]:
    """{view: [(column, type), ...]} of every view of the ctxasm schema."""
    views: dict[str, list[tuple[str, str]]] = {}
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        for view, column, column_type in connection.execute(_VIEW_COLUMNS).fetchall():
            views.setdefault(view, []).append((column, column_type))
    return views


def test_the_generated_views_replace_the_hand_written_ones_column_for_column(pg_target, tmp_path, monkeypatch):
    with earlier_deployment("ctxasm_memory_row_upgrade", tmp_path, monkeypatch,
                            "--diff-filter=A", "--", GENERATOR) as target:
        old = _views(target)
        deploy.deploy_postgres(target)
        upgraded = _views(target)
    assert {"memory_row", "memory_row_history", "memory_row_kb_chunk", "search_row"} <= set(old)
    assert upgraded == old
    assert _views(pg_target) == old, "a fresh deployment has the shape an upgraded one has"


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A copy of what generation and deployment read: the catalogue, db/, liquibase/ and every generated file."""
    copy = tmp_path / "checkout"
    for folder in (CATALOGUE_DIR, "db", "liquibase"):
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for path in TARGETS.values():
        if (REPO / path).exists() and not (copy / path).exists():
            (copy / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / path, copy / path)
    return copy


def _add_shared_column(copy: Path) -> None:
    path = copy / "contract/memory_types.toml"
    text = path.read_text(encoding="utf-8")
    column = ('[[shared_column]]\nname = "region"\npg = "varchar(64)"\noracle = "varchar2(64)"\nnullable = true\n'
              'ddl = "catalogue"\nnote = "the region the row belongs to"\n\n')
    path.write_text(text.replace("[[row_slot]]", column + "[[row_slot]]", 1), encoding="utf-8")


def _columns_of_every_shape(target: pgconn.Target) -> dict[str, list[str]]:
    """The columns of each memory table and history table, of each memory-row view, of memory_rows(NULL) and of
    the selection's candidate row."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        rows = connection.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns AS c "
            "WHERE c.table_schema = 'ctxasm' ORDER BY c.table_name, c.ordinal_position").fetchall()
        cursor = connection.execute("SELECT * FROM ctxasm.memory_rows(NULL) LIMIT 0")
        functions = {"memory_rows(NULL)": [d.name for d in cursor.description]}
        # the selection's candidate row: memory_row's columns, then the late step columns
        # (schema/ctx_selection_candidate.sql)
        functions["selection_candidate"] = [name for (name,) in connection.execute(
            "SELECT a.attname FROM pg_attribute AS a WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass "
            "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum").fetchall()]
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return columns | functions


def _assert_the_column_is_everywhere(target: pgconn.Target, copy: Path) -> None:
    columns = _columns_of_every_shape(target)
    for memory_type in catalogue.load(copy).types:
        for table in (memory_type.table, f"{memory_type.table}_history"):
            assert "region" in columns[table], f"ctxasm.{table} has no column region"
        if memory_type.slice:
            assert columns[f"memory_row_{memory_type.name}"][-1] == "region"
    for shape in ("memory_row", "memory_row_history", "memory_rows(NULL)"):
        assert columns[shape][-1] == "region", f"{shape} does not end with region: {columns[shape]}"
    # the candidate row: memory_row's columns, then the step columns added since
    late = [name for name, _ in PG_LATE_STEP_COLUMNS]
    candidate = columns["selection_candidate"]
    assert candidate[-len(late) - 1:] == ["region", *late], f"selection_candidate ends {candidate[-5:]}"


def test_a_shared_column_reaches_every_memory_row_shape(checkout, monkeypatch, capsys):
    target = pgconn.resolve_target(worker_database("ctxasm_catalogue_column"), start=True)
    try:
        # a deployment from before the edit: the checkout is this tree's copy, so the test template's copy is one
        fresh_copy(target)
        _add_shared_column(checkout)
        changed = generate.write(checkout)
        assert "db/postgresql/schema/memory_row.sql" in changed
        assert contract_generated.main(["--repo", str(checkout)]) == 0, capsys.readouterr().out
        deploy_from(checkout, target, monkeypatch)  # brought up to date
        _assert_the_column_is_everywhere(target, checkout)
        pgconn.drop_database(target)
        deploy_from(checkout, target, monkeypatch)  # fresh
        _assert_the_column_is_everywhere(target, checkout)
    finally:
        pgconn.drop_database(target)
    lint = subprocess.run([str(REPO / ".venv/bin/sqlfluff"), "lint", "--config", str(REPO / ".sqlfluff"),
                           *(str(checkout / path) for path in changed if path.endswith(".sql")
                             and path.startswith("db/postgresql/"))],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
