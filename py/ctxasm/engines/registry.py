"""The engines, chosen in one place: `--engine postgresql|oracle`, else CTXASM_ENGINE, else PostgreSQL.

An engine knows how to open a connection as the application role (every tenant-scoped call) or as the schema
owner (loading, purging, deployment chores) and which store adapter speaks its contract routines. The CLI, the
Python API (ctxasm.api) and the conformance tests all get their engine from `open_engine`.

PostgreSQL: the server in CTXASM_PG_DSN, else the embedded cluster; the database CTXASM_PG_DATABASE (default
ctxasm). Oracle: CTXASM_ORACLE_DSN (the application user) and, for owner work, CTXASM_ORACLE_OWNER_DSN, each
`user/password@host:port/service`; the packages live in the owner's schema (CTXASM_ORACLE_SCHEMA, default the
owner DSN's user).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Protocol

from ctxasm.claims import ClaimSource
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import ConfigError
from ctxasm.settings import Environment

POSTGRESQL, ORACLE = "postgresql", "oracle"
ENGINES = (POSTGRESQL, ORACLE)
APP, OWNER = "app", "owner"


class Engine(Protocol):
    name: str

    def describe(self) -> str: ...
    def connect(self, role: str = APP) -> Any: ...
    def store(self, connection: Any, claims: ClaimSource | None = None) -> MemoryStore: ...


def engine_name(given: str | None = None, env: Environment | None = None) -> str:
    """The engine named by `given`, else CTXASM_ENGINE, else postgresql; anything else is a config error."""
    name = (given or (env or Environment.read()).engine or POSTGRESQL).strip().lower()
    if name in ("postgres", "pg"):
        name = POSTGRESQL
    if name not in ENGINES:
        raise ConfigError(f"config_error: engine {name[:40]!r} is not one of {', '.join(ENGINES)} "
                          "(--engine or CTXASM_ENGINE)")
    return name


class PostgresEngine:
    """The PostgreSQL twin: CTXASM_PG_DSN or the embedded cluster, one database on it."""

    name = POSTGRESQL

    def __init__(self, database: str | None = None, target: Any = None):
        self._database = database
        self._target = target

    @property
    def target(self) -> Any:
        if self._target is None:
            from ctxasm.local import pgconn

            self._target = pgconn.resolve_target(self._database)
        return self._target

    def describe(self) -> str:
        return self.target.describe()

    def connect(self, role: str = APP) -> Any:
        from ctxasm.local import pgconn

        login = pgconn.owner_login() if role == OWNER else pgconn.app_login()
        return pgconn.connect(self.target, login)

    def store(self, connection: Any, claims: ClaimSource | None = None) -> MemoryStore:
        from ctxasm.engines.postgres import PostgresStore

        return PostgresStore(connection, claims)


def _oracle_login(dsn: str, variable: str) -> tuple[str, str, str]:
    user, slash, rest = dsn.partition("/")
    password, at, address = rest.partition("@")
    if not (user and slash and password and at and address):
        raise ConfigError(f"config_error: {variable} must read user/password@host:port/service")
    return user, password, address


class OracleEngine:
    """Oracle AI Database: the CTX_* packages in the owner's schema, called as the application user."""

    name = ORACLE

    def __init__(self, app_dsn: str | None, owner_dsn: str | None = None, schema: str | None = None):
        if not app_dsn:
            raise ConfigError("config_error: the oracle engine needs CTXASM_ORACLE_DSN "
                              "(user/password@host:port/service of the application user)")
        self.app_dsn, self.owner_dsn = app_dsn, owner_dsn
        self._schema = schema

    @property
    def owner_schema(self) -> str:
        """The schema that owns the packages: CTXASM_ORACLE_SCHEMA, else the user of CTXASM_ORACLE_OWNER_DSN."""
        if self._schema:
            return self._schema
        if self.owner_dsn:
            return self.owner_dsn.partition("/")[0]
        raise ConfigError("config_error: the oracle engine needs CTXASM_ORACLE_SCHEMA or CTXASM_ORACLE_OWNER_DSN "
                          "to find the schema that owns the CTX_* packages")

    def describe(self) -> str:
        return f"Oracle at {self.app_dsn.partition('@')[2]}, schema {self.owner_schema}"

    def connect(self, role: str = APP) -> Any:
        import oracledb

        from ctxasm.errors import DatabaseUnavailable

        if role == OWNER and not self.owner_dsn:
            raise ConfigError("config_error: this needs the schema owner: set CTXASM_ORACLE_OWNER_DSN")
        variable = "CTXASM_ORACLE_OWNER_DSN" if role == OWNER else "CTXASM_ORACLE_DSN"
        user, password, address = _oracle_login((self.owner_dsn if role == OWNER else self.app_dsn) or "", variable)
        try:
            connection = oracledb.connect(user=user, password=password, dsn=address, tcp_connect_timeout=10)
        except oracledb.Error as exc:
            raise DatabaseUnavailable(f"cannot connect to Oracle at {address} as {user}: "
                                      f"{str(exc).splitlines()[0]}") from None
        if role != OWNER:
            # The application user owns nothing: the packages, called unqualified, resolve in the owner's schema
            # with or without synonyms in the application schema.
            connection.current_schema = self.owner_schema
        return connection

    def store(self, connection: Any, claims: ClaimSource | None = None) -> MemoryStore:
        from ctxasm.engines.oracle import OracleStore

        return OracleStore(connection, claims)


def open_engine(name: str | None = None, *, database: str | None = None) -> Engine:
    """The engine the settings name (see engine_name); `database` picks the PostgreSQL database."""
    env = Environment.read()
    chosen = engine_name(name, env)
    if chosen == ORACLE:
        return OracleEngine(env.oracle_dsn, env.oracle_owner_dsn, env.oracle_schema)
    return PostgresEngine(database)


def as_engine(where: Any) -> Engine:
    """An engine as is; a PostgreSQL target (ctxasm.local.pgconn.Target) as the engine over it."""
    if hasattr(where, "store") and hasattr(where, "connect"):
        return where
    return PostgresEngine(target=where)


def oracle_configured() -> bool:
    """Whether an Oracle database is reachable by configuration (the application and the owner DSN)."""
    env = Environment.read()
    return bool(env.oracle_dsn and env.oracle_owner_dsn)


@contextmanager
def connected_store(engine: Engine, claims: ClaimSource | None = None, role: str = APP) -> Iterator[MemoryStore]:
    """A store on a connection of its own, closed at the end."""
    connection = engine.connect(role)
    try:
        yield engine.store(connection, claims)
    finally:
        connection.close()
