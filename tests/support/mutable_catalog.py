"""An SDK MCP server (streamable HTTP, stateless) whose catalog a test changes between syncs.

    catalog = MutableCatalog([definition, ...])
    with serve_asgi(catalog.app()) as base_url: ...
    catalog.tools[0]["description"] = "…"     # the next tools/list sees it
    catalog.reorder_on_each_list = True       # every tools/list returns another order (C7)
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

    def _listing(self) -> list[types.Tool]:
        self.list_calls += 1
        tools = list(self.tools)
        if self.reorder_on_each_list and self.list_calls % 2 == 0:
            tools.reverse()
        return [types.Tool.model_validate(tool) for tool in tools]

    def app(self, host: str = "127.0.0.1"):
        async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self._listing())

        server = Server("asixto-test-mutable", version="1.0.0", on_list_tools=list_tools)
        return server.streamable_http_app(stateless_http=True, json_response=True, host=host)
