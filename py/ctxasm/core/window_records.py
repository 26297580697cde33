"""A window's records: the id each row version shows as, each candidate as the line it would be in the memory
context at each tier (priced as the serialized request carries it), and the memory context's lines once the
fitting passes have seated candidates. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter

from ctxasm.core import budget as budgets, render
from ctxasm.core.fitting import Candidate, Counter, Seated
from ctxasm.core.selection import CandidateRow, Selection
from ctxasm.core.tokens import JOIN_MIN_CHARS, count_joined, count_split, count_tokens

#: Memory records appear in the user message in this order (most stable first); the tail is rendered as turns.
RECORD_SLICES = ("durable_facts", "evidence", "recalled_history")

#: The order in which a window numbers its memories: the slices whose records carry ids, in layout order, then
#: the thread's turns (their ids show only for a role that is not a message role).
_NUMBERING_ORDER = {name: index for index, name in enumerate((*RECORD_SLICES, "volatile_tail"))}

#: The one section record of a window's recalled turns (a group key no conversation can take).
_TURN_SECTION = ""


def row_of(candidate: Candidate) -> CandidateRow:
    """The selection's row a fitting candidate was made from (fitting carries it as its opaque `ref`)."""
    row: CandidateRow = candidate.ref  # an assignment, not typing.cast: a window asks a thousand times
    return row


def window_ids(selection: Selection) -> dict[str, str]:
    """Each row version the window may show -> its window id (render.window_id). Candidates come first, by
    slice and selection rank, so the records most likely to be seated get the shortest numbers; then the fixed
    rows; then a current fact an annotation names that is not a candidate. The numbering depends only on the
    selection, so a replay of the same selection numbers the same way."""
    candidates = sorted(selection.candidates, key=lambda c: (
        _NUMBERING_ORDER.get(c.slice, len(_NUMBERING_ORDER)), c.selection_rank or 0, c.ref.key))
    keys = [c.ref.key for c in candidates] + [f.ref.key for f in selection.fixed]
    keys += [note.current.key for c in candidates for note in c.annotations if note.current]
    ids: dict[str, str] = {}
    for key in keys:
        ids.setdefault(key, render.window_id(len(ids) + 1))
    return ids


def _annotations(row: CandidateRow, ids: Mapping[str, str]) -> tuple[render.Annotation, ...]:
    return tuple(render.Annotation(ids[note.current.key] if note.current else None, note.current_content)
                 for note in row.annotations)


def priced(piece: str) -> int:
    """What one line of the memory context costs in the serialized request: the line as JSON escapes it,
    with the line break that follows it. Lines start with '<', a digit or a capital letter (a date heading,
    a turn's id M…), and the escaped break ends in a lower-case letter, so the o200k_base pre-tokenizer splits the context exactly
    between lines and the costs add up (the exact count of the whole request checks it)."""
    return count_tokens(render.json_text(piece + "\n"))


class LinePrices:
    """priced() of one window's lines, each counted once: the fitting passes (overflow, reclaim, repricing
    after a give-back) try a record's summary and pointer lines again and again, and the lines hold the
    window's own ids, so the memo lives as long as the window's fitting. The lines are counted as the request
    carries them (tokens.count_split), so counting the request (`request_tokens`) encodes only what no line
    holds: the developer message, the thread's turns, the question, the tools, and the records priced from
    their stored counts (window_records.stored_costs)."""

    def __init__(self) -> None:
        self._known: dict[str, int] = {}
        self._pieces: dict[str, int] = {}

    def __call__(self, piece: str) -> int:
        tokens = self._known.get(piece)
        if tokens is None:
            tokens = self._known[piece] = count_split(render.json_text(piece + "\n"), self._pieces)
        return tokens

    def request_tokens(self, serialized: str) -> int:
        """count_tokens of the serialized request, each line and message encoded once per window."""
        return count_split(serialized, self._pieces)


