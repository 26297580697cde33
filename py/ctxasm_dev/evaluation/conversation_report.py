"""Figures of a conversation evaluation (conversations.py): aggregated per budget, method and category, as a
JSON-ready summary and as text tables.

Evidence recall of one question in one window = the share of its evidence turns the window holds; "any" = at
least one of them, "all" = every one. Figures are means over questions. ctxasm's share is also split by the
tier the turn was seated at (full, summary, pointer): the three add up to its share. ctxasm is reported per
weighting: "ctxasm" with relevance alone, "ctxasm default" with the default budget's weights; each with the
tokens of its complete request per query.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxasm_dev.evaluation.baselines import BASELINES, PACKING_RULE
from ctxasm_dev.evaluation.conversations import NOT_READ, TIER_ORDER, TURN_FATES, Evaluation, QuestionResult
from ctxasm_dev.evaluation.locomo import CATEGORY_NAMES

CTXASM = "ctxasm"
CTXASM_DEFAULT = "ctxasm default"
METHODS = (CTXASM, CTXASM_DEFAULT) + BASELINES
_CTXASM_WINDOWS = {CTXASM: lambda r: r.window, CTXASM_DEFAULT: lambda r: r.default_window}
_CATEGORY_ORDER = [CATEGORY_NAMES[c] for c in (1, 2, 3, 4)]
#: the most samples the text report gives a row each (the JSON always has every sample)
MAX_SAMPLE_ROWS = 20


def share(evidence: Sequence[str], present: Iterable[str]) -> float:
    """The share of `evidence` found in `present` (0 when there is no evidence)."""
    held = set(present)
    return sum(1 for dia_id in evidence if dia_id in held) / len(evidence) if evidence else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _present(result: QuestionResult, method: str) -> Iterable[str]:
    if method in _CTXASM_WINDOWS:
        return _CTXASM_WINDOWS[method](result).turns
    return result.baseline_turns[method]


def methods_of(results: Sequence[QuestionResult]) -> tuple[str, ...]:
    """The methods the results hold: ctxasm per weighting asked, then the baselines."""
    asked_default = bool(results) and all(r.default_window is not None for r in results)
    return tuple(m for m in METHODS if m != CTXASM_DEFAULT or asked_default)


def _recall(results: Sequence[QuestionResult], method: str) -> dict[str, float]:
    shares = [share(r.evidence, _present(r, method)) for r in results]
    if not shares:
        return {"share": float("nan"), "any": float("nan"), "all": float("nan")}
    return {"share": statistics.fmean(shares), "any": sum(s > 0 for s in shares) / len(shares),
            "all": sum(s == 1 for s in shares) / len(shares)}


def _category_key(name: str) -> tuple[int, str]:
    return (_CATEGORY_ORDER.index(name) if name in _CATEGORY_ORDER else len(_CATEGORY_ORDER), name)


def _mean(values: Iterable[float | int | None]) -> float:
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else float("nan")


def _budget_summary(budget: int, results: list[QuestionResult]) -> dict[str, Any]:
    methods = methods_of(results)
    windows = [r.window for r in results]
    allowances = [w.allowance for w in windows if w.allowance is not None]
    recall = {method: _recall(results, method) for method in methods}
    for method in methods:
        if method in _CTXASM_WINDOWS:
            chosen = [_CTXASM_WINDOWS[method](r) for r in results]
            recall[method]["tokens_used"] = _mean(w.used for w in chosen)
            recall[method]["tokens_per_query"] = _mean(w.request_tokens for w in chosen)
    for method in BASELINES:
        recall[method]["tokens_used"] = _mean(r.baseline_used[method] for r in results)
    categories = sorted({r.category_name for r in results}, key=_category_key)
    by_category = {}
    for name in categories:
        chosen = [r for r in results if r.category_name == name]
        by_category[name] = {"questions": len(chosen), **{m: _recall(chosen, m) for m in methods}}
    # In the file's order: a result list is built sample by sample.
    by_sample = {}
    for sample_id in dict.fromkeys(r.sample_id for r in results):
        chosen = [r for r in results if r.sample_id == sample_id]
        by_sample[sample_id] = {"questions": len(chosen), **{m: _recall(chosen, m) for m in methods}}
    tiers = {tier: _mean(share(r.evidence, [d for d, t in r.window.turns.items() if t == tier]) for r in results)
             for tier in TIER_ORDER}
    # Where each evidence turn went in ctxasm's (relevance-only) window: the shares add up to 1.
    fates = {fate: _mean(sum(r.window.fates.get(d, NOT_READ) == fate for d in r.evidence) / len(r.evidence)
                         for r in results if r.evidence) for fate in TURN_FATES}
    ok = [w for w in windows if w.error is None]
    embedding = [w.embedding_seconds for w in ok if w.embedding_seconds is not None]
    return {
        "budget": budget,
        "methods": list(methods),
        "questions": len(results),
        "allowance": {"mean": _mean(allowances), "min": min(allowances, default=None),
                      "max": max(allowances, default=None)},
        "failed_windows": len(windows) - len(ok),
        "errors": sorted({w.error for w in windows if w.error})[:3],
        "recall": recall,
        "by_category": by_category,
        "by_sample": by_sample,
        "ctxasm_tiers": tiers,
        "ctxasm_turns_seated": _mean(len(w.turns) for w in ok),
        "ctxasm_evidence_fates": fates,
        "latency_ms": {"p50": 1000 * percentile([w.seconds for w in ok], 50),
                       "p95": 1000 * percentile([w.seconds for w in ok], 95),
                       "mean": 1000 * _mean(w.seconds for w in ok)},
        "embedding_ms": {"p50": 1000 * percentile(embedding, 50)} if embedding else None,
    }


def misses(evaluation: Evaluation, budget: int, against: str) -> dict[str, Any]:
    """The questions at `budget` where baseline `against` held an evidence turn ctxasm's (relevance-only) window
    did not: each missed turn with what became of it in ctxasm's selection (TURN_FATES) and its text, so a
    reader can see why; and how many questions went the other way."""
    lost, won = [], 0
    for r in (r for r in evaluation.results if r.budget == budget):
        evidence = set(r.evidence)
        theirs, ours = evidence & r.baseline_turns[against], evidence & set(r.window.turns)
        won += bool(ours - theirs)
        if theirs - ours:
            texts = evaluation.turn_texts.get(r.sample_id, {})
            lost.append({"sample_id": r.sample_id, "question_number": r.number, "question": r.question,
                         "category": r.category_name,
                         "missed": [{"dia_id": d, "fate": r.window.fates.get(d, NOT_READ), "text": texts.get(d)}
                                    for d in sorted(theirs - ours, key=_dia_order)]})
    return {"against": against, "questions_lost": lost, "questions_won": won}


def _dia_order(dia_id: str) -> tuple[int, ...]:
    """D3:12 before D12:3 (the reader's ids are D<session>:<turn>)."""
    return tuple(int(n) for n in re.findall(r"\d+", dia_id))


def summarize(evaluation: Evaluation, misses_against: str | None = None) -> dict[str, Any]:
    """Every figure of the evaluation, JSON-ready; with `misses_against` (a baseline), each budget's `misses`."""
    questions = {(r.tenant_id, r.number): r for r in evaluation.results}
    categories = Counter(r.category_name for r in questions.values())
    measured_embedding = any(r.window.embedding_seconds is not None for r in evaluation.results)
    return {
        "file": evaluation.path,
        "seconds": evaluation.seconds,
        "samples": evaluation.samples,
        "questions": len(questions),
        "categories": {name: categories[name] for name in sorted(categories, key=_category_key)},
        "read_notes": dict(sorted(evaluation.notes.counts.items())),
        "read_examples": evaluation.notes.examples,
        "scorers": sorted({r.window.scorer for r in evaluation.results if r.window.scorer}),
        "latency_basis": ("assembly latency excluding the question embedding (the assembler's query_embedding "
                          "phase), including selection, fitting, rendering and the manifest write"
                          if measured_embedding else "assembly latency including the question embedding"),
        "budget_corrections": evaluation.budget_corrections,
        "packing_rule": PACKING_RULE,
        "budgets": [_budget_summary(b, [r for r in evaluation.results if r.budget == b])
                    | ({"misses": misses(evaluation, b, misses_against)} if misses_against else {})
                    for b in evaluation.budgets],
    }


#: how much of a missed turn's text the report shows
MISSED_TEXT_CHARS = 100


def _misses_lines(budget: int, found: Mapping[str, Any]) -> list[str]:
    against = found["against"]
    lines = ["", f"questions at budget {budget} where {against} held evidence ctxasm did not "
                 f"({len(found['questions_lost'])}; the reverse: {found['questions_won']})"]
    for question in found["questions_lost"]:
        lines.append(f"{question['sample_id']} q{question['question_number']} [{question['category']}] "
                     f"{question['question']}")
        for turn in question["missed"]:
            text = " ".join((turn["text"] or "").split())
            text = text if len(text) <= MISSED_TEXT_CHARS else text[:MISSED_TEXT_CHARS - 3] + "..."
            lines.append(f"  {turn['dia_id']} {turn['fate']}: {text}")
    return lines


def _cell(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(cells, widths)))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(line[i])) for line in [header, *rows]) for i in range(len(header))]
    return [_row(header, widths), *(_row(line, widths) for line in rows)]


