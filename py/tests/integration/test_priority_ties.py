"""Confidence and recency break near-ties of relevance, near in logits at any level of relevance: the sigmoid
saturates (logits 8 and 10 are 0.99966 and 0.99995), so a tie share measured on it alone would let the default
budget's recency reorder the most relevant candidates. And recency counts in full only when the question asks
about the present without naming a year or a month (docs/assembly.md, "Choosing the weights")."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn

from ..conftest import FACT_CHECK_BUDGET, load_scenario

TENANT, USER, AGENT, THREAD = "ties", "jane", "research-assistant", "thread_now"
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)
#: the default budget's weights (`ctxasm tenant create`)
DEFAULT_WEIGHTS = {"rerank": 0.6, "confidence": 0.25, "recency": 0.15}
#: turn id -> when it was said: two this week (recency near 1), two long before the 60-day horizon (recency 0)
TURNS = {"new_a": "2026-05-31T10:00:00Z", "old_a": "2026-01-10T10:00:00Z",
         "new_b": "2026-05-30T10:00:00Z", "old_b": "2026-01-11T10:00:00Z"}


def _document() -> dict:
    budget = {**FACT_CHECK_BUDGET, "weights": DEFAULT_WEIGHTS}
    memories = [{"type": "guideline", "id": "budget", "guideline_key": "context_budget", "agent_id": AGENT,
                 "valid_from": "2026-01-01T00:00:00Z", "content": "Budget.", "content_json": budget}]
    for index, (row_id, said) in enumerate(TURNS.items()):
        memories.append({"type": "conversation", "id": row_id, "role": "user", "turn_index": 0,
                         "thread_id": f"thread_{row_id}", "valid_from": said, "user_id": USER, "agent_id": AGENT,
                         "content": f"Turn {index} about the greenhouse heater."})
    return {"format": "ctxasm-scenario/1", "name": "priority-ties",
            "tenants": [{"tenant_id": TENANT, "display_name": "Priority ties", "memories": memories}]}


@pytest.fixture()
def ties_target(clean_db, tmp_path):
    load_scenario(clean_db, tmp_path, _document())
    return clean_db


def _ranks(target, question: str, logits: dict[str, float]) -> dict[str, int]:
    scores = {f"conversation:{row_id}:1": logit for row_id, logit in logits.items()}
    with pgconn.connect(target, pgconn.app_login()) as connection:
        selection = PostgresStore(connection).select_window(
            TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, question, scores))
        connection.rollback()
    return {c.ref.id: c.selection_rank for c in selection.candidates if c.slice == "recalled_history"}


def test_the_more_relevant_wins_where_the_sigmoid_saturates_and_recency_breaks_a_near_tie(ties_target):
    ranks = _ranks(ties_target, "What broke the greenhouse heater?",
                   {"new_a": 8.0, "old_a": 10.0, "new_b": 0.0, "old_b": 0.002})
    # logits 10 and 8: far apart, though their sigmoids differ by less than recency's tie share
    assert ranks["old_a"] < ranks["new_a"], ranks
    # logits 0.002 and 0: a near-tie, which the newer turn wins
    assert ranks["new_b"] < ranks["old_b"], ranks


def test_recency_counts_in_full_for_the_present_unless_the_question_names_a_time(ties_target):
    logits = {"new_a": 8.0, "old_a": 10.0, "new_b": -5.0, "old_b": -5.0}
    assert _ranks(ties_target, "What broke the greenhouse heater recently?", logits)["new_a"] == 1
    for named in ("What broke the greenhouse heater recently, in 2026?",
                  "What is the latest on the greenhouse heater since March?",
                  "What did she recently say about the greenhouse heater on 3 May?"):
        assert _ranks(ties_target, named, logits)["old_a"] == 1, named
    # "may" the verb names no month
    assert _ranks(ties_target, "What may have broken the greenhouse heater recently?", logits)["new_a"] == 1
