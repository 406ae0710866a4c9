"""The connection layer against a real third-party peer (M4, M5): the reference server
`@modelcontextprotocol/server-everything` (npm, pinned in package.json), built on the
TypeScript SDK 1.x, so it speaks only the handshake revisions. Over each of the three
transports it must be detected as legacy and still be listed: 13 tools, `echo` first."""

import pytest

from tests.support.everything import (
    TOOL_COUNT,
    everything_argv,
    requires_everything,
    serve_everything,
)
from tools.mcp import ServerTarget, list_tools, probe

pytestmark = requires_everything


def check_legacy_peer(target_fields):
    found = probe(ServerTarget(**target_fields))
    assert found.legacy is True
    assert found.discover is None
    assert found.protocol_version == "2025-11-25"
    assert found.server_info["name"] == "mcp-servers/everything"

    tools = list_tools(ServerTarget(**target_fields, legacy=True))
    assert len(tools) == TOOL_COUNT
    assert tools[0]["name"] == "echo"
    assert tools[0]["inputSchema"]["type"] == "object"


def test_it_detects_and_lists_server_everything_over_stdio():
    """M3, M4, M5: started as a child (node, explicit env, private cwd) over stdio."""
    check_legacy_peer({"transport": "stdio", "argv": everything_argv("stdio"), "env": {}})


@pytest.mark.parametrize(
    ("mode", "transport", "path"), [("sse", "sse", "/sse"), ("streamableHttp", "streamable_http", "/mcp")]
)
def test_it_detects_and_lists_server_everything_over_http(mode, transport, path):
    """M4, M5: over SSE and over (stateful) streamable HTTP, on 127.0.0.1 only."""
    with serve_everything(mode) as base_url:
        check_legacy_peer({"transport": transport, "url": f"{base_url}{path}"})
