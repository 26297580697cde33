"""Read LongMemEval's public JSON format into conversation samples (docs/conversation-eval.md).

A LongMemEval file is a JSON list of instances, each one question with a haystack of its own:

    {"question_id": "q1", "question_type": "multi-session", "question": "...", "answer": "...",
     "question_date": "2023/05/30 (Tue) 23:40",
     "haystack_session_ids": ["s1", ...], "haystack_dates": ["2023/05/20 (Sat) 02:21", ...],
     "haystack_sessions": [[{"role": "user", "content": "...", "has_answer": true}, ...], ...],
     "answer_session_ids": ["s1"]}

Each instance becomes one sample (so one tenant) with one question: haystack session N (1-based, in the file's
order) holds turns `D<N>:<position>`, dated from its haystack date plus the LoCoMo reader's spacing; role
`user` is the sample's first speaker and `assistant` its second, and a turn's stored content is its text alone
(the role already names the speaker). The evidence is the turns of the answer sessions that the file marks
`has_answer`; an answer session with no marked turn contributes every turn (its session-level hit is then the
"any" figure). Abstention questions (question_id ending in `_abs`: the answer is not in the haystack) are
skipped, like LoCoMo's adversarial ones. The question is asked at its question_date.

As for LoCoMo, the reader tolerates and counts what is not clean (undated sessions, turns without text, answer
session ids that name no session) and refuses only a file that is not a list of instances.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime, timedelta, timezone
from typing import Any

from ctxasm_dev.evaluation.locomo import (TURN_SPACING, UNDATED_GAP, ConversationFileError, Question, ReadNotes,
                                          Sample, Session, Turn)

USER, ASSISTANT = "user", "assistant"
ABSTENTION_SUFFIX = "_abs"
_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$")


def is_longmemeval(document: Any) -> bool:
    """A JSON list whose first item is an instance with a haystack."""
    return (isinstance(document, list) and bool(document) and isinstance(document[0], dict)
            and "haystack_sessions" in document[0])


def parse_date(text: Any) -> datetime:
    """"2023/05/20 (Sat) 02:21" -> 2023-05-20T02:21:00Z (the weekday and the time are optional), read as UTC.
    ValueError when it does not read."""
    match = _DATE.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"not a LongMemEval date: {text!r} (expected e.g. '2023/05/20 (Sat) 02:21')")
    year, month, day, hour, minute = match.groups()
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), tzinfo=timezone.utc)


def _sessions(raw: dict[str, Any], sample_id: str, notes: ReadNotes) -> tuple[list[Session], dict[str, int]]:
    """The haystack as sessions, and each haystack session id -> its session number."""
    haystack = raw.get("haystack_sessions")
    dates = raw.get("haystack_dates") if isinstance(raw.get("haystack_dates"), list) else []
    ids = raw.get("haystack_session_ids") if isinstance(raw.get("haystack_session_ids"), list) else []
    sessions: list[Session] = []
    numbers: dict[str, int] = {}
    previous: datetime | None = None
    for number, turns_raw in enumerate(haystack if isinstance(haystack, list) else [], start=1):
        if number <= len(ids):
            numbers[str(ids[number - 1])] = number
        try:
            start = parse_date(dates[number - 1] if number <= len(dates) else None)
        except ValueError:
            notes.note("sessions without a readable date", f"{sample_id} session {number}")
            start = (previous + UNDATED_GAP) if previous else datetime(2000, 1, 1, tzinfo=timezone.utc)
        turns: list[Turn] = []
        for position, turn in enumerate(turns_raw if isinstance(turns_raw, list) else [], start=1):
            text = str(turn.get("content") or "").strip() if isinstance(turn, dict) else ""
            if not text:
                notes.note("turns without text", f"{sample_id} session {number} turn {position}")
                continue
            role = str(turn.get("role") or "").strip().lower()
            if role not in (USER, ASSISTANT):
                notes.note("turns by neither user nor assistant", f"{sample_id} D{number}:{position}: {role!r}")
            at = start + TURN_SPACING * (position - 1)
            if previous is not None and at <= previous:  # sessions out of date order: keep the order total
                at = previous + timedelta(seconds=1)
            turns.append(Turn(f"D{number}:{position}", ASSISTANT if role == ASSISTANT else USER, text, number,
                              len(turns) + 1, at))
            previous = at
        if turns:
            sessions.append(Session(number, turns[0].at, tuple(turns)))
    return sessions, numbers


def _marked(raw: dict[str, Any], number: int) -> set[int]:
    """1-based positions of the turns of haystack session `number` marked has_answer."""
    turns = raw["haystack_sessions"][number - 1]
    return {position for position, turn in enumerate(turns, start=1)
            if isinstance(turn, dict) and turn.get("has_answer") is True}


def _evidence(raw: dict[str, Any], sample_id: str, sessions: list[Session], numbers: dict[str, int],
              notes: ReadNotes) -> list[str]:
    by_number = {session.number: session for session in sessions}
    evidence: list[str] = []
    answers = raw.get("answer_session_ids")
    for session_id in answers if isinstance(answers, list) else []:
        number = numbers.get(str(session_id))
        if number is None or number not in by_number:
            notes.note("answer session ids naming no session (ignored)", f"{sample_id}: {session_id}")
            continue
        marked = _marked(raw, number)
        if not marked:
            notes.note("answer sessions without has_answer turns (every turn counts)", f"{sample_id}: {session_id}")
        for turn in by_number[number].turns:
            if (not marked or int(turn.dia_id.split(":")[1]) in marked) and turn.dia_id not in evidence:
                evidence.append(turn.dia_id)
    return evidence


def parse_instances(document: Any, name: str = "<longmemeval>",
                    wanted: Collection[str] | None = None) -> tuple[list[Sample], ReadNotes]:
    """Every instance of a LongMemEval file (or those whose question_id `wanted` holds) as a sample with one
    question, and what was tolerated."""
    if not isinstance(document, list):
        raise ConversationFileError(f"{name}: $: expected a JSON list of instances, got {type(document).__name__}")
    notes = ReadNotes()
    samples: list[Sample] = []
    for index, raw in enumerate(document):
        if not isinstance(raw, dict) or not isinstance(raw.get("haystack_sessions"), list):
            raise ConversationFileError(f"{name}: $[{index}].haystack_sessions: expected a list of sessions")
        sample_id = str(raw.get("question_id") or index)
        if wanted is not None and sample_id not in wanted:
            continue
        sessions, numbers = _sessions(raw, sample_id, notes)
        if not sessions:
            notes.note("samples without turns (skipped)", sample_id)
            continue
        questions: list[Question] = []
        text = raw.get("question")
        if sample_id.endswith(ABSTENTION_SUFFIX):
            notes.counts["abstention questions (skipped)"] += 1
        elif not isinstance(text, str) or not text.strip():
            notes.note("questions without a question text", sample_id)
        else:
            evidence = _evidence(raw, sample_id, sessions, numbers, notes)
            if evidence:
                questions.append(Question(0, text.strip(), None, tuple(evidence), raw.get("answer"),
                                          kind=str(raw.get("question_type") or "unknown")))
            else:
                notes.note("questions without usable evidence (skipped)", sample_id)
        try:
            asked_at = parse_date(raw.get("question_date"))
        except ValueError:
            asked_at = None
        samples.append(Sample(sample_id, USER, ASSISTANT, tuple(sessions), tuple(questions), asked_at))
    return samples, notes
