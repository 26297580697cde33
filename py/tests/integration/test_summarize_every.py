"""`ctxasm summarize-threads --every N`, the background mode for a service or a long-running job: it keeps making
passes until it is interrupted, and an interrupt (Ctrl-C's SIGINT, or the SIGTERM a service manager sends) ends
it cleanly, between passes or during one, with exit code 0 and no traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ..conftest import REPO
from . import summaries_data as data

pytestmark = pytest.mark.slow  # a ctxasm process per test

PASS_LINE = re.compile(r"^tenant \S+: (\d+) episode summar(?:y|ies) written, (\d+) failed")


def _start(database: str, *, sigint_ignored: bool = False) -> subprocess.Popen:
    """The background loop; with `sigint_ignored`, started as a script's background job is: with SIGINT ignored,
    which the child inherits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CTXASM_SUMMARY_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "py"), env.get("PYTHONPATH")]))
    env["CTXASM_PG_DATABASE"] = database
    return subprocess.Popen([sys.executable, "-m", "ctxasm.cli", "summarize-threads", "--tenant", data.TENANT,
                             "--min-turns", "25", "--every", "1s"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None)


def _passes(process: subprocess.Popen, wanted: int, timeout: float) -> list[tuple[int, int]]:
    """(written, failed) of each pass the process printed, read until `wanted` passes or the timeout."""
    assert process.stdout is not None
    passes: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    while len(passes) < wanted and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        found = PASS_LINE.match(line)
        if found:
            passes.append((int(found.group(1)), int(found.group(2))))
    return passes


@pytest.mark.parametrize("stop, sigint_ignored", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                                   (signal.SIGINT, True)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-started-ignored"])
def test_every_keeps_passing_until_interrupted_and_exits_cleanly(clean_db, tmp_path, stop, sigint_ignored):
    data.load_tenant(clean_db, tmp_path)
    process = _start(clean_db.database, sigint_ignored=sigint_ignored)
    try:
        passes = _passes(process, 3, timeout=120)
        process.send_signal(stop)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    # the first pass summarizes the long thread (offline, no model configured); the later ones find nothing due
    assert passes[:3] == [(1, 0), (0, 0), (0, 0)], (passes, err[-2000:])
    assert process.returncode == 0, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert "stopped" in err, err[-2000:]
