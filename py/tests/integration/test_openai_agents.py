"""The OpenAI Agents SDK adapter: every model call of an agent's run is assembled by ctxasm, recorded (a manifest,
the request before the call, the response after it) and replayable. Offline: the model is a class written
against the SDK's own Model interface, and the docs example runs the SDK's scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the OpenAI Agents SDK (the agents extra) is not installed")

from agents import Agent, ModelResponse, Usage, function_tool, set_tracing_disabled  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.run_config import ModelInputData  # noqa: E402
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText  # noqa: E402

from ctxasm.local import pgconn  # noqa: E402
from ctxasm.errors import InvalidQuestion  # noqa: E402
from ctxasm.agent.openai_agents import AGENT_INSTRUCTIONS_HEADING, ContextAssembly, plain  # noqa: E402
from ctxasm.services.load import DEFAULT_MEMORY_INSTRUCTIONS  # noqa: E402
from ctxasm.services.replay import replay  # noqa: E402
from ctxasm.engines.postgres import PostgresStore  # noqa: E402
from ctxasm.core.compose import RequestOverBudget  # noqa: E402

from ..conftest import SCENARIOS, empty_database, read_as_owner  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
AT = "2026-09-28T12:00:00"
INSTRUCTIONS = "Answer in one sentence and cite the memory ids you used."
#: The first sentence of the memory instructions every demo tenant gets from the loader (a guideline row).
MEMORY_POLICY = DEFAULT_MEMORY_INSTRUCTIONS[0][2].splitlines()[0]


class RecordingModel(Model):
    """A model written against the SDK's Model interface: it keeps what it was given and answers from a
    script, one list of output items per call (or a function of what it was given that returns one)."""

    def __init__(self, script: list[list[Any]]):
        self.script = list(script)
        self.received: list[dict[str, Any]] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id, conversation_id, prompt) -> ModelResponse:
        self.received.append({"instructions": system_instructions,
                              "input": copy.deepcopy([plain(item) for item in input]),
                              "tools": [tool.name for tool in tools]})
        if not self.script:
            raise AssertionError(f"model call {len(self.received)} was not scripted")
        step = self.script.pop(0)
        output = step(self.received[-1]) if callable(step) else step
        return ModelResponse(output=output, usage=Usage(requests=1, input_tokens=100, output_tokens=20),
                             response_id=f"resp_{len(self.received)}")

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("this test model does not stream")


def tool_call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{call_id}", call_id=call_id, type="function_call", name=name,
                                    arguments=arguments)


def message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


@function_tool
def benchmark_date() -> str:
    """The date of the latest BEIR run."""
    return "2026-09-01"


@pytest.fixture(autouse=True)
def no_trace_export():
    """The SDK traces runs and sends the traces to OpenAI when a key is set: these runs stay offline."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture(scope="module")
def demo_db(pg_target):
    from ctxasm.services import load

    empty_database(pg_target)
    load.load_file(pg_target, SCENARIOS / "acme_demo.json")
    return pg_target


@pytest.fixture()
def store(demo_db):
    with pgconn.connect(demo_db, pgconn.app_login()) as connection:
        yield PostgresStore(connection)


def assembly(store: PostgresStore, **overrides: Any) -> ContextAssembly:
    settings = dict(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                    thread_id="thread_jane_research", intent="fact_check", at=AT)
    return ContextAssembly(store, **{**settings, **overrides})


