"""The PostgreSQL twin raises contract errors by name (ctxasm.error_code) with the catalogue's SQLSTATEs, and
Python maps each back to the catalogue's class."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ctxasm import errors
from ctxasm_dev.contract import catalogue

ENGINE_ERRORS = [e for e in catalogue.load(Path(__file__).resolve().parents[3]).errors if e.engines]


@pytest.mark.parametrize("entry", ENGINE_ERRORS, ids=[e.name for e in ENGINE_ERRORS])
def test_a_raise_by_name_carries_the_catalogue_sqlstate(owner_conn, entry) -> None:
    with pytest.raises(psycopg.Error) as raised:
        owner_conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = ctxasm.error_code(%s), MESSAGE = %s; END $$"
            % (psycopg.sql.quote(entry.name), psycopg.sql.quote(f"{entry.name}: a test")))
    owner_conn.rollback()
    assert raised.value.sqlstate == entry.sqlstate
    mapped = errors.from_sqlstate(raised.value.sqlstate, str(raised.value))
    assert type(mapped).__name__ == entry.python_class
    assert (mapped.code, mapped.number) == (entry.name, entry.number)


@pytest.mark.parametrize("entry", ENGINE_ERRORS, ids=[e.name for e in ENGINE_ERRORS])
def test_error_message_is_the_catalogue_message(owner_conn, entry) -> None:
    rows = owner_conn.execute("SELECT ctxasm.error_message(%s)", (entry.name,)).fetchone()
    assert rows[0] == entry.message == getattr(errors, entry.python_class).summary


def test_an_unknown_error_name_is_refused_naming_it(owner_conn) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="'no_such_error' is not a contract error name"):
        owner_conn.execute("SELECT ctxasm.error_code('no_such_error')")
    owner_conn.rollback()


def test_the_application_cannot_call_the_internal_error_functions(app_conn) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_conn.execute("SELECT ctxasm.error_code('invalid_claim')")
