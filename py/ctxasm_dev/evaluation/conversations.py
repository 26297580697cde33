"""Evidence recall of ctxasm's windows on long conversations, against retrieval baselines at the same tokens.

For each sample of a LoCoMo-format file (locomo.py): load it as a tenant through the loader
(conversation_tenants.py), then ask every question from a new thread after the last session through the real
assembler, once per recalled-history budget and weighting (relevance alone, and the default budget's
weights), and read from the manifest which evidence turns entered the window and at which tier. The baselines (baselines.py) rank the same turns and pack them into the allowance
the manifest reports. A benchmark: it measures, it asserts nothing (scripts/eval-conversations).

What is read from a manifest is kept to documented keys (`memories[].ref`, `memories[].tier`,
`allocation.slices.recalled_history`, `excluded[].ref` and `.rule`, `retrieval.items[].ref` and `.origin`), and
every entry whose ref is a conversation row of the sample counts, whatever else it carries, so a window that
renders several turns in one record still counts each turn by its own manifest entry.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from ctxasm.core.tokens import count_tokens
from ctxasm.errors import CtxasmError
from ctxasm_dev import timing
from ctxasm_dev.evaluation import baselines, conversation_tenants as tenants
from ctxasm_dev.evaluation.bm25 import BM25
from ctxasm_dev.evaluation.conversation_files import read_samples
from ctxasm_dev.evaluation.locomo import Question, ReadNotes, Sample

DEFAULT_BUDGETS = (1000, 2000, 4000)
TIER_ORDER = ("full", "summary", "pointer")
#: What became of a turn in one window, best first: seated (found by retrieval, or as the neighbour of a turn it
#: found), ranked below what its slice could fit, excluded by another rule (dedup, lifecycle, ...), cut by the
#: candidate limit (scored, then below the slice's limit), never among the rows the selection read.
SEATED, SEATED_ADJACENT = "seated", "seated as a neighbour"
BELOW_FIT, EXCLUDED, CUT, NOT_READ = "ranked below the fit", "excluded by a rule", "cut by the candidate limit", \
    "never retrieved"
TURN_FATES = (SEATED, SEATED_ADJACENT, BELOW_FIT, EXCLUDED, CUT, NOT_READ)
CALIBRATION_QUESTION = "What have we talked about?"
CALIBRATION_THREAD = "calibration"
#: The budget stored for the calibration window (tenant-wide row in the scenario).
CALIBRATION_USABLE = tenants.CALIBRATION_USABLE

Log = Callable[[str], None]


@dataclass(frozen=True)
class Window:
    """What one ctxasm window held of a sample's turns."""

    allowance: int | None
    used: int | None
    #: dia_id -> tier, for every turn of the sample the window carries
    turns: Mapping[str, str]
    seconds: float
    #: the question embedding's share of `seconds`, when the assembler reports it (else None)
    embedding_seconds: float | None
    scorer: str | None = None
    error: str | None = None
    #: the complete request's o200k_base tokens (the manifest's request_tokens): what the query costs
    request_tokens: int | None = None
    #: dia_id -> what became of each turn the selection read (TURN_FATES), for the turns of the sample it read
    fates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionResult:
    sample_id: str
    tenant_id: str
    number: int
    question: str
    category: int | None
    category_name: str
    evidence: tuple[str, ...]
    budget: int
    window: Window
    #: baseline -> dia_ids packed into the window's allowance
    baseline_turns: Mapping[str, frozenset[str]]
    baseline_used: Mapping[str, int]
    #: the same question and budget under the default budget's weights (None when not asked)
    default_window: Window | None = None