def format_report(summary: Mapping[str, Any]) -> str:
    lines: list[str] = []
    samples = summary["samples"]
    lines.append(f"conversations: {summary['file']}")
    ids = ", ".join(str(s["sample_id"]) for s in samples[:12]) + (", ..." if len(samples) > 12 else "")
    lines.append(
        f"{len(samples)} sample{'' if len(samples) == 1 else 's'} ({ids}), {sum(s['sessions'] for s in samples)} "
        f"sessions, {sum(s['turns'] for s in samples)} turns, {sum(s['turn_tokens'] for s in samples)} turn tokens; "
        f"{summary['questions']} questions ("
        + ", ".join(f"{name} {n}" for name, n in summary["categories"].items()) + ")")
    for kind, count in summary["read_notes"].items():
        examples = summary["read_examples"].get(kind)
        lines.append(f"  {kind}: {count}" + (f" (e.g. {'; '.join(examples[:3])})" if examples else ""))
    lines.append(f"ctxasm scorer: {', '.join(summary['scorers']) or '-'}; budgets corrected after the first "
                 f"estimate: {summary['budget_corrections']}")
    lines.append(f"packing: {summary['packing_rule']}")
    budgets = summary["budgets"]
    methods = budgets[0]["methods"] if budgets else list(METHODS)
    ctxasm_methods = [m for m in methods if m in _CTXASM_WINDOWS]

    for key, title in (("share", "evidence recall: mean share of a question's evidence turns in the window"),
                       ("any", "evidence recall (any): share of questions with at least one evidence turn in the window"),
                       ("all", "evidence recall (all): share of questions with every evidence turn in the window")):
        lines += ["", title]
        lines += _table(["budget", "allowance", *methods],
                        [[str(b["budget"]), _cell(b["allowance"]["mean"], 0)]
                         + [_cell(b["recall"][m][key]) for m in methods] for b in budgets])

    lines += ["", "ctxasm by tier (share of evidence turns seated at each tier) and recalled-history tokens used (mean)"]
    lines += _table(["budget", *TIER_ORDER, "turns seated", "failed", *(f"tokens {m}" for m in methods)],
                    [[str(b["budget"])] + [_cell(b["ctxasm_tiers"][t]) for t in TIER_ORDER]
                     + [_cell(b["ctxasm_turns_seated"], 1), str(b["failed_windows"])]
                     + [_cell(b["recall"][m]["tokens_used"], 0) for m in methods] for b in budgets])
    lines += ["", "where ctxasm's evidence went (share of evidence turns, relevance-only windows)"]
    lines += _table(["budget", *TURN_FATES],
                    [[str(b["budget"])] + [_cell(b["ctxasm_evidence_fates"][f]) for f in TURN_FATES] for b in budgets])
    lines += ["", "tokens per query: the complete request ctxasm sent (mean o200k_base tokens), next to its recall"]
    lines += _table(["budget", *(f"{m} {k}" for m in ctxasm_methods for k in ("recall", "tokens"))],
                    [[str(b["budget"])] + [cell for m in ctxasm_methods
                                           for cell in (_cell(b["recall"][m]["share"]),
                                                        _cell(b["recall"][m]["tokens_per_query"], 0))]
                     for b in budgets])
    for b in budgets:
        for error in b["errors"]:
            lines.append(f"  budget {b['budget']}: failed window: {error}")

    for b in budgets:
        lines += ["", f"per category at budget {b['budget']} (mean share; any / all for ctxasm and hybrid)"]
        rows = []
        for name, figures in b["by_category"].items():
            rows.append([name, str(figures["questions"])] + [_cell(figures[m]["share"]) for m in methods]
                        + [f"{_cell(figures['ctxasm']['any'], 2)}/{_cell(figures['ctxasm']['all'], 2)}",
                           f"{_cell(figures['hybrid']['any'], 2)}/{_cell(figures['hybrid']['all'], 2)}"])
        lines += _table(["category", "n", *methods, "ctxasm any/all", "hybrid any/all"], rows)

    # One row a sample: a few long conversations (LoCoMo's ten) vary by sample; LongMemEval's hundreds of small
    # instances would be a page each, so its figures are in --json only.
    for b in budgets if 1 < len(summary["samples"]) <= MAX_SAMPLE_ROWS else ():
        lines += ["", f"per sample at budget {b['budget']} (mean share)"]
        lines += _table(["sample", "n", *methods],
                        [[name, str(figures["questions"])] + [_cell(figures[m]["share"]) for m in methods]
                         for name, figures in b["by_sample"].items()])

    for b in budgets:
        if "misses" in b:
            lines += _misses_lines(b["budget"], b["misses"])

    lines += ["", f"latency: {summary['latency_basis']}"]
    # A budget's p50 against the smallest budget's: how the cost grows with what the budget seats.
    smallest = min(budgets, key=lambda b: b["budget"])["latency_ms"]["p50"] if budgets else math.nan
    lines += _table(["budget", "windows", "p50 ms", "p95 ms", "mean ms", "embedding p50 ms", "p50 / smallest budget's"],
                    [[str(b["budget"]), str(b["questions"] - b["failed_windows"]), _cell(b["latency_ms"]["p50"], 1),
                      _cell(b["latency_ms"]["p95"], 1), _cell(b["latency_ms"]["mean"], 1),
                      _cell((b["embedding_ms"] or {}).get("p50"), 1),
                      _cell(b["latency_ms"]["p50"] / smallest if smallest > 0 else math.nan, 2)] for b in budgets])
    lines += ["", f"{summary['seconds']:.1f} s in all"]
    return "\n".join(lines)
