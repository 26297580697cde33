"""Measure one tenant: repeated assemblies (different questions) with both assemblers, phase by phase.

The assembler runs the product path, `assembler.assemble`, unchanged, over a store whose selections see the
question's synthetic embedding (the benchmark rows carry synthetic embeddings, synthetic_embedding.py).
`assemble` still computes the real all-MiniLM-L6-v2 embedding of the question first; that time is taken out
of the assembly latency and reported as a figure of its own (`question_embedding_ms`).

Each measuring connection first runs untimed warm-up assemblies with questions of their own (none of them is
among the timed questions). A server that serves a tenant has its pooled connections and caches warm:
PostgreSQL plans a routine's statements once per connection (the first assemblies on a new connection cost
several times a later one), and a large tenant's index pages reach the buffer cache only when read. The
warm-up's latencies are reported apart (the first one, cold for this connection, and their median), so the cold
cost stays visible instead of being mixed into the timed percentiles.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ctxasm.core import tokens
from ctxasm.core.compose import WindowSpec, compose
from ctxasm.core.selection import Selection
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.local import pgconn
from ctxasm.ml.embedding import DIMENSIONS
from ctxasm.services.assemble import assemble, query_embedding
from ctxasm_dev import timing
from ctxasm_dev.bench import catalog, generate, synthetic_embedding
from ctxasm_dev.bench.naive import NaiveAssembler

#: Phases in report order; "python_selection" is the naive baseline's in-Python selection. Phases the code
#: reports that are not listed here are reported after these.
PHASES = ("database_selection", "python_selection", "reranking", "token_counting", "fitting", "rendering",
          "manifest_write")
#: the phase `assemble` times the question embedding in; it is not part of the assembly latency here
EMBEDDING_PHASE = "query_embedding"


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (q in 0..100); NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def _ms(values: list[float], q: float) -> float:
    return 1000 * percentile(values, q)


class SyntheticQuestions:
    """A PostgresStore whose selections use the question's synthetic embedding instead of the model's, and
    which keeps the last selection (to count candidates and vector-ranked evidence). Everything else is the
    store's own (round trips included)."""

    def __init__(self, store: PostgresStore, dimensions: int):
        self._store = store
        self._space = synthetic_embedding.space(dimensions)
        self._embeddings: dict[str, str] = {}
        self.last_selection: Selection | None = None

    def prepare(self, questions: list[str]) -> None:
        """Embed the questions ahead, so the timed selections do not pay for it."""
        for question, literal in zip(questions, synthetic_embedding.literals(self._space.embed(questions))):
            self._embeddings[question] = literal

    def select_window(self, tenant_id: str, scope: WindowScope, *args: Any, **kwargs: Any) -> Selection:
        if scope.question not in self._embeddings:
            self.prepare([scope.question])
        selection = self._store.select_window(
            tenant_id, replace(scope, query_embedding=self._embeddings[scope.question]), *args, **kwargs)
        self.last_selection = selection
        return selection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def question_dimensions(target: Any) -> int:
    """The width of the knowledge-base chunk embeddings (the question vector must match it), read from the
    catalog as the owner: the application role may not even name the schema ctxasm."""
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        widths = catalog.embedding_tables(connection)
    return widths.get("knowledge_base_chunk", DIMENSIONS)


def selection_counts(selection: Selection | None) -> dict[str, int]:
    """Candidates a selection handed to fitting, the evidence retrieved and how much of it had a vector rank."""
    if selection is None:
        return {"candidates": 0, "retrieved": 0, "vector_ranked": 0}
    items = selection.retrieval.items
    return {"candidates": len(selection.candidates), "retrieved": len(items),
            "vector_ranked": sum(1 for item in items if item.get("vector_rank") is not None)}