def is_grouped(row: CandidateRow) -> bool:
    """Recalled conversation turns share a group record per conversation and date."""
    return row.slice == "recalled_history" and row.type == "conversation"


def turn_date(row: CandidateRow) -> str | None:
    return str(row.valid_from)[:10] if row.valid_from else None


def _group_key(row: CandidateRow) -> str:
    """One heading per conversation and date under the turns section."""
    return f"{row.thread_id or ''}|{turn_date(row) or ''}"


def _year_key(row: CandidateRow) -> str:
    """One year line above that year's date headings (a group key no conversation heading can take)."""
    return f"year|{render.turn_year(turn_date(row))}"


def record_tiers(row: CandidateRow, ids: Mapping[str, str]) -> dict[str, str | None]:
    """Each tier as the line it would be in the memory context: a whole <memory> record, or, for a recalled
    turn, its line in the turn group."""
    mid = ids[row.ref.key]
    tiers = row.tiers
    if is_grouped(row):
        return {"full": render.turn_line(mid, row.role, tiers.full, row.speaker),
                "pointer": render.turn_line(mid, row.role, tiers.pointer, row.speaker)
                if tiers.pointer and tiers.pointer != tiers.full else None}
    notes = _annotations(row, ids)
    pointer = tiers.pointer
    if pointer and row.title:
        pointer = f"{row.title}: {pointer}"
    texts = {"full": tiers.full, "summary": tiers.summary, "pointer": pointer}
    return {
        tier: render.render_memory(mid, row.type, row.status, tier, text, notes) if text else None
        for tier, text in texts.items()
    }


def tail_message(role: str, text: str) -> dict[str, str]:
    return {"role": role, "content": text}


def tail_turn(row: CandidateRow, ids: Mapping[str, str]) -> tuple[str, str]:
    """(role, content) of a thread turn as the request carries it (render.tail_turn quotes other roles)."""
    return render.tail_turn(ids[row.ref.key], row.role, row.tiers.full, row.speaker)  # type: ignore[arg-type]  # a turn has a role


def stored_costs(row: CandidateRow, rendered: Mapping[str, str | None]) -> dict[str, int]:
    """Costs of the full and summary tiers from `content_tokens` / `summary_tokens` where the selection
    carries them and the text is long enough to gain from it; the fitter counts the others. A stored count is
    of the plain text: it is joined with the record around it (tokens.count_joined) only where escaping (XML
    and JSON) leaves the text as it is, so the record contains the text unchanged."""
    costs: dict[str, int] = {}
    if row.slice == "volatile_tail" or (len(row.tiers.full) < JOIN_MIN_CHARS
                                        and len(row.tiers.summary or "") < JOIN_MIN_CHARS):
        return costs  # a window's turns are mostly shorter than a line: nothing to join
    for tier, stored, text in (("full", row.content_tokens, row.tiers.full),
                               ("summary", row.summary_tokens, row.tiers.summary)):
        record = rendered.get(tier)
        if stored is None or not text or record is None or len(text) < JOIN_MIN_CHARS:
            continue
        line = render.json_text(record + "\n")
        if render.json_text(render.escape(text)) != text or text not in line:
            continue
        start = line.index(text)
        costs[tier] = count_joined(line[:start], text, line[start + len(text):], stored)
    return costs


