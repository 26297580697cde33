"""Read long-conversation samples in the LoCoMo format (docs/conversation-eval.md); conversation_files.py reads a
file in either this format or LongMemEval's (longmemeval.py) into the same samples.

A file is a JSON list of samples. Each sample has `conversation` (`speaker_a`, `speaker_b`, and per session N
`session_N`, a list of turns `{speaker, dia_id, text}` with optional `img_url` / `blip_caption`, and
`session_N_date_time`, e.g. "1:56 pm on 8 May, 2023") and `qa`, a list of `{question, answer, evidence,
category}`. Category 5 (adversarial: the answer is not in the conversation) is skipped.

Public files are not perfectly clean, so the reader is tolerant and counts what it tolerates instead of
failing: evidence ids that are not of the form `D<session>:<turn>` (e.g. "D:11:26"), ids that name no turn,
several ids packed into one string ("D8:6; D9:17", split), turns without a dia_id or text, repeated dia_ids,
sessions without a readable date. Only a file that is not a list of samples at all is an error.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ctxasm.errors import CtxasmError

ADVERSARIAL = 5
#: LoCoMo's question categories (category 5, adversarial, is skipped).
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", ADVERSARIAL: "adversarial"}

#: Turns of a session are spaced this far apart, so the order of all turns of a sample is total.
TURN_SPACING = timedelta(seconds=10)
#: A session without a readable date is placed this long after the previous one.
UNDATED_GAP = timedelta(days=1)

DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_TIME = re.compile(
    r"^\s*(\d{1,2})[:.](\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$", re.IGNORECASE)
_MONTHS = {name: number for number, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"), start=1)}
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")


class ConversationFileError(CtxasmError):
    """The file is not a LoCoMo-format list of samples; the message names the file and the JSON path."""

    code = "invalid_conversation_file"
    exit_code = 4


def parse_session_time(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" -> 2023-05-08T13:56:00Z. Month names may be abbreviated ("8 Sept, 2023");
    an ISO 8601 time is accepted too. ValueError when neither reads."""
    if not isinstance(text, str):
        raise ValueError(f"not a date string: {text!r}")
    match = _DATE_TIME.match(text)
    if match:
        hour, minute, half, day, month_name, year = match.groups()
        month = _month(month_name)
        if month is None:
            raise ValueError(f"unknown month {month_name!r} in {text!r}")
        hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
        if int(hour) > 12 or int(minute) > 59:
            raise ValueError(f"no such time of day in {text!r}")
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=timezone.utc)
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a session date: {text!r} (expected e.g. '1:56 pm on 8 May, 2023')") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _month(name: str) -> int | None:
    lowered = name.lower()
    if lowered in _MONTHS:
        return _MONTHS[lowered]
    matches = [number for full, number in _MONTHS.items() if len(lowered) >= 3 and full.startswith(lowered)]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    #: the turn as a reader sees it: "Speaker: text", with "[shares a photo: caption]" for an image turn (the
    #: row stores the text after the name, and the name as its speaker: conversation_tenants)
    content: str
    session: int
    #: 1-based position in its session
    index: int
    at: datetime
    is_image: bool = False


@dataclass(frozen=True)
class Session:
    number: int
    at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    number: int
    question: str
    category: int | None
    #: evidence dia_ids that name a turn of the sample, in the file's order, without repeats
    evidence: tuple[str, ...]
    answer: Any = None
    #: a named question type (LongMemEval's question_type), shown instead of the category number
    kind: str | None = None

    @property
    def category_name(self) -> str:
        if self.kind:
            return self.kind
        return CATEGORY_NAMES.get(self.category, f"category {self.category}")


@dataclass
class ReadNotes:
    """What the reader tolerated, summed over a file."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, kind: str, example: str, keep: int = 5) -> None:
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < keep:
            shown.append(example)

    def describe(self) -> list[str]:
        return [f"{kind}: {count}" + (f" (e.g. {', '.join(self.examples[kind])})" if self.examples.get(kind) else "")
                for kind, count in sorted(self.counts.items())]


@dataclass(frozen=True)
class Sample:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    #: when the sample's questions were asked, where the file says (LongMemEval's question_date)
    asked_at: datetime | None = None

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(turn for session in self.sessions for turn in session.turns)

    @property
    def last_time(self) -> datetime:
        return max(turn.at for turn in self.turns)


def turn_content(speaker: str, text: str, caption: str | None, has_image: bool) -> str:
    """The turn as it reads: the speaker's name first, then the text, then what an image showed."""
    parts = [f"{speaker}: {text}".strip() if text else f"{speaker}:"]
    if caption:
        parts.append(f"[shares a photo: {caption.strip()}]")
    elif has_image:
        parts.append("[shares a photo]")
    return " ".join(parts)


