"""ctxasm as the context of an OpenAI Agents SDK agent, through the SDK's model-input hook.

`ContextAssembly` is a `RunConfig.call_model_input_filter`: the SDK calls it right before every model call of
a run, with the instructions and input items it is about to send. For each call it

1. takes the question: the text of the last user message of the input;
2. assembles a window for its scope (tenant, user, agent, thread, intent) and records the manifest, so every
   call has one and `ctxasm replay` / `ctxasm inspect` work on it;
3. returns the model input built from the window: the instructions are the window's developer message
   (guidelines, persona, memory instructions) followed by the agent's own instructions; the input is the
   thread's recent turns and the user message carrying the memory context and the question, as the window
   renders them, then what the run has added after the question (the model's tool calls and their outputs),
   passed on unchanged;
4. counts that request (o200k_base, as every ctxasm request) and refuses it past its limit, the usable context
   less the output reserve (the window keeps the tool reserve free for the agent's instructions and the run's
   tool traffic), then records it as a `provider_request` event linked to the manifest, before the call.

The SDK's history before the question (an SDK session, or a caller's `result.to_input_list()`) is left out:
the thread's memory in ctxasm is the history, selected under the budget. `ContextAssembly.hooks()` records
each model response as a `model_response` event linked to its call's manifest; `ContextAssembly.run()` runs an
agent with both. The agent's tool definitions are the agent's; they are not counted in the request.

`ContextAssembly.tools()` gives the agent the Memory Manager's tools (the toolbox rows in effect for the scope
and its roles: search_memory, lookup_entity, expand, clarify) as SDK function tools. The manager runs them with
the same checks as over MCP; each result is fitted into the tool reserve of the run's window (degraded before
it is dropped), recorded as a `tool_result` event citing the rows it showed, and returned to the SDK as the
rendered <tool_result> record. `expand` opens ids of the latest call's window. The SDK runs the tools of one
response concurrently; the assembly runs them one at a time (they share its connection and its tool reserve).

Needs the `agents` extra (openai-agents). Server-side conversation state (`previous_response_id`,
`conversation_id`) does not mix with a filter that rebuilds the input each call; use neither.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from ctxasm.agent.manager import Caller, MemoryManager, ToolRow
from ctxasm.core import render
from ctxasm.core.compose import DEFAULT_MODEL, RequestOverBudget, WindowSpec
from ctxasm.core.tokens import count_tokens
from ctxasm.core.tool_results import ToolLedger, ToolOutput, fit_and_charge
from ctxasm.engines.store import MemoryStore
from ctxasm.errors import ConfigError, CtxasmError, InvalidQuestion
from ctxasm.services.assemble import assemble, parse_time

try:
    from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, RunHooks, Runner
    from agents.items import ModelResponse
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
except ImportError as exc:  # the adapter is an extra; say how to get it
    raise ConfigError("config_error: the OpenAI Agents SDK is not installed: pip install 'ctxasm[agents]' "
                      f"(openai-agents==0.24.0): {exc}") from exc

FRAMEWORK = "openai-agents"
AGENT_INSTRUCTIONS_HEADING = "# Agent instructions"


@dataclass
class AssembledCall:
    """One model call of a run, as ctxasm prepared and recorded it."""

    number: int
    manifest_id: str
    request_record: str
    request_hash: str
    request_tokens: int
    request_limit: int
    #: SDK input items before the question that the window replaced (history the SDK held)
    replaced_items: int
    #: items the run added after the question, passed on (tool calls and outputs, earlier answers)
    run_items: int
    response_record: str | None = None
    #: tool_result events of the memory tools the model called in answer to this call
    tool_records: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def plain(item: Any) -> Any:
    """An input item as JSON data (the SDK passes dicts, sometimes pydantic models)."""
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_unset=True)
    return item


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    texts = []
    for part in content or ():
        part = plain(part)
        if isinstance(part, Mapping) and part.get("type") in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text", "")))
    return "\n".join(texts)


def question_position(items: Sequence[Any]) -> int:
    """The index of the last user message: the question of this turn."""
    for index in range(len(items) - 1, -1, -1):
        item = plain(items[index])
        if isinstance(item, Mapping) and item.get("role") == "user" and item.get("type", "message") == "message":
            return index
    raise InvalidQuestion("invalid_question: the model input has no user message to assemble a window for")


def compose_instructions(developer: str, agent_instructions: str | None) -> str:
    """The window's developer message, then the agent's own instructions under a heading of their own."""
    if not agent_instructions or not agent_instructions.strip():
        return developer
    return f"{developer}\n\n{AGENT_INSTRUCTIONS_HEADING}\n{agent_instructions.strip()}"


def window_items(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The window's messages after the developer message, as Responses input items (role, content)."""
    messages = request["messages"]
    if not messages or messages[0]["role"] != "developer":
        raise ValueError("the window's request does not start with its developer message")
    return [{"role": m["role"], "content": m["content"]} for m in messages[1:]]


_CONNECTION_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_CONNECTION_LOCKS_GUARD = threading.Lock()


