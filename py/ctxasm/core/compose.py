"""Compose one window from the database's selection: budget, fitting, rendering, manifest. Pure.

Input is the typed selection `CTX_ASSEMBLY.select_window` returns (ctxasm.core.selection: the selection rules
already applied, in order, in the database); output is the provider request and its manifest. Nothing here
reads or writes the database, so the same selection always gives the same bytes. The steps live in modules of
their own: the records and their prices (window_records), the fitting passes (window_fit), the manifest
(window_manifest); this module orders the fixed rows and runs the steps.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from ctxasm.core import budget as budgets, render
from ctxasm.core.manifest import Manifest
from ctxasm.core.selection import FixedRow, Selection, refs_json
from ctxasm.core.tokens import ENCODING_NAME, count_tokens
from ctxasm.core.window_fit import Framing, RequestOverBudget, fit_window
from ctxasm.core.window_manifest import excluded_entries, memory_entries, slice_report
from ctxasm.core.window_records import LinePrices, fitting_candidates, window_ids
from ctxasm.errors import InvalidBudget, InvalidSelection

__all__ = ["DEFAULT_MODEL", "RequestOverBudget", "Window", "WindowSpec", "code_hash", "compose", "window_ids"]

DEFAULT_MODEL = "gpt-4.1-mini"

#: The modules that decide what the request and its manifest look like: a replay compares their digest.
CODE_MODULES = ("compose.py", "window_records.py", "window_fit.py", "window_manifest.py", "selection.py",
                "render.py", "budget.py", "fitting.py", "tokens.py", "manifest.py", "refs.py")


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
    manifest: Manifest


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 over the Python modules that decide what the request looks like; replay compares it. Read once
    per process: the modules a process runs are the ones it imported, whatever changes on disk later."""
    digest = hashlib.sha256()
    for module in CODE_MODULES:
        digest.update(module.encode())
        digest.update((files("ctxasm.core") / module).read_bytes())
    return digest.hexdigest()


def _parse_budget(selection: Selection) -> budgets.Budget:
    ref = selection.budget.ref
    try:
        return budgets.parse_budget(selection.budget.content_json)
    except InvalidBudget as exc:
        raise InvalidBudget(f"{exc} (budget {ref.id} version {ref.version})", field=exc.field,
                            problem=exc.problem) from None


