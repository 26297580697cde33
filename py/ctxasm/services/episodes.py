"""Episode summaries of threads: one summary row per thread that has grown or gone quiet, written by the
deployment's summarizer (ctxasm.ml.summarizer), so recalled history can seat one summary instead of its turns.

A thread is due when its message turns not yet covered by its summary number `min_new_turns` or more (it has
grown), or number `min_quiet_turns` or more and its last turn is older than `quiet_after` (it has gone quiet).
Its summary is a summarization_memory row keyed summary_key `thread:<thread_id>` (id `episode_<thread_id>_<a
digest of the turns it first covered>`), in the thread's user and agent scope and in no thread (so the user's
other threads recall it). A thread summarized again after new turns gets a new version of that row (supersede),
continuing the previous version: only the new turns are sent, with the summary they continue. Long inputs go in parts of at most
`ctxasm.ml.summarizer.EPISODE_INPUT_TOKENS` tokens, each continuing the summary of the parts before it.

Provenance, in the stored form erasure follows: one context_source_ref row per summarized turn (relation
`summarizes`), and for a later version one to the version it continues (`continues`); `content_json` says
which turns it covers (`episode`) and what wrote it (`generated_by`). The turns are not listed in the row's
`source_refs`: those are what history cites as claims, and selection adds every row a recalled summary cites
to the window's sources. The summary is written with the caller's claim, as the turns were.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ctxasm.core import render
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import CtxasmError, InvalidArgument
from ctxasm.services import memory_spans as spans

SUMMARY_KEY_PREFIX = "thread:"
SUMMARY_ID_PREFIX = "episode_"
SUMMARIZES, CONTINUES = "summarizes", "continues"
#: threads read per pass, and turns per read
ACTIVITY_LIMIT = 10_000
TURN_PAGE = 1_000


@dataclass(frozen=True)
class Thresholds:
    """When a thread is due for a summary, and how long a summary may be."""

    #: a thread whose uncovered turns number this many is summarized (it has grown)
    min_new_turns: int = 20
    #: ... and one whose last turn is older than this, with at least `min_quiet_turns` uncovered (it went quiet)
    quiet_after: timedelta = timedelta(hours=6)
    min_quiet_turns: int = 4
    #: the longest summary (the model's max_tokens)
    summary_tokens: int = 300
    #: threads one pass summarizes at most (the busiest first)
    max_threads: int = 100

    def __post_init__(self) -> None:
        for name in ("min_new_turns", "min_quiet_turns", "max_threads"):
            if getattr(self, name) < 1:
                raise InvalidArgument(f"invalid_argument: {name} must be at least 1, got {getattr(self, name)}")
        if self.summary_tokens < 16:
            raise InvalidArgument(f"invalid_argument: summary_tokens must be at least 16, got {self.summary_tokens}")
        if self.quiet_after < timedelta(0):
            raise InvalidArgument("invalid_argument: quiet_after must not be negative")


@dataclass(frozen=True)
class ThreadSummary:
    """What became of one due thread: `written` (ref names the new summary version) or `failed` (problem)."""

    thread_id: str
    reason: str
    status: str
    turns: int
    ref: Ref | None = None
    model: str | None = None
    prompt_version: str | None = None
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "reason": self.reason, "status": self.status, "turns": self.turns,
                "ref": self.ref.as_json() if self.ref else None, "model": self.model,
                "prompt_version": self.prompt_version, "problem": self.problem}


@dataclass(frozen=True)
class EpisodeRun:
    tenant_id: str
    threads: tuple[ThreadSummary, ...] = ()
    #: threads with uncovered turns that were not due (or beyond max_threads)
    waiting: int = 0
    elapsed_ms: int = 0

    @property
    def written(self) -> int:
        return sum(1 for t in self.threads if t.status == "written")

    @property
    def failed(self) -> int:
        return sum(1 for t in self.threads if t.status == "failed")

    def as_json(self) -> dict[str, Any]:
        return {"tenant_id": self.tenant_id, "written": self.written, "failed": self.failed,
                "waiting": self.waiting, "elapsed_ms": self.elapsed_ms,
                "threads": [t.as_json() for t in self.threads]}

    def describe(self) -> str:
        lines = [f"tenant {self.tenant_id}: {self.written} episode summar{'y' if self.written == 1 else 'ies'} "
                 f"written, {self.failed} failed, {self.waiting} thread(s) not due ({self.elapsed_ms} ms)"]
        for t in self.threads:
            if t.status == "written" and t.ref is not None:
                lines.append(f"  {t.thread_id}: {t.ref.key} over {t.turns} new turn(s) ({t.reason}; "
                             f"{t.model}, {t.prompt_version})")
            else:
                lines.append(f"  {t.thread_id}: failed ({t.reason}): {t.problem}")
        return "\n".join(lines)


def summary_id(thread_id: str, turns: Sequence[dict[str, Any]]) -> str:
    """The row id of a thread's first episode summary: the thread and a digest of the turns it covers. The same
    pass run twice writes one row (the second is refused as a duplicate); a thread summarized afresh after one of
    its turns was erased (and its summary with it) covers other turns, so it gets a row of its own."""
    digest = hashlib.sha256("\n".join([thread_id, *(Ref.of(t["ref"]).key for t in turns)]).encode("utf-8"))
    plain = f"{SUMMARY_ID_PREFIX}{thread_id}_{digest.hexdigest()[:12]}"
    return plain if len(plain) <= 128 else SUMMARY_ID_PREFIX + digest.hexdigest()


def due(thread: dict[str, Any], thresholds: Thresholds, now: datetime) -> str | None:
    """Why a thread of thread_activity is due ("grown" or "quiet"), or None."""
    new = int(thread["new_turns"])
    if new >= thresholds.min_new_turns:
        return "grown"
    last = _when(thread["last_turn_at"])
    if new >= thresholds.min_quiet_turns and now - last >= thresholds.quiet_after:
        return "quiet"
    return None


def summarize_threads(store: MemoryStore, tenant_id: str, summarizer: Any, *, now: datetime,
                      thresholds: Thresholds = Thresholds(), user_id: str | None = None,
                      agent_id: str | None = None) -> EpisodeRun:
    """One pass: summarize every due thread of the tenant (of one user and agent when given), busiest first."""
    started = time.monotonic()
    activity = store.thread_activity(tenant_id, user_id, agent_id, ACTIVITY_LIMIT)
    store.rollback()
    picked = [(thread, reason) for thread in activity if (reason := due(thread, thresholds, now))]
    results = tuple(_summarize(store, tenant_id, summarizer, thread, reason, thresholds)
                    for thread, reason in picked[:thresholds.max_threads])
    return EpisodeRun(tenant_id, results, waiting=len(activity) - len(results),
                      elapsed_ms=int((time.monotonic() - started) * 1000))


def _summarize(store: MemoryStore, tenant_id: str, summarizer: Any, thread: dict[str, Any], reason: str,
               thresholds: Thresholds) -> ThreadSummary:
    thread_id = thread["thread_id"]
    previous = thread.get("summary")
    through = int(((previous or {}).get("episode") or {}).get("last_turn") or 0)
    turns = _turns(store, tenant_id, thread_id, through)
    if not turns:
        return ThreadSummary(thread_id, reason, "failed", 0, problem="its new turns are no longer readable")
    try:
        earlier = previous["content"] if previous else None
        for part in _parts(turns):
            # who said each turn: its speaker's name, else its role (render.speaker_label)
            said = [(render.speaker_label(t["role"], t.get("speaker")), t["content"]) for t in part]
            written = summarizer.episode(said, earlier=earlier, max_tokens=thresholds.summary_tokens)
            earlier = written.text
        with spans.memory_span(spans.UPSERT_MEMORY, tenant_id, "summarize_threads", memory_type="summary") as span:
            ref = _write(store, tenant_id, thread, previous, turns, written)
            spans.set_records(span, 1, ref.id)
    except CtxasmError as exc:
        store.rollback()
        return ThreadSummary(thread_id, reason, "failed", len(turns), problem=str(exc))
    return ThreadSummary(thread_id, reason, "written", len(turns), ref, written.model, written.prompt_version)


def _turns(store: MemoryStore, tenant_id: str, thread_id: str, after: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    while True:
        page = store.thread_turns(tenant_id, thread_id, after, TURN_PAGE)
        store.rollback()
        turns += page
        if len(page) < TURN_PAGE:
            return turns
        after = int(page[-1]["turn_index"])


def _parts(turns: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The turns in parts of at most EPISODE_INPUT_TOKENS tokens (a longer turn is a part of its own)."""
    from ctxasm.ml.summarizer import EPISODE_INPUT_TOKENS

    parts: list[list[dict[str, Any]]] = [[]]
    used = 0
    for turn in turns:
        cost = count_tokens(turn["content"]) + 4
        if parts[-1] and used + cost > EPISODE_INPUT_TOKENS:
            parts.append([])
            used = 0
        parts[-1].append(turn)
        used += cost
    return parts


