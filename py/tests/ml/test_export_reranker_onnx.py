"""scripts/export-reranker-onnx: a clear failure without a model, and a smoke export of the tiny cross-encoder."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "export-reranker-onnx"


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "CTXASM_PYTHON": sys.executable, **env}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=environment)


def test_script_is_executable():
    assert os.access(SCRIPT, os.X_OK)


def test_a_missing_model_directory_fails_clearly(tmp_path):
    missing = tmp_path / "bge-reranker-base"
    result = run(str(missing))
    assert result.returncode == 2
    assert f"model directory {missing} does not exist" in result.stderr
    result = run(CTXASM_RERANKER_PATH="")
    assert result.returncode == 2
    assert "CTXASM_RERANKER_PATH" in result.stderr


@pytest.mark.skipif(importlib.util.find_spec("onnx") is None,
                    reason="torch.onnx.export needs the onnx package, a ctxasm dependency missing from this "
                           "environment (pip install -e 'py[rerank]')")
def test_export_of_the_tiny_cross_encoder(tmp_path, tiny_cross_encoder):
    output = tmp_path / "tiny-bge.onnx"
    result = run("--output", str(output), CTXASM_RERANKER_PATH=str(tiny_cross_encoder))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(output)
    assert output.is_file() and output.stat().st_size > 100_000
    reported = re.search(r"wrote .*: ([\d,]+) bytes .* under Oracle's 1 GB import limit", result.stderr)
    assert reported and int(reported.group(1).replace(",", "")) == output.stat().st_size
    assert (tmp_path / "tiny-bge-tokenizer" / "vocab.txt").is_file()
    if importlib.util.find_spec("onnxruntime") is not None:
        difference = re.search(r"difference ([\d.e+-]+)", result.stderr)
        assert difference and float(difference.group(1)) < 1e-4
