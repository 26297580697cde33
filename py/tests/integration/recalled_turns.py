"""Scenarios for the scoring tests: one tenant's budget row, recalled turns each in a thread of its own (so no
turn lends another its conversation's share or its neighbour's figure), and one turn of the window's own thread.
The scope is Jane's with the research assistant."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..conftest import FACT_CHECK_BUDGET

USER, AGENT, THREAD = "jane", "research-assistant", "thread_now"


@dataclass(frozen=True)
class Turn:
    id: str
    said: str  # valid_from, ISO 8601
    content: str
    role: str = "user"
    speaker: str | None = None


def scenario(tenant_id: str, name: str, display_name: str, turns: Iterable[Turn], tail_said: str,
             budget: dict[str, Any] = FACT_CHECK_BUDGET) -> dict[str, Any]:
    """The scenario document: the budget, each turn in thread `thread_<id>`, then the thread's tail turn."""
    scope = {"user_id": USER, "agent_id": AGENT}
    memories = [{"type": "guideline", "id": "budget", "guideline_key": "context_budget", "agent_id": AGENT,
                 "valid_from": "2026-01-01T00:00:00Z", "content": "Budget.", "content_json": budget}]
    for turn in turns:
        memories.append({"type": "conversation", "id": turn.id, "role": turn.role, "turn_index": 0,
                         "thread_id": f"thread_{turn.id}", "valid_from": turn.said, "content": turn.content,
                         **({"speaker": turn.speaker} if turn.speaker else {}), **scope})
    memories.append({"type": "conversation", "id": "tail_1", "role": "user", "turn_index": 0, "thread_id": THREAD,
                     "valid_from": tail_said, "content": "Any news from the allotment?", **scope})
    return {"format": "ctxasm-scenario/1", "name": name,
            "tenants": [{"tenant_id": tenant_id, "display_name": display_name, "memories": memories}]}
