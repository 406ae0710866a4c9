"""Serve the example support desk: `python -m examples.soporte --host 127.0.0.1 --port 8765`.

The MCP endpoint is then `http://127.0.0.1:8765/mcp`. With `--stdio` the same server speaks
over its standard input and output instead (a stdio MCP server, for bench/stdio_overhead.py).
"""

from __future__ import annotations

import argparse

import anyio
import uvicorn

from examples.soporte.server import build_app, build_server


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.soporte", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="TCP port (default: 8765)")
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="always answer application/json, never an SSE stream",
    )
    parser.add_argument("--stdio", action="store_true", help="serve over standard input and output instead")
    args = parser.parse_args(argv)
    if args.stdio:
        anyio.run(serve_stdio)
        return
    # The host goes to the app too: on loopback the SDK checks Host/Origin headers against it.
    app = build_app(host=args.host, json_response=args.json_response)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