def test_every_model_call_of_a_run_is_assembled_recorded_and_replayable(store):
    model = RecordingModel([
        [ResponseFunctionToolCall(id="fc_1", call_id="call_1", type="function_call", name="benchmark_date",
                                  arguments="{}")],
        [message("No: the corrected figure is 0.78 nDCG@10 on BEIR.")],
    ])
    agent = Agent(name="research-assistant", instructions=INSTRUCTIONS, model=model, tools=[benchmark_date])
    memory = assembly(store)
    history = [{"role": "user", "content": "an earlier question the SDK kept"},
               {"role": "assistant", "content": "an earlier answer the SDK kept"}]
    result = asyncio.run(memory.run(agent, [*history, {"role": "user", "content": QUESTION}]))

    assert result.final_output == "No: the corrected figure is 0.78 nDCG@10 on BEIR."
    assert len(model.received) == 2 and len(memory.calls) == 2
    first, second = model.received
    for sent in (first, second):
        # The window, not the SDK's history: ctxasm's memory instructions, then the agent's own.
        assert sent["instructions"].startswith("# ") and MEMORY_POLICY in sent["instructions"]
        assert sent["instructions"].endswith(f"{AGENT_INSTRUCTIONS_HEADING}\n{INSTRUCTIONS}")
        text = str(sent["input"])
        assert "<memory_context>" in text and QUESTION in text
        assert "0.78" in text  # the corrected fact (version 2) is in the window
        assert "an earlier question the SDK kept" not in text
        assert sent["tools"] == ["benchmark_date"]
    # The second call is the same window plus the run's tool call and its output, passed on unchanged.
    window_items = len(first["input"])
    assert second["input"][:window_items] == first["input"]
    tail = second["input"][window_items:]
    assert [item.get("type") for item in tail] == ["function_call", "function_call_output"]
    assert tail[0]["call_id"] == tail[1]["call_id"] == "call_1" and tail[1]["output"] == "2026-09-01"

    calls = memory.calls
    assert [c.number for c in calls] == [1, 2]
    assert calls[0].manifest_id != calls[1].manifest_id  # a manifest per call
    assert [c.replaced_items for c in calls] == [2, 2] and [c.run_items for c in calls] == [0, 2]
    for call, sent in zip(calls, model.received):
        assert 0 < call.request_tokens <= call.request_limit
        request = store.read_event("acme", call.request_record)
        assert request["event_type"] == "provider_request"
        assert request["content_json"]["manifest_id"] == call.manifest_id
        assert request["content_json"]["request"]["input"] == sent["input"]
        assert request["content_json"]["request"]["instructions"] == sent["instructions"]
        response = store.read_event("acme", call.response_record)
        assert response["event_type"] == "model_response"
        assert response["content_json"]["manifest_id"] == call.manifest_id
        # Each call's window replays from its manifest.
        assert replay(store, "acme", call.manifest_id).status == "match"
    assert store.read_event("acme", calls[1].response_record)["content_json"]["response"]["output"][0]["type"] \
        == "message"


def test_a_request_past_its_limit_is_refused_before_the_model_is_called(store):
    model = RecordingModel([[message("never")]])
    agent = Agent(name="research-assistant", instructions="word " * 200_000, model=model)
    memory = assembly(store)
    with pytest.raises(RequestOverBudget, match="request_over_budget"):
        asyncio.run(memory.run(agent, QUESTION))
    assert model.received == [] and memory.calls == []


def test_an_input_without_a_user_message_is_refused(store):
    agent = Agent(name="research-assistant", model=RecordingModel([]))
    with pytest.raises(InvalidQuestion, match="no user message"):
        assembly(store).prepare(ModelInputData(input=[{"role": "assistant", "content": "hi"}], instructions=None),
                                agent)


def test_the_scope_comes_from_the_assembly_not_the_input(store):
    """Another tenant's scope never enters through the input: the tenant is the one the assembly was made for."""
    agent = Agent(name="research-assistant", model=RecordingModel([]))
    memory = assembly(store, tenant_id="acme", user_id="jane")
    prepared = memory.prepare(ModelInputData(input=[{"role": "user", "content": "tenant globex: show me"}],
                                             instructions=None), agent)
    manifest = store.read_manifest("acme", memory.calls[0].manifest_id)
    assert manifest["tenant_id"] == "acme" and manifest["scope"]["user_id"] == "jane"
    assert prepared.input[-1]["content"].endswith("tenant globex: show me")


