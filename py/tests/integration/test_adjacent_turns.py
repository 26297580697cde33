"""Adjacent turns on a real PostgreSQL: an answer that shares nothing with the question is recalled because it
sits next to the turn that matches, its score comes from that neighbour, and the window replays."""

from __future__ import annotations


import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.core.selection import CandidateRow, Selection
from ctxasm.contract_constants import ADJACENT_MARGIN as MARGIN
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn
from ctxasm.services import load
from ctxasm.services.assemble import assemble, query_embedding
from ctxasm.services.replay import replay
from ctxasm_dev.evaluation import conversation_tenants as tenants
from ctxasm_dev.evaluation.locomo import parse_samples

from ..conformance.checks import thread_share
from ..conftest import embedded_json

QUESTION = "Did Sam ever finish painting the blue kayak?"
ASKED = "Did you ever finish painting the blue kayak?"
ANSWER = "Yes, last weekend."
THREAD = "question-thread"


def _sample() -> dict:
    """Sessions of kayak and paint talk that do not answer, and one session where the answer follows the
    question: more turns than retrieval reads (50 per retriever), so the answer is found only as a neighbour."""
    conversation: dict = {"speaker_a": "Alex", "speaker_b": "Sam"}
    sessions = []
    for n in range(1, 9):
        sessions.append([f"The red kayak in shed {n} still needs a coat of paint on its hull, part {k}."
                         for k in range(20)])
    sessions.append(["How was the lake trip?", ASKED, ANSWER, "Great, the kayak looks new now."])
    for n, texts in enumerate(sessions, start=1):
        conversation[f"session_{n}_date_time"] = f"10:00 am on {n} May, 2026"
        conversation[f"session_{n}"] = [
            {"speaker": "Alex" if i % 2 == 0 else "Sam", "dia_id": f"D{n}:{i + 1}", "text": text}
            for i, text in enumerate(texts)]
    answer_dia = f"D{len(sessions)}:3"
    return {"sample_id": "kayak", "conversation": conversation,
            "qa": [{"question": QUESTION, "answer": "yes", "evidence": [answer_dia], "category": 1}]}


@pytest.fixture()
def kayak_target(clean_db, tmp_path):
    samples, _ = parse_samples([_sample()])
    document = tenants.scenario(samples, ["kayak"])
    # The question's thread gets a budget of a few hundred tokens of history, so retrieval reads its depth
    # (50 rows per retriever) and not every turn.
    document["tenants"][0]["memories"].append({"type": "guideline", **tenants.budget_row(
        "budget-question", THREAD, 2000, tenants.request_overhead_reserve(1000),
        samples[0].last_time + tenants.BUDGET_DELAY)})
    path = tmp_path / "kayak.json"
    path.write_text(embedded_json(document), encoding="utf-8")  # the same 164 turns for every test
    load.load_file(clean_db, path)
    return clean_db, samples[0]


def _window(target, sample):
    spec = WindowSpec(tenant_id="kayak", user_id=tenants.USER_ID, agent_id=tenants.AGENT_ID,
                      thread_id=THREAD, intent=tenants.INTENT, question=QUESTION)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, tenants.question_time(sample))


def _selection(target, sample) -> Selection:
    """select_window's document for the question, read and rolled back (nothing recorded)."""
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        selection = store.select_window("kayak", WindowScope(
            tenants.USER_ID, tenants.AGENT_ID, THREAD, tenants.INTENT, tenants.question_time(sample), QUESTION,
            query_embedding=query_embedding(QUESTION)))
        store.rollback()
    return selection


def test_the_answer_next_to_the_matching_turn_is_recalled_through_it(kayak_target):
    target, sample = kayak_target
    window = _window(target, sample)
    manifest = window.manifest
    asked, answer = tenants.row_id("D9:2"), tenants.row_id("D9:3")

    items = {i["ref"][1]: i for i in manifest["retrieval"]["items"]}
    assert items[asked]["origin"] == "retrieval"
    assert items[answer]["origin"] == "adjacent"
    assert items[answer]["next_to"] == asked
    assert items[answer]["slice"] == "recalled_history"

    seated = {m["ref"][1]: m for m in manifest["memories"]}
    scores = seated[answer]["scores"]
    # Its own relevance is low; it scores as its neighbour less the margin (both with their conversation's
    # share), and the manifest says so.
    assert scores["rerank_logit"] == pytest.approx(scores["adjacent_logit"] + thread_share(scores), abs=1e-6)
    lent = seated[asked]["scores"]["rerank_logit"] - thread_share(seated[asked]["scores"]) - MARGIN
    assert scores["adjacent_logit"] == pytest.approx(lent, abs=1e-6)
    assert "adjacent_logit" not in seated[asked]["scores"]
    assert ANSWER in window.request["messages"][-1]["content"]


def test_a_turn_is_never_scored_from_a_neighbour_in_another_thread(kayak_target):
    target, sample = kayak_target
    selection = _selection(target, sample)
    by_place = {(c.thread_id, c.turn_index): c for c in selection.candidates if c.slice == "recalled_history"}
    assert any("adjacent_logit" in c.scores for c in by_place.values())
    for (thread, index), candidate in by_place.items():
        if "adjacent_logit" not in candidate.scores:
            continue
        neighbours = [by_place.get((thread, index - 1)), by_place.get((thread, index + 1))]
        best = max(n.scores["rerank_logit"] - thread_share(n.scores) for n in neighbours if n is not None)
        assert candidate.scores["adjacent_logit"] <= best - MARGIN + 1e-6


def test_a_window_with_adjacent_turns_replays(kayak_target):
    target, sample = kayak_target
    window = _window(target, sample)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        result = replay(PostgresStore(connection), "kayak", window.manifest_id)
    assert result.status == "match", result.reason


def test_a_recalled_turn_gains_a_share_of_its_conversations_best_turn(kayak_target):
    """Every recalled turn of a thread carries the thread's best own logit, and its logit includes 0.3 of it:
    the turns of the conversation about the question rise together."""
    from ctxasm.contract_constants import THREAD_WEIGHT

    target, sample = kayak_target
    selection = _selection(target, sample)
    turns = [c for c in selection.candidates if c.slice == "recalled_history"]
    by_thread: dict[str | None, list[CandidateRow]] = {}
    for candidate in turns:
        by_thread.setdefault(candidate.thread_id, []).append(candidate)
    assert len(by_thread) > 1
    for members in by_thread.values():
        [best] = {m.scores["thread_logit"] for m in members}
        own = [m.scores["rerank_logit"] - round(THREAD_WEIGHT * best, 6) for m in members
               if "adjacent_logit" not in m.scores]
        # each figure is rounded to six places on its own, so the two sides may differ in the last place
        assert best == pytest.approx(max(own), abs=2e-6)
    # the conversation that answers ranks its answer above every turn of the sessions that only share words
    ranked = sorted(turns, key=lambda c: c.selection_rank)
    assert ranked[0].thread_id == "session-9"
