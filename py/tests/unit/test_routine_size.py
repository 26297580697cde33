"""The routine-size gate passes on the checkout and fails on a copy with a routine grown past the limit."""

from __future__ import annotations

import shutil
from pathlib import Path

from ctxasm_dev.gates import routine_size

REPO = Path(__file__).resolve().parents[3]


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "db", tmp_path / "db")
    return tmp_path


def test_checkout_passes() -> None:
    problems, _ = routine_size.check(REPO)
    assert problems == []


def test_routine_over_the_limit_fails(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    body = repo / "db/oracle/api/ctx_assembly.body.sql"
    text = body.read_text(encoding="utf-8")
    head = "   function selection_version return varchar2 deterministic is\n   begin\n"
    assert head in text
    body.write_text(text.replace(head, head + "      null;\n" * 400, 1), encoding="utf-8")
    problems, _ = routine_size.check(repo)
    assert any("ctx_assembly.selection_version" in p and "over 300 lines" in p for p in problems), problems


def test_postgres_routine_is_measured_to_the_end_of_its_body(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    path = repo / "db/postgresql/internal/zz_probe.sql"
    path.write_text("--liquibase formatted sql\n--changeset ctxasm:probe dbms:postgresql\n"
                    "CREATE OR REPLACE FUNCTION ctxasm.probe() RETURNS int\nLANGUAGE sql AS $$\n"
                    + "select 1\n" * 5 + "$$;\n", encoding="utf-8")
    probe = next(r for r in routine_size.routines(repo)["postgresql"] if r.name == "ctxasm.probe")
    assert probe.lines == 8
    problems, _ = routine_size.check(repo, limit=7, exceptions={})
    assert any("ctxasm.probe" in p for p in problems)


def test_exception_no_longer_needed_fails() -> None:
    problems, _ = routine_size.check(REPO, exceptions={("oracle", "ctx_assembly.selection_version"): "test"})
    assert any("no longer needed" in p for p in problems), problems
