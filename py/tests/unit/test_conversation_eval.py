"""The conversation evaluation's pure parts: the LoCoMo and LongMemEval readers and their dates, BM25, packing, fusion, reading a
manifest, the tenant scenario and the figures. Expected values are worked out by hand."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import pytest

from ctxasm_dev.evaluation import baselines, conversation_tenants
from ctxasm_dev.evaluation.baselines import BASELINES
from ctxasm_dev.evaluation.bm25 import BM25, tokenize
from ctxasm_dev.evaluation.conversation_report import percentile, share
from ctxasm_dev.evaluation.conversations import (BELOW_FIT, CUT, EXCLUDED, NOT_READ, SEATED, SEATED_ADJACENT,
                                                 recalled_history, turn_fates, window_turns)
from ctxasm_dev.evaluation.conversation_files import read_samples
from ctxasm_dev.evaluation.locomo import ConversationFileError, parse_samples, parse_session_time, turn_content
from ctxasm_dev.evaluation.longmemeval import parse_instances as parse_longmemeval
from ctxasm.core.tokens import count_tokens
from ctxasm.services.load import validator

from ..conftest import REPO

UTC = timezone.utc


def sample(**overrides):
    """A small LoCoMo-format sample with the kinds of dirt the public file has."""
    value = {
        "sample_id": "conv-7",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_2_date_time": "9:05 am on 3 June, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back from the lake."},
                          {"speaker": "Ana", "dia_id": "D2:2", "text": "Look!", "img_url": ["http://x/y.jpg"],
                           "blip_caption": "a photo of a red kayak on a beach"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I bought a kayak."},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "Which colour?"},
                          {"speaker": "Ana", "dia_id": "D1:3", "text": "Red.", "extra_key": 1},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "a repeated id"},
                          {"speaker": "Ana", "dia_id": "D1:4", "img_url": ["http://x/z.jpg"]}],
            "session_1_summary": "not a session",
            "session_3_date_time": "sometime in July",
            "session_3": [{"speaker": "Ana", "dia_id": "D3:1", "text": "Hello again."}],
        },
        "qa": [
            {"question": "What did Ana buy?", "answer": "a kayak", "evidence": ["D1:1"], "category": 4},
            {"question": "What colour is the kayak?", "answer": "red", "category": 1,
             "evidence": ["D1:3", "D:11:26", "D9:9", "D2:2; D1:3"]},
            {"question": "What is Ben's kayak called?", "adversarial_answer": "x", "evidence": ["D1:2"],
             "category": 5},
            {"question": "When?", "answer": "never", "evidence": ["D:1:1"], "category": 2},
            {"question": "No category", "evidence": ["D2:1"]},
        ],
    }
    value.update(overrides)
    return value


@pytest.mark.parametrize("text, expected", [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    ("12:09 am on 1 January, 2024", datetime(2024, 1, 1, 0, 9, tzinfo=UTC)),
    ("12:30 pm on 29 February, 2024", datetime(2024, 2, 29, 12, 30, tzinfo=UTC)),
    ("10:37 AM on 27 June 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
    ("8:00 p.m. on 3 Sept, 2023", datetime(2023, 9, 3, 20, 0, tzinfo=UTC)),
    ("2023-05-08T13:56:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
])
def test_session_dates(text, expected):
    assert parse_session_time(text) == expected


@pytest.mark.parametrize("text", ["sometime in July", "13:10 pm on 8 May, 2023", "1:56 pm on 8 Ma, 2023",
                                  "1:56 pm on 31 February, 2023", ""])
def test_unreadable_session_dates(text):
    with pytest.raises(ValueError):
        parse_session_time(text)


def test_reader_orders_sessions_and_turns_in_time():
    [parsed], notes = parse_samples([sample()])
    assert [s.number for s in parsed.sessions] == [1, 2, 3]
    turns = parsed.turns
    assert [t.dia_id for t in turns] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D3:1"]
    assert turns[0].at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert turns[1].at == datetime(2023, 5, 8, 13, 56, 10, tzinfo=UTC)  # TURN_SPACING apart
    assert all(a.at < b.at for a, b in zip(turns, turns[1:]))
    # the undated session 3 comes a day after session 2
    assert turns[-1].at.date() == datetime(2023, 6, 4).date()
    assert notes.counts["sessions without a readable date"] == 1
    assert notes.counts["repeated dia_ids (later copies dropped)"] == 1


def test_reader_renders_speakers_and_photos():
    [parsed], notes = parse_samples([sample()])
    by_id = {t.dia_id: t for t in parsed.turns}
    assert by_id["D1:1"].content == "Ana: I bought a kayak."
    assert by_id["D2:2"].content == "Ana: Look! [shares a photo: a photo of a red kayak on a beach]"
    assert by_id["D2:2"].is_image
    assert by_id["D1:4"].content == "Ana: [shares a photo]"  # an image without caption or text
    assert notes.counts["image turns"] == 2
    assert turn_content("Ben", "", "a dog", True) == "Ben: [shares a photo: a dog]"


def test_reader_skips_adversarial_questions_and_counts_bad_evidence():
    [parsed], notes = parse_samples([sample()])
    questions = {q.question: q for q in parsed.questions}
    assert "What is Ben's kayak called?" not in questions
    assert notes.counts["adversarial questions (skipped)"] == 1
    colour = questions["What colour is the kayak?"]
    assert colour.evidence == ("D1:3", "D2:2")  # the compound entry split, the repeat dropped
    assert colour.category_name == "multi-hop"
    assert notes.counts["malformed evidence ids (ignored)"] == 2  # "D:11:26" and "D:1:1"
    assert notes.counts["evidence ids naming no turn (ignored)"] == 1  # "D9:9"
    assert notes.counts["evidence entries holding several ids (split)"] == 1
    # "When?" has only a malformed id left: nothing to measure, so it is skipped and counted
    assert "When?" not in questions
    assert notes.counts["questions without usable evidence (skipped)"] == 1
    assert questions["No category"].category is None
    assert questions["No category"].category_name == "category None"


def test_reader_tolerates_missing_keys():
    bare = {"conversation": {"session_1": [{"speaker": "X", "text": "hi"}], "session_1_date_time": "1:00 pm on 1 May, 2023"}}
    [parsed], notes = parse_samples([bare])
    assert parsed.sample_id == "0" and parsed.speaker_a == "speaker_a"
    assert parsed.turns[0].dia_id == "D1:1"
    assert parsed.questions == ()
    assert notes.counts["turns by neither speaker_a nor speaker_b"] == 1


def test_reader_refuses_what_is_not_a_list_of_samples(tmp_path):
    with pytest.raises(ConversationFileError, match=r"expected a JSON list"):
        parse_samples({"samples": []})
    with pytest.raises(ConversationFileError, match=r"\$\[0\]\.conversation"):
        parse_samples([{"qa": []}])
    path = tmp_path / "broken.json"
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(ConversationFileError, match="broken.json: not a JSON file"):
        read_samples(path)


def test_the_reader_keeps_only_the_samples_named_and_counts_only_what_they_hold(tmp_path):
    clean = {"sample_id": "conv-9", "conversation": {"speaker_a": "A", "speaker_b": "B",
                                                      "session_1_date_time": "1:00 pm on 1 May, 2023",
                                                      "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
             "qa": [{"question": "Who said hi?", "evidence": ["D1:1"], "category": 4}]}
    path = tmp_path / "three.json"
    path.write_text(json.dumps([sample(), clean, sample(sample_id="conv-8")]), encoding="utf-8")
    chosen, notes = read_samples(path, ["conv-8", "conv-9"])
    assert [s.sample_id for s in chosen] == ["conv-9", "conv-8"]  # the file's order
    assert notes.counts["adversarial questions (skipped)"] == 1  # conv-8's, not conv-7's as well
    everything, all_notes = read_samples(path)
    assert len(everything) == 3 and all_notes.counts["adversarial questions (skipped)"] == 2
    with pytest.raises(ConversationFileError, match=r"--samples: no sample with turns named conv-1, conv-2 "
                                                    r"\(the file holds conv-7, conv-9, conv-8\)"):
        read_samples(path, ["conv-9", "conv-1", "conv-2"])
    [one], _ = read_samples(LONGMEMEVAL, [read_samples(LONGMEMEVAL)[0][1].sample_id])
    assert one.sample_id == read_samples(LONGMEMEVAL)[0][1].sample_id


def test_tokenizer_drops_stop_words_and_apostrophe_pieces():
    assert tokenize("What breed is Maya's dog? She didn't say.") == ["breed", "maya", "dog", "say"]


def test_bm25_by_hand():
    index = BM25(["red kayak", "blue kayak kayak", "canoe"])
    scores = index.scores("red kayak")
    # N = 3, lengths 2, 3, 1: average 2. idf(red) = ln(1 + 2.5 / 1.5); idf(kayak) = ln(1 + 1.5 / 2.5)
    idf_red, idf_kayak = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    norm_2 = 1.2  # |d| = avgdl: k1 * (1 - b + b)
    norm_3 = 1.2 * (0.25 + 0.75 * 1.5)
    assert scores[0] == pytest.approx(idf_red * 2.2 / (1 + norm_2) + idf_kayak * 2.2 / (1 + norm_2))
    assert scores[1] == pytest.approx(idf_kayak * 2 * 2.2 / (2 + norm_3))
    assert scores[2] == 0
    assert baselines.bm25_order(index, "red kayak") == [0, 1]  # a turn sharing no term is not ranked
    assert index.scores("the of and") == [0, 0, 0]


def test_pack_skips_what_does_not_fit_and_goes_on():
    costs = [5, 8, 3, 4]
    packed = baselines.pack([1, 0, 3, 2], costs, 12)
    assert packed.seated == (1, 3) and packed.used == 12
    assert baselines.pack([1, 0, 3, 2], costs, 10).seated == (1,)  # 8 leaves 2: nothing else fits
    assert baselines.pack([0, 1, 2, 3], costs, 10).seated == (0, 2)
    assert baselines.pack([], costs, 10).used == 0
    with pytest.raises(ValueError):
        baselines.pack([0], costs, -1)


def test_turn_cost_is_the_text_plus_a_newline():
    assert baselines.turn_cost("Ana: I bought a kayak.") == count_tokens("Ana: I bought a kayak.") + 1


def test_orders():
    assert baselines.recency_order(4) == [3, 2, 1, 0]
    assert baselines.dense_order([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], [0.0, 1.0]) == [2, 1, 0]
    # ties go to the later turn
    assert baselines.dense_order([[1.0, 0.0], [1.0, 0.0]], [1.0, 0.0]) == [1, 0]
    # RRF, k = 60: turn 1 is 2nd and 1st (1/62 + 1/61), turn 0 is 1st only (1/61), turn 2 is 2nd only
    assert baselines.rrf_order([[0, 1], [1, 2]], 4) == [1, 0, 2]


def test_window_turns_read_refs_and_best_tier():
    dia = {"turn-D1:1": "D1:1", "turn-D1:2": "D1:2", "turn-D2:1": "D2:1"}
    manifest = {"memories": [
        {"ref": ["guideline", "budget", 1], "tier": "full"},
        {"ref": ["conversation", "turn-D1:1", 1], "tier": "pointer", "slice": "recalled_history"},
        {"ref": ["conversation", "turn-D1:1", 1], "tier": "summary", "record": "shared", "new_key": [1]},
        {"ref": ["conversation", "turn-D2:1", 1], "slice": "recalled_history"},  # no tier: full
        {"ref": ["conversation", "someone-else", 1], "tier": "full"},
        {"no_ref": True},
    ]}
    assert window_turns(manifest, dia) == {"D1:1": "summary", "D2:1": "full"}
    assert window_turns({}, dia) == {}


def test_turn_fates_follow_the_turn_from_the_source_list_to_the_window():
    dia = {f"turn-D1:{n}": f"D1:{n}" for n in range(1, 7)}
    manifest = {
        "retrieval": {"items": [{"ref": ["conversation", f"turn-D1:{n}", 1], "origin": origin}
                                for n, origin in ((1, "retrieval"), (2, "adjacent"), (3, "retrieval"),
                                                  (4, "retrieval"), (5, "adjacent"))]
                      + [{"ref": ["guideline", "budget", 1], "origin": "scope"}, {"no_ref": 1}]},
        "excluded": [{"ref": ["conversation", "turn-D1:3", 1], "rule": "slice_budget"},
                     {"ref": ["conversation", "turn-D1:4", 1], "rule": "dedup"}],
        "memories": [{"ref": ["conversation", "turn-D1:1", 1]}, {"ref": ["conversation", "turn-D1:2", 1]}],
    }
    assert turn_fates(manifest, dia) == {"D1:1": SEATED, "D1:2": SEATED_ADJACENT, "D1:3": BELOW_FIT,
                                         "D1:4": EXCLUDED, "D1:5": CUT}
    assert turn_fates({}, dia) == {}  # D1:6, like every turn of an empty manifest, was never retrieved


def test_recalled_history_figures():
    manifest = {"allocation": {"slices": {"recalled_history": {"allowance": 1000, "used": 950, "share": 1000}}}}
    assert recalled_history(manifest) == (1000, 950)
    bare = {"memories": [{"slice": "recalled_history", "tokens": 30}, {"slice": "evidence", "tokens": 5},
                         {"slice": "recalled_history", "tokens": 12}]}
    assert recalled_history(bare) == (None, 42)


def test_share_and_percentile():
    assert share(("a", "b", "c"), {"b", "x"}) == pytest.approx(1 / 3)
    assert share((), {"a"}) == 0
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile([5, 1, 3, 2, 4], 95) == 5
    assert math.isnan(percentile([], 50))


def test_tenant_scenario_validates_and_keeps_dia_ids():
    samples, _ = parse_samples([sample(), sample(sample_id="conv-7")])
    ids = conversation_tenants.tenant_ids(samples)
    assert ids == ["conv-7", "conv-7-1"]
    document = conversation_tenants.scenario(samples, ids)
    assert not list(validator().iter_errors(document))
    memories = document["tenants"][0]["memories"]
    budget, turns = memories[0], memories[1:]
    assert budget["guideline_key"] == "context_budget" and budget["thread_id"] is None
    first = turns[0]
    assert first["id"] == "turn-D1:1" and first["content_json"]["dia_id"] == "D1:1"
    assert first["thread_id"] == "session-1" and first["role"] == "user" and first["valid_from"] == "2023-05-08T13:56:00Z"
    # the speaker's name is the row's speaker, and its content is what was said after the name
    assert {t["role"] for t in turns if t["speaker"] == "Ben"} == {"assistant"}
    rows = {t["content_json"]["dia_id"]: t for t in turns}
    for turn in samples[0].turns:
        assert f"{rows[turn.dia_id]['speaker']}: {rows[turn.dia_id]['content']}" == turn.content
    assert {t["user_id"] for t in turns} == {conversation_tenants.USER_ID}


def test_turn_vectors_attach_to_their_turns_so_the_loader_embeds_nothing():
    from ctxasm.services.load import embed_memories

    samples, _ = parse_samples([sample(), sample(sample_id="conv-7")])
    ids = conversation_tenants.tenant_ids(samples)
    vectors = [[[float(s), float(i)] + [0.0] * 382 for i in range(len(x.turns))] for s, x in enumerate(samples)]
    document = conversation_tenants.scenario(samples, ids)
    conversation_tenants.attach_turn_vectors(document, samples, ids, vectors)
    assert not list(validator().iter_errors(document))
    for number, tenant in enumerate(document["tenants"]):
        turns = tenant["memories"][1:]
        assert [t["embedding"] for t in turns] == vectors[number]
        assert "embedding" not in tenant["memories"][0]  # the budget row is not a turn
    assert embed_memories(document) == 0  # every message turn already has its vector: no model call


def test_question_budget_gives_recalled_history_the_whole_remainder():
    from ctxasm.core.budget import allocate, parse_budget

    content = conversation_tenants.budget_content(5000, conversation_tenants.request_overhead_reserve(1000))
    budget = parse_budget(content)
    allocation = allocate(budget, conversation_tenants.INTENT, {"guidelines": 100, "question": 12})
    assert allocation.slices["recalled_history"] == allocation.remainder
    assert allocation.unallocated == 0


def test_project_conversation_set_shape():
    from ctxasm_dev.evaluation.conversations import DEFAULT_BUDGETS

    samples, notes = read_samples(REPO / "db" / "tests" / "conversations" / "ctxasm_conversations.json")
    assert len(samples) == 3
    assert notes.counts["adversarial questions (skipped)"] >= 3
    assert not {k for k in notes.counts if "evidence" in k or "without" in k}  # the project's set is clean
    questions = [q for s in samples for q in s.questions]
    assert 40 <= len(questions) <= 50
    assert {q.category for q in questions} == {1, 2, 3, 4}
    for s in samples:
        assert 25 <= len(s.sessions) <= 30
        assert all(15 <= len(session.turns) <= 30 for session in s.sessions)
        assert [session.number for session in s.sessions] == list(range(1, len(s.sessions) + 1))
        # no budget under test holds a whole sample: the largest holds well under half of one
        assert sum(baselines.turn_cost(t.content) for t in s.turns) > 2.5 * max(DEFAULT_BUDGETS)
    multi_hop = [q for q in questions if q.category == 1]
    assert all(len({d.split(":")[0] for d in q.evidence}) >= 2 for q in multi_hop)
    raw = json.loads((REPO / "db" / "tests" / "conversations" / "ctxasm_conversations.json").read_text())
    assert all(isinstance(s["qa"], list) for s in raw)
    for s in raw:  # the written dates follow the session numbers, so the reader never has to reorder them
        conversation = s["conversation"]
        numbers = sorted(int(k.split("_")[1]) for k in conversation
                         if k.startswith("session_") and not k.endswith("_date_time"))
        dates = [parse_session_time(conversation[f"session_{n}_date_time"]) for n in numbers]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)


def test_misses_name_each_turn_a_baseline_held_and_ctxasm_did_not():
    from ctxasm_dev.evaluation.conversation_report import format_report, misses, summarize
    from ctxasm_dev.evaluation.conversations import Evaluation, QuestionResult, Window

    def result(number, evidence, seated, fates, hybrid, budget=1000):
        window = Window(budget, 900, {d: "full" for d in seated}, 0.01, None, fates=fates)
        return QuestionResult("conv-7", "t", number, f"question {number}?", 4, "single-hop", evidence, budget, window,
                              {name: frozenset(hybrid) for name in BASELINES}, {name: 0 for name in BASELINES})

    evaluation = Evaluation("f.json", (1000,), ("relevance",), turn_texts={"conv-7": {
        "D12:3": "Ana: a " + "long " * 40 + "turn", "D3:12": "Ben: short"}})
    evaluation.results += [
        result(1, ("D12:3", "D3:12", "D1:1"), ["D1:1"], {"D12:3": BELOW_FIT}, ["D12:3", "D3:12", "D1:1"]),
        result(2, ("D1:1",), ["D1:1"], {}, []),  # ctxasm's only: counted the other way
        result(3, ("D2:2",), [], {}, []),  # missed by both: neither list
    ]
    found = misses(evaluation, 1000, "hybrid")
    assert found["questions_won"] == 1
    [lost] = found["questions_lost"]
    assert (lost["question_number"], lost["category"]) == (1, "single-hop")
    # in conversation order; a turn the selection never read is named as such
    assert [(m["dia_id"], m["fate"]) for m in lost["missed"]] == [("D3:12", NOT_READ), ("D12:3", BELOW_FIT)]
    assert lost["missed"][0]["text"] == "Ben: short"
    summary = summarize(evaluation, "hybrid")
    assert summary["budgets"][0]["misses"] == found and "misses" not in summarize(evaluation)["budgets"][0]
    text = format_report(summary)
    assert "questions at budget 1000 where hybrid held evidence ctxasm did not (1; the reverse: 1)" in text
    assert "conv-7 q1 [single-hop] question 1?" in text and f"  D3:12 {NOT_READ}: Ben: short" in text
    [long_line] = [line for line in text.splitlines() if line.startswith("  D12:3")]
    assert long_line.endswith("...") and len(long_line) < 140


def test_command_line_options():
    from ctxasm_dev.evaluation.conversation_main import parser

    args = parser().parse_args(["file.json", "--budgets", "500,3000", "--limit-questions", "4", "--json"])
    assert (args.path, args.budgets, args.limit_questions, args.json) == ("file.json", (500, 3000), 4, True)
    assert parser().parse_args(["file.json"]).budgets == (1000, 2000, 4000)
    assert parser().parse_args(["f", "--samples", "conv-26, conv-30,conv-26"]).samples == ("conv-26", "conv-30")
    assert parser().parse_args(["f"]).samples is None
    assert parser().parse_args(["f", "--misses", "hybrid"]).misses == "hybrid"
    for bad in (["f", "--budgets", "1000,x"], ["f", "--budgets", "0"], ["f", "--limit-questions", "0"],
                ["f", "--samples", " , "], ["f", "--misses", "ctxasm"]):
        with pytest.raises(SystemExit):
            parser().parse_args(bad)


def test_the_run_embeds_on_every_core_unless_told_otherwise(monkeypatch):
    import os

    from ctxasm_dev.evaluation.conversation_main import _bulk_embedding_threads

    monkeypatch.delenv("CTXASM_EMBEDDING_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _bulk_embedding_threads() == str(cores) == os.environ["CTXASM_EMBEDDING_THREADS"]
    monkeypatch.setenv("CTXASM_EMBEDDING_THREADS", "3")
    assert _bulk_embedding_threads() == "3"


# --- LongMemEval's format ---------------------------------------------------------------------------------------

LONGMEMEVAL = REPO / "db" / "tests" / "conversations" / "longmemeval_synthetic.json"


def longmemeval_instance(**overrides):
    value = {"question_id": "q-7", "question_type": "multi-session", "question": "Where did I move to?",
             "answer": "Leeds", "question_date": "2024/02/01 (Thu) 10:00",
             "haystack_session_ids": ["a", "b", "c"],
             "haystack_dates": ["2024/01/05 (Fri) 09:30", "not a date", "2024/01/20 (Sat) 18:00"],
             "haystack_sessions": [
                 [{"role": "user", "content": "I am moving to Leeds next month.", "has_answer": True},
                  {"role": "assistant", "content": "Exciting! Have you found a flat?"}],
                 [{"role": "user", "content": "Any tips for packing books?"}, {"role": "assistant", "content": ""}],
                 [{"role": "user", "content": "The removal van is booked."},
                  {"role": "assistant", "content": "Great, one less thing to do."}]],
             "answer_session_ids": ["a", "c", "zzz"]}
    value.update(overrides)
    return value


def test_longmemeval_instances_read_as_samples_with_one_question():
    [sample], notes = parse_longmemeval([longmemeval_instance()])
    assert sample.sample_id == "q-7" and (sample.speaker_a, sample.speaker_b) == ("user", "assistant")
    assert sample.asked_at == datetime(2024, 2, 1, 10, 0, tzinfo=UTC)
    assert [s.number for s in sample.sessions] == [1, 2, 3]
    assert sample.sessions[0].at == datetime(2024, 1, 5, 9, 30, tzinfo=UTC)
    # an undated session goes a day after the one before; the order of all turns stays total
    assert sample.sessions[1].at == datetime(2024, 1, 6, 9, 30, 10, tzinfo=UTC)
    first = sample.turns[0]
    assert (first.dia_id, first.speaker, first.content) == ("D1:1", "user", "I am moving to Leeds next month.")
    [question] = sample.questions
    assert question.category_name == "multi-session"
    # session a: its has_answer turn; session c marks none, so every turn of it counts; zzz names no session
    assert question.evidence == ("D1:1", "D3:1", "D3:2")
    assert notes.counts["answer sessions without has_answer turns (every turn counts)"] == 1
    assert notes.counts["answer session ids naming no session (ignored)"] == 1
    assert notes.counts["sessions without a readable date"] == 1
    assert notes.counts["turns without text"] == 1


def test_longmemeval_abstention_questions_are_skipped_and_a_bad_file_is_refused():
    [sample], notes = parse_longmemeval([longmemeval_instance(question_id="q-7_abs")])
    assert sample.questions == () and notes.counts["abstention questions (skipped)"] == 1
    with pytest.raises(ConversationFileError, match=r"haystack_sessions"):
        parse_longmemeval([{"haystack_sessions": "no"}])


def test_the_shipped_synthetic_longmemeval_file_is_read_through_the_one_reader():
    samples, notes = read_samples(LONGMEMEVAL)
    questions = [q for s in samples for q in s.questions]
    assert len(questions) == 4 and notes.counts["abstention questions (skipped)"] == 1
    assert {q.category_name for q in questions} == {"single-session-user", "multi-session", "knowledge-update",
                                                    "temporal-reasoning"}
    assert all(s.asked_at > s.last_time for s in samples)
    # the thread of a question carries the sample's own question date
    assert conversation_tenants.question_time(samples[0]) == samples[0].asked_at
