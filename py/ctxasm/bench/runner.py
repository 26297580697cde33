"""Measure one tenant: repeated assemblies (different questions) with both assemblers, phase by phase."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import pgconn, timing, tokens
from ..assembler import assemble, query_embedding
from ..store import PostgresStore, WindowScope
from ..window import WindowSpec, compose
from . import generate
from .naive import NaiveAssembler

#: Phases in report order; "python_selection" is the naive baseline's in-Python selection.
PHASES = ("database_selection", "python_selection", "reranking", "token_counting", "fitting", "rendering",
          "manifest_write")


@dataclass
class Measurement:
    assembler: str
    size: int
    latencies: list[float] = field(default_factory=list)
    round_trips: list[int] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)
    embedding_seconds: list[float] = field(default_factory=list)
    peak_mib: float | None = None
    manifests: int = 0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        index = min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))
        return ordered[index]

    def summary(self) -> dict[str, Any]:
        return {
            "assembler": self.assembler, "size": self.size, "assemblies": len(self.latencies),
            "p50_ms": 1000 * self.percentile(50), "p95_ms": 1000 * self.percentile(95),
            "p99_ms": 1000 * self.percentile(99),
            "round_trips": statistics.mean(self.round_trips) if self.round_trips else None,
            "candidates": statistics.mean(self.candidates) if self.candidates else None,
            "phases_ms": {name: 1000 * statistics.mean(values) for name, values in self.phases.items()},
            "question_embedding_ms": 1000 * statistics.mean(self.embedding_seconds) if self.embedding_seconds else 0,
            "peak_mib": self.peak_mib, "manifests": self.manifests,
        }


def spec_for(tenant_id: str, question: str) -> WindowSpec:
    return WindowSpec(tenant_id=tenant_id, intent="fact_check", question=question, **generate.SCOPE)


def _candidates(manifest: dict[str, Any]) -> int:
    """Dynamic candidates the fitter saw: the seated ones plus those it excluded."""
    seated = sum(1 for m in manifest["memories"] if m["slice"] not in ("guidelines", "persona", "tools"))
    return seated + sum(1 for x in manifest["excluded"] if x["rule"] in ("slice_budget", "tier_limit"))


def _measure(name: str, size: int, questions: list[str], max_seconds: float, log: Callable[[str], None],
             tenant_id: str, assemble_one: Callable[[str], dict[str, Any]], trips: Callable[[], int]) -> Measurement:
    """Time `assemble_one` (question -> manifest) over the questions, phase by phase; the question embedding,
    if any, is reported apart from the latency."""
    result = Measurement(name, size)
    started = time.perf_counter()
    for number, question in enumerate(questions):
        before = trips()
        with timing.collect() as seconds:
            t0 = time.perf_counter()
            manifest = assemble_one(question)
            elapsed = time.perf_counter() - t0
        embedding = seconds.pop("query_embedding", 0.0)
        result.latencies.append(elapsed - embedding)
        result.embedding_seconds.append(embedding)
        result.round_trips.append(trips() - before)
        result.candidates.append(_candidates(manifest))
        for phase_name, value in seconds.items():
            result.phases.setdefault(phase_name, []).append(value)
        result.manifests += 1
        if number >= 2 and time.perf_counter() - started > max_seconds:
            break
    log(f"{tenant_id}: {name}, {len(result.latencies)} assemblies, p50 {1000 * result.percentile(50):.0f} ms")
    return result


def run_assembler(target: Any, tenant_id: str, size: int, questions: list[str], max_seconds: float,
                  log: Callable[[str], None]) -> Measurement:
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        return _measure("assembler", size, questions, max_seconds, log, tenant_id,
                        lambda q: assemble(store, spec_for(tenant_id, q), generate.EVALUATION_TIME).manifest,
                        lambda: store.round_trips)


def run_naive(target: Any, tenant_id: str, size: int, questions: list[str], max_seconds: float,
              log: Callable[[str], None]) -> Measurement:
    # The naive baseline reads the tables themselves, which only the owner may (RLS still applies to it).
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        naive = NaiveAssembler(connection)

        def assemble_one(question: str) -> dict[str, Any]:
            naive.assemble(spec_for(tenant_id, question), generate.EVALUATION_TIME)
            return naive.last_manifest

        return _measure("naive", size, questions, max_seconds, log, tenant_id, assemble_one,
                        lambda: naive.round_trips)


def peak_memory(target: Any, tenant_id: str, question: str) -> dict[str, float]:
    """Peak Python heap (tracemalloc) of one assembly with each assembler, measured apart from the latency
    runs because tracing slows Python down. The rows a driver holds are Python objects, so they count."""
    peaks: dict[str, float] = {}
    with pgconn.connect(target, pgconn.app_login()) as connection, \
            pgconn.connect(target, pgconn.owner_login()) as owner_connection:
        store = PostgresStore(connection)
        naive = NaiveAssembler(owner_connection)
        query_embedding(question)  # load the embedding model before tracing: it is not per-assembly memory
        for name, run in (("assembler", lambda: assemble(store, spec_for(tenant_id, question),
                                                         generate.EVALUATION_TIME)),
                          ("naive", lambda: naive.assemble(spec_for(tenant_id, question),
                                                           generate.EVALUATION_TIME))):
            gc.collect()
            tracemalloc.start()
            try:
                run()
                peaks[name] = tracemalloc.get_traced_memory()[1] / 2 ** 20
            finally:
                tracemalloc.stop()
    return peaks


def token_count_gain(target: Any, tenant_id: str, questions: list[str], repeats: int = 3) -> dict[str, Any]:
    """compose() on the same selections with and without the stored counts: token-counting seconds and the
    whole compose, so the gain is measured on identical inputs (and the windows compared)."""
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        selections = []
        for question in questions:
            spec = spec_for(tenant_id, question)
            scope = WindowScope(spec.user_id, spec.agent_id, spec.thread_id, spec.intent, generate.EVALUATION_TIME,
                                question, query_embedding=query_embedding(question))
            selections.append((spec, store.select_window(tenant_id, scope)))
            connection.rollback()
    stripped = [(spec, {**sel, "candidates": [{k: v for k, v in c.items()
                                               if k not in ("content_tokens", "summary_tokens")}
                                              for c in sel["candidates"]]}) for spec, sel in selections]
    figures: dict[str, Any] = {}
    identical = True
    for spec, selection in selections + stripped:  # warm-up: encoder, pre-tokenizer and caches loaded
        compose(selection, spec)
    samples: dict[str, tuple[list[float], list[float]]] = {"stored": ([], []), "counted": ([], [])}
    for _ in range(repeats):  # interleaved, so neither variant gets the quieter moments
        for label, inputs in (("stored", selections), ("counted", stripped)):
            counting, total = samples[label]
            for spec, selection in inputs:
                with timing.collect() as seconds:
                    t0 = time.perf_counter()
                    compose(selection, spec)
                    total.append(time.perf_counter() - t0)
                counting.append(seconds.get("token_counting", 0.0))
    for label, (counting, total) in samples.items():
        figures[label] = {"token_counting_ms": 1000 * statistics.mean(counting),
                          "compose_ms": 1000 * statistics.mean(total)}
    for (spec, with_counts), (_, without) in zip(selections, stripped):
        identical &= compose(with_counts, spec).request == compose(without, spec).request
    figures["identical_requests"] = identical
    figures["windows"] = len(selections)
    figures["candidates"] = statistics.mean(len(sel["candidates"]) for _, sel in selections)
    figures["long_candidates"] = statistics.mean(
        sum(1 for c in sel["candidates"] if len(c["tiers"]["full"]) >= tokens.JOIN_MIN_CHARS) for _, sel in selections)
    return figures
