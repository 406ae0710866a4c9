"""An SDK MCP server over stdio whose one tool, `buscar_producto`, echoes an environment variable
the way a careless server does (in its text, its structured result and its stderr), to prove
that a tenant's secret variable reaches the child and goes nowhere else (issue 8, T7).

    python tests/support/env_echo_server.py VARIABLE
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


def build_echo_server(variable: str) -> Server[Any]:
    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        value = os.environ.get(variable, "")
        sys.stderr.write(f"using {variable}={value}\n")
        sys.stderr.flush()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"Conectado con {value}. Encontré 1 producto.")],
            structured_content={"productos": [{"nombre": f"clave {value}"}], "total": 1},
        )

    return Server("asixto-test-env-echo", version="1.0.0", on_call_tool=call_tool)


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve, build_echo_server(sys.argv[1]))
