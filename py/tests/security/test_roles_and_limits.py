"""Findings 1, 2, 6 and 9 of the operator's-view review: with the application role's own credentials a compromised
agent process changed the role's password (every tenant's agents locked out), its session defaults
(default_transaction_read_only, debug_print_plan), lifted its own statement_timeout, and had no connection limit;
with debug_print_plan and client_min_messages = log the routines' plans came back to it and went to a server log
anyone on the machine could read.

Now the privileges sit on a NOLOGIN group role and each application instance logs in with a member of its own,
with a CONNECTION LIMIT and a temp_file_limit it cannot lift; what a login changes on itself reaches that login
only, and a deployment undoes it. Every contract routine refuses a session that lifted statement_timeout or
idle_in_transaction_session_timeout, and pins plan printing off while it runs. The embedded server's log is
readable by the service user only."""

from __future__ import annotations

import collections
import json
import stat
import threading
import time

import psycopg
import pytest

from ctxasm.local import lockdown, pgcluster, pgconn
from ctxasm.settings import state_dir

from .helpers import admin_session, app_session, become, refusal

AT = "2026-09-28T12:00:00"
SELECT_WINDOW = ("SELECT ctx_assembly.select_window('jane', 'research-assistant', 'thread_jane_research', "
                 "'fact_check', %s, 'Is Helios-RAG still the one to beat?')")


@pytest.fixture()
def second_instance(demo_target):
    """A second application instance's login, made the way `ctxasm db deploy --app-login intruder` makes it;
    dropped (and forgotten by the state directory) afterwards."""
    role = lockdown.login_role("intruder")
    pgconn.bootstrap(demo_target, ("intruder",))
    yield role
    with admin_session(demo_target) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")
    path = state_dir() / "roles.json"
    stored = json.loads(path.read_text())
    stored.pop(role, None)
    path.write_text(json.dumps(stored))


def test_the_application_logs_in_as_a_member_of_a_group_that_cannot_log_in(demo_target):
    login = pgconn.app_login().user
    with admin_session(demo_target) as admin:
        group = admin.execute("SELECT rolcanlogin, rolpassword IS NULL FROM pg_authid WHERE rolname = 'ctxasm_app'")
        assert group.fetchone() == (False, True)
        member = admin.execute(
            "SELECT r.rolcanlogin, r.rolconnlimit, m.inherit_option, m.set_option, m.admin_option "
            "FROM pg_roles AS r JOIN pg_auth_members AS m ON m.member = r.oid "
            "WHERE r.rolname = %s AND m.roleid = 'ctxasm_app'::regrole", (login,)).fetchone()
    assert member is not None and member[0] and member[1] > 0, member
    assert member[2:] == (True, False, False), "inherits the group's privileges, may not become it or grant it"
    with app_session(demo_target) as app:
        assert refusal(app, "SET ROLE ctxasm_app")[0] == "42501"


def test_a_login_that_changes_its_password_or_settings_reaches_only_itself(demo_target, second_instance):
    intruder = pgconn.app_login("intruder")
    with pgconn.connect(demo_target, intruder, autocommit=True) as session:
        session.execute(f"ALTER ROLE {second_instance} PASSWORD 'locked-out-everyone-else'")
        session.execute(f"ALTER ROLE {second_instance} SET default_transaction_read_only = on")
    with app_session(demo_target) as app:  # the default instance still logs in and writes
        assert app.execute("SHOW default_transaction_read_only").fetchone()[0] == "off"
        become(app, "acme")
        assert app.execute("SELECT ctx_session.current_tenant()").fetchone()[0] == "acme"
    with pytest.raises(Exception, match="password authentication failed"):
        pgconn.connect(demo_target, intruder).close()
    pgconn.bootstrap(demo_target)  # a deployment resets every instance it knows
    with pgconn.connect(demo_target, intruder) as session:
        assert session.execute("SHOW default_transaction_read_only").fetchone()[0] == "off"


def test_a_login_cannot_lift_its_temp_file_limit(demo_target):
    with app_session(demo_target, autocommit=True) as app:
        assert app.execute("SHOW temp_file_limit").fetchone()[0] == lockdown.TEMP_FILE_LIMIT
        role = pgconn.app_login().user
        for statement in ("SET temp_file_limit = -1", f"ALTER ROLE {role} RESET temp_file_limit",
                          f"ALTER ROLE {role} SET temp_file_limit = -1"):
            try:
                app.execute(statement)
            except psycopg.errors.InsufficientPrivilege:
                continue
            raise AssertionError(f"{statement} was allowed")


