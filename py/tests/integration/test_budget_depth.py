"""Budgets decide depth, on a real PostgreSQL: a slice's candidate limit follows its allowance (1.25 records of
25 tokens per 25 tokens of share, 10..1000), so a large window seats every recalled turn it has room for, past
the 200 candidates a fixed cap kept, and a small one reads no deeper than it can seat. What the limit cuts is
still recorded."""

from __future__ import annotations

import json
import math

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services import load
from ctxasm.services.assemble import assemble
from ctxasm_dev.evaluation import conversation_tenants as tenants
from ctxasm_dev.evaluation.locomo import parse_samples

TURNS_PER_SESSION, SESSIONS = 30, 10
QUESTION = "Which tomato varieties did Robin plant in the greenhouse?"
#: usable_context of the two windows (reserves: output 400, request overhead 200 + a quarter of it)
BIG, SMALL = 16000, 2500


def _sample() -> dict:
    """300 short turns about a garden, every one different, so none is a duplicate of another."""
    conversation: dict = {"speaker_a": "Robin", "speaker_b": "Kim"}
    for n in range(1, SESSIONS + 1):
        conversation[f"session_{n}_date_time"] = f"9:00 am on {n} March, 2026"
        conversation[f"session_{n}"] = [
            {"speaker": "Robin" if i % 2 == 0 else "Kim", "dia_id": f"D{n}:{i + 1}",
             "text": f"Bed {i} of week {n}: the tomato row {n * 100 + i} needs water and a stake."}
            for i in range(TURNS_PER_SESSION)]
    return {"sample_id": "garden", "conversation": conversation,
            "qa": [{"question": QUESTION, "answer": "-", "evidence": ["D1:1"], "category": 4}]}


@pytest.fixture(scope="module")
def garden(pg_target, tmp_path_factory):
    from ..conftest import empty_database

    empty_database(pg_target)
    samples, _ = parse_samples([_sample()])
    document = tenants.scenario(samples, ["garden"])
    for budget in (BIG, SMALL):
        document["tenants"][0]["memories"].append({"type": "guideline", **tenants.budget_row(
            f"budget-{budget}", f"thread-{budget}", budget, tenants.request_overhead_reserve(budget),
            samples[0].last_time + tenants.BUDGET_DELAY)})
    path = tmp_path_factory.mktemp("garden") / "garden.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    load.load_file(pg_target, path)
    return pg_target, samples[0]


def _manifest(target, sample, budget: int) -> dict:
    spec = WindowSpec(tenant_id="garden", user_id=tenants.USER_ID, agent_id=tenants.AGENT_ID,
                      thread_id=f"thread-{budget}", intent=tenants.INTENT, question=QUESTION)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, tenants.question_time(sample)).manifest


def _expected_limit(manifest: dict) -> int:
    reserves = manifest["allocation"]["reserves"]
    available = manifest["allocation"]["usable_context"] - sum(reserves.values())
    return min(1000, max(10, math.ceil(1.25 * available / 25)))


def test_a_large_budget_reads_as_deep_as_it_can_seat_and_fills(garden):
    target, sample = garden
    manifest = _manifest(target, sample, BIG)
    limit = manifest["candidate_limits"]["recalled_history"]
    assert limit == _expected_limit(manifest) > len(sample.turns) > 200
    seated = [m for m in manifest["memories"] if m["slice"] == "recalled_history"]
    # every turn fits in the allowance, and every one is a candidate: the window holds the whole conversation
    assert len(seated) == len(sample.turns)
    assert manifest["candidate_cuts"] == []


def test_a_small_budget_reads_no_deeper_than_it_can_seat_and_records_the_cut(garden):
    target, sample = garden
    manifest = _manifest(target, sample, SMALL)
    limit = manifest["candidate_limits"]["recalled_history"]
    assert limit == _expected_limit(manifest) < 100
    retrieval = manifest["retrieval"]
    retrieved = [i for i in retrieval["items"] if i["origin"] == "retrieval" and i["slice"] == "recalled_history"]
    assert len(retrieved) <= 2 * max(retrieval["depth"], limit) < len(sample.turns)
    [cut] = [c for c in manifest["candidate_cuts"] if c["slice"] == "recalled_history"]
    assert cut["limit"] == limit and cut["rows"] > 0
    seated = [m for m in manifest["memories"] if m["slice"] == "recalled_history"]
    assert 0 < len(seated) <= limit
