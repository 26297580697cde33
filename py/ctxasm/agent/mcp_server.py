"""`ctxasm mcp`: a FastMCP stdio server over the Memory Manager.

Tools come from toolbox_memory rows through a custom Provider (tool_schema is the input schema, usage_notes
the description); FastMCP does not validate a custom tool's arguments, so each call is validated and
authorised again by the manager. Guidelines and persona are resources. Errors a caller can act on come back
as tool errors whose text starts with the symbolic code (invalid_argument, tool_refused, not_in_window, ...).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from io import TextIOWrapper
from typing import Any

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import FastMCP  # noqa: E402
from fastmcp.resources import TextResource  # noqa: E402
from fastmcp.server.dependencies import get_context  # noqa: E402
from fastmcp.server.providers import Provider  # noqa: E402
from fastmcp.tools import Tool  # noqa: E402
from fastmcp.tools.base import ToolResult  # noqa: E402
from mcp.types import TextContent  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from ctxasm.agent.manager import MemoryManager, ToolRow  # noqa: E402
from ctxasm.core.tool_results import ToolLedger, ToolOutput, fit_and_charge, left_out, render_output  # noqa: E402
from ctxasm.engines.checks import unstorable_text  # noqa: E402
from ctxasm.errors import CtxasmError, ToolRefused, shortened  # noqa: E402

RESOURCES = {"guidelines": "ctxasm://guidelines", "persona": "ctxasm://persona"}


async def ask_client(question: str) -> str | None:
    """MCP elicitation when the client supports it; None otherwise (the question then goes in the answer)."""
    try:
        answer = await get_context().elicit(question, response_type=str)
    except Exception:  # a client without elicitation, or a protocol version without server requests
        return None
    if getattr(answer, "action", None) != "accept":
        return None
    data = answer.data  # type: ignore[union-attr]  # only an accepted answer has action "accept"
    return data if isinstance(data, str) else json.dumps(data)


def tool_result(output: ToolOutput) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=render_output(output))],
                      structured_content=output.as_json())


def fitted_result(output: ToolOutput, ledger: ToolLedger) -> ToolResult:
    """The result fitted into the caller's tool reserve and charged to it (tool_results.fit_and_charge): at most
    max_tool_result_tokens, lowest-ranked items left out first and named, then a one-line notice. The structured
    content holds what the text shows, with the tier, the tokens and the ids left out."""
    fitted, _ = fit_and_charge(output, ledger)
    shown = ToolOutput(output.tool, fitted.kept, output.notes + left_out(fitted.dropped)).as_json()
    return ToolResult(content=[TextContent(type="text", text=fitted.content)],
                      structured_content={**shown, "tier": fitted.tier, "tokens": fitted.tokens,
                                          "dropped": [item.memory_id for item in fitted.dropped],
                                          "tool_reserve_left": ledger.left})


def error_result(exc: CtxasmError) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=str(exc))],
                      structured_content={"error": exc.code, "message": str(exc)}, is_error=True)


class ToolboxTool(Tool):
    """One toolbox row as an MCP tool; running it goes back to the manager, never to the cached row."""

    _manager: Any = PrivateAttr(default=None)
    _fit: bool = PrivateAttr(default=True)

    def __init__(self, row: ToolRow, manager: MemoryManager, fit: bool = True):
        super().__init__(name=row.name, description=row.description, parameters=dict(row.schema))
        self._manager, self._fit = manager, fit

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            output = await self._manager.call(self.name, arguments, ask_client)
            return fitted_result(output, self._manager.tool_ledger()) if self._fit else tool_result(output)
        except CtxasmError as exc:
            return error_result(exc)


class RefusedTool(Tool):
    """A name the caller may not call: running it says why (MemoryManager.tool), as a tool error."""

    _manager: Any = PrivateAttr(default=None)

    def __init__(self, name: str, manager: MemoryManager):
        super().__init__(name=name, description="", parameters={"type": "object"})
        self._manager = manager

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            self._manager.tool(self.name)  # raises ToolRefused, naming the reasons
        except CtxasmError as exc:
            return error_result(exc)
        return error_result(ToolRefused(f"tool_refused: {self.name!r} is not callable here"))


class ToolboxProvider(Provider):
    """Tools and resources read from the database for the caller, on every listing and every call."""

    def __init__(self, manager: MemoryManager, fit_results: bool = True):
        super().__init__()
        self.manager, self.fit_results = manager, fit_results

    async def _list_tools(self) -> Sequence[Tool]:
        return [ToolboxTool(row, self.manager, self.fit_results) for row in self.manager.tools()]

    async def _get_tool(self, name: str, version: Any = None) -> Tool | None:
        """The named tool as the caller may call it now; a name that is not one (unknown, retired since the
        listing, or not for the caller's roles) is answered with the manager's tool_refused, not the SDK's
        "Unknown tool"."""
        for tool in await self._list_tools():
            if tool.name == name:
                return tool
        return RefusedTool(name, self.manager)

    async def _list_resources(self) -> Sequence[TextResource]:
        sections = self.manager.fixed_sections()
        return [TextResource(uri=RESOURCES[name], name=name, mime_type="text/plain",  # type: ignore[arg-type]  # pydantic reads the URL
                             text="\n".join(sections[name]) or f"(no {name} in effect)")
                for name in RESOURCES]


def build_server(manager: MemoryManager, fit_results: bool = True) -> FastMCP:
    """The MCP server of one caller. Its results are fitted into the caller's tool reserve
    (MemoryManager.tool_ledger) unless `fit_results` is off: the agent loop fits them itself, into a ledger
    that also counts its tool-call messages."""
    return FastMCP("ctxasm", instructions="Memory tools for one caller; results are cited memory records.",
                   providers=[ToolboxProvider(manager, fit_results)])


# --- stdio: every request gets an answer ---------------------------------------------------------------------
# The MCP SDK drops a line it cannot read as a JSON-RPC message (not JSON, or a string with a lone surrogate,
# which its JSON parser refuses) without answering: the client then waits for ever. It also reads a request
# whose id is not a string or an integer (true, null, 1.5, a list) as a notification, which is never answered.
# Lines are checked here first and such a request is answered with a JSON-RPC error; everything else goes to the
# SDK unchanged.
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32602, -32603


def read_json(line: str) -> tuple[Any, str | None]:
    """(the line's JSON value, None), or (None, why it is not JSON). Never raises: a line nested deeper than
    Python's recursion limit is refused here instead of ending the server."""
    try:
        return json.loads(line), None
    except json.JSONDecodeError as exc:
        return None, f"not a JSON text ({exc.msg} at character {exc.pos})"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # e.g. an integer with more digits than Python reads
        return None, shortened(str(exc), 120)


def _valid_id(request_id: Any) -> bool:
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def line_problem(line: str) -> tuple[int, str, Any] | None:
    """(JSON-RPC error code, message, request id) for a line the SDK would drop or leave unanswered, or None
    when it reads it as the message it is."""
    import mcp_types

    try:
        parsed = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:  # the SDK's own parse: whatever it refuses is answered below
        parsed = None
    if parsed is not None and not isinstance(parsed, mcp_types.JSONRPCNotification):
        return None
    message, not_json = read_json(line)
    if not_json:
        return PARSE_ERROR, f"parse error: {not_json}", None
    if parsed is not None:
        # A notification has no id: one that has an id was a request with an id of the wrong type.
        if not (isinstance(message, dict) and "id" in message):
            return None
        return INVALID_REQUEST, ("invalid request: the id must be a string or an integer, not "
                                 f"{shortened(json.dumps(message['id']), 60)}"), None
    request_id = message.get("id") if isinstance(message, dict) else None
    if not _valid_id(request_id):
        request_id = None
    bad_text = unstorable_text(message, "message")
    if bad_text:
        return INVALID_PARAMS, f"invalid_argument: {bad_text}", request_id
    return INVALID_REQUEST, f"invalid request: not a JSON-RPC 2.0 message ({shortened(line.strip(), 120)})", request_id


def answers(line: str) -> bool:
    """Whether a refused line is answered: JSON-RPC never answers a notification (a message without an id),
    even with an error; anything that is not one is."""
    message, _ = read_json(line)
    return not (isinstance(message, dict) and "id" not in message)


class _Wire:
    """stdout for the server and for the answers of the stdin guard: one lock, so two messages never mix."""

    def __init__(self, stream: Any):
        import anyio

        self._stream = stream
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._stream.write(text)
            await self._stream.flush()

    async def flush(self) -> None:
        return None


class _GuardedLines:
    """stdin for the server: the lines the SDK can read; every other request is answered on the wire."""

    def __init__(self, stream: Any, wire: _Wire):
        self._stream, self._wire = stream, wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._stream:
            if not line.strip():
                continue
            try:
                problem = line_problem(line)
            except Exception as exc:  # noqa: BLE001  # a line must never end the server: answer it instead
                problem = INTERNAL_ERROR, f"internal error: the line could not be checked ({type(exc).__name__})", None
            if problem is None:
                yield line
                continue
            code, message, request_id = problem
            if answers(line):
                await self._wire.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                                   "error": {"code": code, "message": message}}) + "\n")


async def serve_stdio(server: FastMCP) -> None:
    """FastMCP's stdio transport (run_stdio_async) with the guarded stdin: every request gets an answer."""
    import anyio
    from fastmcp.server.context import reset_transport, set_transport
    from mcp.server.stdio import stdio_server

    wire = _Wire(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=True)))
    lines = _GuardedLines(anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")),
                          wire)
    token = set_transport("stdio")
    try:
        async with server._lifespan_manager():
            # the guarded wrappers have the async file methods stdio_server uses
            async with stdio_server(stdin=lines, stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
                await server._mcp_server.run(read_stream, write_stream,
                                             server._mcp_server.create_initialization_options())
    finally:
        reset_transport(token)
