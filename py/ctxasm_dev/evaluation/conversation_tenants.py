"""A LoCoMo sample as a ctxasm tenant: a scenario document for the loader, and the per-question budgets.

One tenant per sample; one user and one agent for the whole sample, so every session is another thread of the
same user and its turns are recalled history in a new thread. Session N is thread `session-N`; each turn is a
conversation row `turn-<dia_id>` (content_json.dia_id keeps the dia_id too), valid from the session's date
plus TURN_SPACING per turn, role `user` for speaker_a and `assistant` for speaker_b, content "Name: text".

Questions are asked after the last session, each from a thread of its own that holds no turns. That thread
also carries the question's context_budget guideline (thread scope is the narrowest, so it wins): the whole
remainder goes to recalled history, and usable_context is chosen so the remainder is exactly the budget under
test (conversations.py calibrates it against what the manifest reports). Each question is asked once per
weighting (WEIGHTINGS): relevance alone, and the default budget's weights a new tenant gets.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from ctxasm.services.tenants import DEFAULT_BUDGET
from ctxasm_dev.evaluation.locomo import Sample, Turn

USER_ID = "user"
AGENT_ID = "agent"
INTENT = "recall"
#: Priority from relevance alone: a question may be about any session, so a recency weight would only push
#: older evidence out, and the turns carry no confidence of their own. The horizon is kept for the budget's shape.
WEIGHTS = {"rerank": 1.0, "confidence": 0.0, "recency": 0.0}
RECENCY_DAYS = 60
RELEVANCE = "relevance"
DEFAULT = "default"
#: The weightings a question is asked with: name -> (weights, recency_days). "default" is the budget a new
#: tenant gets (ctxasm.services.tenants.DEFAULT_BUDGET), so its figures are what a tenant sees out of the box.
WEIGHTINGS: dict[str, tuple[dict[str, float], float]] = {
    RELEVANCE: (WEIGHTS, RECENCY_DAYS),
    DEFAULT: (DEFAULT_BUDGET["weights"], DEFAULT_BUDGET["recency_days"]),
}
OUTPUT_RESERVE = 400
#: usable_context of the tenant-wide budget (only the calibration window uses it).
CALIBRATION_USABLE = 20000
#: Questions are asked this long after the last turn of the sample.
QUESTION_DELAY = timedelta(hours=1)
#: The first version of a question's budget is in effect from this long after the last turn; a corrected
#: version (see conversations.py) a minute later. Both before the question.
BUDGET_DELAY = timedelta(minutes=1)

_TENANT_CHARS = re.compile(r"[^a-z0-9_-]+")


def tenant_ids(samples: list[Sample]) -> list[str]:
    """A valid, unique tenant id per sample, from its sample_id."""
    ids: list[str] = []
    for index, sample in enumerate(samples):
        base = _TENANT_CHARS.sub("-", sample.sample_id.lower()).strip("-_")[:48] or f"sample-{index}"
        if not base[0].isalnum():
            base = f"s{base}"[:48]
        candidate = base if base not in ids else f"{base}-{index}"
        ids.append(candidate)
    return ids


def row_id(dia_id: str) -> str:
    return f"turn-{dia_id}"


def thread_id(session: int) -> str:
    return f"session-{session}"


def question_thread(question_number: int, budget: int, weighting: str = RELEVANCE) -> str:
    thread = f"question-{question_number}-budget-{budget}"
    return thread if weighting == RELEVANCE else f"{thread}-{weighting}"


def question_time(sample: Sample) -> datetime:
    """When the questions are asked: the sample's own question date (LongMemEval has one) when it is after
    the last turn, else an hour after it."""
    latest = sample.last_time + QUESTION_DELAY
    return sample.asked_at if sample.asked_at is not None and sample.asked_at > latest else latest


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def request_overhead_reserve(budget: int) -> int:
    """Room for the request's framing outside the slices (JSON escaping grows with the number of records)."""
    return 200 + budget // 4


