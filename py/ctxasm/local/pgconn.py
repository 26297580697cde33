"""PostgreSQL targets, roles and connections.

Three roles, each with one job:
- admin: the cluster superuser (embedded) or the role in CTXASM_PG_DSN; creates roles, databases, extensions;
- ctxasm_owner: owns the schema and the packages, deploys through Liquibase; subject to FORCE RLS like anyone;
- ctxasm_app: the application's privileges, on a NOLOGIN group role; each application instance logs in as a
  member of its own, ctxasm_app_<instance> (ctxasm.local.lockdown); owns nothing, cannot bypass RLS, writes
  only through ctx_memory.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ctxasm.errors import DatabaseUnavailable
from ctxasm.local import lockdown, pgcluster, tenant_storage
from ctxasm.settings import Environment, state_dir

OWNER_ROLE = "ctxasm_owner"
APP_ROLE = lockdown.GROUP_ROLE
LIQUIBASE_SCHEMA = "liquibase"


@dataclass(frozen=True)
class Login:
    user: str
    password: str | None


@dataclass(frozen=True)
class Target:
    """One PostgreSQL server and the database ctxasm uses on it."""

    host: str
    port: int
    database: str
    admin: Login
    admin_database: str
    embedded: bool
    extra: tuple[tuple[str, str], ...] = ()

    def conninfo(self, login: Login, database: str | None = None) -> str:
        params = dict(self.extra)
        params.update(host=self.host, port=str(self.port), dbname=database or self.database, user=login.user)
        if login.password:
            params["password"] = login.password
        return make_conninfo(**params)

    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def describe(self) -> str:
        kind = "embedded" if self.embedded else "CTXASM_PG_DSN"
        return f"{kind} PostgreSQL at {self.host}:{self.port}, database {self.database}"


def role_logins(*roles: str) -> dict[str, Login]:
    """Passwords of the owner, the default application instance and `roles`: each made once, kept in the
    private state directory (0600). Several processes share the file (parallel test workers, a server beside the
    CLI): a new password is added under an exclusive lock on a companion file, and the file is replaced whole, so
    a reader never sees it half written and two writers do not drop each other's roles."""
    path = state_dir() / "roles.json"
    wanted = (OWNER_ROLE, lockdown.login_role(Environment.read().app_login), *roles)
    stored = _read_roles(path)
    if any(role not in stored for role in wanted):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name("roles.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            stored = _read_roles(path)
            missing = {role: secrets.token_urlsafe(24) for role in wanted if role not in stored}
            if missing:
                stored.update(missing)
                fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".roles.")
                with os.fdopen(fd, "w") as handle:  # mkstemp makes the file 0600
                    handle.write(json.dumps(stored))
                os.replace(temporary, path)
    return {role: Login(role, password) for role, password in stored.items()}


def _read_roles(path: Path) -> dict[str, str]:
    return json.loads(path.read_text()) if path.exists() else {}


def owner_login() -> Login:
    return role_logins()[OWNER_ROLE]


def app_login(instance: str | None = None) -> Login:
    """The login of an application instance: CTXASM_APP_LOGIN's (default `default`) unless `instance` is given."""
    role = lockdown.login_role(instance or Environment.read().app_login)
    return role_logins(role)[role]


def app_logins() -> dict[str, Login]:
    """Every application instance's login kept in the state directory."""
    return {role: login for role, login in role_logins().items() if role.startswith(lockdown.LOGIN_PREFIX)}


def resolve_target(database: str | None = None, *, start: bool = False) -> Target:
    """The server to use: CTXASM_PG_DSN if set, else the embedded cluster (started if `start`)."""
    env = Environment.read()
    name = database or env.pg_database
    if env.pg_dsn:
        params = {key: str(value) for key, value in conninfo_to_dict(env.pg_dsn).items() if value is not None}
        host = params.pop("host", "127.0.0.1")
        port = int(params.pop("port", 5432))
        admin = Login(params.pop("user", "postgres"), params.pop("password", None))
        admin_db = params.pop("dbname", "postgres")
        return Target(host, port, name, admin, admin_db, embedded=False, extra=tuple(sorted(params.items())))
    cluster = pgcluster.up() if start else pgcluster.status()
    if not cluster.running or cluster.port is None:
        raise DatabaseUnavailable("the embedded PostgreSQL is not running: run `ctxasm db up`")
    admin = Login(pgcluster.SUPERUSER, pgcluster.superuser_password())
    return Target("127.0.0.1", cluster.port, name, admin, "postgres", embedded=True)


