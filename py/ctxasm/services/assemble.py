"""Assemble one window: the database selects (CTX_ASSEMBLY), Python fits and renders, the database records.

Round trips on PostgreSQL: two (set_tenant + select_window pipelined; record_manifest + commit pipelined).
Nothing is recorded when any step fails: the manifest is written last, in the same transaction. The one
exception is compression during assembly (a budget that turns it on, a candidate short of room without a
summary): the summarizer's calls, then one write per compression, committed on their own before the manifest,
since a compression is derived context the next window can use too (ctxasm.services.compress).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from ctxasm import contract_constants
from ctxasm.core.compose import Window, WindowSpec, compose
from ctxasm.core.manifest import Manifest, validate_manifest
from ctxasm.core.selection import Selection
from ctxasm.engines.checks import unstorable_text
from ctxasm.engines.store import MemoryStore, WindowScope
from ctxasm.errors import BudgetMissing, CtxasmError, InvalidArgument, InvalidQuestion
from ctxasm.services import memory_spans
from ctxasm.services.compress import compress_during_assembly


@dataclass(frozen=True)
class AssembledWindow:
    request: dict[str, Any]
    manifest: Manifest
    manifest_id: str

    def as_json(self) -> dict[str, Any]:
        return {"request": self.request, "manifest": self.manifest, "manifest_id": self.manifest_id}


def parse_time(text: str | None, *, name: str = "--at") -> datetime | None:
    """An ISO 8601 time; without an offset it is UTC. None stays None: "now", which the database reads from its
    own clock (ctxasm.engines: the adapters bind "this time, else the database's now"), the clock that stamps a row written without a valid_from. Two
    clocks, or "now" cut to the second here while the database keeps microseconds, left a row loaded a moment
    ago not yet in effect."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"invalid_argument: {name} {text!r} is not an ISO 8601 time "
                              "(e.g. 2026-09-28T12:00:00)") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


#: The longest question a window is assembled for (select_window refuses longer ones too): it bounds the work
#: one call may ask of the database (lexical scoring compares it with every candidate).
MAX_QUESTION_CHARS = contract_constants.MAX_QUESTION_CHARS


def check_spec(spec: WindowSpec) -> None:
    if not spec.question or not spec.question.strip():
        raise InvalidQuestion("invalid_question: the question must not be empty")
    if len(spec.question) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(f"invalid_question: the question is {len(spec.question)} characters long, at most "
                              f"{MAX_QUESTION_CHARS} are allowed")
    # Text the database cannot store is refused here with the reason, not as a driver error (found by the
    # hostile-input tests): a lone surrogate is what Python makes of invalid UTF-8 on the command line.
    problem = unstorable_text(spec.question, "the question")
    if problem:
        raise InvalidQuestion(f"invalid_question: {problem}")
    if not spec.intent or not spec.intent.strip():
        raise InvalidArgument("invalid_argument: the intent must not be empty")


def budget_missing(store: MemoryStore, spec: WindowSpec, at: datetime | None, exc: BudgetMissing) -> BudgetMissing:
    """The database's budget_missing with the scope in words and every budget row of the tenant with why it does
    not apply (a budget for an agent the call did not name is the usual one)."""
    from ctxasm.services import budgets

    scope = budgets.Scope(spec.user_id, spec.agent_id, spec.thread_id)
    try:
        view = budgets.effective_budget(store, spec.tenant_id, scope, at, spec.intent)
    except CtxasmError:
        return exc
    rows = "; ".join(f"guideline {row.get('id')} v{row.get('version')} ({budgets.scope_of(row)}): {why.rstrip('.')}"
                     for row, why in zip(view.rows, view.standings)) or "none"
    missing = sorted({f.removesuffix("_id") for row in view.rows for f in budgets.SCOPE_FIELDS
                      if row.get(f) and getattr(scope, f) is None})
    hint = f" A budget applies only to windows that name its {' and '.join(missing)}." if missing else ""
    # A claim for one user or agent sees only the budget rows of its scope and wider: the tenant may have others.
    seen = "The budget rows this claim can see" if spec.user_id or spec.agent_id else "The tenant's budget rows"
    if spec.user_id or spec.agent_id:
        hint += (" Budgets for another user or agent are not visible to a claim for this one: `ctxasm budget show "
                 f"--tenant {spec.tenant_id}` lists the tenant's.")
    return BudgetMissing(f"budget_missing: no context_budget guideline is in effect for tenant {spec.tenant_id}, "
                         f"{scope.text()}, at {view.evaluation_time}. {seen}: {rows}.{hint} "
                         "(`ctxasm budget show`, `ctxasm budget set`)")


