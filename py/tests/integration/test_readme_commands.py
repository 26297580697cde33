"""README.md's "Try it" commands, run as printed after the demo data is loaded the way scripts/demo loads it, with
the manifest id the demo's assemble printed in place of MANIFEST_ID. The commands are parsed from README.md, so an
edit there that breaks one fails here; scripts/demo must print the same commands."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, TEST_DATABASE

pytestmark = pytest.mark.slow  # one ctxasm process per README command

DEMO_DATABASE = "ctxasm_demo"
PLACEHOLDER = "MANIFEST_ID"
DEMO_QUESTION = ("Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 "
                 "on BEIR.")


def joined_lines(text: str) -> list[str]:
    """Shell lines with backslash continuations joined; blank lines and comments left out."""
    text = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def readme_commands(heading: str = "### Try it") -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split(heading, 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block, f"README.md: the section {heading!r} has no bash block"
    return joined_lines(block.group(1))


def demo_next_commands() -> list[str]:
    """The commands scripts/demo prints at its end, with its variables written as the README writes them."""
    script = (REPO / "scripts" / "demo").read_text()
    block = script.split("cat <<NEXT", 1)[1].split("\nNEXT", 1)[0]
    block = block.replace("\\\\", "\\")  # an unquoted heredoc prints \\ as \
    lines = [line for line in joined_lines(block) if line.startswith(("$DB", ".venv/"))]
    return [line.replace("$DB", f"CTXASM_PG_DATABASE={DEMO_DATABASE}").replace("$MANIFEST", PLACEHOLDER)
            for line in lines]


def ctxasm_argv() -> list[str]:
    script = REPO / ".venv" / "bin" / "ctxasm"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ctxasm.cli"]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "py"), env.get("PYTHONPATH")]))
    env.pop("CTXASM_PG_DATABASE", None)
    return env


def run(command: str, cwd: Path, manifest_id: str) -> subprocess.CompletedProcess:
    """One README command: its leading NAME=value words become the environment (the demo's database is the test
    database here), `.venv/bin/ctxasm` is the checkout's console script."""
    words = shlex.split(command.replace(PLACEHOLDER, manifest_id))
    env = environment()
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = TEST_DATABASE if value == DEMO_DATABASE else value
    assert words and words[0] == ".venv/bin/ctxasm", f"README command does not run .venv/bin/ctxasm: {command}"
    return subprocess.run(ctxasm_argv() + words[1:], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def demo_window(corpus_once):
    """The demo's assemble, as scripts/demo runs it, on the demo and corpus data; returns its manifest id."""
    env = {**environment(), "CTXASM_PG_DATABASE": TEST_DATABASE}
    done = subprocess.run(ctxasm_argv() + [
        "assemble", "--tenant", "acme", "--user", "jane", "--agent", "research-assistant", "--thread",
        "thread_jane_research", "--intent", "fact_check", "--at", "2026-09-28T12:00:00", "--question", DEMO_QUESTION],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = re.search(r"^== manifest (.*) ==$", done.stdout, flags=re.M)  # what scripts/demo reads with sed
    assert found, done.stdout[-2000:]
    return found.group(1)


def test_the_demo_prints_the_readme_commands():
    assert demo_next_commands() == readme_commands()


#: What each command must print besides exiting 0 (a command the README gains without an entry here must still
#: exit 0 and print something).
def _expected(command: str, out: str, cwd: Path) -> None:
    words = shlex.split(command)
    sub = words[words.index(".venv/bin/ctxasm") + 1]
    if sub == "replay":
        assert re.search(r"\bmatch\b", out), out
    elif sub == "inspect" and "--html" in words:
        page = cwd / words[words.index("--html") + 1]
        assert page.exists() and "<html" in page.read_text()[:2000].lower()
    elif sub == "inspect" and "--why" in words:
        assert "fact_helios_rag_beir_ndcg10" in out, out
    elif sub == "inventory":
        assert "entity" in out and "active" in out, out
    elif sub == "ask":
        assert "no model was called" in out, out
    elif sub == "load":
        assert "(upsert)" in out and "0 new, 0 changed" in out, out
    elif sub == "db":
        assert "databases on this server" in out and TEST_DATABASE in out, out
    else:
        assert out.strip(), f"{command} printed nothing"


def test_every_readme_command_works_as_printed(demo_window, tmp_path):
    commands = readme_commands()
    assert len(commands) >= 5 and any(PLACEHOLDER in c for c in commands)
    # a directory like the checkout (the commands name .venv/bin/ctxasm and db/...), so files they write land here
    for name in (".venv", "db"):
        (tmp_path / name).symlink_to(REPO / name)
    for command in commands:
        done = run(command, tmp_path, demo_window)
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-3000:]}"
        _expected(command, done.stdout, tmp_path)


def test_the_own_tenant_recipe_works_as_printed(clean_db, tmp_path):
    """README's "Your own tenant" block on an empty database: five commands, the last one's window holds the
    turn and the fact and uses the agent's budget."""
    commands = readme_commands("### Your own tenant")
    assert len(commands) == 5
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    outputs = []
    for command in commands:
        done = run(f"CTXASM_PG_DATABASE={DEMO_DATABASE} {command}", tmp_path, "")
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
    assert "usable_context 3000" in outputs[1] and "(agent helper)" in outputs[1]
    window = outputs[-1]
    assert "Our launch moved to March 3." in window and "The launch is on March 3." in window
    assert re.search(r"of 1600 tokens", window), window[:300]  # 3000 less the reserves for output and tools
