"""Compose one window from the database's selection: budget, tier fitting, rendering, manifest. Pure.

Input is the JSON document `CTX_ASSEMBLY.select_window` returns (the selection rules already applied, in
order, in the database); output is the provider request and its manifest. Nothing here reads or writes
the database, so the same selection always gives the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files
from typing import Any

from ctxasm.core import budget as budgets, render
from ctxasm.core.fitting import SLICE_BUDGET, Candidate, Excluded, Seated, SliceFit, fit_slice
from ctxasm.core.manifest import Manifest
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import ENCODING_NAME, JOIN_MIN_CHARS, count_joined, count_tokens
from ctxasm.errors import CtxasmError, InvalidBudget

#: Memory records appear in the user message in this order (most stable first); the tail is rendered as turns.
RECORD_SLICES = ("durable_facts", "evidence", "recalled_history")
#: Exclusion rule of a memory given back because the complete request, framing and all, did not fit.
REQUEST_BUDGET = "request_budget"
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
    manifest: Manifest


def code_hash() -> str:
    """sha256 over the Python modules that decide what the request looks like; replay compares it."""
    digest = hashlib.sha256()
    for module in ("compose.py", "render.py", "budget.py", "fitting.py", "tokens.py", "manifest.py", "refs.py"):
        digest.update(module.encode())
        digest.update((files("ctxasm.core") / module).read_bytes())
    return digest.hexdigest()


def _parse_budget(selection: Mapping[str, Any]) -> budgets.Budget:
    ref = selection["budget"]["ref"]
    try:
        return budgets.parse_budget(selection["budget"]["content_json"])
    except InvalidBudget as exc:
        raise InvalidBudget(f"{exc} (budget {ref[1]} version {ref[2]})", field=exc.field, problem=exc.problem) from None


#: The order in which a window numbers its memories: the slices whose records carry ids, in layout order, then
#: the thread's turns (their ids show only for a role that is not a message role).
_NUMBERING_ORDER = {name: index for index, name in enumerate((*RECORD_SLICES, "volatile_tail"))}


def window_ids(selection: Mapping[str, Any]) -> dict[str, str]:
    """Each row version the window may show -> its window id (render.window_id). Candidates come first, by
    slice and selection rank, so the records most likely to be seated get the shortest numbers; then the fixed
    rows; then a current fact an annotation names that is not a candidate. The numbering depends only on the
    selection, so a replay of the same selection numbers the same way."""
    candidates = sorted(selection["candidates"], key=lambda c: (
        _NUMBERING_ORDER.get(c["slice"], len(_NUMBERING_ORDER)), c.get("selection_rank") or 0, Ref.of(c["ref"]).key))
    keys = [Ref.of(c["ref"]).key for c in candidates] + [Ref.of(f["ref"]).key for f in selection["fixed"]]
    keys += [Ref.of(note["current"]).key for c in candidates for note in c.get("annotations", ()) if note.get("current")]
    ids: dict[str, str] = {}
    for key in keys:
        ids.setdefault(key, render.window_id(len(ids) + 1))
    return ids


def _annotations(candidate: Mapping[str, Any], ids: Mapping[str, str]) -> tuple[render.Annotation, ...]:
    return tuple(
        render.Annotation(ids[Ref.of(note["current"]).key] if note.get("current") else None,
                          note.get("current_content"))
        for note in candidate.get("annotations", ())
    )


@functools.lru_cache(maxsize=4096)
def _shared_line_price(piece: str) -> int:
    """_priced of a line many candidates share (a year, a date heading): counted once."""
    return _priced(piece)


def _priced(piece: str) -> int:
    """What one line of the memory context costs in the serialized request: the line as JSON escapes it,
    with the line break that follows it. Lines start with '<', a digit or a capital letter (a date heading,
    a turn's id M…), and the escaped break ends in a lower-case letter, so the o200k_base pre-tokenizer splits the context exactly
    between lines and the costs add up (the exact count of the whole request checks it)."""
    return count_tokens(render.json_text(piece + "\n"))


def _is_grouped(candidate: Mapping[str, Any]) -> bool:
    """Recalled conversation turns share a group record per conversation and date."""
    return candidate["slice"] == "recalled_history" and candidate["type"] == "conversation"


def _turn_date(candidate: Mapping[str, Any]) -> str | None:
    valid_from = candidate.get("valid_from")
    return str(valid_from)[:10] if valid_from else None


#: The one section record of a window's recalled turns (a group key no conversation can take).
_TURN_SECTION = ""


def _group_key(candidate: Mapping[str, Any]) -> str:
    """One heading per conversation and date under the turns section."""
    return f"{candidate.get('thread_id') or ''}|{_turn_date(candidate) or ''}"


def _year_key(candidate: Mapping[str, Any]) -> str:
    """One year line above that year's date headings (a group key no conversation heading can take)."""
    return f"year|{render.turn_year(_turn_date(candidate))}"


def _record_tiers(candidate: Mapping[str, Any], ids: Mapping[str, str]) -> dict[str, str | None]:
    """Each tier as the line it would be in the memory context: a whole <memory> record, or, for a recalled
    turn, its line in the turn group."""
    mid = ids[Ref.of(candidate["ref"]).key]
    tiers = candidate["tiers"]
    if _is_grouped(candidate):
        return {"full": render.turn_line(mid, candidate.get("role"), tiers["full"]),
                "pointer": render.turn_line(mid, candidate.get("role"), tiers["pointer"])
                if tiers.get("pointer") and tiers["pointer"] != tiers["full"] else None}
    notes = _annotations(candidate, ids)
    pointer = tiers.get("pointer")
    if pointer and candidate.get("title"):
        pointer = f"{candidate['title']}: {pointer}"
    texts = {"full": tiers["full"], "summary": tiers.get("summary"), "pointer": pointer}
    return {
        tier: render.render_memory(mid, candidate["type"], candidate["status"], tier, text, notes)
        if text else None
        for tier, text in texts.items()
    }


def _tail_message(role: str, text: str) -> dict[str, str]:
    return {"role": role, "content": text}


def _tail_turn(candidate: Mapping[str, Any], ids: Mapping[str, str]) -> tuple[str, str]:
    """(role, content) of a thread turn as the request carries it (render.tail_turn quotes other roles)."""
    return render.tail_turn(ids[Ref.of(candidate["ref"]).key], candidate["role"], candidate["tiers"]["full"])


def _stored_costs(item: Mapping[str, Any], rendered: Mapping[str, str | None]) -> dict[str, int]:
    """Costs of the full and summary tiers from `content_tokens` / `summary_tokens` where the selection
    carries them and the text is long enough to gain from it; the fitter counts the others. A stored count is
    of the plain text: it is joined with the record around it (tokens.count_joined) only where escaping (XML
    and JSON) leaves the text as it is, so the record contains the text unchanged."""
    costs: dict[str, int] = {}
    if item["slice"] == "volatile_tail":
        return costs
    for tier, key in (("full", "content_tokens"), ("summary", "summary_tokens")):
        stored, text, record = item.get(key), item["tiers"].get(tier), rendered.get(tier)
        if stored is None or not text or record is None or len(text) < JOIN_MIN_CHARS:
            continue
        line = render.json_text(record + "\n")
        if render.json_text(render.escape(text)) != text or text not in line:
            continue
        start = line.index(text)
        costs[tier] = count_joined(line[:start], text, line[start + len(text):], stored)
    return costs


def _candidates(selection: Mapping[str, Any], ids: Mapping[str, str]) -> dict[str, list[Candidate]]:
    by_slice: dict[str, list[Candidate]] = {name: [] for name in budgets.DYNAMIC_SLICES}
    section_cost = _priced(render.TURN_SECTION_OPEN) + _priced(render.TURN_SECTION_CLOSE)
    for item in selection["candidates"]:
        if item["slice"] == "volatile_tail":  # native messages: whole or not at all
            role, content = _tail_turn(item, ids)
            message = render.serialize(_tail_message(role, content)) + ","
            by_slice["volatile_tail"].append(
                Candidate(key=Ref.of(item["ref"]).key, slice="volatile_tail", tiers={"full": content},
                          required=bool(item.get("required")), ref=item,
                          token_counts={"full": count_tokens(message)}))
            continue
        tiers = _record_tiers(item, ids)
        # The full tier is always tried: priced now; the others only when the fitter reaches them (_priced).
        priced = {"full": _priced(tiers["full"] or "")}  # a record always has its full tier
        priced.update(_stored_costs(item, tiers))
        groups: tuple[tuple[str, int], ...] = ()
        if _is_grouped(item):
            date = _turn_date(item)
            groups = ((_TURN_SECTION, section_cost),
                      (_year_key(item), _shared_line_price(render.turn_year(date)) if date else 0),
                      (_group_key(item), _shared_line_price(render.turn_heading(date))))
        by_slice[item["slice"]].append(
            Candidate(key=Ref.of(item["ref"]).key, slice=item["slice"], tiers=tiers, required=bool(item.get("required")),
                      ref=item, token_counts=priced, groups=groups))
    return by_slice


@dataclass
class _SliceState:
    """One dynamic slice across the fitting passes."""

    name: str
    share: int
    allowance: int = 0
    seated: list[Seated] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    used: int = 0
    passed_on: int = 0
    reclaimed: int = 0
    open_groups: frozenset[str] = frozenset()
    taken: Mapping[str, int] = field(default_factory=dict)

    def absorb(self, fit: SliceFit, *, reclaim: bool) -> None:
        """Add one pass's seats. The reclaim pass retries only the excluded candidates: those it seats leave
        the excluded list, the others keep the latest reason."""
        self.seated += fit.seated
        self.used += fit.used
        if reclaim:
            self.reclaimed += fit.used
            retried = {gone.candidate.key: gone for gone in fit.excluded}
            seated = {seat.candidate.key for seat in fit.seated}
            self.excluded = [retried.get(gone.candidate.key, gone) for gone in self.excluded
                             if gone.candidate.key not in seated]
        else:
            self.excluded = list(fit.excluded)
        self.open_groups, self.taken = fit.open_groups, fit.taken


def _fit_candidates(by_slice: Mapping[str, list[Candidate]], budget: budgets.Budget,
                    allocation: budgets.Allocation) -> dict[str, _SliceState]:
    """The pass in overflow_order: each slice fits within its share plus what the slice before it left."""
    states = {name: _SliceState(name, allocation.slices[name]) for name in budgets.DYNAMIC_SLICES}
    allowances = dict(allocation.slices)
    for name in budgets.fit_order(budget):
        state = states[name]
        state.allowance = allowances[name]
        fit = fit_slice(by_slice[name], allowances[name], _priced, tier_limits=budget.tier_limits.get(name))
        state.absorb(fit, reclaim=False)
        allowances = budgets.pass_overflow(allowances, budget.overflow_order, name, fit.unused)
        state.passed_on = fit.unused if budgets.overflow_receiver(budget.overflow_order, name) else 0
    return states


def _reclaim(states: Mapping[str, _SliceState], budget: budgets.Budget, pool: int) -> int:
    """The reclaim pass: every token the request leaves unused (slices' leftovers, unallocated shares, the
    part of the framing reserve framing did not take) is offered again, slice by slice in overflow_order,
    to the candidates each slice left out for lack of room. Returns how many it seated."""
    seated = 0
    for name in budgets.fit_order(budget):
        state = states[name]
        waiting = [gone.candidate for gone in state.excluded if gone.rule == SLICE_BUDGET]
        if pool <= 0 or not waiting:
            continue
        fit = fit_slice(waiting, pool, _priced, tier_limits=budget.tier_limits.get(name),
                        open_groups=state.open_groups, taken=state.taken)
        state.absorb(fit, reclaim=True)
        pool -= fit.used
        seated += len(fit.seated)
    return seated


def _turn_order(seat: Seated) -> tuple[str, int, str]:
    """Turns in the order they were said: by time, then by place in their conversation."""
    item = seat.candidate.ref
    return (str(item.get("valid_from") or ""), item.get("turn_index") or 0, seat.candidate.key)


def _render_records(states: Mapping[str, _SliceState]) -> list[tuple[Seated | None, str]]:
    """The memory context's lines in order, each with the seat it belongs to (None for a shared line): slices
    in layout order, records by selection rank; the recalled turns in one section after the slice's other
    records, in the order they were said: a year line, under it one heading per conversation and date (by the
    date, then the conversation's first turn), turns in order; undated turns last."""
    lines: list[tuple[Seated | None, str]] = []
    for name in RECORD_SLICES:
        seats = sorted(states[name].seated, key=lambda s: s.candidate.ref["selection_rank"])
        lines += [(seat, seat.candidate.tiers[seat.tier])  # type: ignore[misc]  # a seated tier has its text
                  for seat in seats if not _is_grouped(seat.candidate.ref)]
        turns = [seat for seat in seats if _is_grouped(seat.candidate.ref)]
        if not turns:
            continue
        headings: dict[str, list[Seated]] = {}
        for seat in turns:
            headings.setdefault(_group_key(seat.candidate.ref), []).append(seat)
        groups = sorted((sorted(members, key=_turn_order) for members in headings.values()),
                        key=lambda members: (_turn_date(members[0].candidate.ref) is None,
                                             _turn_date(members[0].candidate.ref) or "", _turn_order(members[0])))
        lines.append((None, render.TURN_SECTION_OPEN))
        year = None
        for members in groups:
            date = _turn_date(members[0].candidate.ref)
            if date and render.turn_year(date) != year:
                year = render.turn_year(date)
                lines.append((None, year))
            lines.append((None, render.turn_heading(date)))
            lines += [(member, member.candidate.tiers[member.tier]) for member in members]  # type: ignore[misc]  # a seated tier has text
        lines.append((None, render.TURN_SECTION_CLOSE))
    return lines


class _Built:
    """The request built from the seats, counted exactly; seats given back while it counts over the limit."""

    def __init__(self, spec: WindowSpec, budget: budgets.Budget, developer: str, tool_defs: list[dict[str, Any]],
                 states: dict[str, _SliceState], limit: int, ids: Mapping[str, str]):
        self.spec, self.budget, self.developer, self.tool_defs, self.ids = spec, budget, developer, tool_defs, ids
        self.states, self.limit = states, limit
        #: seats given back, each with how far over its limit the request was when it went
        self.trimmed: list[tuple[Seated, int]] = []
        self.rebuild()

    def rebuild(self) -> None:
        self.tail_seated = sorted(self.states["volatile_tail"].seated,
                                  key=lambda s: (s.candidate.ref["turn_index"] or 0))
        tail = [_tail_turn(s.candidate.ref, self.ids) for s in self.tail_seated]
        lines = _render_records(self.states)
        user = render.user_message([text for _, text in lines], self.spec.question)
        self.request = render.build_request(model=self.spec.model, developer=self.developer, tools=self.tool_defs,
                                            tail=tail, user=user, max_output_tokens=self.budget.output_reserve)
        self.record_seats = [seat for seat, _ in lines if seat is not None]
        self.counted = count_tokens(render.serialize(self.request))

    def give_back_until_it_fits(self) -> None:
        while self.counted > self.limit:
            given = _trim_to_limit(self.states, self.counted, self.limit)
            if not given:
                raise RequestOverBudget(self.counted, self.limit)
            for seat in given:
                state = self.states[seat.candidate.slice]
                state.seated = [s for s in state.seated if s is not seat]
            for name in {seat.candidate.slice for seat in given}:
                _reprice(self.states[name])
            self.trimmed += [(seat, self.counted - self.limit) for seat in given]
            self.rebuild()


def _trim_to_limit(states: Mapping[str, _SliceState], counted: int, limit: int) -> list[Seated]:
    """Seats to give back when the complete request still counts more than the limit (what the line prices
    cannot see: message framing, pre-tokenizer joins at the edges): optional memories, lowest priority
    first, then the thread's oldest turns. Empty when nothing can go."""
    optional = sorted(
        (seat for name in RECORD_SLICES for seat in states[name].seated if not seat.candidate.required),
        key=lambda seat: (seat.candidate.ref["scores"].get("priority", 0), -seat.candidate.ref["selection_rank"]))
    # Then the thread's own turns, oldest first.
    optional += sorted((seat for seat in states["volatile_tail"].seated if not seat.candidate.required),
                       key=lambda seat: seat.candidate.ref.get("turn_index") or 0)
    over = counted - limit
    given: list[Seated] = []
    for seat in optional:
        if over <= 0:
            break
        given.append(seat)
        over -= seat.tokens
    return given


def _reprice(state: _SliceState) -> None:
    """After seats were given back: a shared record still open is paid by the first seat left under it."""
    opened: set[str] = set()
    repriced = []
    for seat in state.seated:
        tokens = seat.candidate.cost(seat.tier, _priced) + seat.candidate.opening(opened)
        opened.update(group for group, _ in seat.candidate.groups)
        repriced.append(replace(seat, tokens=tokens))
    state.seated = repriced
    state.used = sum(seat.tokens for seat in repriced)


def compose(selection: Mapping[str, Any], spec: WindowSpec) -> Window:
    """The request and manifest for one selection. Raises the budget's and the fitter's errors."""
    budget = _parse_budget(selection)
    budget.shares_for(spec.intent)

    fixed = _request_order(selection["fixed"])
    guidelines = [f for f in fixed if f["slice"] == "guidelines" and not _is_instruction(f)]
    persona = [f for f in fixed if f["slice"] == "persona"]
    tools = [f for f in fixed if f["slice"] == "tools"]
    instructions = [f for f in fixed if _is_instruction(f)]
    tool_defs = [render.tool_definition(t["key"], t["extra"]["usage_notes"], t["extra"]["tool_schema"])
                 for t in tools]
    guideline_texts = [g["content"] for g in guidelines]
    persona_texts = [p["content"] for p in persona]
    instruction_texts = [i["content"] for i in instructions]
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
    states = _fit_candidates(_candidates(selection, ids), budget, allocation)

    limit = budget.usable_context - budget.output_reserve - budget.tool_reserve
    built = _Built(spec, budget, developer, tool_defs, states, limit, ids)
    built.give_back_until_it_fits()
    # Reclaim until no left-out candidate fits what the request leaves: each round seats at least one more
    # or gives one back for good, so it ends.
    while budget.reclaim_unused and built.counted < limit:
        seated = _reclaim(states, budget, limit - built.counted)
        if not seated:
            break
        built.rebuild()
        built.give_back_until_it_fits()
    request, tail_seated, record_seats, counted, trimmed = (
        built.request, built.tail_seated, built.record_seats, built.counted, built.trimmed)

    memories: list[dict[str, Any]] = []
    definitions = iter(tool_defs)
    for item in fixed:
        is_tool = item["slice"] == "tools"
        tokens = count_tokens(render.serialize(next(definitions)) if is_tool else render.json_text(item["content"]))
        memories.append({"id": ids[Ref.of(item["ref"]).key], "ref": item["ref"], "type": item["type"],
                         "status": "tool" if is_tool else "policy", "slice": item["slice"],
                         "tier": "full", "tokens": tokens, "origin": "query"})
    for seat in tail_seated:
        memories.append(_memory_entry(seat.candidate.ref, ids, "full", seat.tokens))
    for seat in record_seats:
        memories.append(_memory_entry(seat.candidate.ref, ids, seat.tier, seat.tokens, seat.degraded_by))
    for position, entry in enumerate(memories, start=1):
        entry["position"] = position

    excluded = list(selection["excluded"]) + [
        {"ref": gone.candidate.ref["ref"], "rule": gone.rule, "slice": gone.candidate.slice,
         "tokens": gone.smallest_tokens, "left": gone.left, **_standing(gone.candidate)}
        for name in budgets.DYNAMIC_SLICES for gone in states[name].excluded
    ] + [
        {"ref": seat.candidate.ref["ref"], "rule": REQUEST_BUDGET, "slice": seat.candidate.slice,
         "tokens": seat.tokens, "over": over, **_standing(seat.candidate)}
        for seat, over in trimmed
    ]
    slice_report = {
        name: {"share": state.share, "allowance": state.allowance, "used": state.used,
               "passed_on": state.passed_on, "reclaimed": state.reclaimed}
        for name, state in states.items()
    }
    manifest = Manifest({
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
        "candidate_limits": selection.get("candidate_limits", {}),
        "candidate_cuts": selection.get("candidate_cuts", []),
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
            "unused": limit - counted,
            "slices": slice_report,
        },
        "memories": memories,
        "excluded": excluded,
    })
    return Window(request=request, manifest=manifest)


