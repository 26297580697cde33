"""Moving database sources between files must not re-run a deployed changeset.

Two moves are checked. The layout move put the sources into db/postgresql and db/oracle (from db/schema,
db/packages, db/security, the numbered files). The move to one file name per package on both engines renamed
internal/ctxasm_errors.sql and internal/sources.sql to ctx_errors.sql and ctx_sources.sql and folded
api/ctx_memory_erase.sql into api/ctx_memory.sql. For each, a database deployed from the tree before the move
(read back from git) is brought up to date from this checkout: Liquibase must find every changeset it ran
already under the same identity (id, author, file path; a moved file names its old path with logicalFilePath on
its header line, a changeset folded into another file on its own --changeset line). Only runAlways changesets
run again, and runOnChange ones whose text changed since.
"""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from ctxasm.local import deploy, pgconn
from ctxasm_dev.gates.formatted_sql import read_changelog

from ..conftest import REPO, worker_database

pytestmark = pytest.mark.slow  # four Liquibase deployments, one from an earlier tree

DATABASE = worker_database("ctxasm_layout_move")
# Each move by a file it created or removed: the tree before the commit that first added (A) or last deleted (D)
# it holds the earlier layout, recognised by a path that only it has.
MOVES = [
    pytest.param("db/postgresql/api/ctx_assembly.sql", "A", "db/packages/postgresql", id="layout"),
    pytest.param("db/postgresql/api/ctx_memory_erase.sql", "D", "db/postgresql/api/ctx_memory_erase.sql",
                 id="file-per-package"),
]


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True)


def _layout_before_the_move(into: Path, moved_file: str, change: str, earlier_only: str) -> str:
    found = _git("log", "--no-renames", f"--diff-filter={change}", "--format=%H", "--", moved_file)
    commits = found.stdout.decode().split()
    if found.returncode != 0 or not commits:
        pytest.skip(f"no git history of {moved_file} in {REPO} (not a git checkout?)")
    # the first commit that added the file, or the last that deleted it
    before = f"{commits[-1] if change == 'A' else commits[0]}^"
    archive = _git("archive", "--format=tar", before, "db", "liquibase")
    assert archive.returncode == 0, archive.stderr.decode()
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    assert (into / earlier_only).exists(), f"{before} is not the earlier layout"
    return before


def _postgres_changesets(root: Path) -> dict[tuple[str, str], dict[str, str]]:
    """{(logical path, id): attributes} of every PostgreSQL changeset of the SQL files under root/db."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for path in sorted((root / "db").rglob("*.sql")):
        changelog = read_changelog(path)
        for changeset in changelog.changesets:
            if "postgresql" in changeset.dbms:
                found[(changelog.identity_path(root, changeset), changeset.id)] = changeset.attributes
    return found


def _body(root: Path, key: tuple[str, str]) -> list[str]:
    for path in (root / "db").rglob("*.sql"):
        changelog = read_changelog(path)
        for changeset in changelog.changesets:
            if (changelog.identity_path(root, changeset), changeset.id) == key:
                return [line for _, line in changeset.body_lines]
    return []


@pytest.mark.parametrize(("moved_file", "change", "earlier_only"), MOVES)
def test_the_moved_layout_reruns_no_deployed_changeset(pg_target, tmp_path, monkeypatch, moved_file, change,
                                                       earlier_only):
    old_root = tmp_path / "before"
    old_root.mkdir()
    _layout_before_the_move(old_root, moved_file, change, earlier_only)
    old = _postgres_changesets(old_root)
    new = _postgres_changesets(REPO)
    assert set(old) <= set(new), f"changesets no longer in the changelog: {sorted(set(old) - set(new))}"

    target = pgconn.resolve_target(DATABASE, start=True)
    try:
        pgconn.drop_database(target)
        monkeypatch.setenv("CTXASM_ROOT", str(old_root))
        deploy.deploy_postgres(target)
        monkeypatch.delenv("CTXASM_ROOT")
        deploy.deploy_postgres(target)
        with pgconn.connect(target, pgconn.owner_login()) as connection:
            rows = connection.execute(
                "SELECT filename, id, exectype FROM liquibase.databasechangelog").fetchall()
    finally:
        pgconn.drop_database(target)

    recorded = {(filename, changeset_id): exectype for filename, changeset_id, exectype in rows}
    assert set(recorded) == set(new), "every changeset is recorded once, under its original path"
    again = {key for key, exectype in recorded.items() if exectype == "RERAN"}
    allowed = {key for key in old if new[key].get("runalways") == "true"
               or (new[key].get("runonchange") == "true" and _body(old_root, key) != _body(REPO, key))}
    assert again <= allowed, f"re-ran after the move: {sorted(again - allowed)}"
    assert {key for key in again if new[key].get("runalways") == "true"}, "the runAlways grants run every time"
