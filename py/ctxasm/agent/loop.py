"""`ctxasm ask`: the agent loop. The assembled window is the first request; tools run over MCP.

Each round: the request is counted and checked against its limit before it is sent, recorded in
conversation_memory (provider_request), sent, and the response recorded (model_response). Each tool call goes
through the MCP server (the same Memory Manager, the same toolbox rows and checks as any other MCP client);
its result is fitted into the tool-results slice (tool_results.py), stored as a tool_result event whose
source_refs are the rows it showed, and the round's window is recorded as a manifest of its own, linked to the
first. The tool reserve is shared by every round; after max_rounds tool rounds the model must answer (a model
that asks for tools even then ends the run with status rounds_exhausted and no answer).
With no model client the first request is prepared and recorded, and the run says no model was called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastmcp import Client

from ctxasm.agent.manager import Caller, MemoryManager
from ctxasm.agent.mcp_server import build_server
from ctxasm.agent.model_clients import ModelClient
from ctxasm.core import render
from ctxasm.core.compose import RequestOverBudget, WindowSpec
from ctxasm.core.manifest import Manifest, tool_result_entry, validate_manifest
from ctxasm.core.tokens import count_tokens
from ctxasm.core.tool_results import ToolLedger, ToolOutput, fit_and_charge
from ctxasm.engines.store import MemoryStore
from ctxasm.services import telemetry
from ctxasm.services.assemble import AssembledWindow, assemble
from ctxasm.services.turns import Turn, add_turn

if TYPE_CHECKING:
    from ctxasm.api.session import Session

#: How a run ended: the model answered; no model client (the first request prepared and recorded only); or the
#: model still asked for tools in the last round allowed (max_rounds tool rounds, then one with tool_choice "none"),
#: so no answer came. Those last calls are in the round's model_response; they are not run.
ANSWERED, NO_MODEL, ROUNDS_EXHAUSTED = "answered", "no_model_called", "rounds_exhausted"


@dataclass
class Round:
    number: int
    request_hash: str
    request_tokens: int
    request_limit: int
    manifest_id: str
    request_record: str
    provider_tokens: int | None = None
    response_record: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class AgentRun:
    window: AssembledWindow
    status: str
    answer: str | None
    rounds: list[Round]
    manifests: list[Manifest]
    final_request: dict[str, Any]
    tool_tokens_used: int
    #: the question and the answer, stored as the thread's next turns (none when no answer came)
    turns: list[Turn] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "answer": self.answer, "manifest_id": self.window.manifest_id,
                "rounds": [r.as_json() for r in self.rounds], "tool_tokens_used": self.tool_tokens_used,
                "turns": [{"id": t.id, "turn_index": t.turn_index, "role": t.role} for t in self.turns],
                "final_request_hash": render.request_hash(self.final_request)}


class AgentLoop:
    def __init__(self, store: MemoryStore, spec: WindowSpec, at: datetime | None, client: ModelClient | None, *,
                 roles: tuple[str, ...] = (), reranker: Any = None, provider_count: bool = False,
                 elicitation_handler: Any = None, write_turns: bool = True, session: Session | None = None):
        self.store, self.spec, self.at, self.client = store, spec, at, client
        #: the caller's ctxasm.api Session, for the tools that write through it (remember)
        self.session = session
        self.write_turns = write_turns
        self.roles, self.reranker, self.provider_count = roles, reranker, provider_count
        self.elicitation_handler = elicitation_handler
        self.exhausted = False

    @classmethod
    @contextmanager
    def over(cls, session: Session, question: str, at: datetime | None, client: ModelClient | None, *, intent: str,
             model: str, **options: Any) -> Iterator[AgentLoop]:
        """The loop for an API session's caller (tenant, user, agent, thread and roles from the session), on one
        pooled connection of the session held until the block ends; the tools that write go through the
        session. `options` are AgentLoop's (reranker, provider_count, elicitation_handler, write_turns)."""
        c = session.caller
        spec = WindowSpec(tenant_id=c.tenant_id, user_id=c.user_id, agent_id=c.agent_id, thread_id=c.thread_id,
                          intent=intent, question=question, model=model)
        with session.store() as store:
            yield cls(store, spec, at, client, roles=c.roles, session=session, **options)

    @telemetry.traced("ctxasm.agent_run", telemetry.describe_run)
    async def run(self) -> AgentRun:
        spec = self.spec
        window = assemble(self.store, spec, self.at, reranker=self.reranker)
        manager = self.manager = MemoryManager(
            self.store, Caller(spec.tenant_id, spec.user_id, spec.agent_id, spec.thread_id, self.roles), at=self.at,
            manifest_id=window.manifest_id, session=self.session)
        allocation = window.manifest.allocation
        limits = allocation["tool_rounds"]
        ledger = ToolLedger(reserve=allocation["reserves"]["tools"], per_result=limits["max_tool_result_tokens"])
        # Tool results are paid from the tool reserve, so once they arrive the request may use it too.
        limit = allocation["usable_context"] - allocation["reserves"]["output"]
        request = json.loads(json.dumps(window.request))
        manifest = window.manifest
        manifest_id = window.manifest_id
        rounds: list[Round] = []
        manifests = [window.manifest]
        status, answer = (NO_MODEL if self.client is None else ROUNDS_EXHAUSTED), None
        async with Client(build_server(manager, fit_results=False), mode="legacy",
                          elicitation_handler=self.elicitation_handler) as mcp:
            last_round = limits["max_rounds"] + 1
            for number in range(1, last_round + 1):
                with telemetry.round_span(number) as traced_round:
                    current = self._check_and_record(request, number, manifest_id,
                                                     manifest["request_limit"] if number == 1 else limit)
                    rounds.append(current)
                    traced_round.round, traced_round.ledger = current, ledger
                    if self.client is None:
                        break
                    response = self.client.complete(request)
                    message = response["choices"][0]["message"]
                    current.response_record = self._record("model_response", f"model response, round {number}",
                                                           {"round": number, "response": response},
                                                           [{"type": "manifest", "id": manifest_id, "version": 1}])
                    calls = message.get("tool_calls") or []
                    if not calls:
                        status, answer = ANSWERED, message.get("content") or ""
                        break
                    if number == last_round:
                        # tool_choice "none" was ignored: no round is left to send the results in
                        status = ROUNDS_EXHAUSTED
                        break
                    assistant = {"role": "assistant", "content": message.get("content"),
                                 "tool_calls": [{"id": c["id"], "type": "function", "function": {
                                     "name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                                     for c in calls]}
                    ledger.charge(count_tokens(render.serialize(assistant)))
                    request["messages"].append(assistant)
                    entries = []
                    for call in assistant["tool_calls"]:
                        entry, tool_message = await self._run_tool(mcp, call, number, ledger, manifest_id)
                        current.tool_calls.append(entry)
                        entries.append(entry)
                        request["messages"].append(tool_message)
                    if number >= limits["max_rounds"] or self.exhausted:
                        request["tool_choice"] = "none"  # rounds or reserve spent: answer from what is there
                    manifest = manifest.next_round(window.manifest_id, request, limit, assistant, entries)
                    validate_manifest(manifest)
                    self.store.set_tenant(spec.tenant_id)
                    manifest_id = self.store.record_manifest(manifest)
                    manifests.append(manifest)
        turns = self._store_turns(answer, window.manifest_id, manifest_id) if status == ANSWERED and answer else []
        return AgentRun(window, status, answer, rounds, manifests, request, ledger.used, turns)

    def _store_turns(self, answer: str, first_manifest: str, last_manifest: str) -> list[Turn]:
        """The question and the final answer as the thread's next turns, each citing the manifest of the window
        it belongs to: the question the first window, the answer the request that produced it."""
        if not self.write_turns or not self.spec.thread_id:
            return []
        caller = self.manager.caller
        return [add_turn(self.store, caller, "user", self.spec.question, self.at,
                         [{"type": "manifest", "id": first_manifest, "version": 1}]),
                add_turn(self.store, caller, "assistant", answer, self.at,
                         [{"type": "manifest", "id": last_manifest, "version": 1}])]

    def _check_and_record(self, request: dict[str, Any], number: int, manifest_id: str, limit: int) -> Round:
        counted = count_tokens(render.serialize(request))
        if counted > limit:
            raise RequestOverBudget(counted, limit)
        provider = None
        if self.provider_count and self.client is not None:
            provider = self.client.count_input_tokens(request)
        digest = render.request_hash(request)
        record = self._record("provider_request", f"provider request, round {number}, hash {digest}",
                              {"round": number, "manifest_id": manifest_id, "request_hash": digest,
                               "request_tokens": counted, "provider_tokens": provider, "request": request},
                              [{"type": "manifest", "id": manifest_id, "version": 1}])
        return Round(number, digest, counted, limit, manifest_id, record, provider)

    async def _run_tool(self, mcp: Client, call: Mapping[str, Any], number: int, ledger: ToolLedger,
                        manifest_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        name = call["function"]["name"]
        try:
            arguments = json.loads(call["function"]["arguments"] or "{}")
        except json.JSONDecodeError:
            arguments, output = None, ToolOutput(name, (), (f"invalid_argument: {name}.arguments: not JSON",))
        else:
            result = await mcp.call_tool(name, arguments, raise_on_error=False)
            if result.is_error or not result.structured_content or "tool" not in result.structured_content:
                text = getattr(result.content[0], "text", "tool error") if result.content else "tool error"
                output = ToolOutput(name, (), (text,))
            else:
                output = ToolOutput.from_json(result.structured_content)
        fitted, exhausted = fit_and_charge(output, ledger)
        # Not even a notice fits: it says so in as few tokens as possible, and no more tools are offered.
        self.exhausted = self.exhausted or exhausted
        shown = [i.ref.as_source_ref() for i in fitted.kept]
        record_id = self._record("tool_result", fitted.content, {
            "round": number, "call_id": call["id"], "tool": name, "arguments": arguments, "tier": fitted.tier,
            "tokens": fitted.tokens, "items": [i.memory_id for i in fitted.kept],
            "dropped": [i.memory_id for i in fitted.dropped]},
            shown + [{"type": "manifest", "id": manifest_id, "version": 1}])
        entry = tool_result_entry(record_id, name, fitted, number, call["id"], arguments)
        return entry, {"role": "tool", "tool_call_id": call["id"], "content": fitted.content}

    def _record(self, event_type: str, content: str, content_json: Mapping[str, Any],
                source_refs: list[dict[str, Any]]) -> str:
        return self.manager.record_event(event_type, content, content_json, source_refs)
