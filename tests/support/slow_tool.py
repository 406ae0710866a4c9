"""An SDK MCP server whose one tool, `buscar_producto`, misbehaves on demand, for gateway tests
of deadlines and result sizes on the SDK paths (streamable HTTP, HTTP+SSE, stdio).

- `trickle=(interval, duration)`: the call sends a log notification every `interval` seconds
  for `duration` seconds (keep-alives on the response stream), then answers.
- `result_bytes=n`: the answer carries `n` bytes of text.

Importable (`build_slow_server`) to serve over HTTP with `serve_asgi`, and runnable as a script
to serve over stdio with nothing but the SDK on the path:

    python tests/support/slow_tool.py --trickle 0.3 --for 30
    python tests/support/slow_tool.py --result-bytes 3000000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


def build_slow_server(*, trickle: tuple[float, float] | None = None, result_bytes: int = 0) -> Server[Any]:
    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if trickle is not None:
            interval, duration = trickle
            ends = time.monotonic() + duration
            while time.monotonic() < ends:
                note = types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(level="info", data="trabajando")
                )
                await ctx.session.send_notification(note, related_request_id=ctx.request_id)
                await anyio.sleep(interval)
        text = "x" * result_bytes if result_bytes else "Encontré 1 producto."
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={"productos": [], "total": 0},
        )

    return Server("asixto-test-slow", version="1.0.0", on_call_tool=call_tool)


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="SDK server with a slow or large tool, over stdio (tests only).")
    parser.add_argument("--trickle", type=float, default=None, metavar="INTERVAL")
    parser.add_argument("--for", dest="duration", type=float, default=30.0, metavar="SECONDS")
    parser.add_argument("--result-bytes", type=int, default=0)
    args = parser.parse_args(argv)
    trickle = (args.trickle, args.duration) if args.trickle else None
    anyio.run(_serve, build_slow_server(trickle=trickle, result_bytes=args.result_bytes))


if __name__ == "__main__":
    main()
