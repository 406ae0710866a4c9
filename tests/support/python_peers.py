"""The real third-party Python MCP servers `mcp-server-time`, `mcp-server-fetch` and `mcp-server-git`
(PyPI, pinned in requirements-peers.txt), run from their own virtualenv `.peers` (bin/_peers.sh,
which ./run-tests runs). They are built on the `mcp` Python SDK 2.x and speak 2026-07-28.

    requires_python_peers              # pytest mark: skip when .peers is absent
    peer_argv("mcp-server-time")       # (<repo>/.peers/bin/mcp-server-time,)
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PEERS_BIN = REPO / ".peers" / "bin"
PEERS = ("mcp-server-time", "mcp-server-fetch", "mcp-server-git")

requires_python_peers = pytest.mark.skipif(
    not all((PEERS_BIN / name).exists() for name in PEERS),
    reason="the Python MCP peers are not installed (./run-tests creates .peers from requirements-peers.txt)",
)


def peer_argv(name: str, *args: str) -> tuple[str, ...]:
    assert name in PEERS, name
    return (str(PEERS_BIN / name), *args)
