"""The conversation evaluation end to end on a real PostgreSQL: one small sample loaded as a tenant through the
loader, its questions asked through the real assembler at one budget, figures aggregated. Assertions are about
structure and ranges; ctxasm's own figures are never pinned."""

from __future__ import annotations

import json

import pytest

from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm_dev.evaluation import conversation_tenants as tenants
from ctxasm_dev.evaluation.baselines import BASELINES, turn_cost
from ctxasm_dev.evaluation.conversation_report import METHODS, format_report, summarize
from ctxasm_dev.evaluation.conversations import SEATED, SEATED_ADJACENT, TURN_FATES, evaluate_file
from ctxasm_dev.evaluation.conversation_files import read_samples

from ..conftest import REPO

BUDGET = 1500
SET = REPO / "db" / "tests" / "conversations" / "ctxasm_conversations.json"


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    """The project set's first sample cut to its first two sessions, with questions on them and one question
    whose evidence is now partly outside the file (a dangling id the reader must count, not crash on)."""
    sample = json.loads(SET.read_text())[0]
    kept = ("speaker_a", "speaker_b", "session_1", "session_1_date_time", "session_2", "session_2_date_time")
    conversation = {k: v for k, v in sample["conversation"].items() if k in kept}
    sample = {"sample_id": sample["sample_id"], "conversation": conversation,
              "qa": [q for q in sample["qa"] if any(e.startswith(("D1:", "D2:")) for e in q["evidence"])]}
    path = tmp_path_factory.mktemp("conversations") / "small.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def evaluation(pg_target, small_file):
    from ..conftest import empty_database

    empty_database(pg_target)
    return evaluate_file(pg_target, small_file, budgets=(BUDGET,))


def test_the_small_sample_fits_the_budget_for_the_baselines(small_file):
    [sample], notes = read_samples(small_file)
    assert sum(turn_cost(t.content) for t in sample.turns) < BUDGET
    assert notes.counts["evidence ids naming no turn (ignored)"] >= 1
    assert notes.counts["adversarial questions (skipped)"] == 1


def test_every_question_gets_a_window_at_the_budget(evaluation, small_file):
    [sample], _ = read_samples(small_file)
    assert len(evaluation.results) == len(sample.questions) > 0
    dia_ids = {t.dia_id for t in sample.turns}
    for result in evaluation.results:
        window = result.window
        # asked again under the default budget's weights, at the same allowance
        assert result.default_window is not None and result.default_window.error is None
        assert result.default_window.allowance == BUDGET
        assert window.error is None
        assert window.allowance == BUDGET  # the question thread's budget is calibrated to the allowance
        assert 0 < window.used <= BUDGET
        assert set(window.turns) <= dia_ids and window.turns
        assert set(window.turns.values()) <= {"full", "summary", "pointer"}
        assert window.seconds > 0 and window.embedding_seconds is not None
        assert window.scorer
        assert set(result.evidence) <= dia_ids
        for name in BASELINES:
            assert result.baseline_used[name] <= BUDGET
            assert result.baseline_turns[name] <= dia_ids
        # the whole sample fits: every baseline that ranks every turn holds every evidence turn
        for name in ("recency", "dense", "hybrid"):
            assert set(result.evidence) <= result.baseline_turns[name]


