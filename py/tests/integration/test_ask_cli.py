"""`ctxasm ask` from the command line: a clarification answered with --clarify-answer, and a provider that cannot
be reached reported in one line with its own exit code."""

from __future__ import annotations

import json

from ctxasm.interfaces import cli

from ..conftest import REPO

CLARIFY = REPO / "db" / "tests" / "transcripts" / "clarify.json"


def run_arguments(run: dict) -> list[str]:
    arguments = ["ask", "--tenant", run["tenant"], "--user", run["user"], "--agent", run["agent"],
                 "--thread", run["thread"], "--intent", run["intent"], "--at", run["at"], "--question", run["question"]]
    for role in run["roles"]:
        arguments += ["--role", role]
    return arguments


def test_a_clarification_is_answered_from_the_command_line(corpus_once, monkeypatch, capsys):
    monkeypatch.setenv("CTXASM_PG_DATABASE", corpus_once.database)
    run = json.loads(CLARIFY.read_text())["run"]
    code = cli.main([*run_arguments(run), "--transcript", str(CLARIFY), "--clarify-answer", run["elicitation_answer"],
                     "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert result["status"] == "answered"
    checks = {c["name"]: c["passed"] for c in result["checks"]}
    assert checks == {"corrected_value_present": True, "citations_present": True, "citations_expected": True,
                      "citations_traceable": True}, result["checks"]
    calls = [c for r in result["rounds"] for c in r["tool_calls"] if c["origin"] == "tool:clarify"]
    assert calls, result["rounds"]
    assert f"answering {run['elicitation_answer']!r}" in captured.err

    # every id the run printed opens with `ctxasm show`
    first = result["rounds"][0]
    shown = {}
    for kind, some_id in (("manifest", result["manifest_id"]), ("request", first["request_record"]),
                          ("response", first["response_record"]), ("tool", calls[0]["ref"][1])):
        assert cli.main(["show", some_id, "--tenant", run["tenant"]]) == 0, capsys.readouterr().err
        shown[kind] = capsys.readouterr().out
    assert result["manifest_id"] in shown["manifest"]
    assert shown["request"].startswith(f"== request of {result['manifest_id']}") and run["question"] in \
        shown["request"]
    assert shown["response"].startswith(f"== model_response {first['response_record']}")
    assert shown["tool"].startswith(f"== tool_result {calls[0]['ref'][1]}")


def test_an_unreachable_provider_is_one_line_and_exit_code_7(demo_target, monkeypatch, capsys):
    monkeypatch.setenv("CTXASM_PG_DATABASE", demo_target.database)
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    run = json.loads(CLARIFY.read_text())["run"]
    code = cli.main([*run_arguments(run), "--base-url", "http://127.0.0.1:9/v1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 7
    assert len(err) == 1 and err[0].startswith("ctxasm: error: provider_error: APIConnectionError from "
                                               "http://127.0.0.1:9/v1"), err


def test_a_transcript_check_that_fails_is_reported_and_exits_1(corpus_once, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CTXASM_PG_DATABASE", corpus_once.database)
    transcript = json.loads(CLARIFY.read_text())
    transcript["checks"]["value"] = "a value the answer does not state"
    changed = tmp_path / "clarify_wrong_value.json"
    changed.write_text(json.dumps(transcript))
    code = cli.main([*run_arguments(transcript["run"]), "--transcript", str(changed), "--clarify-answer",
                     transcript["run"]["elicitation_answer"]])
    captured = capsys.readouterr()
    assert code == 1
    assert "check corrected_value_present: FAILED" in captured.out
    assert "check citations_traceable: passed" in captured.out
    assert "1 of 4 checks of the transcript failed: corrected_value_present" in captured.err