@dataclass
class Measurement:
    assembler: str
    size: int
    tenant_id: str
    database: str
    latencies: list[float] = field(default_factory=list)
    round_trips: list[int] = field(default_factory=list)
    counts: dict[str, list[int]] = field(default_factory=dict)
    phases: dict[str, list[float]] = field(default_factory=dict)
    embedding_seconds: list[float] = field(default_factory=list)
    peak_mib: float | None = None
    manifests: int = 0
    #: the untimed warm-up assemblies' latencies, in order (the first is the connection's first assembly)
    warm_up_latencies: list[float] = field(default_factory=list)

    def p50_ms(self) -> float:
        return _ms(self.latencies, 50)

    def warm_up_summary(self) -> dict[str, Any]:
        return {"assemblies": len(self.warm_up_latencies),
                "first_ms": 1000 * self.warm_up_latencies[0] if self.warm_up_latencies else None,
                "p50_ms": _ms(self.warm_up_latencies, 50) if self.warm_up_latencies else None}

    def summary(self) -> dict[str, Any]:
        known = [p for p in PHASES if p in self.phases] + sorted(p for p in self.phases if p not in PHASES)

        def mean(values: list[int]) -> float | None:
            return statistics.mean(values) if values else None

        return {
            "assembler": self.assembler, "size": self.size, "tenant": self.tenant_id,
            "assemblies": len(self.latencies),
            "p50_ms": _ms(self.latencies, 50), "p95_ms": _ms(self.latencies, 95), "p99_ms": _ms(self.latencies, 99),
            "mean_ms": 1000 * statistics.mean(self.latencies) if self.latencies else float("nan"),
            "phases_ms": {p: _ms(self.phases[p], 50) for p in known},
            "phases_mean_ms": {p: 1000 * statistics.mean(self.phases[p]) for p in known},
            "question_embedding_ms": _ms(self.embedding_seconds, 50) if self.embedding_seconds else None,
            "round_trips": mean(self.round_trips),
            "candidates": mean(self.counts.get("candidates", [])),
            "retrieved": mean(self.counts.get("retrieved", [])),
            "vector_ranked": mean(self.counts.get("vector_ranked", [])),
            "peak_mib": self.peak_mib, "manifests": self.manifests, "warm_up": self.warm_up_summary(),
        }


def spec_for(tenant_id: str, question: str) -> WindowSpec:
    return WindowSpec(tenant_id=tenant_id, intent="fact_check", question=question, **generate.SCOPE)


class Session:
    """One assembler on one open connection: `time(question)` runs one assembly and adds its figures."""

    def __init__(self, result: Measurement, assemble_one: Callable[[str], Selection | None], trips: Callable[[], int]):
        self.result = result
        self._assemble_one = assemble_one  # question -> the selection it used
        self._trips = trips

    def warm_up(self, questions: list[str]) -> None:
        """Untimed assemblies (not in the percentiles); their latencies, without the question embedding, are
        kept apart."""
        for question in questions:
            with timing.collect() as seconds:
                t0 = time.perf_counter()
                self._assemble_one(question)
                elapsed = time.perf_counter() - t0
            self.result.warm_up_latencies.append(elapsed - seconds.get(EMBEDDING_PHASE, 0.0))

    def time(self, question: str) -> None:
        """One timed assembly; the question embedding, if any, is kept apart from the latency."""
        result = self.result
        before = self._trips()
        with timing.collect() as seconds:
            t0 = time.perf_counter()
            selection = self._assemble_one(question)
            elapsed = time.perf_counter() - t0
        embedding = seconds.pop(EMBEDDING_PHASE, None)
        result.latencies.append(elapsed - (embedding or 0.0))
        if embedding is not None:
            result.embedding_seconds.append(embedding)
        result.round_trips.append(self._trips() - before)
        for name, value in selection_counts(selection).items():
            result.counts.setdefault(name, []).append(value)
        for phase_name, value in seconds.items():
            result.phases.setdefault(phase_name, []).append(value)
        result.manifests += 1


@contextmanager
def assembler_session(target: Any, tenant_id: str, size: int, questions: list[str]) -> Iterator[Session]:
    """The product assembler on an application connection, the questions' synthetic vectors made ahead (the
    warm-up questions' too: `questions` holds every question the session will be asked)."""
    with pgconn.connect(target, pgconn.app_login()) as connection:
        store = SyntheticQuestions(PostgresStore(connection), question_dimensions(target))
        store.prepare(questions)

        def assemble_one(question: str) -> Selection | None:
            assemble(store, spec_for(tenant_id, question), generate.EVALUATION_TIME)
            return store.last_selection

        yield Session(Measurement("assembler", size, tenant_id, target.database), assemble_one,
                      lambda: store.round_trips)