@dataclass
class Evaluation:
    path: str
    budgets: tuple[int, ...]
    weightings: tuple[str, ...] = (tenants.RELEVANCE, tenants.DEFAULT)
    samples: list[dict[str, Any]] = field(default_factory=list)
    notes: ReadNotes = field(default_factory=ReadNotes)
    results: list[QuestionResult] = field(default_factory=list)
    #: sample_id -> dia_id -> the turn as a reader sees it ("Speaker: text"), for naming what a window missed
    turn_texts: dict[str, dict[str, str]] = field(default_factory=dict)
    #: questions whose budget had to be corrected (the first estimate of usable_context missed)
    budget_corrections: int = 0
    seconds: float = 0.0


# --- reading a manifest ----------------------------------------------------------------------------------------


def _refs(entry: Mapping[str, Any]) -> list[Sequence[Any]]:
    ref = entry.get("ref")
    return [ref] if isinstance(ref, (list, tuple)) and len(ref) >= 2 else []


def window_turns(manifest: Mapping[str, Any], dia_of_row: Mapping[str, str]) -> dict[str, str]:
    """dia_id -> tier of every turn of the sample the window carries (a turn seen twice keeps its best tier)."""
    found: dict[str, str] = {}
    for entry in manifest.get("memories") or ():
        if not isinstance(entry, Mapping):
            continue
        tier = str(entry.get("tier") or "full")
        for ref in _refs(entry):
            if ref[0] != "conversation" or ref[1] not in dia_of_row:
                continue
            dia_id = dia_of_row[ref[1]]
            if dia_id not in found or _tier_rank(tier) < _tier_rank(found[dia_id]):
                found[dia_id] = tier
    return found


def turn_fates(manifest: Mapping[str, Any], dia_of_row: Mapping[str, str]) -> dict[str, str]:
    """dia_id -> TURN_FATES entry for every turn of the sample the selection read (a turn it did not read is
    absent: NOT_READ). Read from the manifest's memories, excluded rows and recorded source list."""
    def turns_of(entries: Any) -> list[tuple[str, Mapping[str, Any]]]:
        return [(dia_of_row[ref[1]], entry) for entry in entries or () if isinstance(entry, Mapping)
                for ref in _refs(entry) if ref[0] == "conversation" and ref[1] in dia_of_row]

    origins = {dia_id: item.get("origin") for dia_id, item in turns_of((manifest.get("retrieval") or {}).get("items"))}
    fates = {dia_id: CUT for dia_id in origins}
    for dia_id, entry in turns_of(manifest.get("excluded")):
        fates[dia_id] = BELOW_FIT if entry.get("rule") == "slice_budget" else EXCLUDED
    for dia_id, _ in turns_of(manifest.get("memories")):
        fates[dia_id] = SEATED_ADJACENT if origins.get(dia_id) == "adjacent" else SEATED
    return fates


def _tier_rank(tier: str) -> int:
    return TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER)


