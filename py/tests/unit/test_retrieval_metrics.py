"""The evaluation metrics, on rankings whose figures can be worked out by hand."""

import math

import pytest

from ctxasm_dev.evaluation.retrieval import ndcg_at, rankings_for, recall_at

GRADES = {"a": 2, "b": 1, "c": 1}


def test_perfect_ranking_scores_one():
    assert ndcg_at(["a", "b", "c", "x"], GRADES) == pytest.approx(1.0)


def test_ndcg_by_hand():
    # gains 0 (x), 3 (a) at ranks 1, 2; ideal 3, 1, 1 at ranks 1..3
    expected = (3 / math.log2(3)) / (3 + 1 / math.log2(3) + 1 / math.log2(4))
    assert ndcg_at(["x", "a"], GRADES) == pytest.approx(expected)


def test_recall_counts_every_judged_grade():
    assert recall_at(["x", "b", "a"], GRADES, 2) == pytest.approx(1 / 3)
    assert recall_at(["x", "b", "a"], GRADES, 3) == pytest.approx(2 / 3)
    assert recall_at([], GRADES, 10) == 0


def test_rankings_split_one_retrieval_into_three():
    items = [
        {"ref": ["kb_chunk", "a", 1], "lexical_rank": 2, "vector_rank": None, "fused": 0.016129},
        {"ref": ["kb_chunk", "b", 1], "lexical_rank": 1, "vector_rank": 2, "fused": 0.032522},
        {"ref": ["kb_chunk", "c", 1], "lexical_rank": None, "vector_rank": 1, "fused": 0.016393},
    ]
    ranked = rankings_for(items)
    assert ranked == {"lexical": ["b", "a"], "vector": ["c", "b"], "hybrid": ["b", "c", "a"]}


def test_the_hybrid_scorer_ranks_by_its_logit_when_items_carry_one():
    items = [
        {"ref": ["kb_chunk", "a", 1], "lexical_rank": 2, "vector_rank": None, "fused": 0.016129, "logit": 1.5},
        {"ref": ["kb_chunk", "b", 1], "lexical_rank": 1, "vector_rank": 2, "fused": 0.032522, "logit": -0.2},
        {"ref": ["kb_chunk", "c", 1], "lexical_rank": None, "vector_rank": 1, "fused": 0.016393, "logit": 1.5},
    ]
    assert rankings_for(items)["hybrid-calibrated"] == ["a", "c", "b"]
