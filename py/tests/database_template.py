"""Test databases as copies of one deployed template, so a test process pays for a Liquibase deployment (several
seconds of JVM start and changesets) at most once per change of the deployed sources, not once per session or
per xdist worker.

The template is a database deployed by `deploy.deploy_postgres` like any other, named after a digest of what a
deployment reads (the engines' SQL under db/, liquibase/ and the deployment code; not db/tests): a checkout whose sources changed gets a new template
and the old ones are dropped. A copy is `CREATE DATABASE ... TEMPLATE`, a file-level copy that takes a fraction of
a second; then `pgconn.bootstrap` gives the copy what is kept per database and not copied (its CONNECT grant) and
the claim key is installed again (the key belongs to the state directory, not to the sources).

Making and copying the template happen under one file lock in the state directory: PostgreSQL refuses to copy a
database another session is connected to, and two workers deploying at once would race on the shared roles. The
template is marked a template (IS_TEMPLATE) once its deployment has finished; one without the mark is dropped and
deployed again.
"""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from ctxasm.local import deploy, pgconn
from ctxasm.settings import state_dir

REPO = Path(__file__).resolve().parents[2]
PREFIX = "ctxasm_test_template_"
#: Everything a deployment reads: the changelogs, the SQL they include, and the code that runs them.
SOURCES = ("db/postgresql", "db/oracle", "liquibase", "py/ctxasm/local")


def digest(root: Path = REPO) -> str:
    """A short digest of every deployed source file's path and bytes."""
    hashed = hashlib.sha256()
    for folder in SOURCES:
        for path in sorted(p for p in (root / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            hashed.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hashed.hexdigest()[:12]


@contextmanager
def _locked() -> Iterator[None]:
    path = state_dir() / "test-template.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _admin(target: pgconn.Target) -> psycopg.Connection:
    return psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True)


def _set_template(target: pgconn.Target, database: str, flag: bool) -> None:
    """Mark `database` a template (any role with CREATEDB may copy it) or not (it may be dropped). Done as the
    owner, which may change its own database's flag, connected to the database itself."""
    where = pgconn.Target(target.host, target.port, database, target.admin, target.admin_database, target.embedded,
                          target.extra)
    with pgconn.connect(where, pgconn.owner_login(), autocommit=True) as owner:
        owner.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE {}").format(
            sql.Identifier(database), sql.Literal(flag)))


def _drop(admin: psycopg.Connection, like: pgconn.Target, database: str, is_template: bool) -> None:
    if is_template:
        _set_template(like, database, False)
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))


def _ensure_template(admin: psycopg.Connection, like: pgconn.Target) -> str:
    """The current template's name, deployed first if missing. Stale templates are dropped, and so is one that
    is not marked a template: its deployment never finished (the mark is set after it)."""
    name = PREFIX + digest()
    existing = dict(admin.execute("SELECT datname, datistemplate FROM pg_database WHERE datname LIKE %s",
                                  (PREFIX.replace("_", r"\_") + "%",)).fetchall())
    for database, is_template in existing.items():
        if database != name or not is_template:
            _drop(admin, like, database, is_template)
    if not existing.get(name):
        template = pgconn.Target(like.host, like.port, name, like.admin, like.admin_database, like.embedded,
                                 like.extra)
        deploy.deploy_postgres(template)
        _set_template(like, name, True)
    return name


def fresh_copy(target: pgconn.Target) -> pgconn.Target:
    """Drop `target`'s database and make it again as a copy of the deployed template (deployed first when the
    sources changed); returns `target`, ready for tests: the same as a fresh `deploy.deploy_postgres(target)`."""
    with _locked(), _admin(target) as admin:
        template = _ensure_template(admin, target)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target.database)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}").format(
            sql.Identifier(target.database), sql.Identifier(template), sql.Identifier(pgconn.OWNER_ROLE)))
        # A test database outlives no crash it must survive, so a commit need not wait for its WAL to reach the
        # disk: 2-4 ms per writing commit on this machine's disk, shared with other builds, over ten thousand
        # commits a run. Set on the copy only; what a commit does and returns is the same.
        admin.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(
            sql.Identifier(target.database)))
        pgconn.bootstrap(target)
    deploy.install_claim_key(target)
    return target
