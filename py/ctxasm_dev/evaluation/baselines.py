"""The conversation evaluation's baselines: rank a sample's turns, then pack them into a token allowance.

Each baseline orders every turn of the sample by its own signal, and `pack` seats turns in that order into the
same allowance ctxasm's recalled history received: a turn costs the o200k_base tokens of its text plus one for
the newline that separates it from the next; a turn that does not fit is skipped and the next, possibly
shorter, one still gets its chance (the rule ctxasm's fitter applies to its candidates). Ties go to the later
turn.

- recency: latest turns first;
- BM25: Okapi BM25 (bm25.py) of the question over the turns; only turns sharing a term with the question;
- dense: cosine similarity of all-MiniLM-L6-v2 embeddings (ctxasm.ml.embedding) of question and turn;
- hybrid: reciprocal rank fusion (k = 60) of the BM25 and dense rankings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxasm.core.tokens import count_tokens
from ctxasm_dev.evaluation.bm25 import BM25

RRF_K = 60
BASELINES = ("recency", "BM25", "dense", "hybrid")
PACKING_RULE = ("a baseline packs turns in its score order into the allowance ctxasm's recalled history "
                "received; a turn costs the o200k_base tokens of its text plus 1 (a newline); a turn that "
                "does not fit is skipped and the next may still fit")


def turn_cost(text: str) -> int:
    """What a baseline pays for one turn: its o200k_base tokens plus one newline."""
    return count_tokens(text) + 1


@dataclass(frozen=True)
class Packed:
    #: indices of the seated turns, in ranking order
    seated: tuple[int, ...]
    used: int


def pack(order: Sequence[int], costs: Sequence[int], allowance: int) -> Packed:
    """Seat turns in `order` while they fit `allowance`; one that does not fit is skipped, not a stop."""
    if allowance < 0:
        raise ValueError(f"allowance must be >= 0, got {allowance}")
    left = allowance
    seated: list[int] = []
    for index in order:
        if costs[index] <= left:
            seated.append(index)
            left -= costs[index]
    return Packed(tuple(seated), allowance - left)


def _by_score(scores: Sequence[float], keep: Sequence[bool] | None = None) -> list[int]:
    """Indices by score descending, ties to the later turn (higher index: turns are in time order)."""
    indices = [i for i in range(len(scores)) if keep is None or keep[i]]
    return sorted(indices, key=lambda i: (-scores[i], -i))


def recency_order(count: int) -> list[int]:
    """Turns are indexed in time order, so the latest first is simply the reverse."""
    return list(range(count - 1, -1, -1))


def bm25_order(index: BM25, question: str) -> list[int]:
    scores = index.scores(question)
    return _by_score(scores, [s > 0 for s in scores])


def dense_order(turn_vectors: Sequence[Sequence[float]], question_vector: Sequence[float]) -> list[int]:
    """Cosine similarity; the vectors are unit length (embedding.embed normalises), so a dot product."""
    import numpy

    if not len(turn_vectors):
        return []
    similarities = numpy.asarray(turn_vectors, dtype=float) @ numpy.asarray(question_vector, dtype=float)
    return _by_score(similarities.tolist())


def rrf_order(rankings: Sequence[Sequence[int]], count: int, k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the rankings a turn appears in (rank from 1)."""
    fused = [0.0] * count
    present = [False] * count
    for ranking in rankings:
        for rank, index in enumerate(ranking, start=1):
            fused[index] += 1.0 / (k + rank)
            present[index] = True
    return _by_score(fused, present)


def rankings(question: str, count: int, index: BM25, turn_vectors: Sequence[Sequence[float]],
             question_vector: Sequence[float]) -> dict[str, list[int]]:
    """Every baseline's order of a sample's `count` turns for one question."""
    lexical = bm25_order(index, question)
    dense = dense_order(turn_vectors, question_vector)
    return {"recency": recency_order(count), "BM25": lexical, "dense": dense,
            "hybrid": rrf_order([lexical, dense], count)}
