"""What the admin sets up so that one application instance cannot reconfigure, stall or observe another.

The application's privileges live on a NOLOGIN group role, `ctxasm_app`. Each application instance logs in with
a login role of its own, `ctxasm_app_<name>` (`ctxasm db deploy --app-login NAME`; the default instance is
`ctxasm_app_default`), a member that inherits the group's privileges and may not SET ROLE to it. What a role may
still do to itself then reaches that one instance only: change its own password, or its own session defaults
(ALTER ROLE ... SET). Each login role gets

- a CONNECTION LIMIT (CTXASM_APP_CONNECTION_LIMIT, default 50): one instance cannot take the server's
  connections;
- temp_file_limit (1GB), a superuser setting the role cannot lift, for itself or in a session;
- the user-settable limits as its defaults: statement_timeout (CTXASM_APP_STATEMENT_TIMEOUT) and
  idle_in_transaction_session_timeout (CTXASM_APP_IDLE_TIMEOUT). A session can lift those, so the same values
  are stored on the group role too, which no member can alter, and every contract routine refuses a session
  that lifted them (ctxasm.require_session_limits: `session_limits_lifted`).

In the database, PUBLIC loses the functions that cross tenants under one shared server: signals and other
sessions' activity (pg_terminate_backend, pg_stat_activity, ...), advisory locks (a lock one tenant takes
another waits on), large objects (storage outside every tenant's rows), pg_notify, the per-relation statistics
and size functions (each tenant partition's row counts and activity), pg_lock_status (pg_locks) and the
status of any transaction by its id (pg_xact_status, txid_status). Superusers
and the members of pg_signal_backend / pg_read_all_stats keep theirs; no ctxasm role is one.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from ctxasm.errors import ConfigError
from ctxasm.settings import Environment

GROUP_ROLE = "ctxasm_app"
LOGIN_PREFIX = "ctxasm_app_"
TEMP_FILE_LIMIT = "1GB"

#: Signals and other sessions' activity: under one shared server these let one tenant's session read another's
#: current query, or cancel and terminate it.
_SESSION_FUNCTIONS = ("pg_terminate_backend", "pg_cancel_backend", "pg_stat_get_activity",
                      "pg_stat_get_progress_info", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids")
_SESSION_VIEWS = ("pg_stat_activity", "pg_stat_ssl", "pg_stat_gssapi")
#: Functions shared by every tenant: locks and storage outside the tenant's rows, a channel between sessions,
#: and the lock table (pg_locks: who holds what, every tenant's partitions by oid).
_SHARED_FUNCTIONS = ("pg_notify", "pg_lock_status", "pg_relation_size", "pg_table_size", "pg_indexes_size",
                     "pg_total_relation_size", "pg_stat_have_stats",
                     # any transaction's outcome by its id: whether another tenant's session committed or not
                     "pg_xact_status", "txid_status")
_SHARED_PREFIXES = (r"pg\_advisory\_%", r"pg\_try\_advisory\_%", r"lo\_%", "loread", "lowrite",
                    r"pg\_stat\_get\_%", r"pg\_stat\_clear\_snapshot", r"pg\_stat\_force\_next\_flush")


def login_role(instance: str) -> str:
    """The login role of an application instance: ctxasm_app_<instance>, the name 1..40 of a-z, 0-9 and _."""
    if not re.fullmatch(r"[a-z0-9_]{1,40}", instance):
        raise ConfigError(f"config_error: application instance {instance[:40]!r} must be 1..40 of a-z, 0-9 and _")
    return f"{LOGIN_PREFIX}{instance}"


def revoked_functions(connection: psycopg.Connection) -> list[str]:
    """Signatures of every function PUBLIC must not execute in the connected database."""
    return [row[0] for row in connection.execute(
        "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p "
        "WHERE p.pronamespace = 'pg_catalog'::regnamespace "
        "  AND (p.proname = ANY (%s) OR p.proname LIKE ANY (%s)) ORDER BY 1",
        (list(_SESSION_FUNCTIONS + _SHARED_FUNCTIONS), list(_SHARED_PREFIXES))).fetchall()]


def lock_down_database(connection: psycopg.Connection) -> None:
    """In the connected database, as admin: PUBLIC may no longer call a function that crosses tenants (above),
    nor read other sessions' activity views."""
    for signature in revoked_functions(connection):
        connection.execute(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC")
    for view in _SESSION_VIEWS + ("pg_locks",):
        connection.execute(sql.SQL("REVOKE SELECT ON pg_catalog.{} FROM PUBLIC").format(sql.Identifier(view)))


def set_up_app_roles(admin: psycopg.Connection, logins: dict[str, str | None]) -> list[str]:
    """The group role and one login role per instance ({login role: password}), as admin; idempotent: a
    deployment resets every login role's password and settings (undoing what an instance changed on itself).
    Returns notes on what a non-superuser admin could not set."""
    env = Environment.read()
    notes: list[str] = []
    exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (GROUP_ROLE,)).fetchone()
    # NOLOGIN and no password: nobody logs in as the group, whose privileges every instance shares.
    admin.execute(sql.SQL("{} ROLE {} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD NULL").format(
        sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(GROUP_ROLE)))
    limits = {"statement_timeout": env.app_statement_timeout,
              "idle_in_transaction_session_timeout": env.app_idle_timeout}
    for name, value in limits.items():
        admin.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
            sql.Identifier(GROUP_ROLE), sql.Identifier(name), sql.Literal(value)))
    for role, password in logins.items():
        exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        admin.execute(sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS INHERIT "
                              "CONNECTION LIMIT {} PASSWORD {}").format(
            sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(role), sql.Literal(env.app_connection_limit),
            sql.Literal(password)))
        admin.execute(sql.SQL("GRANT {} TO {} WITH INHERIT TRUE, SET FALSE").format(
            sql.Identifier(GROUP_ROLE), sql.Identifier(role)))
        # What an instance set on itself with ALTER ROLE ... SET goes; the deployment's limits are its defaults.
        # Reset and set in one transaction: a session of the role opened in between (another process of the
        # application, while a deployment runs again) would start without the limits and be refused.
        with admin.transaction():
            admin.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(sql.Identifier(role)))
            for name, value in limits.items():
                admin.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                    sql.Identifier(role), sql.Identifier(name), sql.Literal(value)))
            try:
                with admin.transaction():
                    admin.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(
                        sql.Identifier(role), sql.Literal(TEMP_FILE_LIMIT)))
            except psycopg.errors.InsufficientPrivilege:
                notes.append(f"{role}: temp_file_limit not set (needs a superuser admin): its sorts may spill "
                             "without a limit")
    return notes
