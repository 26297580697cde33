"""The Python API (docs/api.md): one Memory per process (an engine, a connection pool, the models loaded once),
a Session per caller (tenant, user, agent, thread, with its claim), and asyncio variants of the I/O calls.

    from ctxasm.api import Memory

    with Memory.open() as memory:
        session = memory.session("acme", user_id="jane", agent_id="research-assistant",
                                 thread_id="thread_jane_research")
        window = session.assemble("Is Helios-RAG still the one to beat?")

The CLI, the inspector and the MCP server are layers over this API: besides Memory and Session they reach the
services only through ctxasm.api.admin (engines, times, erasure, budgets, episode thresholds) and
ctxasm.api.inspection (recorded windows and records as the inspector reads them); tests/unit/test_layers.py
holds them to it. The names below load on first use, so a command that needs only ctxasm.api.admin (the
argument parser's engine names) does not pay for the engines' and the services' imports.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxasm.api.memory import Memory
    from ctxasm.api.session import AsyncSession, Session, Turn

__all__ = ["AsyncSession", "Memory", "Session", "Turn"]

_HOMES = {"Memory": "ctxasm.api.memory", "AsyncSession": "ctxasm.api.session", "Session": "ctxasm.api.session",
          "Turn": "ctxasm.api.session"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'ctxasm.api' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
