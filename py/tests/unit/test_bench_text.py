"""The benchmark's corpus-like text and synthetic embeddings: seeded, shaped like the corpus, meaningful."""

from __future__ import annotations

import random

import numpy as np

from ctxasm_dev.bench import synthetic_embedding, text_model


def test_texts_are_seeded_and_have_the_lengths_of_their_kind():
    model = text_model.corpus_model()
    first = [model.text(random.Random("seed"), "kb_chunk") for _ in range(3)]
    again = [model.text(random.Random("seed"), "kb_chunk") for _ in range(3)]
    assert first == again
    rng = random.Random(1)
    for kind, (low, _median, high) in text_model.LENGTHS.items():
        for _ in range(50):
            assert low <= len(model.text(rng, kind).split()) <= high, kind
    for _ in range(50):
        fact = model.fact(rng).split()
        assert len(fact) <= text_model.FACT_WORDS and fact[-1].endswith((".", "!", "?"))


def test_text_keeps_the_corpus_vocabulary_and_its_skew():
    model = text_model.corpus_model()
    rng = random.Random(2)
    words = [w for _ in range(300) for w in text_model.words(model.text(rng, "kb_chunk"))]
    assert set(words) <= set(model.vocabulary)
    counts = sorted(np.unique(words, return_counts=True)[1], reverse=True)
    # Zipf-like: the most frequent words are far more frequent than the typical one
    assert counts[0] > 20 * np.median(counts)


def test_questions_are_distinct_and_seeded():
    questions = text_model.questions(30)
    assert len(set(questions)) == 30 and questions == text_model.questions(30)
    assert all(q.endswith("?") and 3 <= len(q.split()) <= 24 for q in questions)
    assert text_model.questions(5, seed=9) != questions[:5]


def test_synthetic_embeddings_are_unit_vectors_near_for_shared_words():
    space = synthetic_embedding.space(16)
    texts = ["reciprocal rank fusion merges ranked lists", "reciprocal rank fusion of two ranked lists",
             "row level security policies on the tenant", ""]
    vectors = space.embed(texts)
    assert vectors.shape == (4, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert np.allclose(space.embed(texts[:2]), vectors[:2])  # a text's vector does not depend on its batch


def test_literals_are_pgvector_text_within_the_rounding():
    vectors = synthetic_embedding.space(8).embed(["tenant isolation with row level security", "HNSW index build"])
    literals = synthetic_embedding.literals(vectors)
    for literal, vector in zip(literals, vectors):
        assert literal.startswith("[") and literal.endswith("]")
        parsed = np.array([float(x) for x in literal[1:-1].split(",")])
        assert np.abs(parsed - vector).max() <= 0.5e-4 + 1e-7
