"""Per-phase timing for the benchmark: `with phase("fitting"): ...` adds the block's seconds to the active
collector, and does nothing else when none is active (the normal path pays one context-variable read).

    with collect() as seconds:
        assemble(...)
    seconds  # {"database_selection": 0.012, "token_counting": 0.003, ...}

Phases may nest (token counting happens inside fitting): a nested phase's time is subtracted from its
parent, so the phases of one collector add up to the time spent inside them, each second counted once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


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
    collector.nested.append(0.0)
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        inner = collector.nested.pop()
        collector.seconds[name] = collector.seconds.get(name, 0.0) + elapsed - inner
        collector.calls[name] = collector.calls.get(name, 0) + 1
        if collector.nested:
            collector.nested[-1] += elapsed