def _sessions(conversation: dict[str, Any], sample_id: str, speakers: tuple[str, str],
              notes: ReadNotes) -> list[Session]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.match(key))
                     and isinstance(conversation[key], list))
    sessions: list[Session] = []
    previous: datetime | None = None
    seen: set[str] = set()
    for number in numbers:
        raw_time = conversation.get(f"session_{number}_date_time")
        try:
            start = parse_session_time(raw_time)
        except ValueError:
            notes.note("sessions without a readable date", f"{sample_id} session {number}: {raw_time!r}")
            start = (previous + UNDATED_GAP) if previous else datetime(2000, 1, 1, tzinfo=timezone.utc)
        turns: list[Turn] = []
        for position, raw in enumerate(conversation[f"session_{number}"], start=1):
            if not isinstance(raw, dict):
                notes.note("turns that are not objects", f"{sample_id} session {number} turn {position}")
                continue
            speaker = str(raw.get("speaker") or "").strip() or "unknown"
            text = str(raw.get("text") or "").strip()
            caption = raw.get("blip_caption") if isinstance(raw.get("blip_caption"), str) else None
            has_image = bool(raw.get("img_url")) or bool(caption)
            if not text and not has_image:
                notes.note("turns without text", f"{sample_id} session {number} turn {position}")
                continue
            dia_id = str(raw.get("dia_id") or "").strip()
            if not dia_id:
                dia_id = f"D{number}:{position}"
                notes.note("turns without a dia_id (numbered by position)", f"{sample_id} {dia_id}")
            if dia_id in seen:
                notes.note("repeated dia_ids (later copies dropped)", f"{sample_id} {dia_id}")
                continue
            seen.add(dia_id)
            if speaker not in speakers:
                notes.note("turns by neither speaker_a nor speaker_b", f"{sample_id} {dia_id}: {speaker}")
            if has_image:
                notes.counts["image turns"] += 1
            at = start + TURN_SPACING * (position - 1)
            if turns and at <= turns[-1].at:
                at = turns[-1].at + timedelta(seconds=1)
            if previous is not None and at <= previous:  # sessions out of date order: keep the order total
                at = previous + timedelta(seconds=1)
            turns.append(Turn(dia_id, speaker, turn_content(speaker, text, caption, has_image), number,
                              len(turns) + 1, at, has_image))
            previous = at
        if turns:
            sessions.append(Session(number, turns[0].at, tuple(turns)))
        else:
            previous = previous or start
    return sessions


def _evidence_ids(raw: Any) -> list[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    ids: list[str] = []
    for item in raw:
        ids.extend(part for part in _EVIDENCE_SEPARATORS.split(str(item).strip()) if part)
    return ids


def _questions(qa: Any, sample_id: str, known: set[str], notes: ReadNotes) -> list[Question]:
    questions: list[Question] = []
    for number, item in enumerate(qa if isinstance(qa, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
            notes.note("questions without a question text", f"{sample_id} qa[{number}]")
            continue
        category = item.get("category")
        category = int(category) if isinstance(category, (int, str)) and str(category).isdigit() else None
        if category == ADVERSARIAL:
            notes.counts["adversarial questions (skipped)"] += 1
            continue
        raw = item.get("evidence")
        if isinstance(raw, list) and any(isinstance(e, str) and _EVIDENCE_SEPARATORS.search(e.strip()) for e in raw):
            notes.note("evidence entries holding several ids (split)", f"{sample_id} qa[{number}]: {raw}")
        evidence: list[str] = []
        for dia_id in _evidence_ids(raw):
            if not DIA_ID.match(dia_id):
                notes.note("malformed evidence ids (ignored)", f"{sample_id} qa[{number}]: {dia_id!r}")
            elif dia_id not in known:
                notes.note("evidence ids naming no turn (ignored)", f"{sample_id} qa[{number}]: {dia_id}")
            elif dia_id not in evidence:
                evidence.append(dia_id)
        if not evidence:
            notes.note("questions without usable evidence (skipped)", f"{sample_id} qa[{number}]")
            continue
        questions.append(Question(number, item["question"].strip(), category, tuple(evidence), item.get("answer")))
    return questions


def parse_samples(document: Any, name: str = "<conversations>",
                  wanted: Collection[str] | None = None) -> tuple[list[Sample], ReadNotes]:
    """Every sample of the file (or those whose sample_id `wanted` holds: the others are not read, so the notes
    count only what is evaluated), and what was tolerated."""
    if not isinstance(document, list):
        raise ConversationFileError(f"{name}: $: expected a JSON list of samples, got {type(document).__name__}")
    notes = ReadNotes()
    samples: list[Sample] = []
    for index, raw in enumerate(document):
        conversation = raw.get("conversation") if isinstance(raw, dict) else None
        if not isinstance(conversation, dict):
            raise ConversationFileError(f"{name}: $[{index}].conversation: expected an object")
        sample_id = str(raw.get("sample_id") or index)
        if wanted is not None and sample_id not in wanted:
            continue
        speakers = (str(conversation.get("speaker_a") or "speaker_a"), str(conversation.get("speaker_b") or "speaker_b"))
        sessions = _sessions(conversation, sample_id, speakers, notes)
        if not sessions:
            notes.note("samples without turns (skipped)", sample_id)
            continue
        known = {turn.dia_id for session in sessions for turn in session.turns}
        questions = _questions(raw.get("qa"), sample_id, known, notes)
        samples.append(Sample(sample_id, speakers[0], speakers[1], tuple(sessions), tuple(questions)))
    return samples, notes
