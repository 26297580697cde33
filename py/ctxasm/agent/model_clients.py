"""Model clients for the agent loop: the OpenAI SDK, and recorded transcripts replayed offline.

A client takes the complete provider request (chat format, as ctxasm.core.render builds it) and returns the
chat completion as a plain dict. The recorded client checks each request against what the transcript
expects at that point (the last message's role, the tool call it answers, the tools offered), so a loop that
sends the wrong request fails the test instead of getting a canned answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ctxasm.errors import ConfigError, CtxasmError, ProviderError

DEFAULT_MODEL = "gpt-4.1-mini"
TRANSCRIPT_FORMAT = "ctxasm-transcript/1"


class ModelClient(Protocol):
    name: str

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def count_input_tokens(self, request: Mapping[str, Any]) -> int | None: ...


class TranscriptMismatch(CtxasmError):
    """The loop sent a request the recorded transcript does not expect at this point."""

    code = "transcript_mismatch"


#: Seconds one provider call may take, and how many times the SDK retries a failed one (with its backoff): a
#: provider that is down makes `ask` fail in seconds, not minutes.
PROVIDER_TIMEOUT = 30.0
PROVIDER_RETRIES = 2


class OpenAIClient:
    """gpt-4.1-mini by default; the key comes from OPENAI_API_KEY, never from a file or an argument. `base_url`
    (default OPENAI_BASE_URL, else api.openai.com) points it at any OpenAI-compatible server: vLLM, Ollama,
    LiteLLM. A provider failure is one ProviderError after bounded retries, and so is an answer that is not a chat
    completion (chat_completion)."""

    name = "openai"

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *,
                 timeout: float = PROVIDER_TIMEOUT, max_retries: int = PROVIDER_RETRIES):
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError("config_error: OPENAI_API_KEY is not set (a local OpenAI-compatible server that "
                              "needs no key takes any value)")
        from openai import OpenAI

        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._client = OpenAI(api_key=key, base_url=self.base_url, timeout=timeout, max_retries=max_retries)

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        with self._provider_errors():
            try:
                response = self._client.chat.completions.create(**request)
            except json.JSONDecodeError as exc:  # the server said JSON and sent something else
                raise ProviderError(f"provider_error: the answer from {self.where} is not a chat completion "
                                    f"(a body that is not JSON: {exc})") from None
        return chat_completion(response, self.where)

    def count_input_tokens(self, request: Mapping[str, Any]) -> int | None:
        """The provider's own count of the input (CONTEXT_PROVIDER_COUNT=1), via the Responses token counter."""
        with self._provider_errors():
            try:
                counted = self._client.responses.input_tokens.count(
                    model=request["model"], input=responses_input(request["messages"]),  # type: ignore[arg-type]
                    tools=[responses_tool(t) for t in request.get("tools", [])] or None)  # type: ignore[misc]
            except json.JSONDecodeError as exc:
                raise ProviderError(f"provider_error: the token count from {self.where} is not JSON ({exc})") \
                    from None
        tokens = getattr(counted, "input_tokens", None)
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            raise ProviderError(f"provider_error: the answer from {self.where} to a token count has no input_tokens")
        return tokens

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    @contextmanager
    def _provider_errors(self) -> Iterator[None]:
        import openai

        try:
            yield
        except openai.APIError as exc:
            status = getattr(exc, "status_code", None)
            first_line = (str(getattr(exc, "message", None) or exc).strip().splitlines() or [""])[0][:300]
            raise ProviderError(f"provider_error: {type(exc).__name__}{f' {status}' if status else ''} from "
                                f"{self.where}: {first_line}") from None


def chat_completion(response: object, where: str) -> dict[str, Any]:
    """The provider's answer as a chat completion dict the loop can read: `choices[0].message` with its content
    (text or none) and its tool calls (each an id, a function name and its arguments). Anything else, such as the
    HTML page of a proxy answered with HTTP 200 (the SDK then returns the body as a string), is one ProviderError
    that says what came back."""

    def refuse(problem: str) -> ProviderError:
        return ProviderError(f"provider_error: the answer from {where} is not a chat completion ({problem})")

    dump = getattr(response, "model_dump", None)
    # warnings=False: a completion with misshapen fields is refused below, not warned about on stderr
    data = dump(mode="json", warnings=False) if callable(dump) else response
    if not isinstance(data, dict):
        text = " ".join(str(data).split())
        raise refuse(f"a {type(data).__name__}: {text[:120]!r}{'...' if len(text) > 120 else ''}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise refuse("no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise refuse("the first choice has no message")
    if message.get("content") is not None and not isinstance(message["content"], str):
        raise refuse("the message content is not text")
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise refuse("tool_calls is not a list")
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not (isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(function, dict)
                    and isinstance(function.get("name"), str)
                    and isinstance(function.get("arguments"), (str, type(None)))):
                raise refuse("a tool call without an id, a function name and its arguments as text")
    return data


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