def query_embedding(question: str) -> str:
    """The question's embedding in pgvector text form, for the vector half of hybrid retrieval."""
    from ctxasm.ml import embedding

    return embedding.vector_literal(embedding.embed_one(question))


def rerank(store: MemoryStore, tenant_id: str, scope: WindowScope, selection: Selection, reranker: Any) -> Selection:
    """Score the candidates with the cross-encoder and select again: the same snapshot and the same sources,
    only the relevance scores change (a candidate the first pass cut by its limit, and so not scored here,
    ranks after every scored one). The database applies the sigmoid."""
    candidates = [c for c in selection.candidates if c.slice != "volatile_tail"]
    logits = reranker.logits(scope.question, [c.tiers.full for c in candidates])
    scores = {c.ref.key: logit for c, logit in zip(candidates, logits)}
    again = store.select_window(tenant_id, replace(
        scope, scores=scores, snapshot=selection.snapshot, sources=list(selection.retrieval.items)))
    return replace(again, scorer=reranker.name)


def assemble(store: MemoryStore, spec: WindowSpec, at: datetime | None,
             scores: dict[str, float] | None = None, reranker: Any = None, summarizer: Any = None) -> AssembledWindow:
    """One window. Relevance: `scores` if given, else the `reranker` (default: the one CTXASM_RERANKER_PATH
    configures), else the database's lexical scorer; the manifest names which. When the budget turns compression
    on, candidates short of room get a summary from `summarizer` (default: the deployment's, ctxasm.ml.summarizer)
    before the manifest is recorded (ctxasm.services.compress). Its span is a search of the tenant's memory store
    (search_memory, ctxasm.operation assemble: ctxasm.services.memory_spans)."""
    with memory_spans.memory_span(memory_spans.SEARCH_MEMORY, spec.tenant_id, "assemble") as span:
        window, selection = _select_and_compose(store, spec, at, scores, reranker, summarizer)
        memory_spans.describe_window(span, window, selection)
        return window


def _select_and_compose(store: MemoryStore, spec: WindowSpec, at: datetime | None, scores: dict[str, float] | None,
                        reranker: Any, summarizer: Any) -> tuple[AssembledWindow, Selection]:
    check_spec(spec)
    embedded = query_embedding(spec.question)
    scope = WindowScope(spec.user_id, spec.agent_id, spec.thread_id, spec.intent, at, spec.question, scores,
                        query_embedding=embedded)
    if reranker is None and scores is None:
        from ctxasm.ml.reranker import configured_reranker

        reranker = configured_reranker()
    try:
        try:
            selection = store.select_window(spec.tenant_id, scope)
        except BudgetMissing as exc:
            raise budget_missing(store, spec, at, exc) from None
        if reranker is not None and scores is None:
            selection = rerank(store, spec.tenant_id, scope, selection, reranker)
        window: Window = compose(selection, spec)
        window = compress_during_assembly(store, spec, selection, window, summarizer)
        validate_manifest(window.manifest, checked_sources=selection.retrieval.items)
        manifest_id = store.record_manifest(window.manifest)
    except BaseException:
        store.rollback()  # a failed manifest write too: the connection goes back clean for the next call
        raise
    return AssembledWindow(window.request, window.manifest, manifest_id), selection


def record_provider_request(store: MemoryStore, window: AssembledWindow) -> str:
    """Record the complete provider request before a model call, linked to its manifest (erasure follows it)."""
    import uuid

    scope = window.manifest["scope"]
    record_id = f"request_{uuid.uuid4().hex}"
    store.set_tenant(window.manifest["tenant_id"])
    store.put_memory("conversation", {
        "id": record_id, "role": "event", "event_type": "provider_request",
        "user_id": scope.get("user_id"), "agent_id": scope.get("agent_id"), "thread_id": scope.get("thread_id"),
        "content": f"provider request for {window.manifest_id}, hash {window.manifest['request_hash']}",
        "content_json": {"manifest_id": window.manifest_id, "request_hash": window.manifest["request_hash"],
                         "request": window.request},
        "source_refs": [{"type": "manifest", "id": window.manifest_id, "version": 1}],
    })
    store.commit()
    return record_id
