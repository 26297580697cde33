"""Rendering: pure functions from selected memory to the provider request (OpenAI chat format).

Layout, most stable first: the developer message (guidelines, persona, memory instructions) and the tool
definitions form the prefix, byte-identical while scope, policies, persona and tools are unchanged; then the
thread's recent turns as native messages; then one user message with the memory context and, last, the
question. Records are compact (one line each; recalled turns share a group record, one line per turn, each
with its own id), so a record's wrapper costs a few tokens, not as many as the text it carries. Stored text
is escaped (&, <, >), so retrieved text stays quoted evidence; annotations written by the assembler sit
before it in the record, never inside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any
from xml.sax.saxutils import escape, quoteattr as _quoteattr

from ctxasm.core.refs import Ref

#: Generated (contract/selection.toml): a digest of this module's code, so a change of the rendering cannot keep
#: the old version (replay compares it with the manifest's).
RENDERER_VERSION = "renderer-39e3ab412dfe"

#: The guideline key of the memory instructions: how the model is to read the memory context. They are policy,
#: a versioned guideline row like any other (narrowest scope wins), rendered as their own section after the
#: persona and charged to the guidelines slice.
MEMORY_INSTRUCTIONS_KEY = "memory_instructions"
#: A guideline keyed `memory_instructions.<tool handler>` is a sentence about one tool: it is rendered only when
#: a tool with that handler is in the window (no "call expand" for an agent without expand).
TOOL_INSTRUCTION_PREFIX = MEMORY_INSTRUCTIONS_KEY + "."

#: An attribute value quoted for a record's start tag. A window's records repeat the same few types, statuses,
#: tiers and ids, so each distinct value is quoted once.
quoteattr = functools.lru_cache(maxsize=4096)(_quoteattr)

ANNOTATION_TEXT = "This memory used an earlier fact. Current canonical fact: "
WITHDRAWN_TEXT = "This memory used an earlier fact that is no longer in effect."


#: Decimal digits of a row version's stable id: 40 bits, like ten hex digits, in four o200k tokens instead of
#: ten (the tokenizer reads digits three at a time, hex one character at a time).
ID_DIGITS = 12


def memory_id(ref: Sequence[Any]) -> str:
    """The stable id of a row version (the same in every window and tool result): how a tool result names
    the rows it read, and how a row is named where no window numbered it."""
    digest = hashlib.sha256(Ref.of(ref).key.encode()).digest()
    return f"M{int.from_bytes(digest[:8], 'big') % 10 ** ID_DIGITS:0{ID_DIGITS}d}"


def window_id(number: int) -> str:
    """The citation id of the number-th memory of one window. Window ids are short (M1 .. M999 cost one
    token for the number) because a recalled turn is often not much longer than its id; the manifest maps
    each to its row version, and expand and the answer checks resolve ids through the manifest."""
    if number < 1:
        raise ValueError(f"a window id numbers from 1, got {number}")
    return f"M{number}"


def one_line(text: str) -> str:
    """`text` with every line break a space (each boundary str.splitlines knows: \\n, \\r, \\u2028, ...). The
    memory context is one record or one turn a line, and a line's start says what it is (`<memory`, a turn's
    id, a date): stored text that could start a line of its own could forge a turn or a record, so it never
    can. Data stays data."""
    return " ".join(text.splitlines())


@dataclass(frozen=True)
class Annotation:
    current_id: str | None
    current_text: str | None


def render_memory(mid: str, kind: str, status: str, tier: str, text: str,
                  annotations: Sequence[Annotation] = ()) -> str:
    """One <memory> record on one line: id, type and status as attributes (and the tier when it is not full),
    the assembler's annotations, then the tier's text (full content, a summary, or a pointer line), its line
    breaks made spaces (one_line)."""
    attributes = f"id={quoteattr(mid)} type={quoteattr(kind)} status={quoteattr(status)}"
    if tier != "full":
        attributes += f" tier={quoteattr(tier)}"
    notes = "".join(
        f"<annotation current_fact_id={quoteattr(note.current_id)}>"
        f"{escape(ANNOTATION_TEXT + one_line(note.current_text or ''))}</annotation>" if note.current_id
        else f"<annotation>{escape(WITHDRAWN_TEXT)}</annotation>"
        for note in annotations)
    return f"<memory {attributes}>{notes}{escape(one_line(text))}</memory>"


#: The section of a window's recalled turns: type and status once for every turn line in it.
TURN_SECTION_OPEN = '<turns type="conversation" status="unverified">'
TURN_SECTION_CLOSE = "</turns>"


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def turn_year(date: str | None) -> str:
    """The line that opens a year's conversations inside the turns section, `2026` (3 tokens with its line
    break), under which each date line names day and month only. `date` is ISO (YYYY-MM-DD); undated turns
    have no year line."""
    return date[:4] if date else ""


def turn_heading(date: str | None) -> str:
    """The line that starts one conversation's turns of one date inside the turns section: day and month,
    `14 June` (3 tokens with its line break; the year stands once above, turn_year), where `14 June 2026` took
    6 and `# 2026-06-14` 9. A turn's line starts with its id, so the two cannot be confused. `date` is ISO
    (YYYY-MM-DD)."""
    if not date:
        return "Undated"
    _, month, day = (int(part) for part in date.split("-"))
    return f"{day} {_MONTHS[month - 1]}"


def speaker_name(speaker: str | None) -> str:
    """A turn's speaker as its line names it: on one line, runs of white space one space; '' for none."""
    return " ".join((speaker or "").split())