def connection_lock(store: Any) -> threading.RLock:
    """The one lock of a store's database connection (of the store itself when it shows none), shared by every
    ContextAssembly using it: a store's calls (set the tenant, then read or write) must not interleave."""
    owner = getattr(store, "connection", None) or store
    with _CONNECTION_LOCKS_GUARD:
        lock = _CONNECTION_LOCKS.get(owner)
        if lock is None:
            lock = _CONNECTION_LOCKS[owner] = threading.RLock()  # forgotten with the connection
        return lock


class ContextAssembly:
    """Assemble and record every model call of an Agents SDK run for one scope (see the module docstring).

    `store` is a tenant-scoped MemoryStore (e.g. PostgresStore over an application connection); `at` fixes the
    evaluation time (default: now at each call); `model` names the target model in the manifest when the
    agent's model is not a name. One instance serves one conversation at a time: its calls are sequential."""

    def __init__(self, store: MemoryStore, *, tenant_id: str, user_id: str | None = None,
                 agent_id: str | None = None, thread_id: str | None = None, intent: str = "fact_check",
                 at: datetime | str | None = None, model: str | None = None, reranker: Any = None,
                 roles: Iterable[str] = ()):
        if not tenant_id:
            raise ConfigError("config_error: tenant_id is required")
        self.store = store
        self.tenant_id, self.user_id, self.agent_id, self.thread_id = tenant_id, user_id, agent_id, thread_id
        self.intent = intent
        self.at = parse_time(at, name="at") if isinstance(at, str) else at
        self.model = model
        self.reranker = reranker
        self.manager = MemoryManager(store, Caller(tenant_id, user_id, agent_id, thread_id, tuple(roles)),
                                     at=self.at)
        self.calls: list[AssembledCall] = []
        #: the tool reserve of the current run's window, shared by every tool result of the run
        self.ledger: ToolLedger | None = None
        #: True once not even a notice fitted the tool reserve: the memory tools are then disabled
        self.exhausted = False
        # The SDK may run several tools of one response at once, each in a worker thread; they share the
        # store's connection, the ledger and `calls`, so one call, tool or response record runs at a time. The
        # lock is the connection's, not this instance's: two instances given one store (two agents, two tenants)
        # would otherwise interleave on it, and one's manifest could be written under the other's tenant.
        self._lock = connection_lock(store)
        #: the context wrapper of the run the memory tools were last offered in
        self._run_context: RunContextWrapper[Any] | None = None

    # -- the SDK's extension points ----------------------------------------------------------------------

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The call_model_input_filter. The database and the embedding block, so they run in a worker thread."""
        return await asyncio.to_thread(self.prepare, data.model_data, data.agent)

    def run_config(self, **settings: Any) -> RunConfig:
        """A RunConfig with this filter (other RunConfig settings pass through)."""
        return RunConfig(call_model_input_filter=self, **settings)

    def hooks(self) -> RunHooks[Any]:
        """RunHooks that record each model response, linked to the manifest of the call that produced it."""
        return _ResponseRecorder(self)

    async def run(self, agent: Agent[Any], input: str | list[Any], **kwargs: Any) -> Any:
        """Runner.run with this filter and the response hooks; returns the SDK's RunResult."""
        run_config = kwargs.pop("run_config", None) or self.run_config()
        if run_config.call_model_input_filter is not self:
            raise ConfigError("config_error: run_config must use this ContextAssembly as call_model_input_filter")
        return await Runner.run(agent, input, run_config=run_config, hooks=kwargs.pop("hooks", None) or self.hooks(),
                                **kwargs)

    def tools(self) -> list[FunctionTool]:
        """The Memory Manager's tools in effect for this scope and roles, as SDK function tools."""
        return [self._function_tool(row) for row in self.manager.tools()]

    def _function_tool(self, row: ToolRow) -> FunctionTool:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            return await asyncio.to_thread(self.run_tool, row.name, arguments, context.tool_call_id)

        return FunctionTool(name=row.name, description=row.description, params_json_schema=dict(row.schema),
                            on_invoke_tool=invoke, strict_json_schema=False, is_enabled=self._offer_tools)

    def _offer_tools(self, context: RunContextWrapper[Any], _agent: Any) -> bool:
        """FunctionTool.is_enabled: the SDK asks before each model call, before the input filter runs, with the
        run's context wrapper (one per run). A spent reserve withdraws the memory tools for the rest of its
        run only: a new wrapper is a new run, which the filter gives a fresh reserve."""
        if context is not self._run_context:
            self._run_context = context
            self.exhausted = False
        return not self.exhausted

    # -- one call ----------------------------------------------------------------------------------------

    def prepare(self, model_data: ModelInputData, agent: Agent[Any]) -> ModelInputData:
        """Assemble, check and record the input of one model call (synchronous)."""
        with self._lock:
            return self._prepare(model_data, agent)

    def _prepare(self, model_data: ModelInputData, agent: Agent[Any]) -> ModelInputData:
        items = list(model_data.input) if isinstance(model_data.input, list) else \
            [{"role": "user", "content": str(model_data.input)}]
        position = question_position(items)
        question = content_text(plain(items[position]).get("content"))
        spec = WindowSpec(tenant_id=self.tenant_id, user_id=self.user_id, agent_id=self.agent_id,
                          thread_id=self.thread_id, intent=self.intent, question=question,
                          model=self._model_name(agent))
        window = assemble(self.store, spec, self.at, reranker=self.reranker)
        self.manager.manifest_id = window.manifest_id  # expand opens the ids of this window
        run_items = items[position + 1:]
        instructions = compose_instructions(window.request["messages"][0]["content"], model_data.instructions)
        new_input: list[Any] = [*window_items(window.request), *run_items]
        request = {"model": spec.model, "instructions": instructions, "input": [plain(i) for i in new_input]}
        allocation = window.manifest.allocation
        if self.ledger is None or not run_items:  # a new question: a new run, a fresh tool reserve
            self.ledger = ToolLedger(reserve=allocation["reserves"]["tools"],
                                     per_result=allocation["tool_rounds"]["max_tool_result_tokens"])
            self.exhausted = False
        limit = allocation["usable_context"] - allocation["reserves"]["output"]
        counted = count_tokens(render.serialize(request))
        if counted > limit:
            raise RequestOverBudget(counted, limit)
        number = len(self.calls) + 1
        digest = render.request_hash(request)
        record = self.manager.record_event(
            "provider_request", f"provider request ({FRAMEWORK}), call {number}, hash {digest}",
            {"round": number, "framework": FRAMEWORK, "manifest_id": window.manifest_id, "request_hash": digest,
             "request_tokens": counted, "request_limit": limit, "replaced_items": position, "request": request},
            [{"type": "manifest", "id": window.manifest_id, "version": 1}])
        self.calls.append(AssembledCall(number, window.manifest_id, record, digest, counted, limit,
                                        replaced_items=position, run_items=len(run_items)))
        return ModelInputData(input=new_input, instructions=instructions)

    def run_tool(self, name: str, arguments_json: str, call_id: str) -> str:
        """Run one memory tool for the model (synchronous): the manager's result, fitted into the run's tool
        reserve, recorded as a tool_result event; returns the rendered record the model reads."""
        with self._lock:
            return self._run_tool(name, arguments_json, call_id)

    def _run_tool(self, name: str, arguments_json: str, call_id: str) -> str:
        if not self.calls or self.ledger is None:
            raise ConfigError(f"config_error: {name}: a memory tool runs only inside a run this ContextAssembly "
                              "prepared (pass run_config=memory.run_config() or use memory.run)")
        call = self.calls[-1]
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError:
            arguments, output = None, ToolOutput(name, (), (f"invalid_argument: {name}.arguments: not JSON",))
        else:
            try:
                # The manager's dispatch is a coroutine (clarify may ask the client); this worker thread has
                # no event loop of its own, so it gets one for the call.
                output = asyncio.run(self.manager.call(name, arguments))
            except CtxasmError as exc:  # refused or invalid: the model reads why, as over MCP
                output = ToolOutput(name, (), (str(exc),))
        fitted, exhausted = fit_and_charge(output, self.ledger)
        self.exhausted = self.exhausted or exhausted
        shown = [i.ref.as_source_ref() for i in fitted.kept]
        record = self.manager.record_event("tool_result", fitted.content, {
            "round": call.number, "framework": FRAMEWORK, "manifest_id": call.manifest_id, "call_id": call_id,
            "tool": name, "arguments": arguments, "tier": fitted.tier, "tokens": fitted.tokens,
            "items": [i.memory_id for i in fitted.kept], "dropped": [i.memory_id for i in fitted.dropped]},
            shown + [{"type": "manifest", "id": call.manifest_id, "version": 1}])
        call.tool_records.append(record)
        return fitted.content

    def record_response(self, response: ModelResponse) -> str | None:
        """Record a model response against the latest call's manifest (None when no call was prepared)."""
        with self._lock:
            return self._record_response(response)

    def _record_response(self, response: ModelResponse) -> str | None:
        if not self.calls:
            return None
        call = self.calls[-1]
        output = [plain(item) for item in response.output]
        usage = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens,
                 "requests": response.usage.requests}
        call.response_record = self.manager.record_event(
            "model_response", f"model response ({FRAMEWORK}), call {call.number}",
            {"round": call.number, "framework": FRAMEWORK, "manifest_id": call.manifest_id,
             "response": json.loads(json.dumps({"id": response.response_id, "output": output, "usage": usage},
                                               default=str))},
            [{"type": "manifest", "id": call.manifest_id, "version": 1}])
        return call.response_record

    def _model_name(self, agent: Agent[Any]) -> str:
        if self.model:
            return self.model
        return agent.model if isinstance(agent.model, str) and agent.model else DEFAULT_MODEL


class _ResponseRecorder(RunHooks[Any]):
    def __init__(self, assembly: ContextAssembly):
        self.assembly = assembly

    async def on_llm_end(self, context: Any, agent: Agent[Any], response: ModelResponse) -> None:
        await asyncio.to_thread(self.assembly.record_response, response)