def budget_content(usable_context: int, overhead_reserve: int, weighting: str = RELEVANCE) -> dict[str, Any]:
    """A context_budget whose one intent gives every token after the fixed slices to recalled history, with the
    weights of `weighting`."""
    weights, recency_days = WEIGHTINGS[weighting]
    return {
        "usable_context": usable_context,
        "output_reserve": OUTPUT_RESERVE,
        "tool_reserve": 0,
        "request_overhead_reserve": overhead_reserve,
        "max_rounds": 1,
        "max_tool_result_tokens": 0,
        "weights": dict(weights),
        "recency_days": recency_days,
        "shares": {INTENT: {"durable_facts": 0.0, "evidence": 0.0, "recalled_history": 1.0, "volatile_tail": 0.0}},
        "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
    }


def budget_row(row: str, thread: str | None, usable_context: int, overhead_reserve: int,
               valid_from: datetime, weighting: str = RELEVANCE) -> dict[str, Any]:
    """The context_budget guideline row (without `type`), scoped to the agent and, if given, one thread."""
    return {
        "id": row, "guideline_key": "context_budget", "agent_id": AGENT_ID, "user_id": USER_ID,
        "thread_id": thread, "valid_from": _iso(valid_from),
        "content": "Context budget for the conversation evaluation: everything after the fixed slices is "
                   "recalled history.",
        "content_json": budget_content(usable_context, overhead_reserve, weighting),
    }


def _turn_row(turn: Turn, speaker_b: str) -> dict[str, Any]:
    """A turn as a conversation row. A turn whose text leads with its speaker's name ("Maya: ...", LoCoMo's
    named speakers) is stored as what was said, with the name as the row's speaker: the window's line reads
    "M12 Maya: ..." as the turn does, and the embedding (of "Maya: ...", ctxasm.engines.searchable) is the one
    the dense baseline ranks by."""
    name, said = turn.speaker, turn.content
    named = said.startswith(f"{name}: ") and bool(said[len(name) + 2:].strip()) and 0 < len(name) <= 64
    return {
        "type": "conversation", "id": row_id(turn.dia_id),
        "role": "assistant" if turn.speaker == speaker_b else "user",
        "turn_index": turn.index, "user_id": USER_ID, "agent_id": AGENT_ID, "thread_id": thread_id(turn.session),
        "valid_from": _iso(turn.at), "content": said[len(name) + 2:] if named else said,
        **({"speaker": name} if named else {}),
        "content_json": {"dia_id": turn.dia_id, "speaker": turn.speaker, "session": turn.session,
                         "image": turn.is_image},
    }


def scenario(samples: list[Sample], ids: list[str], name: str = "conversation-eval") -> dict[str, Any]:
    """The loader's scenario document: one tenant per sample, its turns, and a tenant-wide budget."""
    tenants = []
    for sample, tenant in zip(samples, ids):
        first = min(turn.at for turn in sample.turns)
        memories: list[dict[str, Any]] = [
            {"type": "guideline", **budget_row("budget-default", None, CALIBRATION_USABLE,
                                               request_overhead_reserve(CALIBRATION_USABLE),
                                               first - timedelta(days=1))}]
        memories.extend(_turn_row(turn, sample.speaker_b) for turn in sample.turns)
        tenants.append({"tenant_id": tenant, "display_name": f"{sample.speaker_a} and {sample.speaker_b} "
                                                               f"({sample.sample_id})"[:200],
                        "memories": memories})
    return {"format": "ctxasm-scenario/1", "name": name,
            "description": "LoCoMo-format conversations, one tenant per sample (docs/conversation-eval.md)",
            "tenants": tenants}


def attach_turn_vectors(document: dict[str, Any], samples: list[Sample], ids: list[str],
                        vectors: list[list[list[float]]]) -> None:
    """In place, on a scenario document the loader has validated: each message turn with text gets its vector
    (`vectors`: each sample's, in turn order). The loader embeds a message turn's speaker and content
    (ctxasm.engines.searchable.embedding_text), the text the dense baseline embeds, so a vector given here is
    the one the load would compute, and it is not computed twice."""
    by_row = {(tenant, row_id(turn.dia_id)): vector
              for sample, tenant, sample_vectors in zip(samples, ids, vectors)
              for turn, vector in zip(sample.turns, sample_vectors)}
    for tenant in document["tenants"]:
        for memory in tenant["memories"]:
            vector = by_row.get((tenant["tenant_id"], memory["id"])) if memory["type"] == "conversation" else None
            if vector is not None and str(memory.get("content") or "").strip():
                memory["embedding"] = vector
