"""`tools/call` over stateless streamable HTTP (2026-07-28) as one POST of our own.

The gateway sends this request itself rather than through an SDK session: each attempt needs
its own JSON-RPC id and `requestId` (G3), the real HTTP status must survive (401, 429 +
Retry-After, 503), and a pooled keep-alive client per server keeps the overhead near a bare
POST (P1). The answer may be JSON or an SSE stream; both are read. TLS is always verified.
"""

import itertools
import json
import ssl
from dataclasses import dataclass

import httpx

from tenants.outbound_http import outbound_client
from tools.mcp.errors import McpError, parse_retry_after, safe_url

PROTOCOL_VERSION = "2026-07-28"
CLIENT_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "asixto", "title": "Asixto gateway", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
_ids = itertools.count(1)  # process-wide: no two requests of this process share an id
# One keep-alive client for every server: it pools connections per host by itself, and the
# headers and timeout of each server travel with each request. Every new connection is checked
# against the current tenant's outbound rules and pinned to the checked address (M2); it keeps
# no cookies, since the next request may be another tenant's. A pooled connection is reused by
# host name only after the caller's per-call check (call.py) passed for this tenant.
_client = outbound_client(limits=httpx.Limits(max_connections=500, max_keepalive_connections=100))


@dataclass
class HttpAnswer:
    result: dict
    request_id: int


def build_body(request_id: int, name: str, arguments: dict, meta: dict) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": {**meta, **CLIENT_META}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params},
                      ensure_ascii=False, separators=(",", ":")).encode()


def call(*, url: str, headers: dict, name: str, arguments: dict, meta: dict, timeout: float) -> HttpAnswer:
    """One attempt. Raises McpError(kind=connect|dropped|timeout|http|protocol)."""
    request_id = next(_ids)
    shown = safe_url(url)
    body = build_body(request_id, name, arguments, meta)
    request_headers = {
        **headers,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    try:
        # A stateless server closes an event stream once it has sent the response, so reading
        # the whole body is no slower than streaming it, and cheaper per call.
        response = _client.post(
            url, content=body, headers=request_headers, timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0))
        )
        if response.status_code >= 400:
            raise _http_error(response, shown)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            message = _from_event_stream(response.text, request_id, shown)
        else:
            message = json.loads(response.content)
    except httpx.ConnectError as exc:
        if isinstance(exc.__context__, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
            # Not worth a retry, and never worth skipping: there is no switch for this (M2).
            raise McpError("protocol", f"The TLS certificate of {shown} does not verify.") from exc
        raise McpError("connect", f"The MCP server at {shown} refused the connection.") from exc
    except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise McpError("connect", f"The MCP server at {shown} could not be reached in time.") from exc
    except httpx.TimeoutException as exc:
        raise McpError("timeout", f"The MCP server at {shown} did not answer within {timeout:g} s.") from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise McpError("dropped", f"The connection to {shown} dropped before the answer was complete.") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise McpError("protocol", f"The MCP server at {shown} sent an answer that is not JSON.") from exc
    return HttpAnswer(result=_result_of(message, request_id, shown), request_id=request_id)


def _http_error(response: httpx.Response, url: str) -> McpError:
    status = response.status_code
    detail = ""
    try:
        error = response.json().get("error", {})
        detail = f": {str(error.get('message', ''))[:200]}" if isinstance(error, dict) else ""
    except (ValueError, AttributeError):
        pass
    return McpError(
        "http", f"The MCP server at {url} answered HTTP {status}{detail}.",
        http_status=status, retry_after=parse_retry_after(response.headers.get("retry-after")),
    )


def _from_event_stream(text: str, request_id: int, shown: str) -> dict:
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line == "" and data:
            message = json.loads("\n".join(data))
            data = []
            if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
                return message
    raise McpError("dropped", f"The event stream from {shown} ended before the response.")


def _result_of(message: dict, request_id: int, url: str) -> dict:
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise McpError("protocol", f"The MCP server at {url} answered another request.")
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        raise McpError("protocol", f"The MCP server at {url} answered with error {error.get('code')}: {str(error.get('message', ''))[:200]}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpError("protocol", f"The MCP server at {url} sent a response without a result object.")
    return result
