"""An SDK MCP server with a catalog of generated tools, for connection tests.

Importable (`build_catalog_server`, `make_tools`) to serve over HTTP with `serve_asgi`, and
runnable as a script to serve over stdio, with the venv's python and nothing else on the path:

    python tests/support/catalog_server.py --tools 250 --page-size 100
    python tests/support/catalog_server.py --legacy            # handshake-era only
    python tests/support/catalog_server.py --hang              # tools/list never answers
    python tests/support/catalog_server.py --crash-on-page 2   # dies mid-listing (after
                                                               # printing $ASIXTO_TEST_TOKEN)
    python tests/support/catalog_server.py --flood-stderr 2000000   # noisy, but answers
    python tests/support/catalog_server.py --flood-forever     # noisy and never answers
    python tests/support/catalog_server.py --introspect        # one tool reporting env and cwd
    python tests/support/catalog_server.py --suffix-file PATH  # the text in PATH ends the second
                                                               # tool's description (read at start)
    python tests/support/catalog_server.py --noisy-stdout      # prints a banner on stdout
    python tests/support/catalog_server.py --spawn-helper setsid --helper-pidfile PATH
                                       # leaves a sleeping helper behind (in a new session,
                                       # or `group`: in its own process group), pid in PATH

The misbehaving modes misbehave the hard way (blocking the event loop, ignoring SIGTERM and
stdin EOF) so the client's kill path, not the server's good manners, is what a test proves.
If `ASIXTO_TEST_PIDFILE` is in the environment the server writes its pid there first, so a
test can check afterwards that the process was reaped. `--pidfile PATH` does the same for
servers started with the platform's fixed stdio environment (no room for a test variable),
appending one line per process, since one catalog sync starts several children. The script imports only the SDK, so it
runs from any working directory and with an empty environment.
"""

from __future__ import annotations

import os

# First of all, before the slow imports (the SDK's take seconds on a loaded machine): a test that
# checks this process is reaped reads its pid, even when the call's deadline ends the start-up.
if "ASIXTO_TEST_PIDFILE" in os.environ:
    with open(os.environ["ASIXTO_TEST_PIDFILE"], "w") as _pidfile:
        _pidfile.write(str(os.getpid()))

import argparse
import signal
import sys
import threading
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

PIDFILE_VAR = "ASIXTO_TEST_PIDFILE"
# With --introspect: the pid of a process whose /proc environment the server tries to read.
PEEK_VAR = "ASIXTO_TEST_PEEK_PID"
# With --introspect: `host:port` and Unix socket paths (comma-separated) the server tries to connect to.
REACH_VAR = "ASIXTO_TEST_REACH"
SECRET_VAR = "ASIXTO_TEST_TOKEN"
SERVER_NAME = "asixto-test-catalog"


def make_tools(count: int, *, prefix: str = "consultar_item") -> list[dict[str, Any]]:
    """`count` distinct tool definitions in wire form (camelCase, `_meta`), numbered in order."""
    return [
        {
            "name": f"{prefix}_{number:04d}",
            "title": f"Consultar ítem {number}",
            "description": f"Devuelve el ítem número {number} del inventario. No la uses para crear ítems.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["codigo"],
                "properties": {"codigo": {"type": "string", "maxLength": 20}},
            },
            "outputSchema": {
                "type": "object",
                "required": ["codigo", "existencias"],
                "properties": {"codigo": {"type": "string"}, "existencias": {"type": "integer"}},
            },
            "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
            "_meta": {"com.asixto/capabilities": ["inventario"], "com.asixto/verb": f"consultar el ítem {number}"},
        }
        for number in range(1, count + 1)
    ]


def build_catalog_server(
    tools: list[dict[str, Any]],
    *,
    page_size: int | None = None,
    crash_on_page: int | None = None,
    hang: bool = False,
) -> Server[Any]:
    """A low-level SDK server listing `tools` (wire form) in order, `page_size` per page.

    Cursors are the decimal offset of the next page. `crash_on_page` (1-based) kills the
    process with status 3 instead of answering that page; `hang` blocks the whole process.
    """
    models = [types.Tool.model_validate(tool) for tool in tools]
    size = page_size or max(len(models), 1)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        page_number = start // size + 1
        if hang:
            # Blocks the event loop on purpose: stdin EOF and cancellation go unnoticed.
            time.sleep(3600)
        if crash_on_page is not None and page_number >= crash_on_page:
            # Echo a secret from the environment the way careless servers do, to prove redaction.
            token = os.environ.get(SECRET_VAR, "")
            sys.stderr.write(
                f"connecting with token {token}\n"
                f"Traceback (most recent call last):\nRuntimeError: simulated crash on page {page_number}\n"
            )
            sys.stderr.flush()
            os._exit(3)
        end = start + size
        return types.ListToolsResult(tools=models[start:end], next_cursor=str(end) if end < len(models) else None)

    return Server(SERVER_NAME, version="1.0.0", on_list_tools=list_tools)


