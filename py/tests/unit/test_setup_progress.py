"""scripts/lib/setup.sh: long set-up steps say what they are doing, with the elapsed time, while they run;
the virtual environment's stamp records the extras it was installed with."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SETUP = REPO / "scripts" / "lib" / "setup.sh"


def bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f'source "{SETUP}"\n{script}'], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", **env})


@pytest.mark.slow  # waits for two progress lines
def test_a_long_phase_reports_elapsed_time_and_its_latest_step():
    done = bash('run_phase "installing things" bash -c "echo Collecting alpha; sleep 2.5; echo Collecting beta; '
                'sleep 2"', CTXASM_PROGRESS_EVERY="1")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "ctxasm: installing things ..."
    ticks = [line for line in lines if " so far" in line]
    assert len(ticks) >= 3, lines
    seconds = [int(re.search(r": (\d+)s so far", line).group(1)) for line in ticks]
    assert seconds == sorted(seconds) and seconds[-1] >= 3
    assert "(Collecting alpha)" in ticks[0] and "(Collecting beta)" in ticks[-1]
    assert re.fullmatch(r"ctxasm: installing things: done in \d+s", lines[-1])
    assert "Collecting" not in done.stdout  # the command's own output stays in the log


def test_the_default_interval_is_at_most_30_seconds():
    text = SETUP.read_text()
    interval = int(re.search(r'CTXASM_PROGRESS_EVERY:-(\d+)', text).group(1))
    assert 0 < interval <= 30
    # Every step that can take minutes on a fresh machine runs as a phase.
    for step in ("installing the Python dependencies (pip)", "exporting the embedding model to ONNX",
                 "starting the embedded PostgreSQL", "installing Java 17"):
        assert f'run_phase {"--echo " if "ONNX" in step or "PostgreSQL" in step else ""}"{step}' in text


def test_a_failing_phase_shows_its_output_and_returns_its_status():
    done = bash('run_phase "deploying" bash -c "echo first; echo the error; exit 7" || echo "status $?"')
    assert done.stdout.strip() == "status 7"
    assert "ctxasm: deploying failed after" in done.stderr and "(exit 7)" in done.stderr
    assert "the error" in done.stderr


def test_echo_copies_the_output_once_done():
    done = bash('run_phase --echo "starting" echo "cluster running on 127.0.0.1:5432"')
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert lines[:2] == ["ctxasm: starting ...", "cluster running on 127.0.0.1:5432"]
    assert re.fullmatch(r"ctxasm: starting: done in [01]s", lines[2]) and len(lines) == 3


@pytest.mark.parametrize("stamp_extras, wanted, current", [
    (" dev", "dev", True),
    (" dev", "", True),       # dev includes the default install
    (" ", "", True),
    (" ", "dev", False),      # the default install lacks the test tools
    ("", "dev", True),        # a stamp from before extras were recorded meant dev
    (" dev", "rerank", True),
    (" rerank", "agents", False),
])
def test_the_venv_stamp_covers_the_extras_wanted(tmp_path, stamp_extras, wanted, current):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "ctxasm").write_text("#!/bin/sh\n")
    (venv / "bin" / "ctxasm").chmod(0o755)
    sha = hashlib.sha256((REPO / "py" / "pyproject.toml").read_bytes()).hexdigest()
    (venv / ".ctxasm-deps").write_text(f"{sha}{stamp_extras}\n")
    done = bash(f'VENV="{venv}"; CTXASM_EXTRAS="{wanted}"; venv_is_current && echo yes || echo no')
    assert done.stdout.strip() == ("yes" if current else "no"), done.stderr
    # Another pyproject is never current.
    (venv / ".ctxasm-deps").write_text(f"{'0' * 64}{stamp_extras}\n")
    done = bash(f'VENV="{venv}"; CTXASM_EXTRAS="{wanted}"; venv_is_current && echo yes || echo no')
    assert done.stdout.strip() == "no"