#: The words a turn's line uses for its role. A speaker's name is written by whoever stores the turn.
ROLE_WORDS = frozenset({"user", "assistant", "system", "developer", "tool", "event"})


def speaker_label(role: str | None, speaker: str | None) -> str:
    """Who a turn's line says spoke: the speaker's name, else the role. A name that starts with a role word
    other than the turn's own role would pass a user's turn off as the assistant's or the system's (a speaker
    named "assistant" or "System notice"): the label is then the role, with the name after it in parentheses,
    `user (assistant)`, so the line says who spoke and keeps the name."""
    name = speaker_name(speaker)
    if not name:
        return role or ""
    first = name.split()[0].strip(".,:;!?()[]{}<>\"'`*_-").casefold()
    if first in ROLE_WORDS and first != (role or "").casefold():
        return f"{role} ({name})" if role else f"({name})"
    return name


def turn_line(mid: str, role: str | None, text: str, speaker: str | None = None) -> str:
    """One recalled turn inside a group: its id first, who spoke, and the text on one line: `M12 user: text`,
    or `M12 Maya: text` when the turn names its speaker (the name says who spoke; the role word would cost two
    more tokens a line; speaker_label). Without brackets: a line's first word is its id, a token cheaper. Line
    breaks in the text and the name become spaces, so a turn can never start a line of its own and forge an id."""
    who = speaker_label(role, speaker)
    label = f"{who}: " if who else ""
    return f"{mid} {escape(label + ' '.join(text.split()))}"


#: The roles a recalled turn may speak in. A stored row with any other role (system, tool, event) is memory,
#: not an instruction: it is rendered as a quoted record inside a user message, never as a message of its role.
TAIL_ROLES = ("user", "assistant")


def tail_turn(mid: str, role: str, text: str, speaker: str | None = None) -> tuple[str, str]:
    """(role, content) of one recalled turn in the request; a turn that names its speaker starts with the name
    (`Maya: text`), as its line in the recalled history does (speaker_label)."""
    if speaker_name(speaker):
        text = f"{speaker_label(role, speaker)}: {text}"
    if role in TAIL_ROLES:
        return role, text
    return "user", (f"<memory id={quoteattr(mid)} type=\"conversation\" status=\"unverified\" "
                    f"role={quoteattr(str(role))}>{escape(one_line(text))}</memory>")


def guidelines_section(guidelines: Sequence[str]) -> str:
    return "# Guidelines\n" + "\n".join(f"- {text}" for text in guidelines) if guidelines else ""


def persona_section(persona: Sequence[str]) -> str:
    return "# Persona\n" + "\n\n".join(persona) if persona else ""


def memory_section(instructions: Sequence[str]) -> str:
    return "# Memory\n" + "\n".join(instructions) if instructions else ""


def developer_message(guidelines: Sequence[str], persona: Sequence[str], instructions: Sequence[str] = ()) -> str:
    """Guidelines, persona, then the memory instructions (charged to the guidelines slice: they are policy)."""
    sections = (guidelines_section(guidelines), persona_section(persona), memory_section(instructions))
    return "\n\n".join(part for part in sections if part)


def tool_definition(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def user_message(records: Sequence[str], question: str) -> str:
    context = "<memory_context>\n" + "\n".join(records) + "\n</memory_context>" if records else \
        "<memory_context>\n</memory_context>"
    return f"{context}\n\n{question}"


def build_request(*, model: str, developer: str, tools: Sequence[Mapping[str, Any]],
                  tail: Sequence[tuple[str, str]], user: str, max_output_tokens: int) -> dict[str, Any]:
    """The complete provider request. `tail` holds (role, text) turns, oldest first."""
    messages: list[dict[str, Any]] = [{"role": "developer", "content": developer}]
    messages += [{"role": role, "content": text} for role, text in tail]
    messages.append({"role": "user", "content": user})
    request: dict[str, Any] = {"model": model, "messages": messages, "max_completion_tokens": max_output_tokens}
    if tools:
        request["tools"] = list(tools)
    return request


def json_text(text: str) -> str:
    """`text` as it appears inside a JSON string of the serialized request (no quotes): what it costs there.
    The encoder json.dumps(text, ensure_ascii=False) uses for a string, called directly: a window prices
    hundreds of lines."""
    return encode_basestring(text)[1:-1]


def serialize(request: Mapping[str, Any]) -> str:
    """The canonical bytes of a request: what is hashed, counted and replayed."""
    return json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(serialize(request).encode("utf-8")).hexdigest()


def part_hashes(request: Mapping[str, Any]) -> dict[str, str]:
    """A short hash per message and for the tools, so a replay can say which part differs."""
    def short(value: Any) -> str:
        return hashlib.sha256(serialize({"part": value}).encode("utf-8")).hexdigest()[:16]

    parts = {f"messages[{i}] ({m['role']})": short(m) for i, m in enumerate(request["messages"])}
    parts["tools"] = short(request.get("tools", []))
    return parts
