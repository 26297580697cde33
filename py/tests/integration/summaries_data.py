"""The tenant the summary tests share: long durable facts in a small slice (so a window shows most of them as
pointers unless it compresses them) and a long thread of Jane's, loaded through the scenario loader."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.ml.summarizer import ChatSummarizer
from ctxasm.services import load

from ..chat_server import MODEL, ChatServer
from ..conftest import embedded_json

TENANT, USER, AGENT = "sumco", "jane", "helper"
AT = "2026-09-28T12:00:00"
QUESTION = "What did the Zephyr cache evaluation find about eviction and latency?"
LONG_THREAD = "thread_zephyr_planning"

TOPICS = ("eviction", "latency", "sharding", "warm-up", "invalidation")


def fact_text(topic: str) -> str:
    sentences = [f"The Zephyr cache evaluation of {topic} ran on three clusters in August."]
    sentences += [f"Run {n} of the {topic} study measured latency and eviction under load pattern {n}, and the "
                  f"team recorded a different outcome for each pattern." for n in range(1, 6)]
    return " ".join(sentences)


def budget(compression: dict[str, Any] | None = None) -> dict[str, Any]:
    content: dict[str, Any] = {
        "usable_context": 3000, "output_reserve": 200, "tool_reserve": 0, "request_overhead_reserve": 300,
        "max_rounds": 1, "max_tool_result_tokens": 0,
        "weights": {"rerank": 0.6, "confidence": 0.25, "recency": 0.15}, "recency_days": 60,
        "shares": {"fact_check": {"durable_facts": 0.12, "evidence": 0.0, "recalled_history": 0.35,
                                  "volatile_tail": 0.2}},
        "overflow_order": ["durable_facts"],
    }
    if compression is not None:
        content["compression"] = compression
    return content


def turn_text(n: int) -> str:
    if n % 2:
        return f"Question {n}: how should the Zephyr cache handle eviction when shard {n} is under load?"
    return (f"Answer {n}: for shard {n - 1} we keep eviction least-recently-used and measure p99 latency before "
            "changing anything.")


def scenario(compression: dict[str, Any] | None = None, turns: int = 30) -> dict[str, Any]:
    start = datetime(2026, 9, 1, 9, 0, tzinfo=timezone.utc)
    memories: list[dict[str, Any]] = [
        {"type": "guideline", "id": "budget", "guideline_key": "context_budget", "agent_id": AGENT,
         "valid_from": "2026-01-01T00:00:00Z", "content": "Context budget of the helper.",
         "content_json": budget(compression)},
        {"type": "persona", "id": "persona_helper", "persona_key": "helper", "agent_id": AGENT,
         "valid_from": "2026-01-01T00:00:00Z", "content": "You are a careful engineering assistant."},
    ]
    memories += [{"type": "entity", "id": f"fact_{topic}", "subject": "zephyr_cache", "predicate": topic,
                  "confidence": 0.9 - index / 100, "valid_from": "2026-09-01T00:00:00Z", "content": fact_text(topic)}
                 for index, topic in enumerate(TOPICS)]
    memories += [{"type": "conversation", "id": f"turn_zephyr_{n:03d}", "role": "user" if n % 2 else "assistant",
                  "turn_index": n, "thread_id": LONG_THREAD, "user_id": USER, "agent_id": AGENT,
                  "valid_from": (start + timedelta(minutes=n)).isoformat(), "content": turn_text(n)}
                 for n in range(1, turns + 1)]
    return {"format": "ctxasm-scenario/1", "name": "summaries", "description": "compression and episodes",
            "tenants": [{"tenant_id": TENANT, "display_name": "Summary Co", "memories": memories}]}


def load_tenant(target, tmp_path: Path, compression: dict[str, Any] | None = None, turns: int = 30) -> None:
    """The tenant, loaded from a scenario file through the loader; the file carries the embeddings (embedded_json:
    once per test process for each distinct scenario), so the load skips the model, which took most of each of
    some thirty loads."""
    path = tmp_path / "summaries.json"
    path.write_text(embedded_json(scenario(compression, turns)), encoding="utf-8")
    load.load_file(target, path)


def change_budget(target, compression: dict[str, Any] | None) -> None:
    """A new version of the tenant's budget, in effect from before the windows' evaluation time."""
    with app_store(target) as store:
        store.set_tenant(TENANT)
        store.supersede("guideline", "budget", {"content_json": budget(compression),
                                                "valid_from": "2026-01-02T00:00:00Z"})
        store.commit()


def summarizer(server: ChatServer) -> ChatSummarizer:
    """A chat summarizer of the server's canned model (no retry: a failure is the test's to see)."""
    return ChatSummarizer(MODEL, api_key="test-key", base_url=server.base_url)


def spec(thread: str = "thread_new_question", question: str = QUESTION) -> WindowSpec:
    return WindowSpec(tenant_id=TENANT, user_id=USER, agent_id=AGENT, thread_id=thread, intent="fact_check",
                      question=question)


def app_store(target) -> Any:
    """An application connection's store (the caller's claim, as an agent process has), as a context manager."""

    class _Store:
        def __enter__(self) -> PostgresStore:
            self.connection = pgconn.connect(target, pgconn.app_login()).__enter__()
            return PostgresStore(self.connection)

        def __exit__(self, *exc: Any) -> None:
            self.connection.__exit__(*exc)

    return _Store()
