"""Deploying what an earlier commit shipped, to check that the current changelog brings such a database up to
date: the tree of db/ and liquibase/ from before the first commit `git log` names, a deployment from a tree, and
a worker database deployed from such a tree."""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path

import pytest

from ctxasm.local import deploy, pgconn

from ..conftest import REPO, worker_database


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True)


def tree_before(into: Path, *log_args: str) -> None:
    """Extract db/ and liquibase/ as they were just before the oldest commit `git log *log_args` lists; skip
    the test where there is no such history (not a git checkout, a shallow clone)."""
    listed = git("log", "--no-renames", "--format=%H", *log_args)
    commits = listed.stdout.decode().split()
    if listed.returncode != 0 or not commits:
        pytest.skip(f"no git history for {' '.join(log_args)} in {REPO} (not a git checkout?)")
    archive = git("archive", "--format=tar", f"{commits[-1]}^", "db", "liquibase")
    assert archive.returncode == 0, archive.stderr.decode()
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def deploy_from(root: Path, target: pgconn.Target, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deploy the changelog of the tree at `root` to `target`."""
    monkeypatch.setenv("CTXASM_ROOT", str(root))
    try:
        deploy.deploy_postgres(target)
    finally:
        monkeypatch.delenv("CTXASM_ROOT")


@contextmanager
def earlier_deployment(database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       *log_args: str) -> Iterator[pgconn.Target]:
    """The worker database `database`, deployed afresh from the tree tree_before(*log_args) gives; dropped after."""
    before = tmp_path / "before"
    before.mkdir()
    tree_before(before, *log_args)
    target = pgconn.resolve_target(worker_database(database), start=True)
    try:
        pgconn.drop_database(target)
        deploy_from(before, target, monkeypatch)
        yield target
    finally:
        pgconn.drop_database(target)
