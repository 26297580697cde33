"""Every command's --help shows an example and the exit codes."""

from __future__ import annotations

import argparse

import pytest

from ctxasm.interfaces import cli


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _commands(sub, prefix + (name,))


COMMANDS = [path for path, _ in _commands(cli.build_parser())]


def test_the_command_list_is_complete():
    assert {("db",), ("db", "up"), ("db", "deploy"), ("load",), ("assemble",), ("inventory",), ("inspect",)} <= \
        set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_has_an_example_and_the_exit_codes(path, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([*path, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    example = next((line for line in out.splitlines() if line.startswith("Example: ")), None)
    assert example is not None, out
    assert example.startswith(f"Example: ctxasm {' '.join(path)}")
    assert "Exit codes: 0 ok" in out and "3 database unavailable" in out


def test_top_level_help_documents_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for code in ("0 ok", "1 ctxasm error", "2 configuration or usage", "3 database unavailable",
                 "4 invalid scenario file", "5 replay mismatch", "6 replay unavailable"):
        assert code in out
    assert "ctxasm inspect MANIFEST_ID --tenant acme" in out


def test_usage_errors_exit_2(capsys, monkeypatch):
    monkeypatch.delenv("CTXASM_CLAIM", raising=False)
    monkeypatch.setenv("CTXASM_CLAIM_KEY", "k" * 40)
    assert cli.main(["inspect", "manifest_x"]) == 2  # --tenant (or a claim naming it) is required
    assert "--tenant" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        cli.main(["claim"])  # claim --tenant is required
    assert done.value.code == 2


@pytest.mark.parametrize(("flag", "value", "problem"), [
    ("--min-turns", "0", "must be at least 1"), ("--min-quiet-turns", "0", "must be at least 1"),
    ("--max-threads", "x", "is not a whole number"), ("--summary-tokens", "5", "must be at least 16")])
def test_summarize_threads_names_a_bad_threshold_flag(capsys, flag, value, problem):
    with pytest.raises(SystemExit) as done:
        cli.main(["summarize-threads", "--tenant", "acme", flag, value])
    assert done.value.code == 2
    assert f"argument {flag}: " in (err := capsys.readouterr().err) and problem in err
