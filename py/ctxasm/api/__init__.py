"""The Python API (docs/api.md): one Memory per process (an engine, a connection pool, the models loaded once),
a Session per caller (tenant, user, agent, thread, with its claim), and asyncio variants of the I/O calls.

    from ctxasm.api import Memory

    with Memory.open() as memory:
        session = memory.session("acme", user_id="jane", agent_id="research-assistant",
                                 thread_id="thread_jane_research")
        window = session.assemble("Is Helios-RAG still the one to beat?")

The CLI and the MCP server are layers over this API.
"""

from ctxasm.api.memory import Memory
from ctxasm.api.session import AsyncSession, Session, Turn

__all__ = ["AsyncSession", "Memory", "Session", "Turn"]
