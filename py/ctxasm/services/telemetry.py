"""OpenTelemetry spans: where they go, how a span ends on an error, and the agent loop's spans.

Every memory operation (a window assembled, a search, a write, a tenant created or purged) is a span of the
OpenTelemetry GenAI memory conventions, made by ctxasm.services.memory_spans, which says which and why. Here:
the agent loop's run (`gen_ai.operation.name` `invoke_agent`) and its rounds (`ctxasm.agent_round`), with the
round's request and one event per tool call with its tokens.

No memory content goes into a span unless asked for (CTXASM_TELEMETRY_CONTENT=1): not the question, not row text,
not the user, agent or thread, not a tool call's arguments. Figures, rule names, slice names, hashes and the tenant
and manifest ids do.

A span that ends on an exception has status ERROR (the exception's type and error code), an `exception` event and
`error.type`: the error's symbolic code (contract/errors.toml), else the exception's class name. Without content
capture the event's message is that type too, and its stack trace the frames alone: an error's text may quote an
argument.

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
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ctxasm import __version__
from ctxasm.errors import ConfigError, CtxasmError

TRACER_NAME = "ctxasm"
#: The OpenTelemetry GenAI semantic conventions the spans follow (docs/telemetry.md): the repository
#: open-telemetry/semantic-conventions-genai at this commit, where the memory spans are still unreleased
#: (status Development); `error.type` is the stable attribute of semantic-conventions v1.41.1.
GENAI_CONVENTIONS = "open-telemetry/semantic-conventions-genai@002c8a6ea1c8a42b14a4527db83b3cabcded610a"
GEN_AI_OPERATION = "gen_ai.operation.name"
ERROR_TYPE = "error.type"
INVOKE_AGENT = "invoke_agent"
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


def error_type(exc: BaseException) -> str:
    """`error.type` of a failed operation: ctxasm's symbolic error code (invalid_argument, memory_not_found, ...:
    contract/errors.toml and ctxasm.errors), else the exception's class name, qualified by its module unless it
    is one of Python's own (psycopg.errors.UniqueViolation, ValueError)."""
    code = getattr(exc, "code", None)
    if isinstance(exc, CtxasmError) and isinstance(code, str) and code:
        return code
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _failed(span: Span, exc: BaseException) -> None:
    # An error's message may quote what the caller sent (a tool's argument, an id that spells its content out):
    # without content capture the `exception` event says only the error's type, and its stack trace only the
    # frames (a formatted trace ends with the message).
    if content_allowed():
        span.record_exception(exc)
    else:
        span.record_exception(exc, attributes={
            "exception.message": error_type(exc),
            "exception.stacktrace": "".join(traceback.format_tb(exc.__traceback__))})
    span.set_attribute(ERROR_TYPE, error_type(exc))
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {getattr(exc, 'code', '')}".rstrip(": ")))


@contextmanager
def in_span(name: str, *, kind: SpanKind = SpanKind.INTERNAL,
            attributes: Mapping[str, Any] | None = None) -> Iterator[Span]:
    """A current span `name` for the block, with `attributes` from its start (where a sampler can see them). An
    exception leaving the block ends it as an error (status, `exception` event, `error.type`) and goes on."""
    with tracer().start_as_current_span(name, kind=kind, attributes=attributes, record_exception=False,
                                        set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            _failed(current, exc)
            raise


def traced(name: str, describe: Callable[..., None], *, kind: SpanKind = SpanKind.INTERNAL,
           attributes: Mapping[str, Any] | None = None) -> Callable:
    """Decorator: run the function (sync or async) in a span (`in_span`); on success `describe(span, result, *args,
    **kwargs)` sets its attributes and events."""

    def wrap(function: Callable) -> Callable:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with in_span(name, kind=kind, attributes=attributes) as current:
                    result = await function(*args, **kwargs)
                    if current.is_recording():
                        describe(current, result, *args, **kwargs)
                    return result
            return run_async

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with in_span(name, kind=kind, attributes=attributes) as current:
                result = function(*args, **kwargs)
                if current.is_recording():
                    describe(current, result, *args, **kwargs)
                return result
        return run

    return wrap


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
    with in_span("ctxasm.agent_round") as current:
        traced_round = RoundTrace(number, current)
        try:
            yield traced_round
        finally:
            traced_round.finish()