def _tenant_rows(pg_target, tenant: str, query: str) -> list[tuple]:
    """`query`'s rows as the owner with `tenant` set: the application role reads no table (RLS keeps the owner to
    the tenant too)."""
    with pgconn.connect(pg_target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant(tenant)
        return connection.execute(query).fetchall()


def test_turns_keep_their_dia_ids_in_the_database(evaluation, pg_target):
    tenant = evaluation.samples[0]["tenant_id"]
    rows = _tenant_rows(pg_target, tenant, "SELECT id, thread_id, content_json ->> 'dia_id' "
                                           "FROM ctxasm.conversation_memory WHERE event_type = 'message'")
    ((manifests,),) = _tenant_rows(pg_target, tenant, "SELECT count(*) FROM ctxasm.conversation_memory "
                                                      "WHERE event_type = 'context_manifest'")
    assert len(rows) == evaluation.samples[0]["turns"]
    assert all(row_id == tenants.row_id(dia_id) for row_id, _, dia_id in rows)
    assert {thread for _, thread, _ in rows} == {"session-1", "session-2"}
    assert manifests >= len(evaluation.results)  # the calibration window and any corrected budgets add some


def test_turns_are_stored_with_their_contents_vectors(evaluation, pg_target):
    """The evaluation embeds each turn once and hands the vectors to the load: what is stored is the model's
    vector of the turn's speaker and content, as a load would have computed it."""
    from ctxasm.engines.searchable import embedding_text
    from ctxasm.ml import embedding

    rows = _tenant_rows(pg_target, evaluation.samples[0]["tenant_id"],
                        "SELECT role, speaker, content, embedding::text FROM ctxasm.conversation_memory "
                        "WHERE event_type = 'message' ORDER BY id LIMIT 5")
    assert len(rows) == 5 and all(speaker for _, speaker, _, _ in rows)
    computed = embedding.embed([embedding_text("conversation", {"role": role, "speaker": speaker, "content": content})
                                for role, speaker, content, _ in rows])
    for (_, _, _, stored), vector in zip(rows, computed):
        assert max(abs(a - b) for a, b in zip(json.loads(stored), vector)) < 1e-4


def test_figures_are_in_range_and_printable(evaluation):
    summary = summarize(evaluation)
    json.dumps(summary)  # JSON-ready
    [figures] = summary["budgets"]
    assert figures["budget"] == BUDGET and figures["failed_windows"] == 0
    assert figures["allowance"] == {"mean": BUDGET, "min": BUDGET, "max": BUDGET}
    assert figures["methods"] == list(METHODS)
    for method in METHODS:
        recall = figures["recall"][method]
        assert 0 <= recall["all"] <= recall["share"] <= recall["any"] <= 1
    for method in ("ctxasm", "ctxasm default"):
        # the whole request, fixed slices and question included, costs more than its recalled history
        assert figures["recall"][method]["tokens_per_query"] > figures["recall"][method]["tokens_used"] > 0
    for method in ("recency", "dense", "hybrid"):
        assert figures["recall"][method]["all"] == 1
    assert sum(figures["ctxasm_tiers"].values()) == pytest.approx(figures["recall"]["ctxasm"]["share"])
    fates = figures["ctxasm_evidence_fates"]
    assert sum(fates.values()) == pytest.approx(1)
    assert fates["seated"] + fates["seated as a neighbour"] == pytest.approx(figures["recall"]["ctxasm"]["share"])
    assert set(figures["by_category"]) <= {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert sum(c["questions"] for c in figures["by_category"].values()) == figures["questions"]
    assert 0 < figures["latency_ms"]["p50"] <= figures["latency_ms"]["p95"]
    assert "excluding the question embedding" in summary["latency_basis"]
    [(sample_id, alone)] = figures["by_sample"].items()  # one sample: its figures are the budget's
    assert sample_id == evaluation.samples[0]["sample_id"] and alone["questions"] == figures["questions"]
    for method in METHODS:
        assert all(alone[method][k] == figures["recall"][method][k] for k in ("share", "any", "all"))
    # against the strongest baseline: a missed turn was not seated, and is shown with its text
    found = summarize(evaluation, "hybrid")["budgets"][0]["misses"]
    for question in found["questions_lost"]:
        for turn in question["missed"]:
            assert turn["fate"] in set(TURN_FATES) - {SEATED, SEATED_ADJACENT} and turn["text"]
    assert found["questions_won"] == sum(
        bool(set(r.evidence) & set(r.window.turns) - r.baseline_turns["hybrid"]) for r in evaluation.results)
    text = format_report(summary)
    assert "per sample" not in text
    for word in ("ctxasm", "ctxasm default", "tokens per query", "recency", "BM25", "dense", "hybrid", "p50 ms",
                 "p50 / smallest budget's", "o200k_base", "where ctxasm's evidence went", str(BUDGET),
                 str(evaluation.samples[0]["sample_id"])):
        assert word in text


def test_a_longmemeval_file_is_evaluated_like_a_locomo_one(pg_target):
    """The shipped synthetic file in LongMemEval's format: one tenant per instance, each question asked at its
    own question date, figures per question type."""
    from ..conftest import empty_database

    empty_database(pg_target)
    path = REPO / "db" / "tests" / "conversations" / "longmemeval_synthetic.json"
    evaluation = evaluate_file(pg_target, path, budgets=(300,), weightings=("relevance",))
    assert len(evaluation.results) == 4 and len(evaluation.samples) == 5
    assert all(r.window.error is None and r.window.allowance == 300 and r.default_window is None
               for r in evaluation.results)
    summary = summarize(evaluation)
    [figures] = summary["budgets"]
    assert figures["methods"] == [m for m in METHODS if m != "ctxasm default"]
    assert set(figures["by_category"]) == {"single-session-user", "multi-session", "knowledge-update",
                                           "temporal-reasoning"}
    assert summary["read_notes"]["abstention questions (skipped)"] == 1
    # by instance, in the file's order; the question-weighted mean of the samples' shares is the budget's
    by_sample = figures["by_sample"]
    assert list(by_sample) == [r.sample_id for r in evaluation.results]
    assert sum(f["questions"] for f in by_sample.values()) == figures["questions"]
    for method in figures["methods"]:
        assert sum(f[method]["share"] * f["questions"] for f in by_sample.values()) / figures["questions"] == \
            pytest.approx(figures["recall"][method]["share"])
    text = format_report(summary)
    assert "per category" in text and "per sample at budget 300" in text
    assert all(sample_id in text for sample_id in by_sample)


def test_only_the_samples_named_are_loaded_and_asked(pg_target):
    from ..conftest import empty_database

    empty_database(pg_target)
    path = REPO / "db" / "tests" / "conversations" / "longmemeval_synthetic.json"
    every = [s["question_id"] for s in json.loads(path.read_text(encoding="utf-8"))]
    evaluation = evaluate_file(pg_target, path, budgets=(300,), weightings=("relevance",), sample_ids=every[1:2])
    assert [s["sample_id"] for s in evaluation.samples] == every[1:2]
    assert len(evaluation.results) == 1 and evaluation.results[0].window.error is None
    [tenant] = {s["tenant_id"] for s in evaluation.samples}
    with pgconn.connect(pg_target, pgconn.owner_login()) as connection:  # the other instances were never loaded
        assert connection.execute("SELECT array_agg(tenant_id) FROM ctxasm.ctx_tenant").fetchone()[0] == [tenant]
    assert _tenant_rows(pg_target, tenant, "SELECT count(*) FROM ctxasm.conversation_memory "
                                           "WHERE event_type = 'message'")[0][0] > 0