def _standing(candidate: Candidate) -> dict[str, Any]:
    """Where a left-out candidate stood: its rank in its slice (selection order, 1 = best) and its priority."""
    item = candidate.ref
    standing: dict[str, Any] = {"rank": item.get("selection_rank")}
    if (item.get("scores") or {}).get("priority") is not None:
        standing["priority"] = item["scores"]["priority"]
    return standing


def _is_instruction(item: Mapping[str, Any]) -> bool:
    key = str(item.get("key") or "")
    return item["slice"] == "guidelines" and (key == render.MEMORY_INSTRUCTIONS_KEY
                                              or key.startswith(render.TOOL_INSTRUCTION_PREFIX))


def _request_order(fixed: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The fixed rows in the order the request carries them: guidelines, persona, the memory instructions,
    tools. A tool's instruction (`memory_instructions.<handler>`) is kept only when a tool with that handler is
    in the window, after the general instructions, in the order of the tools."""
    handlers = [str((t.get("extra") or {}).get("tool_handler")) for t in fixed if t["slice"] == "tools"]
    general = [f for f in fixed if _is_instruction(f) and f["key"] == render.MEMORY_INSTRUCTIONS_KEY]
    per_tool = {str(f["key"])[len(render.TOOL_INSTRUCTION_PREFIX):]: f for f in fixed
                if _is_instruction(f) and f["key"] != render.MEMORY_INSTRUCTIONS_KEY}
    return ([f for f in fixed if f["slice"] == "guidelines" and not _is_instruction(f)]
            + [f for f in fixed if f["slice"] == "persona"]
            + general + [per_tool[h] for h in dict.fromkeys(handlers) if h in per_tool]
            + [f for f in fixed if f["slice"] == "tools"])


def _memory_entry(item: Mapping[str, Any], ids: Mapping[str, str], tier: str, tokens: int,
                  degraded_by: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": ids[Ref.of(item["ref"]).key], "ref": item["ref"], "type": item["type"], "status": item["status"],
        "slice": item["slice"], "tier": tier, "tokens": tokens, "origin": "query", "scores": item["scores"],
    }
    if degraded_by:
        entry["tier_rule"] = degraded_by
    if item.get("annotations"):
        entry["annotation_refs"] = [{"current": note.get("current"), "source": note["source"]}
                                    for note in item["annotations"]]
    if tier == "summary" and item.get("summary_ref"):
        entry["summary_ref"] = item["summary_ref"]
        if item.get("summary_by"):
            entry["summary_by"] = item["summary_by"]
        if item.get("summary_written"):
            entry["summary_written"] = True
    if item.get("generated_by"):
        entry["generated_by"] = item["generated_by"]
    return entry
