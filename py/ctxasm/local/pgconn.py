"""PostgreSQL targets, roles and connections.

Three roles, each with one job:
- admin: the cluster superuser (embedded) or the role in CTXASM_PG_DSN; creates roles, databases, extensions;
- ctxasm_owner: owns the schema and the packages, deploys through Liquibase; subject to FORCE RLS like anyone;
- ctxasm_app: what applications connect as; owns nothing, cannot bypass RLS, writes only through ctx_memory.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ctxasm.errors import DatabaseUnavailable
from ctxasm.local import pgcluster
from ctxasm.settings import Environment, state_dir

OWNER_ROLE = "ctxasm_owner"
APP_ROLE = "ctxasm_app"
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


def role_logins() -> dict[str, Login]:
    """Passwords for the owner and app roles: made once, kept in the private state directory."""
    path = state_dir() / "roles.json"
    if path.exists():
        stored = json.loads(path.read_text())
    else:
        stored = {role: secrets.token_urlsafe(24) for role in (OWNER_ROLE, APP_ROLE)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stored))
        path.chmod(0o600)
    return {role: Login(role, password) for role, password in stored.items()}


def owner_login() -> Login:
    return role_logins()[OWNER_ROLE]


def app_login() -> Login:
    return role_logins()[APP_ROLE]


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


#: What any login role may call to see or signal other sessions: under the one shared application role these
#: would let one tenant's session read another's current query or cancel and terminate it.
_SESSION_FUNCTIONS = ("pg_terminate_backend", "pg_cancel_backend", "pg_stat_get_activity",
                      "pg_stat_get_progress_info", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids")
_SESSION_VIEWS = ("pg_stat_activity", "pg_stat_ssl", "pg_stat_gssapi")


def lock_down_sessions(connection: psycopg.Connection) -> None:
    """In the connected database, as admin: PUBLIC may no longer signal backends or read other sessions'
    activity (pg_stat_activity, pg_stat_get_backend_*). Superusers and members of pg_signal_backend /
    pg_read_all_stats keep those powers; the owner and application roles are neither."""
    functions = connection.execute(
        "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p "
        "WHERE p.pronamespace = 'pg_catalog'::regnamespace "
        r"AND (p.proname = ANY(%s) OR p.proname LIKE 'pg\_stat\_get\_backend\_%%')",
        (list(_SESSION_FUNCTIONS),)).fetchall()
    for (signature,) in functions:
        connection.execute(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC")
    for view in _SESSION_VIEWS:
        connection.execute(sql.SQL("REVOKE SELECT ON pg_catalog.{} FROM PUBLIC").format(sql.Identifier(view)))


def bootstrap(target: Target) -> list[str]:
    """Roles, database, extension and the Liquibase schema; idempotent, run as admin. Returns notes on what
    could not be locked down (a non-superuser admin of a managed server)."""
    notes: list[str] = []
    logins = role_logins()
    try:
        admin = psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to {target.describe()} as admin: {exc}") from exc
    with admin:
        for role, login in logins.items():
            exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            verb = "ALTER" if exists else "CREATE"
            admin.execute(
                sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD {}").format(
                    sql.SQL(verb), sql.Identifier(role), sql.Literal(login.password)
                )
            )
        # The application role's statements end after this long (CTXASM_APP_STATEMENT_TIMEOUT, default 30s).
        admin.execute(sql.SQL("ALTER ROLE {} SET statement_timeout = {}").format(
            sql.Identifier(APP_ROLE), sql.Literal(Environment.read().app_statement_timeout)))
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
                lock_down_sessions(db)
        except psycopg.errors.InsufficientPrivilege as exc:
            notes.append(f"not locked down (needs a superuser admin): other sessions' activity and signals stay "
                         f"open to PUBLIC in {target.database} ({exc.diag.message_primary})")
        db.execute(
            sql.SQL("CREATE SCHEMA IF NOT EXISTS {} AUTHORIZATION {}").format(
                sql.Identifier(LIQUIBASE_SCHEMA), sql.Identifier(OWNER_ROLE)
            )
        )
    return notes


def drop_database(target: Target) -> None:
    with psycopg.connect(target.conninfo(target.admin, target.admin_database), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target.database)))
