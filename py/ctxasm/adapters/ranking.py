"""Ranking a caller's own memories by meaning, for the adapters' `search`: the database's hybrid search
(CTX_TOOLS.search_memory) covers the knowledge base, while Mem0 memories and LangGraph items are facts. The
question and the texts are embedded with the model ctxasm embeds with (all-MiniLM-L6-v2, loaded once per process)
and ordered by cosine similarity."""

from __future__ import annotations

from collections.abc import Sequence


def by_meaning(query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
    """(index into `texts`, cosine similarity), best first."""
    if not texts:
        return []
    import numpy as np

    from ctxasm.ml import embedding

    vectors = np.asarray(embedding.embed([query, *texts]), dtype=float)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    scores = unit[1:] @ unit[0]
    return sorted(((i, round(float(s), 4)) for i, s in enumerate(scores)), key=lambda pair: -pair[1])