def compose(selection: Selection, spec: WindowSpec) -> Window:
    """The request and manifest for one selection. Raises the budget's and the fitter's errors."""
    budget = _parse_budget(selection)
    budget.shares_for(spec.intent)

    fixed = _request_order(selection.fixed)
    guideline_texts = [f.content for f in fixed if f.slice == "guidelines" and not _is_instruction(f)]
    persona_texts = [f.content for f in fixed if f.slice == "persona"]
    instruction_texts = [f.content for f in fixed if _is_instruction(f)]
    tool_defs = [_tool_definition(f) for f in fixed if f.slice == "tools"]
    developer = render.developer_message(guideline_texts, persona_texts, instruction_texts)
    instruction_cost = count_tokens(render.json_text(render.memory_section(instruction_texts)))
    # Each fixed slice at what it costs inside the serialized request (escaped as JSON).
    fixed_costs = {
        "guidelines": count_tokens(render.json_text(render.guidelines_section(guideline_texts))) + instruction_cost,
        "persona": count_tokens(render.json_text(render.persona_section(persona_texts))),
        "tools": count_tokens(render.serialize({"tools": tool_defs})) if tool_defs else 0,
        "question": count_tokens(render.json_text(spec.question)),
    }
    allocation = budgets.allocate(budget, spec.intent, fixed_costs)
    ids = window_ids(selection)
    limit = budget.usable_context - budget.output_reserve - budget.tool_reserve
    framing = Framing(spec.model, developer, tool_defs, spec.question, budget.output_reserve)
    prices = LinePrices()
    states, built = fit_window(fitting_candidates(selection, ids, prices), budget, allocation, framing, limit, ids,
                               prices)

    manifest = Manifest({
        "mode": selection.engine,
        "scn": selection.snapshot,
        "renderer_version": render.RENDERER_VERSION,
        "selection_version": selection.selection_version,
        "code_hash": code_hash(),
        "tokenizer": ENCODING_NAME,
        "scorer": selection.scorer,
        "evaluation_time": selection.evaluation_time,
        "tenant_id": spec.tenant_id,
        "scope": {"user_id": spec.user_id, "agent_id": spec.agent_id, "thread_id": spec.thread_id},
        "model": spec.model,
        "question": spec.question,
        "budget_ref": selection.budget.ref.as_json(),
        "intent": spec.intent,
        "request_hash": render.request_hash(built.request),
        "request_parts": render.part_hashes(built.request),
        "request_tokens": built.counted,
        "request_limit": limit,
        "required_refs": refs_json(selection.required_refs),
        "retrieval": selection.retrieval.as_json(),
        "candidate_limits": dict(selection.candidate_limits),
        "candidate_cuts": list(selection.candidate_cuts),
        "allocation": {
            "usable_context": budget.usable_context,
            "reserves": {"output": budget.output_reserve, "tools": budget.tool_reserve,
                         "request_overhead": budget.request_overhead_reserve},
            # The agent loop's limits: tool rounds, and what one tool result may take of the tool reserve.
            "tool_rounds": {"max_rounds": budget.max_rounds, "max_tool_result_tokens": budget.max_tool_result_tokens},
            "before_fixed": allocation.before_fixed,
            "fixed": dict(allocation.fixed),
            # The part of the guidelines slice the memory instructions take (they are charged to it).
            "memory_instructions": instruction_cost,
            "remainder": allocation.remainder,
            "unallocated": allocation.unallocated,
            "reclaim_unused": budget.reclaim_unused,
            # What the complete request leaves of its limit: framing reserve included, nothing hidden.
            "unused": limit - built.counted,
            "slices": slice_report(states),
        },
        "memories": memory_entries(fixed, tool_defs, built, ids),
        "excluded": excluded_entries(selection, states, built.trimmed),
    })
    return Window(request=built.request, manifest=manifest)


def _tool_definition(row: FixedRow) -> dict[str, Any]:
    if row.extra is None or row.key is None:
        raise InvalidSelection(f"invalid_selection: the tool row {row.ref.key} has no name or definition",
                               field="$.fixed", problem="a tool row without key or extra")
    return render.tool_definition(row.key, row.extra.usage_notes, row.extra.tool_schema)


def _is_instruction(row: FixedRow) -> bool:
    key = str(row.key or "")
    return row.slice == "guidelines" and (key == render.MEMORY_INSTRUCTIONS_KEY
                                          or key.startswith(render.TOOL_INSTRUCTION_PREFIX))


def _request_order(fixed: Sequence[FixedRow]) -> list[FixedRow]:
    """The fixed rows in the order the request carries them: guidelines, persona, the memory instructions,
    tools. A tool's instruction (`memory_instructions.<handler>`) is kept only when a tool with that handler is
    in the window, after the general instructions, in the order of the tools."""
    handlers = [str(f.extra.tool_handler if f.extra is not None else None) for f in fixed if f.slice == "tools"]
    general = [f for f in fixed if _is_instruction(f) and f.key == render.MEMORY_INSTRUCTIONS_KEY]
    per_tool = {str(f.key)[len(render.TOOL_INSTRUCTION_PREFIX):]: f for f in fixed
                if _is_instruction(f) and f.key != render.MEMORY_INSTRUCTIONS_KEY}
    return ([f for f in fixed if f.slice == "guidelines" and not _is_instruction(f)]
            + [f for f in fixed if f.slice == "persona"]
            + general + [per_tool[h] for h in dict.fromkeys(handlers) if h in per_tool]
            + [f for f in fixed if f.slice == "tools"])
