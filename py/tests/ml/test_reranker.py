"""reranker: FlagReranker on a local cross-encoder, raw logits (the database applies the sigmoid)."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pytest

from ctxasm.errors import CtxasmError
from ctxasm.ml import reranker

QUERY = "compare what the Letta paper and the AgentCore docs say about memory eviction"
PASSAGES = [
    "The Letta paper pages memory out of the context window when it fills.",
    "AgentCore memory events expire after the configured retention period.",
    "Helios-RAG scored 0.78 nDCG@10 on BEIR after the contamination fix.",
    "Bananas are yellow.",
    "",
]


@pytest.fixture(scope="module")
def tiny(tiny_cross_encoder: Path) -> reranker.Reranker:
    return reranker.Reranker(tiny_cross_encoder)


def direct_logits(model_dir: Path, query: str, passages: list[str]) -> list[float]:
    """What the model itself outputs, one pair at a time, without FlagEmbedding."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), local_files_only=True).eval()
    out = []
    with torch.no_grad():
        for passage in passages:
            enc = tokenizer(query, passage, return_tensors="pt", truncation=True, max_length=512)
            out.append(float(model(**enc).logits[0, 0]))
    return out


def test_logits_are_raw_model_outputs_not_sigmoid(tiny, tiny_cross_encoder):
    scores = tiny.logits(QUERY, PASSAGES)
    assert all(isinstance(s, float) for s in scores)
    assert all(s == round(s, 6) for s in scores)
    # The tiny model's logits spread outside (0, 1); a sigmoid-squashed score never could.
    assert any(s < 0 for s in scores) and any(s > 1 for s in scores)
    # FlagReranker encodes an empty passage as a single sequence ([CLS] q [SEP]), the tokenizer's pair call
    # would add a second [SEP]: compare the non-empty ones with what the model itself outputs.
    present = [i for i, p in enumerate(PASSAGES) if p]
    direct = direct_logits(tiny_cross_encoder, QUERY, [PASSAGES[i] for i in present])
    assert [scores[i] for i in present] == pytest.approx(direct, abs=1e-4)


def test_one_logit_per_passage_in_passage_order(tiny):
    scores = tiny.logits(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES)
    assert len(set(scores)) == len(PASSAGES)  # distinct, so the order checks below mean something
    assert tiny.logits(QUERY, PASSAGES[::-1])[::-1] == pytest.approx(scores, abs=1e-5)
    assert [tiny.logits(QUERY, [p])[0] for p in PASSAGES] == pytest.approx(scores, abs=1e-5)
    assert tiny.logits(QUERY, PASSAGES, batch_size=2) == pytest.approx(scores, abs=1e-5)


def test_logits_are_deterministic(tiny, tiny_cross_encoder):
    first = tiny.logits(QUERY, PASSAGES)
    assert tiny.logits(QUERY, PASSAGES) == first
    # A second load of the same directory scores identically.
    assert reranker.Reranker(tiny_cross_encoder).logits(QUERY, PASSAGES) == first


def test_empty_passage_list_needs_no_model(tiny_cross_encoder):
    fresh = reranker.Reranker(tiny_cross_encoder)
    assert fresh.logits(QUERY, []) == []
    assert fresh._model is None


