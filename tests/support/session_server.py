"""An SDK MCP server over stdio for the long-lived session tests (issue 8). Its one tool,
`buscar_producto` (the gateway tests' sample tool), answers with the server's pid, and its
`consulta` argument asks for more:

    "pid"          the pid (structuredContent {"productos": [], "total": 0, "pid": …})
    "reunion:N"    waits until N calls are in flight at once, then answers: only a client that
                   sends calls concurrently over the one session ever gets an answer
    "grande:N"     N bytes of text
    "morir"        the process exits (status 3) instead of answering
    "bloquear"     blocks the whole process (no ping is answered either)

    python tests/support/session_server.py
    python tests/support/session_server.py --typescript-order   # no SDK: answers every
        tools/call with `"grande:N"`'s text, written the TypeScript SDK's way (the result
        first, `"jsonrpc"` and `"id"` last)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


def build_session_server() -> Server[Any]:
    arrived = {"count": 0}
    together = anyio.Event()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        wish = str((params.arguments or {}).get("consulta", "pid"))
        text = f"pid {os.getpid()}"
        if wish.startswith("reunion:"):
            arrived["count"] += 1
            if arrived["count"] >= int(wish.split(":")[1]):
                together.set()
            await together.wait()
        elif wish.startswith("grande:"):
            text = "x" * int(wish.split(":")[1])
        elif wish == "morir":
            os._exit(3)
        elif wish == "bloquear":
            time.sleep(3600)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={"productos": [], "total": 0, "pid": os.getpid()},
        )

    return Server("asixto-test-sessions", version="1.0.0", on_call_tool=call_tool)


async def _serve() -> None:
    server = build_session_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _serve_in_typescript_order() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("method") != "tools/call":
            continue
        wish = str(request["params"].get("arguments", {}).get("consulta", "grande:10"))
        text = "x" * int(wish.split(":")[1]) if wish.startswith("grande:") else f"pid {os.getpid()}"
        result = {"resultType": "complete", "content": [{"type": "text", "text": text}], "structuredContent": {"productos": [], "total": 0, "pid": os.getpid()}}
        sys.stdout.write(json.dumps({"result": result, "jsonrpc": "2.0", "id": request["id"]}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if "--typescript-order" in sys.argv:
        _serve_in_typescript_order()
    else:
        anyio.run(_serve)
