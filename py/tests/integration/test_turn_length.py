"""A recalled turn's length against the recalled turns of its voice (role and speaker) it competes with moves its
relevance: ln(its stored tokens / their mean), within LENGTH_CAP either way (ctxasm.length_logit). The manifest
names the figure (`scores.length_logit`), a replay takes it as recorded, and a reranker's scores are taken as they
are, without it."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from ctxasm.contract_constants import LENGTH_CAP
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble
from ctxasm.services.replay import replay

from ..conformance.checks import named_lifts
from ..conftest import FACT_CHECK_BUDGET, load_scenario
from . import recalled_turns
from .recalled_turns import AGENT, THREAD, USER, Turn

TENANT = "lengths"
QUESTION = "What happened to the greenhouse heater?"
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)

# One thread of turns about the heater: a bare echo of the question's words, two of middling length, and one long
# account; each in its own thread, so no turn lends another its conversation's share or its neighbour's figure.
TURNS = {
    "echo": "Greenhouse heater?",
    "short": "The greenhouse heater stopped again.",
    "middle": "The greenhouse heater stopped on Tuesday night and the seedlings on the top shelf froze.",
    "account": ("The greenhouse heater failed on Tuesday night: the thermostat's relay burned out, the fan kept "
                "running cold air, and by morning the tomato and pepper seedlings on the top two shelves had "
                "frozen. Tom ordered a new relay from the supplier in Leeds, fitted it on Thursday, and since then "
                "the heater has held twelve degrees every night; we lost about forty seedlings and replanted them "
                "on Saturday with seed from the shed, so the beds will be two weeks late this spring. ") * 2,
}


def scenario_document() -> dict:
    turns = [Turn(row_id, f"2026-04-0{index + 1}T10:00:00Z", text)
             for index, (row_id, text) in enumerate(TURNS.items())]
    return recalled_turns.scenario(TENANT, "turn-lengths", "Turn lengths", turns, "2026-05-01T10:00:00Z")


@pytest.fixture()
def lengths_target(clean_db, tmp_path):
    load_scenario(clean_db, tmp_path, scenario_document())
    return clean_db


def window_scope(**changes) -> WindowScope:
    return WindowScope(USER, AGENT, THREAD, "fact_check", AT, QUESTION, **changes)


def _recalled(document: dict) -> dict[str, dict]:
    return {c["ref"][1]: c for c in document["candidates"] if c["slice"] == "recalled_history"}


def test_a_turn_gains_or_loses_its_length_against_the_mean_within_the_cap(lengths_target):
    with pgconn.connect(lengths_target, pgconn.app_login()) as connection:
        document = PostgresStore(connection).select_window_document(TENANT, window_scope())
        connection.rollback()
    recalled = _recalled(document)
    assert set(recalled) == set(TURNS)
    mean = sum(c["content_tokens"] for c in recalled.values()) / len(recalled)
    best_bm25 = max(c["scores"].get("bm25") or 0 for c in recalled.values())
    for row_id, candidate in recalled.items():
        scores = candidate["scores"]
        expected = max(-LENGTH_CAP, min(LENGTH_CAP, round(math.log(candidate["content_tokens"] / mean), 6)))
        assert scores["length_logit"] == pytest.approx(expected, abs=1e-6), row_id
        # the logit is the hybrid scorer's figure, the length's share and the thread's share, nothing else
        assert named_lifts(scores, best_bm25) == pytest.approx(0, abs=1e-4), row_id
    figures = {row_id: c["scores"]["length_logit"] for row_id, c in recalled.items()}
    assert figures["echo"] == -LENGTH_CAP and figures["account"] == LENGTH_CAP, figures
    # The long account of what happened outranks the shorter turns, the bare echo of the question's words first
    # among them by BM25 alone.
    logits = {row_id: c["scores"]["rerank_logit"] for row_id, c in recalled.items()}
    assert max(logits, key=logits.__getitem__) == "account", logits
    assert max(recalled, key=lambda row_id: recalled[row_id]["scores"]["bm25"]) == "echo"


def test_a_window_replays_with_the_recorded_length_figures(lengths_target):
    spec = WindowSpec(tenant_id=TENANT, user_id=USER, agent_id=AGENT, thread_id=THREAD, intent="fact_check",
                      question=QUESTION)
    with pgconn.connect(lengths_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, AT)
        result = replay(store, TENANT, window.manifest_id)
    assert result.status == "match", result
    recorded = {m["ref"][1]: m["scores"] for m in window.manifest["memories"] if m["slice"] == "recalled_history"}
    assert recorded and all("length_logit" in scores for scores in recorded.values())
    items = [i for i in window.manifest["retrieval"]["items"] if i["ref"][1] in recorded]
    assert {i["ref"][1]: i["length_logit"] for i in items} == {k: s["length_logit"] for k, s in recorded.items()}


def test_a_rerankers_scores_are_taken_without_a_length_figure(lengths_target):
    scores = {f"conversation:{row_id}:1": 1.0 for row_id in TURNS}
    with pgconn.connect(lengths_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        first_pass = store.select_window_document(TENANT, window_scope())
        # with the scores alone, and as the reranker's second pass does, over the first pass's recorded sources
        documents = [store.select_window_document(TENANT, window_scope(scores=scores)),
                     store.select_window_document(TENANT, window_scope(scores=scores,
                                                                       sources=first_pass["retrieval"]["items"]))]
        connection.rollback()
    assert all("length_logit" in c["scores"] for c in _recalled(first_pass).values())
    for document in documents:
        recalled = _recalled(document)
        assert recalled and all("length_logit" not in c["scores"] for c in recalled.values())
        assert {c["scores"]["rerank_logit"] for c in recalled.values()} == {1.0}


# A chat with an assistant and two people: the assistant answers at length, Ana writes a line, Bo a few. Each
# voice's turns are measured against that voice's mean, so a person's ordinary line is not marked down for being
# shorter than an assistant's answers (measured against all turns together, every one of Ana's would lose the
# whole cap).
VOICE_QUESTION = "What breed is the dog Ana adopted?"
ADVICE = ("When you bring a new dog home, give it a quiet corner with a bed and water, keep the first walks short "
          "and on the same route, feed at the same times each day, and book a vet check within the first week; "
          "most dogs settle within a month, and a crate can help with house training if it is introduced slowly. ")
VOICES = {
    "assistant_1": ("assistant", None, ADVICE),
    "assistant_2": ("assistant", None, ADVICE * 2),
    "assistant_3": ("assistant", None, ADVICE + "Puppies need more sleep than you expect."),
    "ana_1": ("user", "Ana", "We adopted a beagle called Pepper."),
    "ana_2": ("user", "Ana", "The dog chewed my shoe."),
    "ana_3": ("user", "Ana", "The dog slept all night for the first time!"),
    "bo_1": ("user", "Bo", "Our neighbours have a dog too, a big grey lurcher who barks at the postman every "
                           "morning and then sleeps on their porch for the rest of the day."),
    "bo_2": ("user", "Bo", "I walked Pepper with Ana on Sunday along the canal path and she pulled the whole way "
                           "there, then lay down and refused to walk home, so I carried her."),
}


def voices_document() -> dict:
    # every turn a candidate, so each voice's mean is over all of its turns
    budget = {**FACT_CHECK_BUDGET, "candidate_limits": {"recalled_history": 4 * len(VOICES)}}
    turns = [Turn(row_id, f"2026-04-0{index + 1}T10:00:00Z", text, role, speaker)
             for index, (row_id, (role, speaker, text)) in enumerate(VOICES.items())]
    return recalled_turns.scenario(TENANT, "turn-voices", "Turn voices", turns, "2026-05-01T10:00:00Z", budget)


def test_a_turns_length_is_measured_against_the_turns_of_its_own_voice(clean_db, tmp_path):
    load_scenario(clean_db, tmp_path, voices_document())
    with pgconn.connect(clean_db, pgconn.app_login()) as connection:
        document = PostgresStore(connection).select_window_document(
            TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, VOICE_QUESTION))
        connection.rollback()
    recalled = _recalled(document)
    assert set(recalled) == set(VOICES)
    voices: dict[tuple[str, str | None], list[int]] = {}
    for row_id, (role, speaker, _) in VOICES.items():
        assert (recalled[row_id]["role"], recalled[row_id]["speaker"]) == (role, speaker), row_id
        voices.setdefault((role, speaker), []).append(recalled[row_id]["content_tokens"])
    everyone = sum(map(sum, voices.values())) / sum(map(len, voices.values()))
    for row_id, (role, speaker, _) in VOICES.items():
        tokens = recalled[row_id]["content_tokens"]
        mean = sum(voices[(role, speaker)]) / len(voices[(role, speaker)])
        expected = max(-LENGTH_CAP, min(LENGTH_CAP, round(math.log(tokens / mean), 6)))
        assert recalled[row_id]["scores"]["length_logit"] == pytest.approx(expected, abs=1e-6), row_id
        if speaker == "Ana":
            # what one mean over every voice would have given: the whole cap off each of her lines
            assert math.log(tokens / everyone) <= -LENGTH_CAP, row_id
            assert recalled[row_id]["scores"]["length_logit"] > -0.5, row_id
    # The line that answers outranks the assistant's general advice about new dogs.
    logits = {row_id: c["scores"]["rerank_logit"] for row_id, c in recalled.items()}
    assert all(logits["ana_1"] > logits[row_id] for row_id in VOICES if row_id.startswith("assistant")), logits


@pytest.mark.parametrize(("tokens", "mean", "expected"), [
    (40, 40, 0), (80, 40, 0.693147), (20, 40, -0.693147), (4000, 40, 1), (1, 40, -1),
])
def test_length_logit_is_the_log_ratio_rounded_within_the_cap(pg_target, tokens, mean, expected):
    # Oracle's ctx_rules.length_logit is held to the same figures (db/tests/utplsql/0025_test_ctx_selection.sql).
    with pgconn.connect(pg_target, pgconn.owner_login()) as connection:
        got = connection.execute("SELECT ctxasm.length_logit(%s::integer, %s::numeric, %s::numeric)",
                                 (tokens, mean, LENGTH_CAP)).fetchone()[0]
    assert float(got) == expected
