"""The literal request, message by message, each piece linked to the manifest entry it carries. Pure.

The request is the one replay rebuilt and checked against the recorded hash, so every byte shown is a byte the
model received. Pieces are found, not re-rendered: a fixed row's text inside the developer message, a record or
turn line of the memory context by the citation id it starts with, a tail turn by its place, a tool definition
by its place among the tools, a tool result by its call id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.core import render
from ctxasm.core.tokens import count_tokens
from ctxasm.api.inspection import TOOL_RESULTS, Inspection

_LINE_ID = re.compile(r"^(?:<memory id=\"(M\d+)\"|(M\d+) )")


@dataclass(frozen=True)
class Piece:
    """A run of a message's text; `memory_id` names the manifest entry it carries (None: framing, headings)."""

    text: str
    memory_id: str | None = None


@dataclass(frozen=True)
class MessageView:
    index: int
    role: str
    tokens: int
    pieces: tuple[Piece, ...]
    #: for an assistant turn of a tool round: its tool calls as sent; for a tool message: the call it answers
    calls: tuple[Mapping[str, Any], ...] = ()
    answers: str | None = None


@dataclass(frozen=True)
class ToolView:
    name: str
    memory_id: str | None
    definition: Mapping[str, Any]
    tokens: int

    @property
    def json(self) -> str:
        """The definition as the serialized request carries it (canonical JSON: sorted keys, no spaces)."""
        return render.serialize(self.definition)


@dataclass(frozen=True)
class RequestView:
    model: str
    messages: tuple[MessageView, ...]
    tools: tuple[ToolView, ...]
    options: Mapping[str, Any]
    tokens: int
    #: what the model saw of each manifest entry, by citation id
    seen: Mapping[str, str]


def _entries(inspection: Inspection, slice_names: Sequence[str]) -> list[Mapping[str, Any]]:
    return sorted((m for m in inspection.manifest.get("memories") or [] if m.get("slice") in slice_names),
                  key=lambda m: m.get("position") or 0)


def _developer(text: str, inspection: Inspection) -> tuple[Piece, ...]:
    """The developer message cut at each fixed row's text (found in request order from where the last ended)."""
    pieces: list[Piece] = []
    cursor = 0
    for memory in _entries(inspection, ("guidelines", "persona")):
        row = inspection.row(memory.get("ref"))
        content = str((row or {}).get("content") or "")
        at = text.find(content, cursor) if content else -1
        if at < 0:
            continue
        if at > cursor:
            pieces.append(Piece(text[cursor:at]))
        pieces.append(Piece(content, str(memory.get("id"))))
        cursor = at + len(content)
    if cursor < len(text):
        pieces.append(Piece(text[cursor:]))
    return tuple(pieces)


def _memory_context(text: str) -> tuple[Piece, ...]:
    """The last user message, line by line: a record or turn line carries the id it starts with."""
    pieces: list[Piece] = []
    lines = text.split("\n")
    for number, line in enumerate(lines):
        end = "\n" if number < len(lines) - 1 else ""
        found = _LINE_ID.match(line)
        mid = (found.group(1) or found.group(2)) if found else None
        if mid is not None:
            pieces.append(Piece(line, mid))
            if end:
                pieces.append(Piece(end))
        elif pieces and pieces[-1].memory_id is None:
            pieces[-1] = Piece(pieces[-1].text + line + end)
        else:
            pieces.append(Piece(line + end))
    return tuple(pieces)


def request_view(inspection: Inspection) -> RequestView | None:
    request = inspection.request
    if request is None:
        return None
    messages = list(request.get("messages") or [])
    tail = [str(m.get("id")) for m in _entries(inspection, ("volatile_tail",))]
    results = {str(m.get("call_id")): str(m.get("id")) for m in _entries(inspection, (TOOL_RESULTS,))}
    # the first request's last user message holds the memory context; later messages belong to tool rounds
    first_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"
                      and "<memory_context>" in str(m.get("content") or "")), default=len(messages) - 1)
    views: list[MessageView] = []
    tail_at = 0
    for index, message in enumerate(messages):
        role = str(message.get("role"))
        content = message.get("content")
        text = "" if content is None else str(content)
        tokens = count_tokens(render.serialize(message))
        if index == 0 and role == "developer":
            pieces = _developer(text, inspection)
        elif index == first_user:
            pieces = _memory_context(text)
        elif 0 < index < first_user and tail_at < len(tail):
            pieces = (Piece(text, tail[tail_at]),)
            tail_at += 1
        elif role == "tool":
            pieces = (Piece(text, results.get(str(message.get("tool_call_id")))),)
        else:
            pieces = (Piece(text),) if text else ()
        views.append(MessageView(index, role, tokens, pieces, tuple(message.get("tool_calls") or ()),
                                 str(message.get("tool_call_id")) if message.get("tool_call_id") else None))
    tool_entries = [str(m.get("id")) for m in _entries(inspection, ("tools",))]
    tools = tuple(ToolView(str(((t.get("function") or {}).get("name"))), tool_entries[i] if i < len(tool_entries)
                           else None, t, count_tokens(render.serialize(t)))
                  for i, t in enumerate(request.get("tools") or []))
    seen: dict[str, str] = {}
    for view in views:
        for piece in view.pieces:
            if piece.memory_id:
                seen[piece.memory_id] = piece.text
    for tool in tools:
        if tool.memory_id:
            seen[tool.memory_id] = tool.json
    options = {k: v for k, v in request.items() if k not in ("messages", "tools")}
    return RequestView(str(request.get("model")), tuple(views), tools, options,
                       count_tokens(render.serialize(request)), seen)
