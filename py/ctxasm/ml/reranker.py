"""The BGE cross-encoder reranker for PostgreSQL, over FlagEmbedding's FlagReranker, on a local directory.

The model directory comes from an argument or from CTXASM_RERANKER_PATH; nothing is fetched from a model
hub. With none configured, `configured_reranker()` returns None and callers let the database score with its
lexical scorer (named in the manifest).

The scores are RAW logits. The sigmoid is applied in one place only, the database's scoring step
(priority = w_rerank * sigmoid(logit) + ...), so a sigmoid here would squash the scores twice.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxasm.errors import CtxasmError

ENV_VAR = "CTXASM_RERANKER_PATH"
NAME_PREFIX = "bge-reranker"
ROUND_PLACES = 6
# Any one of these means the directory holds weights that transformers can load.
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model", "tokenizer.model")


class RerankerUnavailable(CtxasmError):
    """The configured reranker directory is missing or is not a single-logit cross-encoder."""

    code = "reranker_unavailable"
    exit_code = 2

    def __init__(self, path: Path | str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"reranker model {path}: {problem}")


def check_model_dir(path: Path | str) -> Path:
    """`path` resolved, after checking (without loading anything) that it looks like a cross-encoder."""
    directory = Path(path).expanduser()
    if not directory.exists():
        raise RerankerUnavailable(path, "no such directory")
    if not directory.is_dir():
        raise RerankerUnavailable(path, "not a directory")
    config_file = directory / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RerankerUnavailable(path, "not a model directory (no config.json)") from None
    except (OSError, ValueError) as exc:
        raise RerankerUnavailable(path, f"config.json is unreadable: {exc}") from exc
    if not isinstance(config, dict):
        raise RerankerUnavailable(path, "config.json is not a JSON object")
    if not any((directory / name).is_file() for name in _WEIGHT_FILES):
        raise RerankerUnavailable(path, f"no model weights (none of {', '.join(_WEIGHT_FILES)})")
    if not any((directory / name).is_file() for name in _TOKENIZER_FILES):
        raise RerankerUnavailable(path, f"no tokenizer (none of {', '.join(_TOKENIZER_FILES)})")
    # FlagReranker flattens the logits tensor, so a model with several labels would interleave them.
    labels = config.get("num_labels", len(config.get("id2label") or {}) or 2)
    if labels != 1:
        raise RerankerUnavailable(path, f"a cross-encoder with one output logit is needed, this one has {labels}")
    return directory.resolve()


class Reranker:
    """A cross-encoder over one local model directory; the model loads on the first `logits` call."""

    def __init__(self, path: Path | str, *, max_length: int = 512):
        self.path = check_model_dir(path)
        self.max_length = max_length
        self.name = f"{NAME_PREFIX}:{self.path.name}"
        self._lock = threading.Lock()
        self._model: Any = None

    def __repr__(self) -> str:
        return f"Reranker({str(self.path)!r})"

    def _flag_reranker(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:  # another thread may have loaded it while we waited
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        # Set before FlagEmbedding imports transformers / huggingface_hub: they read these at import.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from FlagEmbedding import FlagReranker
        except ImportError as exc:
            raise RerankerUnavailable(self.path, f"FlagEmbedding is not importable: {exc}") from exc
        try:
            return FlagReranker(str(self.path), use_fp16=False, devices="cpu", normalize=False,
                                max_length=self.max_length)
        except (OSError, ValueError, KeyError) as exc:
            raise RerankerUnavailable(self.path, f"cannot load the model: {exc}") from exc

    def logits(self, query: str, passages: Sequence[str], *, batch_size: int = 16) -> list[float]:
        """One raw relevance logit per passage, in passage order (not sigmoid-squashed), rounded to 6 places."""
        if isinstance(passages, str):  # a lone string would be scored character by character
            raise TypeError("passages must be a sequence of strings, not one string")
        if not isinstance(query, str):
            raise TypeError(f"query is {type(query).__name__}, not str")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        items = list(passages)
        for i, passage in enumerate(items):
            if not isinstance(passage, str):
                raise TypeError(f"passages[{i}] is {type(passage).__name__}, not str")
        if not items:
            return []
        scores = self._flag_reranker().compute_score([[query, p] for p in items], batch_size=batch_size,
                                                     normalize=False)
        if not isinstance(scores, (list, tuple)):  # some FlagEmbedding versions return a bare float for one pair
            scores = [scores]
        if len(scores) != len(items):
            raise RerankerUnavailable(self.path, f"returned {len(scores)} scores for {len(items)} passages")
        return [round(float(s), ROUND_PLACES) for s in scores]


_cache_lock = threading.Lock()
_cache: dict[tuple[Path, int], Reranker] = {}


def reranker_at(path: Path | str, *, max_length: int = 512) -> Reranker:
    """The process-wide Reranker for `path`, so a model directory is loaded at most once."""
    resolved = check_model_dir(path)
    key = (resolved, max_length)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = Reranker(resolved, max_length=max_length)
        return _cache[key]


def configured_reranker() -> Reranker | None:
    """The reranker named by CTXASM_RERANKER_PATH, or None when it is unset or empty (use the lexical scorer)."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return None
    try:
        return reranker_at(value)
    except RerankerUnavailable as exc:
        # Say where the path came from: the user fixes the variable, not a call site.
        raise RerankerUnavailable(value, f"{exc.problem} (from {ENV_VAR})") from exc