def test_the_docs_example_runs(demo_db, monkeypatch):
    page = (REPO / "docs" / "agents-sdk.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.setenv("CTXASM_PG_DATABASE", demo_db.database)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/agents-sdk.md", "exec"), {"__name__": "__docs__"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "No: the corrected figure is 0.78 nDCG@10 on BEIR."
    assert re.fullmatch(r"call 1: manifest \S+, \d+/\d+ tokens, request provider_request_[0-9a-f]+", lines[1])
    assert lines[-1] == "memory in the input: True"


def test_memory_tools_run_through_the_manager_fitted_and_recorded(store, demo_db):
    memory = assembly(store, roles=("researcher",))
    tools = memory.tools()
    assert sorted(t.name for t in tools) == ["clarify", "expand", "lookup_entity", "search_memory"]
    assert assembly(store).tools() == []  # the toolbox rows admit only the researcher role

    def expand_a_window_id(received: dict[str, Any]) -> list[Any]:
        window_id = re.search(r'id="(M\d+)"', str(received["input"])).group(1)  # the window's first memory
        return [tool_call("expand", f'{{"memory_id": "{window_id}"}}', "call_expand")]

    model = RecordingModel([
        [tool_call("lookup_entity", '{"subject": "model:helios-rag", "predicate": "beir_ndcg10"}', "call_lookup")],
        expand_a_window_id,
        [tool_call("lookup_entity", '{"subject": 42}', "call_bad")],
        [message("No: 0.78 nDCG@10 now.")],
    ])
    agent = Agent(name="research-assistant", instructions=INSTRUCTIONS, model=model, tools=tools)
    result = asyncio.run(memory.run(agent, QUESTION))
    assert result.final_output == "No: 0.78 nDCG@10 now."
    assert model.received[0]["tools"] == [t.name for t in tools]

    outputs = {item["call_id"]: item["output"] for item in model.received[-1]["input"]
               if item.get("type") == "function_call_output"}
    assert outputs["call_lookup"].startswith('<tool_result tool="lookup_entity">') and "0.78" in outputs["call_lookup"]
    assert outputs["call_expand"].startswith('<tool_result tool="expand">') and "in full" in outputs["call_expand"]
    assert "invalid_argument" in outputs["call_bad"]  # refused by the row's schema; the model reads why

    # Every result was paid from the window's tool reserve and recorded, citing what it showed.
    assert 0 < memory.ledger.used <= memory.ledger.reserve
    records = [r for call in memory.calls for r in call.tool_records]
    assert [len(call.tool_records) for call in memory.calls] == [1, 1, 1, 0]
    events = [store.read_event("acme", record) for record in records]
    assert {e["event_type"] for e in events} == {"tool_result"}
    by_call = {e["content_json"]["call_id"]: e for e in events}
    lookup = by_call["call_lookup"]
    assert lookup["content"] == outputs["call_lookup"]
    assert lookup["content_json"]["manifest_id"] == memory.calls[0].manifest_id
    (source_refs,), = read_as_owner(demo_db, "acme", "SELECT source_refs FROM ctxasm.conversation_memory "
                                    "WHERE id = %s", (records[0],))
    assert {"type": "manifest", "id": memory.calls[0].manifest_id, "version": 1} in source_refs
    assert any(ref["type"] == "entity" for ref in source_refs)  # the rows the result showed
    assert sum(e["content_json"]["tokens"] for e in by_call.values()) == memory.ledger.used


def test_a_memory_tool_outside_a_prepared_run_is_refused(store):
    from ctxasm.errors import ConfigError

    with pytest.raises(ConfigError, match="only inside a run"):
        assembly(store, roles=("researcher",)).run_tool("expand", "{}", "call_1")



def test_tools_of_one_response_run_one_at_a_time_each_charged_and_recorded(store, demo_db):
    """The SDK runs the tool calls of one response concurrently; each still gets its share of the reserve."""
    memory = assembly(store, roles=("researcher",))
    model = RecordingModel([
        [tool_call("lookup_entity", '{"subject": "model:helios-rag", "predicate": "beir_ndcg10"}', "call_a"),
         tool_call("search_memory", '{"query": "Helios-RAG BEIR nDCG@10"}', "call_b"),
         tool_call("lookup_entity", '{"subject": "model:helios-rag", "predicate": "beir_ndcg10"}', "call_c")],
        [message("0.78.")],
    ])
    agent = Agent(name="research-assistant", instructions=INSTRUCTIONS, model=model, tools=memory.tools())
    assert asyncio.run(memory.run(agent, QUESTION)).final_output == "0.78."

    first = memory.calls[0]
    assert len(first.tool_records) == 3 and memory.calls[1].tool_records == []
    events = [store.read_event("acme", record) for record in first.tool_records]
    assert sorted(e["content_json"]["call_id"] for e in events) == ["call_a", "call_b", "call_c"]
    assert sum(e["content_json"]["tokens"] for e in events) == memory.ledger.used <= memory.ledger.reserve
    outputs = {item["call_id"]: item["output"] for item in model.received[1]["input"]
               if item.get("type") == "function_call_output"}
    for event in events:
        assert outputs[event["content_json"]["call_id"]] == event["content"]
    assert outputs["call_a"] == outputs["call_c"]  # the same lookup, the same rows, the same record


def test_a_spent_tool_reserve_gives_a_notice_and_withdraws_the_memory_tools(store):
    memory = assembly(store, roles=("researcher",))

    def spend_the_reserve(received: dict[str, Any]) -> list[Any]:
        # Earlier results of this run took all but a few tokens of the window's tool reserve.
        memory.ledger.used = memory.ledger.reserve - 3
        return [tool_call("lookup_entity", '{"subject": "model:helios-rag", "predicate": "beir_ndcg10"}',
                          "call_late")]

    model = RecordingModel([spend_the_reserve, [message("From the window: 0.78.")]])
    agent = Agent(name="research-assistant", instructions=INSTRUCTIONS, model=model,
                  tools=[*memory.tools(), benchmark_date])
    assert asyncio.run(memory.run(agent, QUESTION)).final_output == "From the window: 0.78."

    assert memory.exhausted and memory.ledger.used == memory.ledger.reserve
    assert set(model.received[0]["tools"]) == {"clarify", "expand", "lookup_entity", "search_memory",
                                               "benchmark_date"}
    assert model.received[1]["tools"] == ["benchmark_date"]  # the agent's own tools stay
    (record,) = memory.calls[0].tool_records
    event = store.read_event("acme", record)
    assert "tool reserve exhausted" in event["content"] and "0.78" not in event["content"]
    assert event["content_json"]["tier"] == "notice" and event["content_json"]["items"] == []

    # The next question is a new run: a fresh reserve, and the tools are offered again.
    model.script.append([message("Again from the window.")])
    asyncio.run(memory.run(agent, "And on MTEB?"))
    assert not memory.exhausted and memory.ledger.used == 0
    assert "lookup_entity" in model.received[2]["tools"]


def test_arguments_that_are_not_json_are_named_to_the_model(store):
    memory = assembly(store, roles=("researcher",))
    model = RecordingModel([[tool_call("lookup_entity", "{nope", "call_json")], [message("Done.")]])
    agent = Agent(name="research-assistant", instructions=INSTRUCTIONS, model=model, tools=memory.tools())
    assert asyncio.run(memory.run(agent, QUESTION)).final_output == "Done."
    outputs = {item["call_id"]: item["output"] for item in model.received[-1]["input"]
               if item.get("type") == "function_call_output"}
    assert "invalid_argument: lookup_entity.arguments: not JSON" in outputs["call_json"]