def _write(store: MemoryStore, tenant_id: str, thread: dict[str, Any], previous: dict[str, Any] | None,
           turns: Sequence[dict[str, Any]], written: Any) -> Ref:
    """The new summary version and its provenance, committed together (duplicate_memory or memory_not_found when
    another pass wrote this thread's summary first)."""
    from ctxasm.ml import embedding

    thread_id = thread["thread_id"]
    row_id = Ref.of(previous["ref"]).id if previous else summary_id(thread_id, turns)
    earlier = (previous or {}).get("episode") or {}
    first, last = turns[0], turns[-1]
    period_end = _when(last["valid_from"])
    valid_from = max(period_end, _when(previous["valid_from"])) if previous else period_end
    episode = {"thread_id": thread_id, "first_turn": earlier.get("first_turn", first["turn_index"]),
               "last_turn": last["turn_index"], "turns": int(earlier.get("turns") or 0) + len(turns)}
    if previous:
        episode["continues"] = Ref.of(previous["ref"]).version
    scope = {"user_id": thread.get("user_id"), "agent_id": thread.get("agent_id")}
    record: dict[str, Any] = {
        "summary_key": SUMMARY_KEY_PREFIX + thread_id, "content": written.text, "valid_from": valid_from,
        "period_end": period_end, "embedding": embedding.embed_one(written.text),
        "content_json": {"episode": episode, "generated_by": written.generated_by}, **scope}
    store.set_tenant(tenant_id)
    if previous:
        version = int(store.supersede("summary", row_id, record))
    else:
        store.put_memory("summary", {"id": row_id, "period_start": _when(first["valid_from"]), **record})
        version = 1
    ref = Ref("summary", row_id, version)
    sources = [(Ref.of(t["ref"]), SUMMARIZES) for t in turns]
    if previous:
        sources.append((Ref.of(previous["ref"]), CONTINUES))
    for source, relation in sources:
        store.put_memory("source_ref", {
            "id": "ref_" + hashlib.sha256(f"{ref.key}|{source.key}".encode("utf-8")).hexdigest()[:40],
            "derived_type": "summary", "derived_id": row_id, "derived_version": version,
            "source_type": source.memory_type, "source_id": source.id, "source_version": source.version,
            "relation": relation, "content": f"summary {row_id} version {version} {relation} {source.key}",
            **scope})
    store.commit()
    return ref


def _when(value: Any) -> datetime:
    if isinstance(value, datetime):
        moment = value
    else:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