@contextmanager
def naive_session(target: Any, tenant_id: str, size: int) -> Iterator[Session]:
    # The naive baseline reads the tables themselves, which only the owner may (RLS still applies to it).
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        naive = NaiveAssembler(connection)

        def assemble_one(question: str) -> Selection | None:
            naive.assemble(spec_for(tenant_id, question), generate.EVALUATION_TIME)
            return naive.last_selection

        yield Session(Measurement("naive", size, tenant_id, target.database), assemble_one,
                      lambda: naive.round_trips)


def timed(sessions: list[Session], questions: list[str], max_seconds: float, log: Callable[[str], None]
          ) -> list[Measurement]:
    """Each question through every session in turn (interleaved, so drifting machine load hits them alike),
    until the questions run out or `max_seconds` have passed with at least 3 assemblies each."""
    started = time.perf_counter()
    for number, question in enumerate(questions):
        for session in sessions:
            session.time(question)
        if number >= 2 and time.perf_counter() - started > max_seconds:
            break
    for session in sessions:
        r = session.result
        log(f"{r.tenant_id} in {r.database}: {r.assembler}, {len(r.latencies)} assemblies, "
            f"p50 {r.p50_ms():.0f} ms")
    return [session.result for session in sessions]


def run_assembler(target: Any, tenant_id: str, size: int, questions: list[str], max_seconds: float,
                  log: Callable[[str], None], warm_up: list[str]) -> Measurement:
    """The assembler over `questions`, after one untimed assembly per `warm_up` question (the model loaded,
    the connection's plans made, the tenant's hot pages cached)."""
    with assembler_session(target, tenant_id, size, questions + warm_up) as session:
        session.warm_up(warm_up)
        return timed([session], questions, max_seconds, log)[0]


def run_naive(target: Any, tenant_id: str, size: int, questions: list[str], max_seconds: float,
              log: Callable[[str], None]) -> Measurement:
    with naive_session(target, tenant_id, size) as session:
        return timed([session], questions, max_seconds, log)[0]


def peak_memory(target: Any, tenant_id: str, question: str, naive: bool = True) -> dict[str, float]:
    """Peak Python heap (tracemalloc) of one assembly with each assembler, measured apart from the latency
    runs because tracing slows Python down. The rows a driver holds are Python objects, so they count."""
    peaks: dict[str, float] = {}
    with pgconn.connect(target, pgconn.app_login()) as connection, \
            pgconn.connect(target, pgconn.owner_login()) as owner_connection:
        store = SyntheticQuestions(PostgresStore(connection), question_dimensions(target))
        store.prepare([question])
        baseline = NaiveAssembler(owner_connection)
        query_embedding(question)  # load the embedding model before tracing: it is not per-assembly memory
        runs: list[tuple[str, Callable[[], Any]]] = [
            ("assembler", lambda: assemble(store, spec_for(tenant_id, question), generate.EVALUATION_TIME))]
        if naive:
            runs.append(("naive", lambda: baseline.assemble(spec_for(tenant_id, question), generate.EVALUATION_TIME)))
        for name, run in runs:
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
        store = SyntheticQuestions(PostgresStore(connection), question_dimensions(target))
        selections = []
        for question in questions:
            spec = spec_for(tenant_id, question)
            scope = WindowScope(spec.user_id, spec.agent_id, spec.thread_id, spec.intent, generate.EVALUATION_TIME,
                                question)
            selections.append((spec, store.select_window(tenant_id, scope)))
            connection.rollback()
    stripped = [(spec, replace(sel, candidates=tuple(replace(c, content_tokens=None, summary_tokens=None)
                                                     for c in sel.candidates))) for spec, sel in selections]
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
    figures["candidates"] = statistics.mean(len(sel.candidates) for _, sel in selections)
    figures["long_candidates"] = statistics.mean(
        sum(1 for c in sel.candidates if len(c.tiers.full) >= tokens.JOIN_MIN_CHARS) for _, sel in selections)
    return figures
