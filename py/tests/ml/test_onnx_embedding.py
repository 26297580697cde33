"""The ONNX sentence encoder against the PyTorch one, its export cache, and a run time without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ctxasm.ml import embedding
from ctxasm.ml import bert_onnx, onnx_embedding
from ctxasm.engines.searchable import embedding_text

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "db" / "tests" / "corpus"
MIN_COSINE = 0.999
TORCH_MODULES = ("torch", "transformers", "sentence_transformers", "FlagEmbedding")


def corpus_texts() -> list[str]:
    """Every text the loader embeds for the research corpus (each searchable row version, as
    searchable.embedding_text names it) and every query of its labelled query set."""
    document = json.loads((CORPUS / "research_corpus.json").read_text(encoding="utf-8"))
    texts: list[str] = []
    for tenant in document["tenants"]:
        for memory in tenant["memories"]:
            current = dict(memory)
            for record in [memory, *memory.get("versions", [])]:
                current.update(record)
                text = embedding_text(memory["type"], current)
                if text is not None and (record is memory or "content" in record):
                    texts.append(text)
    queries = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))["queries"]
    return texts + [q["query"] for q in queries]


@pytest.fixture(scope="module")
def pytorch_model():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(embedding.model_dir()), device="cpu", local_files_only=True)


def test_onnx_matches_pytorch_on_every_text_of_the_research_corpus(pytorch_model):
    texts = corpus_texts()
    assert len(texts) > 150  # the corpus's chunks and the 47 queries: a check on the check
    assert max(len(t.split()) for t in texts) > 60  # whole chunks, not only titles
    reference = pytorch_model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    onnx = np.array(embedding.embed(texts))  # the run-time path: batched, rounded to 6 places
    cosines = (reference * onnx).sum(axis=1) / np.linalg.norm(reference, axis=1) / np.linalg.norm(onnx, axis=1)
    worst = int(cosines.argmin())
    assert cosines[worst] >= MIN_COSINE, f"cosine {cosines[worst]:.6f} on text {worst}: {texts[worst][:80]!r}"


def test_truncation_and_padding_follow_sentence_transformers(pytorch_model):
    # Longer than max_seq_length (256 tokens), an empty text and a short one in one padded batch.
    texts = ["retrieval " * 400, "", "ok", "Helios-RAG scored 0.78 nDCG@10 on BEIR after the contamination fix."]
    assert onnx_embedding.max_length(embedding.model_dir()) == pytorch_model.max_seq_length == 256
    reference = pytorch_model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    encoder = embedding.model()
    together = encoder.encode(texts)
    alone = np.vstack([encoder.encode([t]) for t in texts])
    assert np.abs(together - reference).max() < 1e-5
    assert np.abs(alone - together).max() < 1e-5  # padding changes nothing


@pytest.mark.slow  # exports the 90 MB model
def test_export_is_made_once_and_again_when_stale(tmp_path):
    model_dir = embedding.model_dir()
    first = onnx_embedding.ensure_export(model_dir, "minilm", directory=tmp_path)
    assert first.made and first.path == tmp_path / "model.onnx"
    again = onnx_embedding.ensure_export(model_dir, "minilm", directory=tmp_path)
    assert not again.made and "up to date" in again.describe()
    stamp_file = tmp_path / onnx_embedding.STAMP_FILE
    stamp = json.loads(stamp_file.read_text())
    assert stamp["source"]["builder_sha256"] and stamp["source"]["weights_bytes"] > 80_000_000
    # Another builder (or other weights) leaves a stamp that no longer matches: the export is made again.
    stamp["source"]["builder_sha256"] = "0" * 64
    stamp_file.write_text(json.dumps(stamp))
    assert onnx_embedding.ensure_export(model_dir, "minilm", directory=tmp_path).made
    stamp_file.write_text("{damaged")
    assert onnx_embedding.ensure_export(model_dir, "minilm", directory=tmp_path).made
    assert onnx_embedding.ensure_export(model_dir, "minilm", directory=tmp_path, force=True).made
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.json", "model.onnx"]  # no partial files left


def test_exported_graph_declares_its_inputs_and_output(tmp_path):
    import onnx

    path = onnx_embedding.ensure_export(embedding.model_dir(), "minilm", directory=tmp_path).path
    model = onnx.load(str(path), load_external_data=False)
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in model.graph.output] == ["sentence_embedding"]
    assert {p.key: p.value for p in model.metadata_props}["graph"] == bert_onnx.GRAPH_VERSION
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


@pytest.mark.parametrize("field, value, problem", [
    ("model_type", "roberta", "model_type"),
    ("hidden_act", "relu", "hidden_act"),
    ("num_attention_heads", 5, "num_attention_heads"),
])
def test_the_exporter_refuses_what_it_cannot_write(field, value, problem):
    config = json.loads((embedding.model_dir() / "config.json").read_text())
    config[field] = value
    with pytest.raises(ValueError, match=problem):
        bert_onnx.BertShape.from_config(config)


def test_missing_weight_is_named():
    shape = bert_onnx.BertShape(hidden=8, layers=1, heads=2, intermediate=16, layer_norm_eps=1e-12)
    with pytest.raises(ValueError, match="embeddings.word_embeddings.weight"):
        bert_onnx.build_sentence_encoder({}, shape)


def test_threads_setting_is_checked(monkeypatch):
    from ctxasm.errors import ConfigError

    monkeypatch.setenv(onnx_embedding.THREADS_ENV, "2")
    assert onnx_embedding.threads_from_environment() == 2
    monkeypatch.setenv(onnx_embedding.THREADS_ENV, "many")
    with pytest.raises(ConfigError, match=onnx_embedding.THREADS_ENV):
        onnx_embedding.threads_from_environment()


def test_embedding_at_run_time_imports_no_torch():
    code = ("import sys, json\n"
            "from ctxasm.ml import embedding\n"
            "vector = embedding.embed_one('Is Helios-RAG still the one to beat?')\n"
            f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {TORCH_MODULES!r})\n"
            "print(json.dumps({'dims': len(vector), 'heavy': heavy, 'ort': 'onnxruntime' in sys.modules}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO / "py")})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"dims": 384, "heavy": [], "ort": True}
