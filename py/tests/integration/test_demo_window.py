"""The demo shows the behaviour we recommend: its window leaves out no candidate that the window's unused tokens
would have seated. The demo's budget (db/tests/scenarios/acme_demo.json, loaded as scripts/demo loads it) reclaims
what a slice leaves unused, as a new tenant's default budget does; with reclaim off the demo window showed 2,015
of 3,600 tokens unused while 33 evidence chunks were "left out for lack of room"."""

from __future__ import annotations

import re

import pytest

from ctxasm.api import Memory

from ..conftest import REPO


def _demo_call() -> dict:
    """The demo's assemble as scripts/demo runs it: its tenant, scope, intent, time and question."""
    script = (REPO / "scripts" / "demo").read_text()
    line = re.sub(r"\\\n\s*", " ", script.split('"$CTX" assemble', 1)[1]).split("\n", 1)[0]

    def option(name: str) -> str:
        found = re.search(rf"--{name} (\"[^\"]*\"|\S+)", line)
        assert found, f"scripts/demo's assemble has no --{name}"
        return found.group(1).strip('"')
    return {name: option(name) for name in ("tenant", "user", "agent", "thread", "intent", "at", "question")}


@pytest.fixture(scope="module")
def demo_manifest(corpus_once):
    call = _demo_call()
    with Memory.open(database=corpus_once.database) as memory:
        session = memory.session(call["tenant"], user_id=call["user"], agent_id=call["agent"],
                                 thread_id=call["thread"])
        return session.assemble(call["question"], intent=call["intent"], at=call["at"]).manifest


def test_the_demo_window_leaves_out_nothing_its_unused_tokens_would_seat(demo_manifest):
    allocation = demo_manifest["allocation"]
    assert allocation["reclaim_unused"] is True
    left_out = [x for x in demo_manifest["excluded"] if x["rule"] == "slice_budget"]
    assert left_out, "the demo no longer has more evidence than room: the test shows nothing"
    seatable = [x for x in left_out if x["tokens"] <= allocation["unused"]]
    assert not seatable, f"{allocation['unused']} tokens unused, yet left out for lack of room: {seatable}"
    request_unused = demo_manifest["request_limit"] - demo_manifest["request_tokens"]
    assert request_unused < min(x["tokens"] for x in left_out), (request_unused, left_out)
