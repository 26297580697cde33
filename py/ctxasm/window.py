"""Compose one window from the database's selection: budget, tier fitting, rendering, manifest. Pure.

Input is the JSON document `CTX_ASSEMBLY.select_window` returns (the selection rules already applied, in
order, in the database); output is the provider request and its manifest. Nothing here reads or writes
the database, so the same selection always gives the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from . import budget as budgets
from . import render
from . import timing  # bench: per-phase seconds (no-op unless collecting)
from .errors import CtxasmError, InvalidBudget
from .fitting import Candidate, SliceFit, fit_slice
from .tokens import ENCODING_NAME, JOIN_MIN_CHARS, count_joined, count_tokens

#: Memory records appear in the user message in this order (most stable first); the tail is rendered as turns.
RECORD_SLICES = ("durable_facts", "evidence", "recalled_history")
DEFAULT_MODEL = "gpt-4.1-mini"


class RequestOverBudget(CtxasmError):
    """The serialized request counted more tokens than the budget allows."""

    code = "request_over_budget"

    def __init__(self, counted: int, limit: int):
        self.counted, self.limit = counted, limit
        super().__init__(f"request_over_budget: the complete request is {counted} tokens, the budget allows {limit}")


@dataclass(frozen=True)
class WindowSpec:
    """What the caller asked for, recorded in the manifest."""

    tenant_id: str
    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    intent: str
    question: str
    model: str = DEFAULT_MODEL


@dataclass(frozen=True)
class Window:
    request: dict[str, Any]
    manifest: dict[str, Any]


def code_hash() -> str:
    """sha256 over the Python modules that decide what the request looks like; replay compares it."""
    digest = hashlib.sha256()
    for module in ("window.py", "render.py", "budget.py", "fitting.py", "tokens.py"):
        digest.update(module.encode())
        digest.update((files("ctxasm") / module).read_bytes())
    return digest.hexdigest()


def _ref_key(ref: Sequence[Any]) -> str:
    return f"{ref[0]}:{ref[1]}:{ref[2]}"


def _parse_budget(selection: Mapping[str, Any]) -> budgets.Budget:
    ref = selection["budget"]["ref"]
    try:
        return budgets.parse_budget(selection["budget"]["content_json"])
    except InvalidBudget as exc:
        raise InvalidBudget(f"{exc} (budget {ref[1]} version {ref[2]})") from None


def _annotations(candidate: Mapping[str, Any]) -> tuple[render.Annotation, ...]:
    return tuple(
        render.Annotation(render.memory_id(note["current"]) if note.get("current") else None,
                          note.get("current_content"))
        for note in candidate.get("annotations", ())
    )


def _record_tiers(candidate: Mapping[str, Any]) -> dict[str, str | None]:
    """Each tier rendered as the complete <memory> record it would be, so its cost is the real cost."""
    mid = render.memory_id(candidate["ref"])
    notes = _annotations(candidate)
    tiers = candidate["tiers"]
    pointer = tiers.get("pointer")
    if pointer and candidate.get("title"):
        pointer = f"{candidate['title']}: {pointer}"
    texts = {"full": tiers["full"], "summary": tiers.get("summary"), "pointer": pointer}
    return {
        tier: render.render_memory(mid, candidate["type"], candidate["status"], tier, text, notes)
        if text else None
        for tier, text in texts.items()
    }


# --- stored token counts (issue 8): a tier's cost from the text's stored count, without encoding it again ---
_CONTENT_END = "</content>\n  </memory>"


def _stored_costs(item: Mapping[str, Any], rendered: Mapping[str, str | None]) -> dict[str, int]:
    """Costs of the full and summary tiers computed from `content_tokens` / `summary_tokens` where the
    selection carries them; tiers left out are counted by the fitter as before. A record's cost is the
    stored count joined with its wrapper (tokens.count_joined); text that escaping changes (&, <, >) is
    counted whole, since the stored count is of the unescaped text. Turns are rendered bare: the stored
    count is their cost."""
    costs: dict[str, int] = {}
    for tier, key in (("full", "content_tokens"), ("summary", "summary_tokens")):
        stored, text, record = item.get(key), item["tiers"].get(tier), rendered.get(tier)
        if stored is None or not text or record is None:
            continue
        if item["slice"] not in RECORD_SLICES:
            if item.get("role") in render.TAIL_ROLES:  # a quoted turn costs its record, not its bare text
                costs[tier] = stored
        elif len(text) >= JOIN_MIN_CHARS and render.escape(text) == text and record.endswith(text + _CONTENT_END):
            costs[tier] = count_joined(record[:len(record) - len(text) - len(_CONTENT_END)], text, _CONTENT_END,
                                       stored)
    return costs
# --- end stored token counts ---


def _fit_candidates(selection: Mapping[str, Any], budget: budgets.Budget, allocation: budgets.Allocation
                    ) -> tuple[dict[str, SliceFit], dict[str, dict[str, int]]]:
    by_slice: dict[str, list[Candidate]] = {name: [] for name in budgets.DYNAMIC_SLICES}
    for item in selection["candidates"]:
        tiers = (_record_tiers(item) if item["slice"] in RECORD_SLICES  # turns: whole or not at all
                 else {"full": render.tail_turn(render.memory_id(item["ref"]), item["role"], item["tiers"]["full"])[1]})
        by_slice[item["slice"]].append(
            Candidate(key=_ref_key(item["ref"]), slice=item["slice"], tiers=tiers,
                      required=bool(item.get("required")), ref=item,
                      token_counts=_stored_costs(item, tiers)))
    allowances = dict(allocation.slices)
    fits: dict[str, SliceFit] = {}
    report: dict[str, dict[str, int]] = {}
    for name in budgets.fit_order(budget):
        granted = allowances[name]
        fit = fit_slice(by_slice[name], granted, tier_limits=budget.tier_limits.get(name))
        fits[name] = fit
        allowances = budgets.pass_overflow(allowances, budget.overflow_order, name, fit.unused)
        receiver = budgets.overflow_receiver(budget.overflow_order, name)
        report[name] = {"share": allocation.slices[name], "allowance": granted, "used": fit.used,
                        "passed_on": fit.unused if receiver else 0}
    return fits, report


def compose(selection: Mapping[str, Any], spec: WindowSpec) -> Window:
    """The request and manifest for one selection. Raises the budget's and the fitter's errors."""
    budget = _parse_budget(selection)
    budget.shares_for(spec.intent)

    fixed = selection["fixed"]
    guidelines = [f for f in fixed if f["slice"] == "guidelines"]
    persona = [f for f in fixed if f["slice"] == "persona"]
    tools = [f for f in fixed if f["slice"] == "tools"]
    tool_defs = [render.tool_definition(t["key"], t["extra"]["usage_notes"], t["extra"]["tool_schema"])
                 for t in tools]
    guideline_texts = [g["content"] for g in guidelines]
    persona_texts = [p["content"] for p in persona]
    developer = render.developer_message(guideline_texts, persona_texts)
    fixed_costs = {
        "guidelines": count_tokens(render.guidelines_section(guideline_texts))
        + count_tokens(render.MEMORY_INSTRUCTIONS),
        "persona": count_tokens(render.persona_section(persona_texts)),
        "tools": count_tokens(render.serialize({"tools": tool_defs})) if tool_defs else 0,
        "question": count_tokens(spec.question),
    }
    with timing.phase("fitting"):  # bench timing
        allocation = budgets.allocate(budget, spec.intent, fixed_costs)
        fits, slice_report = _fit_candidates(selection, budget, allocation)

    tail_seated = sorted(fits["volatile_tail"].seated, key=lambda s: (s.candidate.ref["turn_index"] or 0))
    tail = [render.tail_turn(render.memory_id(s.candidate.ref["ref"]), s.candidate.ref["role"],
                             s.candidate.ref["tiers"]["full"]) for s in tail_seated]
    records = [(name, seat) for name in RECORD_SLICES
               for seat in sorted(fits[name].seated, key=lambda s: s.candidate.ref["selection_rank"])]
    user = render.user_message([seat.candidate.tiers[seat.tier] for _, seat in records], spec.question)
    request = render.build_request(model=spec.model, developer=developer, tools=tool_defs, tail=tail, user=user,
                                   max_output_tokens=budget.output_reserve)
    serialized = render.serialize(request)
    counted = count_tokens(serialized)
    limit = budget.usable_context - budget.output_reserve - budget.tool_reserve
    if counted > limit:
        raise RequestOverBudget(counted, limit)

    memories: list[dict[str, Any]] = []
    definitions = iter(tool_defs)
    for item in fixed:
        is_tool = item["slice"] == "tools"
        tokens = count_tokens(render.serialize(next(definitions)) if is_tool else item["content"])
        memories.append({"id": render.memory_id(item["ref"]), "ref": item["ref"], "type": item["type"],
                         "status": "tool" if is_tool else "policy", "slice": item["slice"],
                         "tier": "full", "tokens": tokens, "origin": "query"})
    for seat in tail_seated:
        memories.append(_memory_entry(seat.candidate.ref, "full", seat.tokens))
    for _, seat in records:
        memories.append(_memory_entry(seat.candidate.ref, seat.tier, seat.tokens, seat.degraded_by))
    for position, entry in enumerate(memories, start=1):
        entry["position"] = position

    excluded = list(selection["excluded"]) + [
        {"ref": gone.candidate.ref["ref"], "rule": gone.rule, "slice": gone.candidate.slice,
         "tokens": gone.smallest_tokens}
        for name in budgets.DYNAMIC_SLICES for gone in fits[name].excluded
    ]
    manifest = {
        "mode": selection["engine"],
        "scn": selection["snapshot"],
        "renderer_version": render.RENDERER_VERSION,
        "selection_version": selection["selection_version"],
        "code_hash": code_hash(),
        "tokenizer": ENCODING_NAME,
        "scorer": selection["scorer"],
        "evaluation_time": selection["evaluation_time"],
        "tenant_id": spec.tenant_id,
        "scope": {"user_id": spec.user_id, "agent_id": spec.agent_id, "thread_id": spec.thread_id},
        "model": spec.model,
        "question": spec.question,
        "budget_ref": selection["budget"]["ref"],
        "intent": spec.intent,
        "request_hash": render.request_hash(request),
        "request_parts": render.part_hashes(request),
        "request_tokens": counted,
        "request_limit": limit,
        "required_refs": selection["required_refs"],
        "retrieval": selection["retrieval"],
        "allocation": {
            "usable_context": budget.usable_context,
            "reserves": {"output": budget.output_reserve, "tools": budget.tool_reserve,
                         "request_overhead": budget.request_overhead_reserve},
            # The agent loop's limits: tool rounds, and what one tool result may take of the tool reserve.
            "tool_rounds": {"max_rounds": budget.max_rounds, "max_tool_result_tokens": budget.max_tool_result_tokens},
            "before_fixed": allocation.before_fixed,
            "fixed": dict(allocation.fixed),
            "remainder": allocation.remainder,
            "unallocated": allocation.unallocated,
            "slices": slice_report,
        },
        "memories": memories,
        "excluded": excluded,
    }
    return Window(request=request, manifest=manifest)


def _memory_entry(item: Mapping[str, Any], tier: str, tokens: int, degraded_by: str | None = None
                  ) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": render.memory_id(item["ref"]), "ref": item["ref"], "type": item["type"], "status": item["status"],
        "slice": item["slice"], "tier": tier, "tokens": tokens, "origin": "query", "scores": item["scores"],
    }
    if degraded_by:
        entry["tier_rule"] = degraded_by
    if item.get("annotations"):
        entry["annotation_refs"] = [{"current": note.get("current"), "source": note["source"]}
                                    for note in item["annotations"]]
    if tier == "summary" and item.get("summary_ref"):
        entry["summary_ref"] = item["summary_ref"]
    return entry
