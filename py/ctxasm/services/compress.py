"""Compression during assembly: the hook the assembly path calls between composing a window and recording it.

When the window's budget turns compression on (`compression.enabled` in the context_budget guideline; off by
default), the candidates the window had to show as a pointer or leave out for lack of room, and that have no
usable summary, are given to the deployment's summarizer (ctxasm.ml.summarizer) within the budget's time and
token limits. Each compression that comes back is stored (context_compression with its source's reference and
hash, the model and the prompt version, and a context_source_ref row) after the selection's reads, and the
window is composed again with them at the summary tier. The manifest records what was asked and written
(`compression`) and which entries show a compression written in this window (`summary_written`).

Nothing here can fail the window: a provider error, a timeout, an unusable answer or a refused write leaves the
candidate as it was (a pointer, or out) and is recorded under `compression.failed`. No transaction is open while
the model works: the selection's is ended first, each compression is committed with its provenance row, and the
tenant is set again for the manifest's transaction. A compression is written with the caller's claim, in the
caller's user and agent scope.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ctxasm.core import budget as budgets
from ctxasm.core import compression
from ctxasm.core.compose import Window, WindowSpec, compose
from ctxasm.core.selection import Selection
from ctxasm.core.compression import Stored, Target
from ctxasm.core.extractive import source_hash
from ctxasm.core.manifest import Manifest
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import CtxasmError
from ctxasm.services import memory_spans as spans

#: summarizer calls of one window in flight at once
PARALLEL_CALLS = 4
#: the relation a compression's context_source_ref row names (as the loader's extractive compressions do)
COMPRESSED_FROM = "compressed_from"


@dataclass
class _Outcome:
    written: dict[str, Any] = field(default_factory=dict)  # ref key -> Written
    failed: list[tuple[Ref, str]] = field(default_factory=list)
    skipped: list[tuple[Ref, str]] = field(default_factory=list)
    asked: list[Target] = field(default_factory=list)
    tokens: int = 0


def compress_during_assembly(store: MemoryStore, spec: WindowSpec, selection: Selection, window: Window,
                             summarizer: Any = None) -> Window:
    """`window`, or, when the budget asks for compression and some candidate needs one, the window composed
    again with the compressions the summarizer wrote (stored before this returns)."""
    settings = budgets.parse_budget(selection.budget.content_json).compression
    if not settings.enabled:
        return window
    wanted = compression.targets(selection, window.manifest, settings.summary_tokens)
    if not wanted:
        return window
    if summarizer is None:
        from ctxasm.ml.summarizer import SUMMARY_MODEL_ENV, configured_summarizer

        try:
            summarizer = configured_summarizer()
        except CtxasmError as exc:  # a deployment that names a model it cannot call: the window goes on without
            record = compression.report(os.environ.get(SUMMARY_MODEL_ENV) or "unconfigured", (), {},
                                        [(target.ref, str(exc)) for target in wanted], (), 0, 0)
            return Window(window.request, Manifest({**window.manifest, "compression": record}))
    # The selection is read: its transaction ends before any model call, so no snapshot or lock waits on one.
    store.rollback()
    started = time.monotonic()
    outcome = _ask(summarizer, wanted, settings)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    stored = _store(store, spec, wanted, outcome)
    store.set_tenant(spec.tenant_id)  # the manifest is recorded in a transaction of its own
    if stored:
        window = compose(compression.with_compressions(selection, stored), spec)
    record = compression.report(summarizer.model, outcome.asked, stored, outcome.failed, outcome.skipped,
                                outcome.tokens, elapsed_ms)
    return Window(window.request, Manifest({**window.manifest, "compression": record}))


def _ask(summarizer: Any, wanted: Sequence[Target], settings: budgets.Compression) -> _Outcome:
    """Ask for each target, best first, while the token budget lasts, a few calls at a time, until the time
    budget is spent; a call still running then is abandoned (its own timeout ends it soon after)."""
    outcome = _Outcome()
    deadline = time.monotonic() + settings.time_budget_ms / 1000
    planned: list[tuple[Target, int]] = []
    spent = 0
    for target in wanted:
        cost = summarizer.cost(target.text, settings.summary_tokens)
        if spent + cost > settings.token_budget:
            outcome.skipped.append((target.ref, "token_budget"))
            continue
        spent += cost
        planned.append((target, cost))
    pool = ThreadPoolExecutor(max_workers=PARALLEL_CALLS, thread_name_prefix="ctxasm-compress")
    running: dict[Future[Any], Target] = {}
    waiting = list(planned)
    try:
        while waiting or running:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            while waiting and len(running) < PARALLEL_CALLS:
                target, cost = waiting.pop(0)
                outcome.asked.append(target)
                outcome.tokens += cost
                running[pool.submit(summarizer.compress, target.text, max_tokens=settings.summary_tokens,
                                    timeout=left)] = target
            done, _ = wait(running, timeout=left, return_when=FIRST_COMPLETED)
            for future in done:
                target = running.pop(future)
                try:
                    outcome.written[target.ref.key] = future.result()
                except CtxasmError as exc:
                    outcome.failed.append((target.ref, str(exc)))
                except Exception as exc:  # noqa: BLE001 - a provider's failure degrades the candidate, never the window
                    outcome.failed.append((target.ref, f"{type(exc).__name__}: {exc}"))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    limit = settings.time_budget_ms
    outcome.failed += [(target.ref, f"timed out: no answer within the time budget of {limit} ms")
                       for target in running.values()]
    outcome.skipped += [(target.ref, "time_budget") for target, _ in waiting]
    return outcome


def _store(store: MemoryStore, spec: WindowSpec, wanted: Sequence[Target], outcome: _Outcome) -> dict[str, Stored]:
    """Write each compression with its provenance row (a create_memory span each); a refused write is recorded as
    a failure of that candidate and the others are written without it."""
    texts = {target.ref.key: target.text for target in wanted}
    since = {target.ref.key: target.valid_from for target in wanted}
    stored: dict[str, Stored] = {}
    for key, written in list(outcome.written.items()):
        source = Ref.of(key)
        compression_id = f"cmp_{uuid.uuid4().hex}"
        scope = {"user_id": spec.user_id, "agent_id": spec.agent_id}
        try:
            with spans.memory_span(spans.CREATE_MEMORY, spec.tenant_id, "compress",
                                   memory_type="compression") as span:
                _write(store, spec, source, compression_id, texts[key], written,
                       {**scope, **({"valid_from": since[key]} if since.get(key) else {})})
                spans.set_records(span, 1, compression_id)
        except CtxasmError as exc:
            store.rollback()
            outcome.failed.append((source, f"not stored: {exc}"))
            continue
        stored[key] = Stored(Ref("compression", compression_id, 1), written.text, count_tokens(written.text),
                             written.model, written.prompt_version)
    return stored


def _write(store: MemoryStore, spec: WindowSpec, source: Ref, compression_id: str, text: str, written: Any,
           scope: dict[str, Any]) -> None:
    """One compression and its provenance row, committed together. A compression is in effect from when its
    source version is (`scope`'s valid_from): it renders that version's text, and a window evaluated at a time
    before the compression was written, while the version was in effect, may show it (the selection reads a
    compression in effect at the window's evaluation time only)."""
    store.set_tenant(spec.tenant_id)
    store.put_memory("compression", {
        "id": compression_id, "source_type": source.memory_type, "source_id": source.id,
        "source_version": source.version, "source_hash": source_hash(text), "generating_model": written.model,
        "prompt_version": written.prompt_version, "content": written.text, "source_refs": [source.as_source_ref()],
        **scope})
    store.put_memory("source_ref", {
        "id": f"ref_{compression_id}", "derived_type": "compression", "derived_id": compression_id,
        "derived_version": 1, "source_type": source.memory_type, "source_id": source.id,
        "source_version": source.version, "relation": COMPRESSED_FROM,
        **{k: v for k, v in scope.items() if k != "valid_from"},
        "content": f"compression {compression_id} of {source.memory_type} {source.id} version {source.version}"})
    store.commit()
