"""OpenTelemetry spans for each assembled window and each round of the agent loop.

A window's span (`ctxasm.assemble`) carries what an operator needs to find it again and to see its shape: the
tenant, the manifest id, the request hash, the tokens against the limit, and events for the rows included by
slice, the rows excluded by rule and the tokens by slice. A round's span (`ctxasm.agent_round`, under the run's
`ctxasm.agent_run`) carries the round's request and one event per tool call with its tokens.

No memory content goes into a span unless asked for (CTXASM_TELEMETRY_CONTENT=1): not the question, not row ids or
text, not the user, agent or thread, not a tool call's arguments. Figures, rule names, slice names, hashes and
the tenant and manifest ids do.

Where spans go:
- CTXASM_TELEMETRY=console|otlp|off (a ctxasm setting), else the standard OTEL_TRACES_EXPORTER
  (console, otlp, none), else OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
  set: ctxasm then runs its own TracerProvider (service name from OTEL_SERVICE_NAME, default "ctxasm"); the
  console exporter writes to standard error, so a command's output stays clean. OTLP needs the package
  opentelemetry-exporter-otlp-proto-http, which ctxasm does not ship: configuring OTLP without it is a
  config_error that names it.
- Otherwise the process's global tracer provider: an application that set one gets ctxasm's spans; with none
  set, spans are non-recording and cost next to nothing.
- `use_tracer_provider` directs ctxasm's spans to a given provider (tests use the SDK's InMemorySpanExporter).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ctxasm import __version__
from ctxasm.core.refs import Ref
from ctxasm.errors import ConfigError

TRACER_NAME = "ctxasm"
#: The OpenTelemetry GenAI semantic conventions' operation attribute and the well-known values ctxasm's spans use:
#: a window's assembly is a memory retrieval, the agent loop's run an agent invocation.
GEN_AI_OPERATION = "gen_ai.operation.name"
RETRIEVAL, INVOKE_AGENT = "retrieval", "invoke_agent"
EXPORTERS = ("console", "otlp")
OTLP_PACKAGE = "opentelemetry-exporter-otlp-proto-http"

_provider: Any = None  # ctxasm's own provider (configured or given), None: the global one
_configured = False


def content_allowed() -> bool:
    """Whether spans may carry memory content (CTXASM_TELEMETRY_CONTENT=1|true|yes)."""
    return (os.environ.get("CTXASM_TELEMETRY_CONTENT") or "").strip().lower() in {"1", "true", "yes", "on"}


def exporter_setting() -> str | None:
    """The exporter the environment asks for: "console", "otlp", or None (use the global provider)."""
    own = (os.environ.get("CTXASM_TELEMETRY") or "").strip().lower()
    if own:
        if own in {"off", "none"}:
            return None
        if own not in EXPORTERS:
            raise ConfigError(f"config_error: CTXASM_TELEMETRY {own[:40]!r} is not one of console, otlp, off")
        return own
    standard = (os.environ.get("OTEL_TRACES_EXPORTER") or "").strip().lower()
    if standard:
        first = standard.split(",")[0].strip()
        return first if first in EXPORTERS else None
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return "otlp"
    return None


def _build_provider(exporter: str) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "ctxasm",
                                "service.version": __version__})
    provider = TracerProvider(resource=resource)
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigError(f"config_error: OTLP export of spans needs the package {OTLP_PACKAGE}, which is not "
                              "installed; install it or set CTXASM_TELEMETRY=console or off") from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint etc. from OTEL_* variables
    return provider


def use_tracer_provider(provider: Any) -> None:
    """Send ctxasm's spans to `provider` (None: back to what the environment configures)."""
    global _provider, _configured
    _provider, _configured = provider, provider is not None


def tracer() -> Tracer:
    global _provider, _configured
    if not _configured:
        exporter = exporter_setting()
        _provider = _build_provider(exporter) if exporter else None
        _configured = True
    if _provider is not None:
        return _provider.get_tracer(TRACER_NAME, __version__)
    return trace.get_tracer(TRACER_NAME, __version__)


