"""The connection layer: talk to one tenant MCP server over streamable HTTP, SSE or stdio.

Plain Python, no models: the catalog services build a `ServerTarget` from a server row and
call `probe(target)` (which revision does it speak? SPEC M4), `list_tools(target)` (every
tool, all pages, wire form, server order; SPEC M5) or `call_tool(...)` (certification probes). Anything that goes wrong with the server
is raised as `McpError` with a `.kind`. Each call opens and closes its own connection or child.

    target.py      ServerTarget, ProbeResult
    operations.py  probe, list_tools (sync) and their async forms
    connection.py  transport + negotiation + error translation
    http.py        streamable HTTP and SSE, with the real HTTP status kept
    stdio.py       the child process: explicit env, private cwd, drained stderr, always reaped
    errors.py      McpError and the helpers that keep secrets out of messages
"""

from tools.mcp.errors import McpError
from tools.mcp.operations import (
    call_tool,
    call_tool_async,
    list_tools,
    list_tools_async,
    probe,
    probe_async,
)
from tools.mcp.target import ProbeResult, ServerTarget

__all__ = [
    "McpError",
    "call_tool",
    "call_tool_async",
    "ProbeResult",
    "ServerTarget",
    "list_tools",
    "list_tools_async",
    "probe",
    "probe_async",
]