def connect(target: Target, login: Login, *, autocommit: bool = False) -> psycopg.Connection:
    try:
        # No server-side prepared statements: after an error inside a pipeline psycopg's cache of them can
        # outlive the statements themselves ("prepared statement _pg3_0 does not exist" on the next call).
        return psycopg.connect(target.conninfo(login), autocommit=autocommit, connect_timeout=10,
                               prepare_threshold=None)
    except psycopg.OperationalError as exc:
        hint = _missing_database_hint(target, exc)
        raise DatabaseUnavailable(f"cannot connect to {target.describe()} as {login.user}: {exc}{hint}") from exc


def database_names(target: Target) -> list[str] | None:
    """The server's databases a client may connect to (not templates, not the admin database), by name; None
    when the admin login cannot list them."""
    try:
        with psycopg.connect(target.conninfo(target.admin, target.admin_database), connect_timeout=10) as admin:
            return [n for (n,) in admin.execute(
                "SELECT datname FROM pg_database WHERE NOT datistemplate AND datallowconn AND datname <> %s "
                "ORDER BY datname", (target.admin_database,))]
    except psycopg.Error:
        return None


def _missing_database_hint(target: Target, exc: Exception) -> str:
    """When the database is not there, the server's other databases: scripts/demo fills ctxasm_demo, not the
    default ctxasm, and a command run without CTXASM_PG_DATABASE should say where the data is."""
    if f'database "{target.database}" does not exist' not in str(exc):
        return ""
    names = database_names(target)
    if names is None:
        return ""
    if not names:
        return "; no database here yet: run `ctxasm db deploy` (or scripts/demo)"
    return (f"; databases on this server: {', '.join(names)} (CTXASM_PG_DATABASE or --database picks one; "
            "scripts/demo fills ctxasm_demo)")


def bootstrap(target: Target, app_instances: tuple[str, ...] = ()) -> list[str]:
    """Roles, database, extension and the Liquibase schema; idempotent, run as admin. `app_instances` adds a
    login role for each named application instance (the default instance's is always made). Returns notes on
    what could not be locked down (a non-superuser admin of a managed server)."""
    notes: list[str] = []
    logins = role_logins(*(lockdown.login_role(name) for name in app_instances))
    owner = logins[OWNER_ROLE]
    try:
        admin = psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to {target.describe()} as admin: {exc}") from exc
    with admin:
        exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (OWNER_ROLE,)).fetchone()
        admin.execute(
            sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD {}").format(
                sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(OWNER_ROLE), sql.Literal(owner.password)))
        notes += lockdown.set_up_app_roles(admin, {role: login.password for role, login in logins.items()
                                                   if role.startswith(lockdown.LOGIN_PREFIX)})
        if target.embedded:
            # The application role connects to the ctxasm database only; elsewhere the signalling functions
            # would still be PUBLIC's (ours is a private cluster: nobody else uses these databases).
            for other in ("postgres", "template1"):
                admin.execute(sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(sql.Identifier(other)))
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target.database,)).fetchone():
            admin.execute(
                sql.SQL("CREATE DATABASE {} OWNER {} ENCODING 'UTF8' TEMPLATE template0").format(
                    sql.Identifier(target.database), sql.Identifier(OWNER_ROLE)
                )
            )
    with psycopg.connect(target.conninfo(target.admin), autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(target.database)))
        db.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(target.database), sql.Identifier(APP_ROLE)
            )
        )
        db.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        try:
            with db.transaction():
                lockdown.lock_down_database(db)
        except psycopg.errors.InsufficientPrivilege as exc:
            notes.append(f"not locked down (needs a superuser admin): signals, other sessions' activity, advisory "
                         f"locks, large objects, pg_notify and per-relation statistics stay open to PUBLIC in "
                         f"{target.database} ({exc.diag.message_primary})")
        note = tenant_storage.install_slot_opclass(db, OWNER_ROLE)
        if note:
            notes.append(note)
        db.execute(
            sql.SQL("CREATE SCHEMA IF NOT EXISTS {} AUTHORIZATION {}").format(
                sql.Identifier(LIQUIBASE_SCHEMA), sql.Identifier(OWNER_ROLE)
            )
        )
    return notes


def drop_database(target: Target) -> None:
    with psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target.database)))
