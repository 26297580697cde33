"""The role passwords file is shared by processes (parallel test workers, a server beside the CLI): each adds its
roles without losing another's, and no reader ever sees the file half written."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat

from ctxasm.local import pgconn


def _add_roles(home: str, worker: int, rounds: int, failures: multiprocessing.Queue) -> None:
    os.environ["CTXASM_HOME"] = home
    try:
        for n in range(rounds):
            pgconn.role_logins(f"ctxasm_login_w{worker}_{n}")
            pgconn.owner_login()  # a plain read between the writes of the others
    except Exception as exc:  # reported to the test, which fails on it
        failures.put(f"worker {worker}: {exc!r}")


def test_concurrent_processes_keep_every_role_and_never_read_a_partial_file(tmp_path, monkeypatch):
    context = multiprocessing.get_context("fork")
    failures = context.Queue()
    workers = [context.Process(target=_add_roles, args=(str(tmp_path), w, 25, failures)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    reported = []
    while not failures.empty():
        reported.append(failures.get())
    assert reported == []
    assert all(process.exitcode == 0 for process in workers)
    stored = json.loads((tmp_path / "roles.json").read_text())
    assert {f"ctxasm_login_w{w}_{n}" for w in range(4) for n in range(25)} <= set(stored)
    assert stat.S_IMODE((tmp_path / "roles.json").stat().st_mode) == 0o600
    # a password, once made, is never replaced
    first = dict(stored)
    monkeypatch.setenv("CTXASM_HOME", str(tmp_path))
    again = {role: login.password for role, login in pgconn.role_logins().items()}
    assert {role: again[role] for role in first} == first
