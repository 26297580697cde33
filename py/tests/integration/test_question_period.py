"""The time a question names (ctxasm.question_period) lifts the recalled turns said in it by DATE_WEIGHT: a day,
or a month and the week after it, the latest such one when the question gives no year. Live hybrid scoring
only: a replay takes the recorded logit, which includes the lift."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ctxasm.contract_constants import DATE_WEIGHT
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble
from ctxasm.services.replay import replay

from ..conformance.checks import named_lifts
from ..conftest import load_scenario
from . import recalled_turns
from .recalled_turns import AGENT, THREAD, USER, Turn

TENANT = "dates"
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(("question", "at", "period"), [
    ("What did Maria plan to do later on the evening of 7 July, 2023?", AT, ("2023-07-07", "2023-07-08")),
    ("What game was Nate playing on November 7th, 2022?", AT, ("2022-11-07", "2022-11-08")),
    ("What did Gina find for her store on 1 February, 2023?", AT, ("2023-02-01", "2023-02-02")),
    # a month and year: the month and the week after it, when it is still told
    ("What setback did Melanie face in September 2023?", AT, ("2023-09-01", "2023-10-08")),
    ("What did John attend in December 2023?", AT, ("2023-12-01", "2024-01-08")),
    # no year: the latest such day or month on or before the evaluation time
    ("What did we decide on 15 July?", datetime(2024, 7, 10, tzinfo=timezone.utc), ("2023-07-15", "2023-07-16")),
    ("What did we decide on 15 July?", datetime(2024, 7, 15, 9, tzinfo=timezone.utc), ("2024-07-15", "2024-07-16")),
    ("What happened in June?", datetime(2024, 7, 15, tzinfo=timezone.utc), ("2024-06-01", "2024-07-08")),
    ("What happened during December?", datetime(2024, 7, 15, tzinfo=timezone.utc), ("2023-12-01", "2024-01-08")),
    ("What happened on 3 May?", AT, ("2026-05-03", "2026-05-04")),
    # the first form in order counts: the day with its year before the month alone
    ("In June, what did she say on 2 March 2025?", AT, ("2025-03-02", "2025-03-03")),
    # none: no date, "may" as a word, a day the month does not have, a year before the first
    ("What is Caroline's identity?", AT, None),
    ("May I ask what you did last week?", AT, None),
    ("What happened on 31 February 2023?", AT, None),
    ("What happened in March 0000?", AT, None),
])
def test_question_period_is_the_day_or_month_the_question_names(pg_target, question, at, period):
    # Oracle's ctx_rules.question_period is held to the same figures (db/tests/utplsql/0025_test_ctx_selection.sql).
    with pgconn.connect(pg_target, pgconn.owner_login()) as connection:
        got = connection.execute(
            "SELECT p.out_from AT TIME ZONE 'UTC', p.out_to AT TIME ZONE 'UTC' "
            "FROM ctxasm.question_period(ctxasm.question_words(%s), %s) AS p", (question, at)).fetchone()
    expected = (None, None) if period is None else tuple(datetime.fromisoformat(day) for day in period)
    assert got == expected


# Four turns about the greenhouse, each on its own day.
TURNS = {
    "first": ("2026-04-01T10:00:00Z", "The greenhouse heater clicked all night."),
    "second": ("2026-04-02T10:00:00Z", "The greenhouse heater stopped and the seedlings froze."),
    "third": ("2026-04-03T10:00:00Z", "Tom fitted a new relay in the greenhouse heater."),
    "later": ("2026-05-20T10:00:00Z", "The greenhouse heater has held twelve degrees since."),
}


def scenario_document() -> dict:
    turns = [Turn(row_id, said, text) for row_id, (said, text) in TURNS.items()]
    return recalled_turns.scenario(TENANT, "question-dates", "Question dates", turns, "2026-05-30T10:00:00Z")


@pytest.fixture()
def dates_target(clean_db, tmp_path):
    load_scenario(clean_db, tmp_path, scenario_document())
    return clean_db


def _lifts(document: dict) -> dict[str, float]:
    """Each recalled turn's logit beyond the hybrid scorer's figure, its length's and its thread's shares."""
    recalled = {c["ref"][1]: c["scores"] for c in document["candidates"] if c["slice"] == "recalled_history"}
    best_bm25 = max(scores.get("bm25") or 0 for scores in recalled.values())
    return {row_id: round(named_lifts(scores, best_bm25), 4) for row_id, scores in recalled.items()}


@pytest.mark.parametrize(("question", "lifted"), [
    ("What happened to the greenhouse heater on 2 April 2026?", {"second"}),
    ("What happened to the greenhouse heater on April 2nd?", {"second"}),
    # the month and the week after it
    ("What happened to the greenhouse heater in April 2026?", {"first", "second", "third"}),
    ("What happened to the greenhouse heater?", set()),
])
def test_the_turns_said_in_the_time_the_question_names_gain_the_date_weight(dates_target, question, lifted):
    with pgconn.connect(dates_target, pgconn.app_login()) as connection:
        document = PostgresStore(connection).select_window_document(
            TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, question))
        connection.rollback()
    lifts = _lifts(document)
    assert set(lifts) == set(TURNS)
    assert lifts == {row_id: (DATE_WEIGHT if row_id in lifted else 0) for row_id in TURNS}


def test_a_window_with_a_dated_question_replays_and_a_reranker_takes_no_lift(dates_target):
    question = "What happened to the greenhouse heater on 2 April 2026?"
    spec = WindowSpec(tenant_id=TENANT, user_id=USER, agent_id=AGENT, thread_id=THREAD, intent="fact_check",
                      question=question)
    scores = {f"conversation:{row_id}:1": 1.0 for row_id in TURNS}
    with pgconn.connect(dates_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, AT)
        result = replay(store, TENANT, window.manifest_id)
        reranked = store.select_window_document(TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, question,
                                                                    scores=scores))
        connection.rollback()
    assert result.status == "match", result
    recalled = [c for c in reranked["candidates"] if c["slice"] == "recalled_history"]
    assert recalled and {c["scores"]["rerank_logit"] for c in recalled} == {1.0}