def fitting_candidates(selection: Selection, ids: Mapping[str, str],
                       prices: Counter = priced) -> dict[str, list[Candidate]]:
    """The selection's candidates as the fitter sees them, per dynamic slice in selection order: each tier's
    text and what it costs (`prices`: the window's LinePrices), the groups it shares with others."""
    by_slice: dict[str, list[Candidate]] = {name: [] for name in budgets.DYNAMIC_SLICES}
    section_cost = prices(render.TURN_SECTION_OPEN) + prices(render.TURN_SECTION_CLOSE)
    shared: dict[tuple[str | None, str | None], Groups] = {}
    for row in selection.candidates:
        key = row.ref.key
        if row.slice == "volatile_tail":  # native messages: whole or not at all
            role, content = tail_turn(row, ids)
            message = render.serialize(tail_message(role, content)) + ","
            by_slice["volatile_tail"].append(
                Candidate(key=key, slice="volatile_tail", tiers={"full": content}, required=row.required,
                          ref=row, token_counts={"full": count_tokens(message)}))
            continue
        tiers = record_tiers(row, ids)
        # The full tier is always tried: priced now (from the stored count where it applies, so a long text is
        # not encoded at all); the others only when the fitter reaches them (priced).
        costs = stored_costs(row, tiers)
        if "full" not in costs:
            costs["full"] = prices(tiers["full"] or "")  # a record always has its full tier
        groups = _turn_groups(row, section_cost, prices, shared) if is_grouped(row) else ()
        by_slice[row.slice].append(
            Candidate(key=key, slice=row.slice, tiers=tiers, required=row.required, ref=row,
                      token_counts=costs, groups=groups))
    return by_slice


Groups = tuple[tuple[str, int], ...]


def _turn_groups(row: CandidateRow, section_cost: int, prices: Counter,
                 shared: dict[tuple[str | None, str | None], Groups]) -> Groups:
    """The shared records a recalled turn's line sits under, with what opening each costs: the turns section,
    its year's line, its conversation's heading of that date. Worked out once per conversation and date
    (`shared`): a window's turns come a dozen or more to a conversation's date."""
    date = turn_date(row)
    groups = shared.get((row.thread_id, date))
    if groups is None:
        groups = shared[(row.thread_id, date)] = (
            (_TURN_SECTION, section_cost),
            (_year_key(row), prices(render.turn_year(date)) if date else 0),
            (_group_key(row), prices(render.turn_heading(date))))
    return groups


def turn_order(seat: Seated) -> tuple[str, int, str]:
    """Turns in the order they were said: by time, then by place in their conversation."""
    row = row_of(seat.candidate)
    return (str(row.valid_from or ""), row.turn_index or 0, seat.candidate.key)


def _selection_rank(seat: Seated) -> int:
    return row_of(seat.candidate).selection_rank


def record_lines(seated: Mapping[str, Sequence[Seated]]) -> list[tuple[Seated | None, str]]:
    """The memory context's lines in order, each with the seat it belongs to (None for a shared line): slices
    in layout order, records by selection rank; the recalled turns in one section after the slice's other
    records, in the order they were said: a year line, under it one heading per conversation and date (by the
    date, then the conversation's first turn), turns in order; undated turns last."""
    lines: list[tuple[Seated | None, str]] = []
    for name in RECORD_SLICES:
        turns: list[Seated] = []
        for seat in sorted(seated[name], key=_selection_rank):
            if is_grouped(row_of(seat.candidate)):
                turns.append(seat)
            else:
                lines.append((seat, seat.candidate.tiers[seat.tier]))  # type: ignore[arg-type]  # a seated tier has text
        if not turns:
            continue
        headings: dict[str, list[Seated]] = {}
        for seat in turns:
            headings.setdefault(_group_key(row_of(seat.candidate)), []).append(seat)
        # (where the group sorts, its date, its turns in order), each worked out once
        groups: list[tuple[tuple[bool, str, tuple[str, int, str]], str | None, list[Seated]]] = []
        for members in headings.values():
            members.sort(key=turn_order)
            date = turn_date(row_of(members[0].candidate))
            groups.append(((date is None, date or "", turn_order(members[0])), date, members))
        groups.sort(key=itemgetter(0))
        lines.append((None, render.TURN_SECTION_OPEN))
        year = None
        for _, date, members in groups:
            if date and render.turn_year(date) != year:
                year = render.turn_year(date)
                lines.append((None, year))
            lines.append((None, render.turn_heading(date)))
            lines += [(member, member.candidate.tiers[member.tier]) for member in members]  # type: ignore[misc]  # a seated tier has text
        lines.append((None, render.TURN_SECTION_CLOSE))
    return lines
