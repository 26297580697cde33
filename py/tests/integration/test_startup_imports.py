"""Start-up: a command imports only what it needs. No command imports torch (the question embedding runs on
onnxruntime); a command that needs no model does not load onnxruntime either."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TORCH = {"torch", "transformers", "sentence_transformers", "FlagEmbedding", "datasets"}
MODEL = TORCH | {"onnxruntime", "onnx", "tokenizers"}

# Runs one `ctxasm` command in a fresh interpreter and, at exit, writes the top-level packages it imported.
RUNNER = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["IMPORTS_OUT"], "w").write(json.dumps(sorted({m.split(".")[0] for m in sys.modules}))))
from ctxasm.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run(target, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = tmp_path / "imports.json"
    env = dict(os.environ, PYTHONPATH=str(REPO / "py"), CTXASM_PG_DATABASE=target.database, IMPORTS_OUT=str(out))
    done = subprocess.run([sys.executable, "-c", RUNNER, *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"ctxasm {' '.join(args)}: {done.stderr[-2000:]}"
    return done, set(json.loads(out.read_text()))


@pytest.fixture(scope="module")
def manifest_id(corpus_once, tmp_path_factory):
    done, imported = run(corpus_once, tmp_path_factory.mktemp("assemble"), "assemble", "--tenant", "acme",
                         "--user", "jane", "--agent", "research-assistant", "--thread", "thread_jane_research",
                         "--question", "Is Helios-RAG still the one to beat?", "--at", "2026-09-28T12:00:00",
                         "--json")
    # assemble embeds the question: onnxruntime, never torch.
    assert "onnxruntime" in imported and not imported & TORCH, sorted(imported & MODEL)
    return json.loads(done.stdout)["manifest_id"]


@pytest.mark.parametrize("args", [
    ("--help",),
    ("db", "status"),
    ("inventory", "--tenant", "acme"),
    ("claim", "--tenant", "acme", "--ttl", "5m"),
    ("replay", "{manifest}", "--tenant", "acme"),
    ("inspect", "{manifest}", "--tenant", "acme"),
], ids=lambda args: " ".join(args[:2]))
@pytest.mark.slow  # a ctxasm process per command
def test_commands_that_need_no_model_load_none(args, manifest_id, corpus_once, tmp_path):
    argv = [a.replace("{manifest}", manifest_id) for a in args]
    _, imported = run(corpus_once, tmp_path, *argv)
    assert not imported & MODEL, sorted(imported & MODEL)


def test_the_model_export_needs_no_torch(corpus_once, tmp_path):
    done, imported = run(corpus_once, tmp_path, "models", "export")
    assert "model.onnx" in done.stdout
    assert not imported & TORCH, sorted(imported & TORCH)
