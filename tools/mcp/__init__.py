"""The connection layer: talk to one tenant MCP server over streamable HTTP, SSE or stdio.

Plain Python, no models: the catalog services build a `ServerTarget` from a server row and
call `probe(target)` (which revision does it speak? SPEC M4), `list_tools(target)` (every
tool, all pages, wire form, server order; SPEC M5) or `call_tool(...)` (certification probes and
the gateway's SDK path). Anything that goes wrong with the server is raised as `McpError` with a
`.kind` (what to do about it) and a `.code` with `.params` (what to tell a reader, in their
language). Each call opens and closes its own connection or child, within the target's deadline,
except the gateway's stdio calls, which reuse a live session per server (stdio_pool.py).

    target.py         ServerTarget, ProbeResult
    operations.py     probe, list_tools, list_offered, call_tool (sync) and their async forms
    connection.py     transport + negotiation + error translation
    repeats.py        a listing page answered with the bytes of one already checked is not parsed again (P2)
    http.py           streamable HTTP and SSE, with the real HTTP status kept and bytes bounded
    stdio.py          the child process: explicit env, private cwd, drained stderr, always reaped
    stdio_pool.py     live stdio sessions per process: reused, restarted, closed when idle, bounded
    shared_loop.py    the sessions' event loop, run by the calling thread itself (no hand-over)
    errors.py         McpError, its texts (render_error) and the helpers that keep secrets out
    failures.py       one classification of HTTP failures for both HTTP stacks (httpx, httpx2)
    bounds.py         byte budget and deadline applied to a response body as it is read
    meta.py           the one builder of a tools/call's `_meta` (G1) and the client's identity
    log_redaction.py  secrets blanked out of whatever is logged during an exchange (T7)
"""

from tools.mcp.errors import McpError
from tools.mcp.operations import (
    call_tool,
    call_tool_async,
    list_offered,
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
    "list_offered",
    "list_tools",
    "list_tools_async",
    "probe",
    "probe_async",
]
