"""The real third-party peer `@modelcontextprotocol/server-everything`, started with node.

Installed by `npm ci` from /work/main/package.json (pinned). It is built on the TypeScript SDK
1.x, so it speaks only the older handshake revisions: a live legacy peer for the connection
tests. Its HTTP modes listen on every interface on `PORT`; tests talk to it on 127.0.0.1 only.

    requires_everything                        # pytest mark: skip when node_modules is absent
    everything_argv("stdio")                   # (node, dist/index.js, "stdio")
    with serve_everything("sse") as base_url:  # "http://127.0.0.1:<port>"; SSE at /sse, HTTP at /mcp
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
TOOL_COUNT = 13  # in 2026.8.31, the pinned version

requires_everything = pytest.mark.skipif(
    not ENTRY.exists() or NODE is None,
    reason="@modelcontextprotocol/server-everything is not installed (run `npm ci` in the repo root; needs node)",
)


def everything_argv(mode: str) -> tuple[str, ...]:
    assert NODE is not None
    # node directly, not `npx` or the .bin shim: ~0.3 s to start instead of seconds.
    return (NODE, str(ENTRY), mode)


@contextmanager
def serve_everything(mode: str, *, startup_timeout: float = 10.0) -> Iterator[str]:
    """Run it in `mode` ("sse" or "streamableHttp") on a free port; yield the loopback base URL."""
    port = _free_port()
    process = subprocess.Popen(
        everything_argv(mode),
        env={"PORT": str(port), "PATH": os.environ.get("PATH", "")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_port(process, port, startup_timeout)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


def _free_port() -> int:
    # A small race (another process could take it before node binds) that tests can live with.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(process: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server-everything exited with status {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"server-everything did not listen on 127.0.0.1:{port} within {timeout} s")
