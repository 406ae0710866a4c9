"""An SDK MCP server (streamable HTTP, stateless) whose catalog a test changes between syncs.

    catalog = MutableCatalog([definition, ...])
    with serve_asgi(catalog.app()) as base_url: ...
    catalog.tools[0]["description"] = "…"     # the next tools/list sees it
    catalog.reorder_on_each_list = True       # every tools/list returns another order (C7)
    catalog.results["consultar_cliente"] = [result_1, result_2]   # tools/call answers, in turn
    catalog.calls                             # [(name, arguments, _meta), ...] as received
    catalog.page_size = 2                     # tools/list answers in pages (cursor: the offset)
    catalog.pages_served                      # tools/list pages answered so far
"""

from __future__ import annotations

import copy
from typing import Any

import mcp_types as types
from mcp.server import Server


class MutableCatalog:
    def __init__(self, tools: list[dict[str, Any]]):
        self.tools = copy.deepcopy(tools)
        self.reorder_on_each_list = False
        self.list_calls = 0
        self.page_size: int | None = None
        self.pages_served = 0
        self._current: list[types.Tool] = []
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def _listing(self) -> list[types.Tool]:
        self.list_calls += 1
        tools = list(self.tools)
        if self.reorder_on_each_list and self.list_calls % 2 == 0:
            tools.reverse()
        return [types.Tool.model_validate(tool) for tool in tools]

    def calls_to(self, name: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        return [call for call in self.calls if call[0] == name]

    def app(self, host: str = "127.0.0.1"):
        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            self.pages_served += 1
            start = int(params.cursor) if params is not None and params.cursor else 0
            if start == 0:
                self._current = self._listing()
            if not self.page_size:
                return types.ListToolsResult(tools=self._current)
            end = start + self.page_size
            return types.ListToolsResult(
                tools=self._current[start:end], next_cursor=str(end) if end < len(self._current) else None
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            self.calls.append((params.name, dict(params.arguments or {}), dict(ctx.meta or {})))
            script = self.results[params.name]
            result = script[min(len(self.calls_to(params.name)) - 1, len(script) - 1)]
            return types.CallToolResult.model_validate(result)

        server = Server("asixto-test-mutable", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
        return server.streamable_http_app(stateless_http=True, json_response=True, host=host)
