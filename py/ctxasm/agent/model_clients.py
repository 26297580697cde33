"""Model clients for the agent loop: the OpenAI SDK, and recorded transcripts replayed offline.

A client takes the complete provider request (chat format, as ctxasm.core.render builds it) and returns the
chat completion as a plain dict. The recorded client checks each request against what the transcript
expects at that point (the last message's role, the tool call it answers, the tools offered), so a loop that
sends the wrong request fails the test instead of getting a canned answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ctxasm.errors import ConfigError, CtxasmError

DEFAULT_MODEL = "gpt-4.1-mini"
TRANSCRIPT_FORMAT = "ctxasm-transcript/1"


class ModelClient(Protocol):
    name: str

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def count_input_tokens(self, request: Mapping[str, Any]) -> int | None: ...


class TranscriptMismatch(CtxasmError):
    """The loop sent a request the recorded transcript does not expect at this point."""

    code = "transcript_mismatch"


class OpenAIClient:
    """gpt-4.1-mini by default; the key comes from OPENAI_API_KEY, never from a file or an argument."""

    name = "openai"

    def __init__(self, api_key: str | None = None):
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError("config_error: OPENAI_API_KEY is not set")
        from openai import OpenAI

        self._client = OpenAI(api_key=key)

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self._client.chat.completions.create(**request).model_dump(mode="json")

    def count_input_tokens(self, request: Mapping[str, Any]) -> int | None:
        """The provider's own count of the input (CONTEXT_PROVIDER_COUNT=1), via the Responses token counter."""
        counted = self._client.responses.input_tokens.count(
            model=request["model"], input=responses_input(request["messages"]),
            tools=[responses_tool(t) for t in request.get("tools", [])] or None)
        return int(counted.input_tokens)


def responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    return {"type": "function", "name": function["name"], "description": function.get("description", ""),
            "parameters": function.get("parameters", {})}


def responses_input(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses input items (the token counter speaks only the Responses format)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"],
                          "output": message["content"]})
            continue
        if message.get("content"):
            items.append({"role": role, "content": message["content"]})
        for call in message.get("tool_calls") or ():
            items.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                          "arguments": call["function"]["arguments"]})
    return items


@dataclass
class RecordedClient:
    """Replays the responses of a transcript file in order; see db/tests/transcripts/README.md."""

    path: Path
    steps: list[dict[str, Any]]
    name: str = "recorded"
    sent: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> RecordedClient:
        return cls(path=Path(path), steps=list(read_transcript(path)["responses"]))

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        index = len(self.sent)
        if index >= len(self.steps):
            raise TranscriptMismatch(f"transcript_mismatch: {self.path.name}: request {index + 1} was sent, "
                                     f"the transcript records {len(self.steps)}")
        step = self.steps[index]
        _check_expectations(self.path.name, index + 1, step.get("expect", {}), request)
        self.sent.append(dict(request))
        return step["response"]

    def count_input_tokens(self, request: Mapping[str, Any]) -> int | None:
        return None

    @property
    def exhausted(self) -> bool:
        return len(self.sent) == len(self.steps)


def read_transcript(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"config_error: {path}: cannot read the transcript ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != TRANSCRIPT_FORMAT:
        raise ConfigError(f"config_error: {path}: format must be {TRANSCRIPT_FORMAT!r}")
    for field_name in ("run", "responses"):
        if field_name not in data:
            raise ConfigError(f"config_error: {path}: {field_name} is missing")
    return data


def apply_setup(store: Any, tenant_id: str, memories: Sequence[Mapping[str, Any]]) -> int:
    """Write a transcript's setup rows through the write API; rows already there are left alone."""
    from ctxasm.errors import DuplicateMemory

    written = 0
    for record in memories:
        store.set_tenant(tenant_id)
        body = {k: v for k, v in record.items() if k != "type"}
        try:
            store.put_memory(record["type"], body)
        except DuplicateMemory:
            store.rollback()
            continue
        store.commit()
        written += 1
    return written


def _check_expectations(name: str, number: int, expect: Mapping[str, Any], request: Mapping[str, Any]) -> None:
    def fail(problem: str) -> None:
        raise TranscriptMismatch(f"transcript_mismatch: {name}: request {number}: {problem}")

    messages = request["messages"]
    last = messages[-1]
    if "last_role" in expect and last["role"] != expect["last_role"]:
        fail(f"the last message is {last['role']!r}, the transcript expects {expect['last_role']!r}")
    if "answers_call" in expect:
        answered = [m.get("tool_call_id") for m in messages if m["role"] == "tool"]
        if expect["answers_call"] not in answered:
            fail(f"no tool message answers call {expect['answers_call']!r}")
    if "tools" in expect:
        offered = sorted(t["function"]["name"] for t in request.get("tools", []))
        if offered != sorted(expect["tools"]):
            fail(f"tools offered {offered}, the transcript expects {sorted(expect['tools'])}")
    if "tool_choice" in expect and request.get("tool_choice") != expect["tool_choice"]:
        fail(f"tool_choice is {request.get('tool_choice')!r}, the transcript expects {expect['tool_choice']!r}")
    for text in expect.get("contains", ()):
        if text not in json.dumps(messages, ensure_ascii=False):
            fail(f"the request does not contain {text!r}")