def recalled_history(manifest: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(allowance, used) of the recalled_history slice as the manifest's allocation reports them."""
    figures = ((manifest.get("allocation") or {}).get("slices") or {}).get("recalled_history") or {}
    allowance, used = figures.get("allowance"), figures.get("used")
    if used is None:  # an allocation without `used`: the entries' own token counts
        counted = [m.get("tokens") for m in manifest.get("memories") or () if m.get("slice") == "recalled_history"]
        used = sum(t for t in counted if isinstance(t, int)) if counted else None
    return allowance, used


# --- running ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SampleData:
    sample: Sample
    tenant_id: str
    dia_of_row: dict[str, str]
    dia_ids: list[str]
    costs: list[int]
    index: BM25
    vectors: list[list[float]]


def _prepare(sample: Sample, tenant_id: str, vectors: list[list[float]]) -> _SampleData:
    turns = sample.turns
    return _SampleData(sample, tenant_id, {tenants.row_id(t.dia_id): t.dia_id for t in turns},
                       [t.dia_id for t in turns], [baselines.turn_cost(t.content) for t in turns],
                       BM25([t.content for t in turns]), vectors)


def _assemble(store: Any, tenant_id: str, thread: str, question: str, at: Any,
              dia_of_row: Mapping[str, str]) -> Window:
    from ctxasm.services.assemble import assemble
    from ctxasm.core.compose import WindowSpec

    spec = WindowSpec(tenant_id=tenant_id, user_id=tenants.USER_ID, agent_id=tenants.AGENT_ID, thread_id=thread,
                      intent=tenants.INTENT, question=question)
    with timing.collect() as phases:
        started = time.perf_counter()
        try:
            assembled = assemble(store, spec, at)
        except CtxasmError as exc:
            return Window(None, None, {}, time.perf_counter() - started, phases.get("query_embedding"),
                          error=str(exc))
        elapsed = time.perf_counter() - started
    embedding = phases.get("query_embedding")
    allowance, used = recalled_history(assembled.manifest)
    return Window(allowance, used, window_turns(assembled.manifest, dia_of_row),
                  elapsed - (embedding or 0.0), embedding, assembled.manifest.get("scorer"),
                  request_tokens=assembled.manifest.get("request_tokens"),
                  fates=turn_fates(assembled.manifest, dia_of_row))


@dataclass(frozen=True)
class Calibration:
    """usable_context = reserves + fixed + count_tokens(question) + budget, where `fixed` is what the fixed
    slices other than the question cost, measured on one window of the tenant."""

    fixed: int

    def usable_context(self, question: str, budget: int) -> int:
        return (tenants.OUTPUT_RESERVE + tenants.request_overhead_reserve(budget) + self.fixed
                + count_tokens(question) + budget)


def calibrate(store: Any, data: _SampleData) -> Calibration:
    at = tenants.question_time(data.sample)
    window = _assemble(store, data.tenant_id, CALIBRATION_THREAD, CALIBRATION_QUESTION, at, data.dia_of_row)
    if window.allowance is None:
        raise CtxasmError(f"{data.tenant_id}: the calibration window failed: {window.error or 'no allocation'}")
    before_fixed = CALIBRATION_USABLE - tenants.OUTPUT_RESERVE - tenants.request_overhead_reserve(CALIBRATION_USABLE)
    return Calibration(before_fixed - window.allowance - count_tokens(CALIBRATION_QUESTION))


def _question_window(store: Any, data: _SampleData, calibration: Calibration, question: Question, budget: int,
                     evaluation: Evaluation, weighting: str = tenants.RELEVANCE) -> Window:
    """Store the question thread's budget, assemble; if the allowance misses the budget, correct the budget
    once (a later version of the same row) and assemble again."""
    at = tenants.question_time(data.sample)
    thread = tenants.question_thread(question.number, budget, weighting)
    row = f"budget-{thread}"
    usable = calibration.usable_context(question.question, budget)
    overhead = tenants.request_overhead_reserve(budget)
    valid_from = data.sample.last_time + tenants.BUDGET_DELAY
    store.set_tenant(data.tenant_id)
    store.put_memory("guideline", tenants.budget_row(row, thread, usable, overhead, valid_from, weighting))
    store.commit()
    window = _assemble(store, data.tenant_id, thread, question.question, at, data.dia_of_row)
    again = usable + budget - (window.allowance or 0)
    if window.allowance is not None and window.allowance != budget and again > tenants.OUTPUT_RESERVE + overhead:
        evaluation.budget_corrections += 1
        corrected = tenants.budget_row(row, thread, again, overhead, valid_from + timedelta(minutes=1), weighting)
        store.set_tenant(data.tenant_id)
        store.supersede("guideline", row, {k: v for k, v in corrected.items() if k != "id"})
        store.commit()
        window = _assemble(store, data.tenant_id, thread, question.question, at, data.dia_of_row)
    return window


def _load(target: Any, samples: list[Sample], ids: list[str], vectors: list[list[list[float]]], log: Log) -> None:
    from ctxasm.services import load

    document = tenants.scenario(samples, ids)
    with tempfile.TemporaryDirectory(prefix="ctxasm-conversations-") as folder:
        path = Path(folder) / "conversations.json"
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        report = load.load_file(target, path,
                                prepare=lambda read: tenants.attach_turn_vectors(read, samples, ids, vectors))
    log(report.describe().splitlines()[0])


def _embed_turns(samples: list[Sample]) -> list[list[list[float]]]:
    from ctxasm.ml import embedding
    from ctxasm.progress import progress

    texts = [[turn.content for turn in sample.turns] for sample in samples]
    with progress("embedding turns (stored, and ranked by the dense baseline)", total=sum(map(len, texts))) as tick:
        return [embedding.embed(group, progress=tick) for group in texts]


def evaluate_file(target: Any, path: str | Path, budgets: Sequence[int] = DEFAULT_BUDGETS,
                  limit_questions: int | None = None, log: Log = lambda _: None,
                  weightings: Sequence[str] = (tenants.RELEVANCE, tenants.DEFAULT),
                  sample_ids: Collection[str] | None = None) -> Evaluation:
    """Load every sample of the file (or those `sample_ids` names) into the (fresh) database `target` and
    evaluate its questions, under each of `weightings` (tenants.WEIGHTINGS; relevance first: the baselines pack
    its allowance)."""
    from ctxasm.ml import embedding
    from ctxasm.local import pgconn
    from ctxasm.progress import progress
    from ctxasm.engines.postgres import PostgresStore

    started = time.perf_counter()
    samples, notes = read_samples(path, sample_ids)
    if limit_questions is not None:
        samples = [replace(s, questions=s.questions[:limit_questions]) for s in samples]
    evaluation = Evaluation(str(path), tuple(budgets), tuple(weightings), notes=notes)
    if not samples:
        return evaluation
    ids = tenants.tenant_ids(samples)
    # The turns are embedded once: the dense baseline ranks by these vectors, and the load stores them.
    embedding_started = time.perf_counter()
    vectors = _embed_turns(samples)
    log(f"embedded {sum(map(len, vectors))} turns in {time.perf_counter() - embedding_started:.2f} s")
    _load(target, samples, ids, vectors, log)
    prepared = [_prepare(s, t, v) for s, t, v in zip(samples, ids, vectors)]
    for data in prepared:
        evaluation.samples.append({
            "sample_id": data.sample.sample_id, "tenant_id": data.tenant_id, "sessions": len(data.sample.sessions),
            "turns": len(data.dia_ids), "turn_tokens": sum(data.costs), "questions": len(data.sample.questions)})
        evaluation.turn_texts[data.sample.sample_id] = {t.dia_id: t.content for t in data.sample.turns}
    total = sum(len(s.questions) for s in samples) * len(budgets) * len(weightings)
    with pgconn.connect(target, pgconn.app_login()) as connection, progress("assembling windows", total=total) as tick:
        store = PostgresStore(connection)
        for data in prepared:
            calibration = calibrate(store, data)
            for question in data.sample.questions:
                question_vector = embedding.embed_one(question.question)
                orders = baselines.rankings(question.question, len(data.dia_ids), data.index, data.vectors,
                                            question_vector)
                for budget in budgets:
                    window = _question_window(store, data, calibration, question, budget, evaluation)
                    default = (_question_window(store, data, calibration, question, budget, evaluation,
                                                tenants.DEFAULT) if tenants.DEFAULT in weightings else None)
                    allowance = window.allowance if window.allowance is not None else budget
                    packed = {name: baselines.pack(order, data.costs, allowance) for name, order in orders.items()}
                    evaluation.results.append(QuestionResult(
                        data.sample.sample_id, data.tenant_id, question.number, question.question,
                        question.category, question.category_name, question.evidence, budget, window,
                        {name: frozenset(data.dia_ids[i] for i in p.seated) for name, p in packed.items()},
                        {name: p.used for name, p in packed.items()}, default))
                    tick(len(weightings))
    evaluation.seconds = time.perf_counter() - started
    return evaluation
