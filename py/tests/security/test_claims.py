"""Finding 1: any holder of the application role could become any tenant (`set_tenant('stripe')`), and the
refusal of an unknown tenant named it, so a caller could list which tenants exist. Finding 7 (in part): the
session setting was signed with sha256(key || ...) instead of an HMAC.

Now set_tenant takes a claim signed with a key only the owner can read, and refuses everything else with one
error that does not depend on what was wrong."""

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

from ctxasm.local import pgconn

from ..conftest import TEST_DATABASE
from .helpers import QUESTION, admin_session, app_session, become, claim, refusal


def _b64(data: dict | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def forged_claims() -> dict[str, str | None]:
    """Every way the review and its follow-ups tried to get a tenant without the key."""
    now = int(time.time())
    good = claim("acme")
    header, payload, signature = good.split(".")
    stripe_payload = _b64({"tenant": "stripe", "iat": now, "exp": now + 600})
    other_key = hmac.new(b"x" * 48, f"{header}.{stripe_payload}".encode(), hashlib.sha256).digest()
    return {
        "a bare tenant id": "stripe",
        "an unregistered bare tenant id": "nobody",
        "NULL": None,
        "empty": "",
        "two parts": f"{header}.{payload}",
        "four parts": f"{good}.x",
        "not base64": "!!.??.##",
        "a megabyte": "a" * 1_000_000,
        "another tenant's payload under acme's signature": f"{header}.{stripe_payload}.{signature}",
        "a flipped signature": f"{header}.{payload}.{signature[:-2]}{'AB'[signature[-2] == 'A']}{signature[-1]}",
        "signed with another key": f"{header}.{stripe_payload}.{_b64(other_key)}",
        "alg none": f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{stripe_payload}.",
        "expired": claim("acme", ttl=60, now=now - 3600),
        "issued in the future": claim("acme", now=now + 3600),
        "valid for a week": claim("acme", ttl=7 * 86400),
        "a correctly signed unregistered tenant": claim("nobody"),
        "another correctly signed unregistered tenant": claim("zz-never-registered"),
    }


def test_a_bare_tenant_id_no_longer_scopes_a_session(demo_target):
    with app_session(demo_target) as app:
        refused = refusal(app, "SELECT ctx_session.set_tenant('stripe')")
        assert refused is not None, "set_tenant('stripe') worked without any proof of being stripe"
        assert refused[0] == "CX118"


def test_every_bad_claim_gets_the_same_error_naming_no_tenant(demo_target):
    with app_session(demo_target) as app:
        answers = {name: refusal(app, "SELECT ctx_session.set_tenant(%s)", (text,))
                   for name, text in forged_claims().items()}
    assert all(answer is not None for answer in answers.values()), \
        [name for name, answer in answers.items() if answer is None]
    assert set(answers.values()) == {("CX118", "invalid_claim: the tenant claim was refused")}, answers


def test_a_valid_claim_scopes_the_transaction_to_its_tenant_only(demo_target):
    with app_session(demo_target) as app:
        become(app, "acme")
        assert app.execute("SELECT ctx_session.current_tenant()").fetchone()[0] == "acme"
        counted = app.execute("SELECT ctx_memory.inventory()").fetchone()[0]
        app.commit()
        assert app.execute("SELECT ctx_session.current_tenant()").fetchone()[0] is None
    with admin_session(demo_target) as admin:
        held = admin.execute("SELECT count(*) FROM ctxasm.entity_memory WHERE tenant_id = 'acme'").fetchone()[0]
    assert sum(r["rows"] for r in counted if r["memory_type"] == "entity") == held > 0


def test_a_claim_naming_a_user_and_agent_refuses_any_other_scope(demo_target):
    from ctxasm.services.assemble import parse_time

    jane = claim("acme", "jane", "research-assistant")
    at = parse_time("2026-09-28T12:00:00")
    calls = {
        "select_window as bob": ("SELECT ctx_assembly.select_window(in_user_id => 'bob', "
                                 "in_agent_id => 'research-assistant', in_thread_id => NULL, "
                                 "in_intent => 'fact_check', in_evaluation_time => %s, in_question => %s)",
                                 (at, QUESTION)),
        "select_window with no user": ("SELECT ctx_assembly.select_window(in_user_id => NULL, "
                                       "in_agent_id => 'research-assistant', in_thread_id => NULL, "
                                       "in_intent => 'fact_check', in_evaluation_time => %s, in_question => %s)",
                                       (at, QUESTION)),
        "search_memory as another agent": ("SELECT ctx_tools.search_memory('jane', 'billing-bot', NULL, %s, "
                                           "'refund', NULL, 5)", (at,)),
        "active_tools as bob": ("SELECT ctx_tools.active_tools('bob', 'research-assistant', %s)", (at,)),
        "lookup_entity as bob": ("SELECT ctx_tools.lookup_entity('bob', 'research-assistant', %s, 's', 'p')", (at,)),
        "latest_manifest_id as bob": ("SELECT ctx_assembly.latest_manifest_id('bob', 'research-assistant', NULL)",
                                      ()),
        "a row for bob": ("SELECT ctx_memory.put_memory('conversation', %s::jsonb)",
                          (json.dumps({"id": "t1", "user_id": "bob", "agent_id": "research-assistant",
                                       "role": "user", "content": "hi"}),)),
        "a row for the whole tenant": ("SELECT ctx_memory.put_memory('entity', %s::jsonb)",
                                       (json.dumps({"id": "e1", "subject": "s", "predicate": "p",
                                                    "content": "tenant-wide"}),)),
    }
    with app_session(demo_target) as app:
        for name, (query, params) in calls.items():
            app.execute("SELECT ctx_session.set_tenant(%s)", (jane,))
            answer = refusal(app, query, params)
            assert answer is not None and answer[0] == "CX119", (name, answer)
        app.execute("SELECT ctx_session.set_tenant(%s)", (jane,))
        assert app.execute("SELECT ctx_tools.active_tools('jane', 'research-assistant', %s)", (at,)).fetchone()[0]


def test_a_claim_for_one_user_does_not_see_another_users_rows(demo_target):
    target = demo_target
    from ctxasm.engines.postgres import PostgresStore

    with pgconn.connect(target, pgconn.owner_login()) as owner:
        store = PostgresStore(owner)
        store.set_tenant("acme")
        store.put_memory("conversation", {"id": "turn_bob_private", "user_id": "bob", "agent_id": "research-assistant",
                                          "role": "user", "turn_index": 1, "content": "bob's private turn"})
        store.commit()
    with app_session(target) as app:
        for who, expected in ((claim("acme", "jane", "research-assistant"), False), (claim("acme"), True)):
            app.execute("SELECT ctx_session.set_tenant(%s)", (who,))
            snapshot = app.execute("SELECT ctx_memory.capture_snapshot()").fetchone()[0]
            ids = {row[0]["id"] for row in app.execute(
                "SELECT row_json FROM ctx_memory.rows_as_of('conversation', %s)", (snapshot,)).fetchall()}
            app.rollback()
            assert ("turn_bob_private" in ids) is expected


def test_a_claim_altered_after_set_tenant_shows_no_row(demo_target):
    """The row level security policies read the claim's user and agent as set and verify the signature once,
    through the tenant test beside them. Read straight from the table (the owner is subject to the policies too,
    FORCE ROW LEVEL SECURITY), a claim widened or switched by hand after set_tenant must show no row at all; the
    API refuses it before any read."""
    target = demo_target
    from ctxasm.engines.postgres import PostgresStore

    with pgconn.connect(target, pgconn.owner_login()) as owner:
        store = PostgresStore(owner)
        store.set_tenant("acme")
        store.put_memory("conversation", {"id": "turn_bob_hidden", "user_id": "bob", "agent_id": "research-assistant",
                                          "role": "user", "turn_index": 1, "content": "bob's hidden turn"})
        store.commit()

        def visible(who: str, setting: str | None = None, value: str = "") -> tuple[int, int]:
            owner.execute("SELECT ctx_session.set_tenant(%s)", (who,))
            if setting:
                owner.execute("SELECT set_config(%s, %s, true)", (setting, value))
            counts = owner.execute(
                "SELECT count(*) FILTER (WHERE id = 'turn_bob_hidden'), count(*) FROM ctxasm.conversation_memory"
            ).fetchone()
            owner.rollback()
            return counts

        jane = claim("acme", "jane", "research-assistant")
        assert visible(claim("acme"))[0] == 1, "a tenant-wide claim sees bob's turn"
        honest_bob, honest_all = visible(jane)
        assert honest_bob == 0 and honest_all > 0, "jane's claim sees the tenant's rows but not bob's"
        for setting, value in (("ctxasm.claim_user", ""), ("ctxasm.claim_user", "bob"), ("ctxasm.claim_agent", "")):
            assert visible(jane, setting, value) == (0, 0), f"{setting} = {value!r} after set_tenant"
    with app_session(target) as app:
        app.execute("SELECT ctx_session.set_tenant(%s)", (jane,))
        snapshot = app.execute("SELECT ctx_memory.capture_snapshot()").fetchone()[0]
        app.execute("SELECT set_config('ctxasm.claim_user', 'bob', true)")
        with pytest.raises(Exception, match="tenant_not_set"):
            app.execute("SELECT count(*) FROM ctx_memory.rows_as_of('conversation', %s)", (snapshot,))
        app.rollback()


def test_the_session_signature_is_an_hmac_under_the_session_key(demo_target):
    target = demo_target
    with admin_session(target) as admin:
        inner, outer = admin.execute(
            "SELECT inner_pad, outer_pad FROM ctxasm.ctx_hmac_key WHERE purpose = 'session'").fetchone()
        # The pads are RFC 2104's: one key k with inner = k xor 0x36.., outer = k xor 0x5c..
        assert bytes(a ^ 0x36 for a in inner) == bytes(b ^ 0x5c for b in outer)
    with app_session(target) as app:
        app.execute("SELECT ctx_session.set_tenant(%s)", (claim("acme", "jane"),))
        signed, message = app.execute(
            "SELECT current_setting('ctxasm.tenant_sig'), jsonb_build_array('acme', 'jane', NULL::text, "
            "pg_backend_pid(), extract(EPOCH FROM now())::text)::text").fetchone()
    expected = hashlib.sha256(bytes(outer) + hashlib.sha256(bytes(inner) + message.encode()).digest()).hexdigest()
    assert signed == expected


def test_the_claim_mac_is_hmac_sha256_of_the_installed_key(demo_target):
    from ctxasm import claims

    target = demo_target
    key = claims.read_key()
    with admin_session(target) as admin:
        mac = admin.execute("SELECT ctxasm.keyed_mac('claim', convert_to('header.payload', 'UTF8'))").fetchone()[0]
    assert bytes(mac) == hmac.new(key.encode(), b"header.payload", hashlib.sha256).digest()


def test_the_application_role_cannot_read_or_replace_the_keys(demo_target):
    with app_session(demo_target) as app:
        for statement in ("SELECT * FROM ctxasm.ctx_hmac_key", "SELECT ctx_admin.set_claim_key(repeat('k', 40))",
                          "SELECT ctxasm.enter_tenant('stripe', NULL, NULL)",
                          "SELECT ctxasm.keyed_mac('claim', '\\x00'::bytea)"):
            answer = refusal(app, statement)
            assert answer is not None and answer[0] == "42501", (statement, answer)


def test_a_process_given_one_claim_acts_for_that_tenant_only(demo_target):
    from ctxasm import claims, errors

    given = claims.FixedClaim(claim("acme"))
    assert given.claim_for("acme") == given.token
    with pytest.raises(errors.InvalidClaim, match="the tenant claim was refused"):
        given.claim_for("stripe")
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE, CTXASM_CLAIM=given.token)
    cli = [sys.executable, "-m", "ctxasm.cli", "inventory"]
    own = subprocess.run(cli, env=env, capture_output=True, text=True)
    assert own.returncode == 0 and "tenant acme" in own.stdout, own.stderr
    other = subprocess.run([*cli, "--tenant", "stripe"], env=env, capture_output=True, text=True)
    assert other.returncode == 1 and "invalid_claim" in other.stderr and other.stdout == ""


def test_ctxasm_claim_mints_what_the_database_accepts(demo_target):
    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE)
    minted = subprocess.run([sys.executable, "-m", "ctxasm.cli", "claim", "--tenant", "stripe", "--ttl", "5m"],
                            env=env, capture_output=True, text=True)
    assert minted.returncode == 0, minted.stderr
    with app_session(demo_target) as app:
        app.execute("SELECT ctx_session.set_tenant(%s)", (minted.stdout.strip(),))
        assert app.execute("SELECT ctx_session.current_tenant()").fetchone()[0] == "stripe"
    too_long = subprocess.run([sys.executable, "-m", "ctxasm.cli", "claim", "--tenant", "stripe", "--ttl", "2d"],
                              env=env, capture_output=True, text=True)
    assert too_long.returncode == 2 and "--ttl" in too_long.stderr