def _flood_stderr(total_bytes: int | None) -> None:
    """Write junk to stderr: `total_bytes` of it, or forever when None."""
    chunk = ("ruido " * 1365 + "\n").encode()  # ~8 KB per write
    written = 0
    while total_bytes is None or written < total_bytes:
        os.write(2, chunk)
        written += len(chunk)


def _introspection_tool() -> dict[str, Any]:
    # What the process was given, reported through the protocol the test already speaks.
    return {
        "name": "entorno_proceso",
        "description": "Reports the environment and working directory of this process.",
        "inputSchema": {"type": "object"},
        "_meta": {
            "com.example/env": dict(os.environ),
            "com.example/cwd": os.getcwd(),
            "com.example/uid": os.getuid(),
            "com.example/cwdOwner": os.stat(os.getcwd()).st_uid,
            "com.example/cwdWritable": os.access(os.getcwd(), os.W_OK),
            "com.example/capabilities": _effective_capabilities(),
            "com.example/peek": {pid: _peek(pid) for pid in (os.environ.get(PEEK_VAR), str(os.getppid())) if pid},
            "com.example/reach": {where: _reach(where) for where in os.environ.get(REACH_VAR, "").split(",") if where},
        },
    }


def _effective_capabilities() -> str:
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("CapEff:"))


def _reach(where: str) -> str:
    """What connecting to `where` (host:port, or a socket path) gives: "connected" or why not."""
    import socket

    try:
        if where.startswith("/"):
            with socket.socket(socket.AF_UNIX) as unix:
                unix.settimeout(5)
                unix.connect(where)
        else:
            host, port = where.rsplit(":", 1)
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        return "connected"
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"


def _peek(pid: str) -> str:
    """What reading another process's environment gives: the bytes, or why not."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return environ.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"refused: {exc.strerror}"


def _spawn_helper(how: str, pidfile: str) -> None:
    """A helper that sleeps for an hour and ignores SIGTERM: only a kill of everything the
    server started ends it."""
    import subprocess

    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
    helper = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=how == "setsid", process_group=0 if how == "group" else None,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with open(pidfile, "w") as out:
        out.write(str(helper.pid))


async def _serve(server: Server[Any], legacy: bool) -> None:
    async with stdio_server() as (read_stream, write_stream):
        if legacy:
            # The handshake-only loop: what an SDK 1.x server speaks (no server/discover).
            async with server.lifespan(server) as state:
                await serve_loop(
                    server,
                    read_stream,
                    write_stream,
                    lifespan_state=state,
                    init_options=server.create_initialization_options(),
                )
        else:
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="SDK catalog server over stdio (tests only).")
    parser.add_argument("--tools", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--crash-on-page", type=int, default=None)
    parser.add_argument("--flood-stderr", type=int, default=0, metavar="BYTES")
    parser.add_argument("--flood-forever", action="store_true")
    parser.add_argument("--introspect", action="store_true")
    parser.add_argument("--noisy-stdout", action="store_true")
    parser.add_argument("--pidfile", default=None, metavar="PATH")
    parser.add_argument("--spawn-helper", choices=["setsid", "group"], default=None)
    parser.add_argument("--helper-pidfile", default=None, metavar="PATH")
    parser.add_argument("--suffix-file", default=None, metavar="PATH")
    args = parser.parse_args(argv)

    if args.pidfile:
        with open(args.pidfile, "a") as pidfile:
            pidfile.write(f"{os.getpid()}\n")
    if args.spawn_helper:
        _spawn_helper(args.spawn_helper, args.helper_pidfile)
    if args.hang or args.flood_forever:
        # A stuck server that also shrugs off SIGTERM: only SIGKILL ends it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.noisy_stdout:
        # The classic stdio mistake: a print() that corrupts the JSON-RPC stream.
        print("Catalog server ready!", flush=True)
    if args.flood_stderr:
        _flood_stderr(args.flood_stderr)
    if args.flood_forever:
        threading.Thread(target=_flood_stderr, args=(None,), daemon=True).start()

    tools = [_introspection_tool()] if args.introspect else make_tools(args.tools)
    if args.suffix_file and len(tools) > 1:
        with open(args.suffix_file) as suffix:
            tools[1]["description"] += suffix.read()
    server = build_catalog_server(
        tools,
        page_size=args.page_size,
        crash_on_page=args.crash_on_page,
        hang=args.hang or args.flood_forever,
    )
    anyio.run(_serve, server, args.legacy)


if __name__ == "__main__":
    main()
