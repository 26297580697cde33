"""Per-phase timing for the benchmark and the evaluation: `with phase("fitting"): ...` adds the block's seconds
to the active collector, and does nothing else when none is active (one context-variable read).

The runtime package carries no timing hooks: the first `collect()` wraps the functions of the assembly path
that the phases are named after (the question embedding, the database selection, reranking, composing the
window, fitting, token counting, the manifest write), from outside, once per process.

    with collect() as seconds:
        assemble(...)
    seconds  # {"database_selection": 0.012, "token_counting": 0.003, ...}

Phases may nest (token counting happens inside fitting): a nested phase's time is subtracted from its
parent, so the phases of one collector add up to the time spent inside them, each second counted once.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Collector:
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    #: seconds spent in nested phases, per open phase (innermost last)
    nested: list[float] = field(default_factory=list)


_active: ContextVar[_Collector | None] = ContextVar("ctxasm_timing", default=None)


@contextmanager
def collect() -> Iterator[dict[str, float]]:
    """Collect the phases run in this context (thread or task) into the yielded dict (seconds per phase)."""
    instrument_assembly()
    collector = _Collector()
    token = _active.set(collector)
    try:
        yield collector.seconds
    finally:
        _active.reset(token)


def active() -> bool:
    """Whether a collector is active here (a cheap check for hot paths)."""
    return _active.get() is not None


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time a block as `name` when a collector is active; otherwise a no-op."""
    collector = _active.get()
    if collector is None:
        yield
        return
    started = _open(collector)
    try:
        yield
    finally:
        _close(collector, name, started)


def _open(collector: _Collector) -> float:
    collector.nested.append(0.0)
    return time.perf_counter()


def _close(collector: _Collector, name: str, started: float) -> None:
    elapsed = time.perf_counter() - started
    inner = collector.nested.pop()
    collector.seconds[name] = collector.seconds.get(name, 0.0) + elapsed - inner
    collector.calls[name] = collector.calls.get(name, 0) + 1
    if collector.nested:
        collector.nested[-1] += elapsed


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, timed as phase `name` whenever a collector is active."""
    if getattr(function, "_ctxasm_phase", None) == name:
        return function

    # The accounting is done here rather than through phase(): token counting is wrapped, a window counts a few
    # hundred times, and a generator-based context manager per call added about half a millisecond of the
    # harness's own to every assembly it timed.
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        collector = _active.get()
        if collector is None:
            return function(*args, **kwargs)
        started = _open(collector)
        try:
            return function(*args, **kwargs)
        finally:
            _close(collector, name, started)

    wrapper._ctxasm_phase = name  # type: ignore[attr-defined]
    return wrapper


_instrumented = False
_instrument_lock = threading.Lock()


def instrument_assembly() -> None:
    """Wrap the assembly path's functions in their phases (idempotent). Token counting is wrapped in every
    module that calls it, since each holds its own reference to `count_tokens`."""
    global _instrumented
    if _instrumented:
        return
    with _instrument_lock:
        if _instrumented:
            return
        from ctxasm.core import budget, fitting, tokens, tool_results, window_fit, window_manifest, window_records
        from ctxasm.engines.oracle import OracleStore
        from ctxasm.engines.postgres import PostgresStore
        from ctxasm.services import assemble

        wraps = [
            (assemble, "query_embedding", "query_embedding"),
            (assemble, "rerank", "reranking"),
            (assemble, "compose", "rendering"),  # what fitting and token counting (nested phases) leave
            (budget, "allocate", "fitting"),
            (window_fit, "fit_candidates", "fitting"),
            (window_fit, "reclaim", "fitting"),
            (PostgresStore, "select_window", "database_selection"),
            (PostgresStore, "record_manifest", "manifest_write"),
            (OracleStore, "select_window", "database_selection"),
            (OracleStore, "record_manifest", "manifest_write"),
        ] + [(module, "count_tokens", "token_counting") for module in (tokens, window_records, window_manifest, fitting, tool_results)]
        for owner, attribute, name in wraps:
            setattr(owner, attribute, timed(name, getattr(owner, attribute)))
        _instrumented = True
