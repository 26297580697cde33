"""Finding 10 of the operator's-view review: a claim with `"user": ""` acted tenant-wide (the empty user named no
one, so the session was confined to no one), and `ctxasm claim --user ""` minted one.

Now an empty user or agent is refused where a claim is minted, where the database verifies it (one answer,
invalid_claim), and in every row the database stores (invalid_field; a check constraint on every table)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time

import pytest

from ctxasm import claims, errors
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn

from ..conftest import TEST_DATABASE
from .helpers import admin_session, app_session, refusal


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def raw_claim(payload: dict) -> str:
    """A claim signed with the deployment's key with no check on its contents (what a trusted side with a bug,
    or an older one, could send)."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps(payload).encode())
    mac = hmac.new(claims.read_key().encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(mac)}"


@pytest.mark.parametrize("scope", [{"user": ""}, {"agent": ""}, {"user": "", "agent": "research-assistant"}])
def test_a_claim_naming_an_empty_user_or_agent_is_refused(demo_target, scope):
    now = int(time.time())
    with app_session(demo_target) as app:
        good = refusal(app, "SELECT ctx_session.set_tenant(%s)", (raw_claim({"tenant": "acme", "user": "jane",
                                                                             "iat": now, "exp": now + 600}),))
        assert good is None, "the same claim with a user is accepted"
        answer = refusal(app, "SELECT ctx_session.set_tenant(%s)",
                         (raw_claim({"tenant": "acme", **scope, "iat": now, "exp": now + 600}),))
    assert answer is not None and answer[0] == "CX118", answer


@pytest.mark.parametrize("option", ["--user", "--agent"])
def test_ctxasm_claim_refuses_an_empty_user_or_agent(demo_target, option):
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    minted = subprocess.run([sys.executable, "-m", "ctxasm.cli", "claim", "--tenant", "acme", option, ""], env=env,
                            capture_output=True, text=True)
    assert minted.returncode == 2 and f"{option} must not be empty" in minted.stderr, minted
    with pytest.raises(errors.ConfigError):
        claims.mint(claims.read_key(), "acme", "" if option == "--user" else None, "" if option == "--agent" else None)


@pytest.mark.parametrize("field", ["user_id", "agent_id"])
def test_a_row_with_an_empty_user_or_agent_is_refused(demo_target, field):
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        with pytest.raises(errors.InvalidField, match=rf"entity\.{field}: must not be empty"):
            store.put_memory("entity", {"id": "fact_empty", "subject": "s", "predicate": "p", "content": "c",
                                        field: ""})
        connection.rollback()
    with admin_session(demo_target) as admin:  # below the routines too: every table's check constraint
        for table in [row[0] for row in admin.execute("SELECT table_name FROM ctxasm.memory_type")]:
            constraint = admin.execute(
                "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint AS c "
                "WHERE c.conrelid = %s::regclass AND c.conname = %s",
                (f"ctxasm.{table}", f"memory_common_{field}_check")).fetchone()
            assert constraint is not None and "<> ''" in constraint[0], (table, constraint)
