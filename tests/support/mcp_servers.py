"""Real servers on loopback for tests: run any ASGI app with uvicorn in a background thread.

    with serve_asgi(build_app()) as base_url:      # "http://127.0.0.1:<free port>"
        ... Client(f"{base_url}/mcp") ...

Used for the example MCP server, SDK servers built inside a test (streamable HTTP or SSE),
and servers that misbehave on purpose. No mocks: the client under test opens real TCP
connections. Start-up takes a few milliseconds plus the app's own lifespan start-up.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

LOOPBACK = "127.0.0.1"


class ServerStartError(RuntimeError):
    """The app did not come up (its lifespan start-up failed, or it took too long)."""


@contextmanager
def serve_asgi(
    app: ASGIApp,
    *,
    startup_timeout: float = 5.0,
    shutdown_grace: float = 0.5,
    lifespan: Literal["auto", "on", "off"] = "auto",
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
) -> Iterator[str]:
    """Serve `app` on a free loopback port for the duration of the block; yield its base URL.

    The app's lifespan runs (an SDK app needs it to start its session manager; an SDK app
    can be served only once, so build a new one per block). Leaving the block stops the
    server: requests still running get `shutdown_grace` seconds, then are cancelled (uvicorn
    logs the cancellation), so a test that leaves an SSE stream or a hanging tool call open
    cannot hang the suite. With `ssl_certfile`/`ssl_keyfile` it serves HTTPS (base URL `https://…`).
    """
    # Bind the port here rather than letting uvicorn pick one: the socket is ours before the
    # thread starts, so there is no window in which another test could take the same port.
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the listening
    # socket says proto == IPPROTO_TCP (base_events._set_nodelay); with proto 0, Nagle plus delayed
    # ACKs add ~40 ms to every request after the first on a connection.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    port = sock.getsockname()[1]

    config = uvicorn.Config(
        app,
        lifespan=lifespan,
        log_level="warning",
        access_log=False,
        # uvicorn's own default waits for open streams forever; a test never wants that.
        timeout_graceful_shutdown=shutdown_grace,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )
    server = uvicorn.Server(config)
    # uvicorn skips signal handlers outside the main thread, so this never steals Ctrl+C.
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"asgi-{port}", daemon=True)
    thread.start()
    try:
        _wait_until_started(server, thread, startup_timeout)
        scheme = "https" if ssl_certfile else "http"
        yield f"{scheme}://{LOOPBACK}:{port}"
    finally:
        server.should_exit = True
        thread.join(shutdown_grace + 5)
        if thread.is_alive():
            # Shutdown is stuck (a handler that ignores cancellation): skip the app's lifespan
            # shutdown too. The thread is a daemon, so a server that still hangs dies with pytest.
            server.force_exit = True
            thread.join(5)
        sock.close()


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread, timeout: float) -> None:
    # `started` flips once the lifespan start-up has finished and the socket is listening,
    # which is the moment a request can be served; polling it is cheaper than probing TCP.
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive():
            # uvicorn calls sys.exit() on a failed start-up, which silently ends the thread.
            raise ServerStartError("the ASGI app failed to start (see the uvicorn log above)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise ServerStartError(f"the ASGI app did not start within {timeout} s")
        time.sleep(0.002)
