"""`ctxasm mcp`: a FastMCP stdio server over the Memory Manager.

Tools come from toolbox_memory rows through a custom Provider (tool_schema is the input schema, usage_notes
the description); FastMCP does not validate a custom tool's arguments, so each call is validated and
authorised again by the manager. Guidelines and persona are resources. Errors a caller can act on come back
as tool errors whose text starts with the symbolic code (invalid_argument, tool_refused, not_in_window, ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
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

from .errors import CtxasmError  # noqa: E402
from .manager import MemoryManager, ToolRow  # noqa: E402
from .tool_results import ToolOutput, render_output  # noqa: E402

RESOURCES = {"guidelines": "ctxasm://guidelines", "persona": "ctxasm://persona"}


async def ask_client(question: str) -> str | None:
    """MCP elicitation when the client supports it; None otherwise (the question then goes in the answer)."""
    try:
        answer = await get_context().elicit(question, response_type=str)
    except Exception:  # a client without elicitation, or a protocol version without server requests
        return None
    if getattr(answer, "action", None) != "accept":
        return None
    data = answer.data
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
        return [TextResource(uri=RESOURCES[name], name=name, mime_type="text/plain",
                             text="\n".join(sections[name]) or f"(no {name} in effect)")
                for name in RESOURCES]


def build_server(manager: MemoryManager) -> FastMCP:
    return FastMCP("ctxasm", instructions="Memory tools for one caller; results are cited memory records.",
                   providers=[ToolboxProvider(manager)])