def _failed(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {getattr(exc, 'code', '')}".rstrip(": ")))


def traced(name: str, describe: Callable[..., None]) -> Callable:
    """Decorator: run the function (sync or async) in a span `name`; on success `describe(span, result, *args,
    **kwargs)` sets its attributes and events; an exception is recorded on the span (type and error code only
    in the status) and raised."""

    def wrap(function: Callable) -> Callable:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with tracer().start_as_current_span(name, record_exception=False, set_status_on_exception=False) \
                        as span:
                    try:
                        result = await function(*args, **kwargs)
                    except BaseException as exc:
                        _failed(span, exc)
                        raise
                    if span.is_recording():
                        describe(span, result, *args, **kwargs)
                    return result
            return run_async

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with tracer().start_as_current_span(name, record_exception=False, set_status_on_exception=False) as span:
                try:
                    result = function(*args, **kwargs)
                except BaseException as exc:
                    _failed(span, exc)
                    raise
                if span.is_recording():
                    describe(span, result, *args, **kwargs)
                return result
        return run

    return wrap


# -- the window ----------------------------------------------------------------------------------------------------


def _by_slice_tokens(manifest: Mapping[str, Any]) -> dict[str, int]:
    allocation = manifest.get("allocation") or {}
    tokens = {f"slice.{name}": int(value) for name, value in (allocation.get("fixed") or {}).items()}
    if allocation.get("memory_instructions") is not None:
        tokens["memory_instructions"] = int(allocation["memory_instructions"])
    for name, part in (allocation.get("slices") or {}).items():
        tokens[f"slice.{name}"] = int((part or {}).get("used") or 0)
    tool_results = [m for m in manifest.get("memories") or [] if m.get("slice") == "tool_results"]
    if tool_results:
        tokens["slice.tool_results"] = sum(int(m.get("tokens") or 0) for m in tool_results)
    return tokens


def window_attributes(manifest: Mapping[str, Any], manifest_id: str) -> dict[str, Any]:
    """A window's span attributes: ids, hash, figures and versions; content only when allowed."""
    allocation = manifest.get("allocation") or {}
    limit, used = manifest.get("request_limit"), manifest.get("request_tokens")
    attributes: dict[str, Any] = {
        "ctxasm.tenant_id": str(manifest.get("tenant_id")),
        "ctxasm.manifest_id": manifest_id,
        "ctxasm.intent": str(manifest.get("intent")),
        "ctxasm.engine": str(manifest.get("mode")),
        "ctxasm.snapshot": str(manifest.get("scn")),
        "ctxasm.renderer_version": str(manifest.get("renderer_version")),
        "ctxasm.selection_version": str(manifest.get("selection_version")),
        "ctxasm.request.hash": str(manifest.get("request_hash")),
        "ctxasm.request.tokens": int(used or 0),
        "ctxasm.request.limit": int(limit or 0),
        "ctxasm.request.unused": int((limit or 0) - (used or 0)),
        "ctxasm.usable_context": int(allocation.get("usable_context") or 0),
        "ctxasm.included": len(manifest.get("memories") or []),
        "ctxasm.excluded": len(manifest.get("excluded") or []),
        "gen_ai.request.model": str(manifest.get("model")),
        # OpenTelemetry GenAI conventions: assembling a window retrieves memory for a model call; the data source
        # is the tenant's memory store (docs/telemetry.md)
        GEN_AI_OPERATION: RETRIEVAL,
        "gen_ai.data_source.id": f"ctxasm:{manifest.get('tenant_id')}",
        "gen_ai.retrieval.documents.count": len(manifest.get("memories") or []),
    }
    if content_allowed():
        scope = manifest.get("scope") or {}
        attributes["ctxasm.question"] = str(manifest.get("question"))
        attributes["gen_ai.retrieval.query.text"] = str(manifest.get("question"))
        attributes.update({f"ctxasm.{k}": str(v) for k, v in scope.items() if v is not None})
    return attributes


def window_events(span: Span, manifest: Mapping[str, Any]) -> None:
    """Events of a window: included rows by slice, excluded rows by rule (candidate cuts among them), tokens by
    slice, the request hash; with content allowed, the citation ids and refs in and out."""
    memories = manifest.get("memories") or []
    included = Counter(f"slice.{m.get('slice')}" for m in memories)
    span.add_event("ctxasm.included", {"count": len(memories), **included})
    excluded = Counter(f"rule.{x.get('rule')}" for x in manifest.get("excluded") or [])
    for cut in manifest.get("candidate_cuts") or []:
        excluded[f"rule.{cut.get('rule') or 'candidate_limit'}"] += int(cut.get("rows") or 0)
    span.add_event("ctxasm.excluded", {"count": sum(excluded.values()), **excluded})
    span.add_event("ctxasm.tokens", _by_slice_tokens(manifest))
    span.add_event("ctxasm.request", {"hash": str(manifest.get("request_hash")),
                                      "tokens": int(manifest.get("request_tokens") or 0)})
    if content_allowed():
        span.add_event("ctxasm.rows", {
            "included": [Ref.of(m["ref"]).key for m in memories],
            "included_ids": [str(m.get("id")) for m in memories],
            "excluded": [f"{x.get('rule')} {':'.join(str(p) for p in x.get('ref') or [])}"
                         for x in manifest.get("excluded") or []]})


def describe_window(span: Span, window: Any, *args: Any, **kwargs: Any) -> None:
    """`traced` describer for assemble(): its result is an AssembledWindow."""
    span.set_attributes(window_attributes(window.manifest, window.manifest_id))
    window_events(span, window.manifest)


# -- the agent loop ------------------------------------------------------------------------------------------------


def describe_run(span: Span, run: Any, *args: Any, **kwargs: Any) -> None:
    """`traced` describer for AgentLoop.run(): how the run ended and what it spent."""
    span.set_attributes({GEN_AI_OPERATION: INVOKE_AGENT,
                         "ctxasm.tenant_id": str(run.window.manifest.get("tenant_id")),
                         "ctxasm.manifest_id": run.window.manifest_id, "ctxasm.status": run.status,
                         "ctxasm.rounds": len(run.rounds), "ctxasm.tool_reserve.used": int(run.tool_tokens_used)})


@dataclass
class RoundTrace:
    """What a round's span reports when the round ends; the loop sets `round` and `ledger` as they exist."""

    number: int
    span: Span
    round: Any = None
    ledger: Any = None

    def finish(self) -> None:
        if not self.span.is_recording() or self.round is None:
            return
        current = self.round
        calls = list(current.tool_calls)
        attributes: dict[str, Any] = {
            "ctxasm.round": self.number, "ctxasm.manifest_id": current.manifest_id,
            "ctxasm.request.hash": current.request_hash, "ctxasm.request.tokens": int(current.request_tokens),
            "ctxasm.request.limit": int(current.request_limit), "ctxasm.tool_calls": len(calls),
            "ctxasm.request_record": current.request_record}
        if current.response_record:
            attributes["ctxasm.response_record"] = current.response_record
        if self.ledger is not None:
            attributes.update({"ctxasm.tool_reserve.used": int(self.ledger.used),
                               "ctxasm.tool_reserve.left": int(self.ledger.left)})
        self.span.set_attributes(attributes)
        for call in calls:
            event: dict[str, Any] = {"tool": str(call.get("origin") or "").removeprefix("tool:"),
                                     "call_id": str(call.get("call_id")), "tokens": int(call.get("tokens") or 0),
                                     "tier": str(call.get("tier")), "items": len(call.get("items") or []),
                                     "dropped": len(call.get("dropped") or [])}
            if content_allowed():
                event["arguments"] = json.dumps(call.get("arguments"), ensure_ascii=False, sort_keys=True)
                event["record"] = str((call.get("ref") or [None, None])[1])
            self.span.add_event("ctxasm.tool_call", event)


@contextmanager
def round_span(number: int) -> Iterator[RoundTrace]:
    """A span for one round of the agent loop (its model call and its tool calls)."""
    with tracer().start_as_current_span("ctxasm.agent_round", record_exception=False,
                                        set_status_on_exception=False) as span:
        traced_round = RoundTrace(number, span)
        try:
            yield traced_round
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            traced_round.finish()
