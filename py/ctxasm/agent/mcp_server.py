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
from ctxasm.core.tool_results import ToolOutput, render_output  # noqa: E402
from ctxasm.engines.checks import unstorable_text  # noqa: E402
from ctxasm.errors import CtxasmError, shortened  # noqa: E402

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


def error_result(exc: CtxasmError) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=str(exc))],
                      structured_content={"error": exc.code, "message": str(exc)}, is_error=True)


class ToolboxTool(Tool):
    """One toolbox row as an MCP tool; running it goes back to the manager, never to the cached row."""

    _manager: Any = PrivateAttr(default=None)

    def __init__(self, row: ToolRow, manager: MemoryManager):
        super().__init__(name=row.name, description=row.description, parameters=dict(row.schema))
        self._manager = manager

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            return tool_result(await self._manager.call(self.name, arguments, ask_client))
        except CtxasmError as exc:
            return error_result(exc)


class ToolboxProvider(Provider):
    """Tools and resources read from the database for the caller, on every listing and every call."""

    def __init__(self, manager: MemoryManager):
        super().__init__()
        self.manager = manager

    async def _list_tools(self) -> Sequence[Tool]:
        return [ToolboxTool(row, self.manager) for row in self.manager.tools()]

    async def _list_resources(self) -> Sequence[TextResource]:
        sections = self.manager.fixed_sections()
        return [TextResource(uri=RESOURCES[name], name=name, mime_type="text/plain",  # type: ignore[arg-type]  # pydantic reads the URL
                             text="\n".join(sections[name]) or f"(no {name} in effect)")
                for name in RESOURCES]


def build_server(manager: MemoryManager) -> FastMCP:
    return FastMCP("ctxasm", instructions="Memory tools for one caller; results are cited memory records.",
                   providers=[ToolboxProvider(manager)])


# --- stdio: every request gets an answer ---------------------------------------------------------------------
# The MCP SDK drops a line it cannot read as a JSON-RPC message (not JSON, or a string with a lone surrogate,
# which its JSON parser refuses) without answering: the client then waits for ever. Lines are checked here
# first and such a request is answered with a JSON-RPC error; everything else goes to the SDK unchanged.
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def line_problem(line: str) -> tuple[int, str, Any] | None:
    """(JSON-RPC error code, message, request id) for a line the SDK would drop, or None when it reads it."""
    import mcp_types

    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception:  # the SDK's own parse: whatever it refuses is answered below
        pass
    try:
        message = json.loads(line)
    except json.JSONDecodeError as exc:
        return PARSE_ERROR, f"parse error: not a JSON text ({exc.msg} at character {exc.pos})", None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        request_id = None
    bad_text = unstorable_text(message, "message")
    if bad_text:
        return INVALID_PARAMS, f"invalid_argument: {bad_text}", request_id
    return INVALID_REQUEST, f"invalid request: not a JSON-RPC 2.0 message ({shortened(line.strip(), 120)})", request_id


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
            problem = line_problem(line)
            if problem is None:
                yield line
                continue
            code, message, request_id = problem
            is_notification = isinstance(json_or_none(line), dict) and "id" not in json_or_none(line)
            if not is_notification:  # JSON-RPC: a notification is never answered, even with an error
                await self._wire.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                                   "error": {"code": code, "message": message}}) + "\n")


def json_or_none(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


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