@pytest.mark.parametrize("setting", ["statement_timeout", "idle_in_transaction_session_timeout"])
def test_a_session_that_lifts_a_limit_is_refused_by_every_routine(demo_target, setting):
    with app_session(demo_target) as app:
        app.execute(f"SET {setting} = 0")
        answer = refusal(app, "SELECT ctx_session.set_tenant(%s)", (_claim(),))
        assert answer is not None and answer[0] == "CX120" and setting in answer[1], answer
        app.execute(f"SET {setting} = '1h'")  # above the deployment's value
        assert refusal(app, "SELECT ctx_session.set_tenant(%s)", (_claim(),))[0] == "CX120"
        # Lifted after the tenant was set, inside the transaction: the next routine refuses.
        app.execute(f"RESET {setting}")
        become(app, "acme")
        app.execute(f"SET LOCAL {setting} = 0")
        assert refusal(app, SELECT_WINDOW, (AT,))[0] == "CX120"
        # Lowered is fine.
        app.execute(f"SET {setting} = '5s'")
        become(app, "acme")
        assert app.execute(SELECT_WINDOW, (AT,)).fetchone()[0]["tenant_id"] == "acme"


def _claim() -> str:
    from .helpers import claim

    return claim("acme", "jane", "research-assistant")


def test_routines_print_no_plan_of_their_own_statements(demo_target):
    """A session may print its own statements' plans; the statements a routine runs, over the tenants'
    tables and the keys, never reach it (nor the server log)."""
    with admin_session(demo_target) as admin:
        oids = [str(oid) for (oid,) in admin.execute(
            "SELECT c.oid FROM pg_class AS c WHERE c.relnamespace = 'ctxasm'::regnamespace")]
    notices: list[str] = []
    with app_session(demo_target) as app:
        # A plan comes as "plan:" with the tree in the detail.
        app.add_notice_handler(lambda diagnostic: notices.append(
            f"{diagnostic.message_primary or ''} {diagnostic.message_detail or ''}"))
        for setting in ("client_min_messages = log", "debug_print_plan = on", "debug_print_parse = on",
                        "debug_print_rewritten = on"):
            app.execute(f"SET {setting}")
        become(app, "acme")
        app.execute(SELECT_WINDOW, (AT,)).fetchone()
        app.rollback()
    assert notices, "the session's own top-level statements print their plans"
    leaked = [oid for oid in oids if any(f":relid {oid} " in notice for notice in notices)]
    assert leaked == [], f"plans of routine statements over {len(leaked)} ctxasm relations reached the session"


def test_a_login_has_a_connection_limit(demo_target, monkeypatch):
    role = lockdown.login_role("limited")
    monkeypatch.setenv("CTXASM_APP_CONNECTION_LIMIT", "2")
    login = pgconn.Login(role, "limited-instance-password")
    with admin_session(demo_target) as admin:
        lockdown.set_up_app_roles(admin, {role: login.password})
    try:
        with pgconn.connect(demo_target, login), pgconn.connect(demo_target, login):
            with pytest.raises(Exception, match="too many connections for role"):
                pgconn.connect(demo_target, login).close()
    finally:
        with admin_session(demo_target) as admin:
            admin.execute(f"DROP ROLE {role}")


def test_a_deployment_run_again_never_leaves_a_login_without_its_limits(demo_target):
    """A deployment resets each login's settings and sets the limits again; a session the login opens meanwhile
    (another process of the application, still serving) must start with the limits, or every contract routine
    refuses it (session_limits_lifted)."""
    role = lockdown.login_role("redeployed")
    login = pgconn.Login(role, "redeployed-instance-password")
    with admin_session(demo_target) as admin:
        lockdown.set_up_app_roles(admin, {role: login.password})
    done = threading.Event()
    redeployments = []

    def redeploy():
        with admin_session(demo_target) as admin:
            while not done.is_set():
                lockdown.set_up_app_roles(admin, {role: login.password})
                redeployments.append(1)

    worker = threading.Thread(target=redeploy)
    worker.start()
    seen = collections.Counter()
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            with pgconn.connect(demo_target, login) as session:
                seen[session.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0]] += 1
    finally:
        done.set()
        worker.join()
        with admin_session(demo_target) as admin:
            admin.execute(f"DROP ROLE {role}")
    assert len(redeployments) > 10, "the deployment ran again while sessions opened"
    with app_session(demo_target) as app:
        expected = app.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0]
    assert set(seen) == {expected}, f"sessions opened during redeployment saw {dict(seen)}"


def test_the_embedded_server_keeps_its_log_private_and_ends_idle_transactions(demo_target):
    if not demo_target.embedded:  # an external server's logging is its operator's (docs/security.md)
        return
    log = state_dir() / "pg" / "pg.log"
    assert stat.S_IMODE(log.stat().st_mode) & 0o077 == 0, oct(log.stat().st_mode)
    with admin_session(demo_target) as admin:
        assert admin.execute("SHOW log_file_mode").fetchone()[0] == "0600"
        assert admin.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == \
            pgcluster.IDLE_IN_TRANSACTION_TIMEOUT