def test_bad_arguments(tiny):
    with pytest.raises(TypeError, match="sequence of strings"):
        tiny.logits(QUERY, "one passage")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"passages\[1\]"):
        tiny.logits(QUERY, ["ok", None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        tiny.logits(QUERY, ["ok"], batch_size=0)


def test_name_records_the_model_directory(tiny):
    assert tiny.name == "bge-reranker:tiny-bge"


def test_configured_reranker_reads_the_environment(monkeypatch, tiny_cross_encoder):
    monkeypatch.delenv(reranker.ENV_VAR, raising=False)
    assert reranker.configured_reranker() is None
    monkeypatch.setenv(reranker.ENV_VAR, "  ")
    assert reranker.configured_reranker() is None
    monkeypatch.setenv(reranker.ENV_VAR, str(tiny_cross_encoder))
    configured = reranker.configured_reranker()
    assert isinstance(configured, reranker.Reranker)
    assert configured.path == tiny_cross_encoder.resolve()
    assert configured.name == "bge-reranker:tiny-bge"
    assert reranker.configured_reranker() is configured  # loaded once per process, not per call


def test_a_missing_directory_raises_naming_the_path(tmp_path, monkeypatch):
    missing = tmp_path / "no-such-model"
    with pytest.raises(reranker.RerankerUnavailable, match="no such directory") as info:
        reranker.Reranker(missing)
    assert str(missing) in str(info.value)
    assert isinstance(info.value, CtxasmError) and info.value.code == "reranker_unavailable"
    monkeypatch.setenv(reranker.ENV_VAR, str(missing))
    with pytest.raises(reranker.RerankerUnavailable) as info:
        reranker.configured_reranker()
    assert str(missing) in str(info.value) and reranker.ENV_VAR in str(info.value)


def test_a_directory_that_is_not_a_cross_encoder_is_refused(tmp_path, tiny_cross_encoder):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(reranker.RerankerUnavailable, match="no config.json") as info:
        reranker.Reranker(empty)
    assert str(empty) in str(info.value)

    a_file = tmp_path / "model.bin"
    a_file.write_bytes(b"")
    with pytest.raises(reranker.RerankerUnavailable, match="not a directory"):
        reranker.Reranker(a_file)

    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text((tiny_cross_encoder / "config.json").read_text())
    with pytest.raises(reranker.RerankerUnavailable, match="no model weights"):
        reranker.Reranker(no_weights)

    # A two-label classifier would have its logits interleaved by FlagReranker: refused up front.
    two_labels = tmp_path / "two-labels"
    two_labels.mkdir()
    for item in tiny_cross_encoder.iterdir():
        (two_labels / item.name).write_bytes(item.read_bytes())
    config = json.loads((two_labels / "config.json").read_text())
    config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1"}
    config.pop("num_labels", None)
    (two_labels / "config.json").write_text(json.dumps(config))
    with pytest.raises(reranker.RerankerUnavailable, match="one output logit is needed, this one has 2"):
        reranker.Reranker(two_labels)


def test_model_loads_once_under_concurrent_first_use(monkeypatch, tiny_cross_encoder):
    fresh = reranker.Reranker(tiny_cross_encoder)
    loads: list[int] = []

    class FakeFlagReranker:
        def compute_score(self, pairs, **kwargs):
            assert kwargs["normalize"] is False  # raw logits are asked for, never the sigmoid
            return [float(len(p)) for _, p in pairs]

    def slow_load():
        loads.append(1)
        time.sleep(0.05)
        return FakeFlagReranker()

    monkeypatch.setattr(fresh, "_load", slow_load)
    results: list[list[float]] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.logits("q", ["ab", "abcd"])))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [1]
    assert results == [[2.0, 4.0]] * 8


def test_assembly_reranks_with_the_configured_model_and_replay_reuses_the_scores(
        tiny_cross_encoder, demo_target, monkeypatch):
    """The cross-encoder's logits become the relevance scores (the sigmoid is the database's), the manifest
    names the model, and replay matches without the model: it reuses the recorded scores."""
    from ctxasm.local import pgconn
    from ctxasm.services.assemble import assemble, parse_time
    from ctxasm.services.replay import replay
    from ctxasm.ml.reranker import Reranker
    from ctxasm.engines.postgres import PostgresStore
    from ctxasm.core.compose import WindowSpec

    monkeypatch.setenv("CTXASM_RERANKER_PATH", str(tiny_cross_encoder))
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check",
                      question="Is Helios-RAG still the one to beat on BEIR?")
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, parse_time("2026-09-28T12:00:00"))
        assert store.round_trips == 3
    manifest = window.manifest
    assert manifest["scorer"] == f"bge-reranker:{tiny_cross_encoder.name}"
    model = Reranker(tiny_cross_encoder)
    facts = [m for m in manifest["memories"] if m["slice"] == "durable_facts"]
    expected = model.logits(spec.question, ["Helios-RAG achieves 0.78 nDCG@10 on the BEIR benchmark (corrected)."])
    helios = next(m for m in facts if m["ref"][1] == "fact_helios_rag_beir_ndcg10")
    # Scored in a batch with the other candidates there, alone here: float32 padding and batching move the
    # sixth decimal (2.078665 vs 2.078668 was seen), so the pair is compared to 1e-4.
    assert helios["scores"]["rerank_logit"] == pytest.approx(expected[0], abs=1e-4)
    assert helios["scores"]["rerank"] == pytest.approx(1 / (1 + math.exp(-expected[0])), abs=1e-4)

    monkeypatch.setenv("CTXASM_RERANKER_PATH", "/nonexistent/reranker")
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        result = replay(PostgresStore(connection), "acme", window.manifest_id)
    assert result.status == "match", result.reason
