"""Synthetic embeddings for the benchmark tenants: cheap, deterministic, and meaningful enough for retrieval.

Running all-MiniLM-L6-v2 over a million rows would take hours on two CPUs, so rows get vectors from a
stand-in space: every vocabulary word has a seeded random unit vector, and a text's embedding is the
normalised sum of its words' vectors, each weighted by how often it occurs in the text and by how rare it is
in the corpus (`TextModel.weights`). Texts that share words, rare words above all, lie near each other, so
the HNSW index has real neighbourhoods to find. The benchmark question is embedded in the same space for
selection; the real model's question embedding is timed apart (see runner.py).
"""

from __future__ import annotations

import numpy as np

from ctxasm_dev.bench.text_model import TextModel, corpus_model, words


class SyntheticSpace:
    """Word vectors of one vocabulary; `embed` maps texts into the space."""

    def __init__(self, model: TextModel, dimensions: int, seed: int = 8):
        vocabulary = model.vocabulary
        self.dimensions = dimensions
        self.index = {word: i for i, word in enumerate(vocabulary)}
        self.weights = np.array([model.weights[w] for w in vocabulary], dtype=np.float32)
        vectors = np.random.default_rng(seed).standard_normal((len(vocabulary), dimensions), dtype=np.float32)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        self._weighted = self.vectors * self.weights[:, None]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, one row per text (a text with no known word gets the first axis)."""
        index = self.index
        size = len(index)
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        group = 1024  # texts per step: a step's word-count matrix is group x vocabulary
        for first in range(0, len(texts), group):
            ids = [[index[w] for w in words(text) if w in index] for text in texts[first:first + group]]
            flat = np.fromiter((i for known in ids for i in known), dtype=np.int64)
            rows = np.repeat(np.arange(len(ids)), [len(known) for known in ids])
            counts = np.bincount(rows * size + flat, minlength=len(ids) * size).reshape(len(ids), size)
            out[first:first + len(ids)] = counts.astype(np.float32) @ self._weighted
        norms = np.linalg.norm(out, axis=1)
        empty = norms == 0
        out[empty, 0] = 1.0
        norms[empty] = 1.0
        return out / norms[:, None]

    def literal(self, text: str) -> str:
        """One text's embedding in pgvector's text form (what select_window takes as the question vector)."""
        return literals(self.embed([text]))[0]


def literals(vectors: np.ndarray) -> list[str]:
    """pgvector text literals of unit vectors, four decimals each, made without a Python loop per number:
    every value becomes the fixed-width bytes "-0.1234," (a space for a plus sign, which pgvector skips)."""
    count, dimensions = vectors.shape
    scaled = np.rint(np.abs(vectors.astype(np.float64)) * 10_000).astype(np.int64)
    whole, fraction = scaled // 10_000, scaled % 10_000
    cells = np.empty((count, dimensions, 8), dtype=np.uint8)
    cells[..., 0] = np.where(vectors < 0, ord("-"), ord(" "))
    cells[..., 1] = ord("0") + whole
    cells[..., 2] = ord(".")
    for place, divisor in enumerate((1000, 100, 10, 1), start=3):
        cells[..., place] = ord("0") + (fraction // divisor) % 10
    cells[..., 7] = ord(",")
    cells[:, -1, 7] = ord("]")
    text = np.concatenate([np.full((count, 1), ord("["), dtype=np.uint8), cells.reshape(count, -1)], axis=1)
    return [row.tobytes().decode("ascii") for row in text]


_spaces: dict[int, SyntheticSpace] = {}


def space(dimensions: int) -> SyntheticSpace:
    """The benchmark's space of `dimensions` (the embedding columns' width), built once per process."""
    if dimensions not in _spaces:
        _spaces[dimensions] = SyntheticSpace(corpus_model(), dimensions)
    return _spaces[dimensions]
