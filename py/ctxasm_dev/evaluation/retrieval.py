"""recall@k and nDCG@10 of the retrieval pipeline on the labelled query set.

The database's own retrieval (ctxasm.retrieve_for_question over the evidence) is run once per query with a
large limit, so the same call gives every ranking: lexical only (BM25 rank), vector only (cosine rank), hybrid
(the retrieval step's reciprocal rank fusion), hybrid-calibrated (the selection step's scorer,
ctxasm.hybrid_logit, over the retrieved items) and hybrid + rerank (the fused candidates reordered by the
cross-encoder, when one is configured). Metrics are the standard ones: recall@k counts grade >= 1 judgments,
nDCG@10 uses the grades (gain 2^grade - 1, log2 discount). Figures are given over all queries and per kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEPTH = 50
CANDIDATES = 20  # what the assembler admits as evidence candidates, and what rerank reorders


@dataclass(frozen=True)
class Ranking:
    name: str
    ids: list[str]


def ndcg_at(ranked: Sequence[str], grades: dict[str, int], k: int = 10) -> float:
    gain = sum((2 ** grades.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return gain / best if best else 0.0


def recall_at(ranked: Sequence[str], grades: dict[str, int], k: int) -> float:
    relevant = {doc for doc, grade in grades.items() if grade >= 1}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def rankings_for(items: list[dict[str, Any]]) -> dict[str, list[str]]:
    def by(key: str) -> list[str]:
        ranked = sorted((i for i in items if i[key] is not None), key=lambda i: i[key])
        return [i["ref"][1] for i in ranked]

    fused = sorted(items, key=lambda i: (-i["fused"], i["ref"][0], i["ref"][1]))
    rankings = {"lexical": by("lexical_rank"), "vector": by("vector_rank"), "hybrid": [i["ref"][1] for i in fused]}
    if all("logit" in i for i in items):
        scored = sorted(items, key=lambda i: (-i["logit"], i["ref"][0], i["ref"][1]))
        rankings["hybrid-calibrated"] = [i["ref"][1] for i in scored]
    return rankings


def evaluate(queries: list[dict[str, Any]], retrieve: Callable[[str], list[dict[str, Any]]],
             texts: dict[str, str], rerank: Callable[[str, list[str]], list[float]] | None = None,
             on_progress: Callable[[int], None] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Mean metrics per pipeline over all queries ("all") and over the queries of each kind."""
    groups: dict[str, list[dict[str, Any]]] = {"all": list(queries)}
    for query in queries:
        groups.setdefault(query.get("kind", "?"), []).append(query)
    per_query = {id(query): _metrics(query, retrieve, texts, rerank, on_progress) for query in queries}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for group, members in groups.items():
        totals: dict[str, dict[str, float]] = {}
        for query in members:
            for name, row in per_query[id(query)].items():
                summed = totals.setdefault(name, dict.fromkeys(row, 0.0))
                for metric, value in row.items():
                    summed[metric] += value
        results[group] = {name: {k: v / len(members) for k, v in row.items()} for name, row in totals.items()}
    return results


def _metrics(query: dict[str, Any], retrieve: Callable[[str], list[dict[str, Any]]], texts: dict[str, str],
             rerank: Callable[[str, list[str]], list[float]] | None,
             on_progress: Callable[[int], None] | None) -> dict[str, dict[str, float]]:
    """Each pipeline's metrics for one query."""
    ranked = rankings_for(retrieve(query["query"]))
    if rerank is not None:
        head = ranked["hybrid"][:CANDIDATES]
        scores = rerank(query["query"], [texts[i] for i in head])
        ranked["hybrid+rerank"] = [doc for _, doc in sorted(zip(scores, head), key=lambda p: (-p[0], p[1]))]
    if on_progress:
        on_progress(1)
    return {name: {"recall@5": recall_at(ids, query["relevant"], 5), "recall@10": recall_at(ids, query["relevant"], 10),
                   "recall@20": recall_at(ids, query["relevant"], 20), "nDCG@10": ndcg_at(ids, query["relevant"])}
            for name, ids in ranked.items()}


def table(results: dict[str, dict[str, float]]) -> str:
    columns = ["recall@5", "recall@10", "recall@20", "nDCG@10"]
    lines = [f"{'pipeline':<18}" + "".join(f"{c:>11}" for c in columns)]
    for name, row in results.items():
        lines.append(f"{name:<18}" + "".join(f"{row[c]:>11.3f}" for c in columns))
    return "\n".join(lines)


def load_queries(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["queries"]
