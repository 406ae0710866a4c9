"""`tools/call` over stateless streamable HTTP (2026-07-28) as one POST of our own.

The gateway sends this request itself rather than through an SDK session: each attempt needs
its own JSON-RPC id and `requestId` (G3), the real HTTP status must survive (401, 429 +
Retry-After, 503), and a pooled keep-alive client per server keeps the overhead near a bare
POST (P1). What the SDK path shares with this one lives in the connection layer: the `_meta`
builder (`tools.mcp.meta`), the classification of failures and the redaction of secrets
(`tools.mcp.failures`, `tools.mcp.errors`), the byte and time bounds (`tools.mcp.bounds`).

The answer may be JSON or an event stream (read with `httpx-sse`, which splits lines only where
SSE does). The body is streamed: at most `max_bytes` are read, and the call's deadline is checked
between chunks, so keep-alives cannot hold a call open past it (G3). Each network wait (the name
lookup, the connect, every socket read and write, the response's header bytes included) is
bounded by the time left (`total_deadline`). TLS is always verified.
"""

import itertools
import json
import logging
import time
from dataclasses import dataclass
from functools import lru_cache

import httpx
from httpx_sse import EventSource, SSEError

from asixto import tracing
from tenants.outbound_http import outbound_transport, total_deadline
from tools.mcp.bounds import BoundedStream, ByteBudget, DeadlinePassed, ResponseTooLarge
from tools.mcp.errors import McpError, parse_retry_after, safe_url, secrets_of
from tools.mcp.failures import http_status_error, peer_error, transport_failure
from tools.mcp.meta import PROTOCOL_VERSION, protocol_meta

# A connection that cannot be made in this long will not be made in the rest of the deadline.
CONNECT_TIMEOUT_SECONDS = 5.0
_ids = itertools.count(1)  # process-wide: no two requests of this process share an id
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # built once, not per call
# One keep-alive transport for every server: it pools connections per host by itself, and the
# headers and timeout of each server travel with each request. Every new connection is checked
# against the current tenant's outbound rules and pinned to the checked address (M2). A pooled
# connection is reused by host name only after the caller's per-call check (call.py) passed for
# this tenant. Requests go to the transport itself, not through an httpx.Client: a client's
# cookies (none may be kept: the next request may be another tenant's), redirects (never
# followed), auth and hooks would be unused here, and that layer cost ~0.1 ms of CPU per call,
# a quarter of a bare POST on loopback (P1). Traced, each attempt is a span of ours
# (`tracing.http_request`), not the httpx instrumentation's: that one cost more CPU than all the
# rest of a traced call (P1).
_transport = outbound_transport(purpose="mcp", limits=httpx.Limits(max_connections=500, max_keepalive_connections=100),
                                http_spans=False)
# The headers an httpx.Client sends by default (httpx's own, read once from a client that never
# connects), which a request's own headers replace: the request on the wire is the one a client sends.
with httpx.Client(transport=httpx.BaseTransport()) as _defaults:
    _CLIENT_HEADERS = tuple(_defaults.headers.items())
_httpx_log = logging.getLogger("httpx")  # the line a client logs for each request, kept


@dataclass
class HttpAnswer:
    result: dict
    request_id: int


def build_body(request_id: int, name: str, arguments: dict, meta: dict) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": {**meta, **protocol_meta()}}
    return _COMPACT_JSON.encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def call(*, url: str, headers: dict, name: str, arguments: dict, meta: dict, deadline: float, timeout: float,
         max_bytes: int | None) -> HttpAnswer:
    """One attempt, over by `deadline` (time.monotonic()) of a call allowed `timeout` seconds in
    all, reading at most `max_bytes`. Raises McpError (see tools.mcp.errors)."""
    request_id = next(_ids)
    server, method = {"url": safe_url(url)}, f"tools/call {name}"
    remaining = _time_left(deadline)
    request_headers = {
        **headers,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        # A compressed answer would be inflated past the byte bound before it could be counted.
        "Accept-Encoding": "identity",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    named = {key.lower() for key in request_headers}
    request = httpx.Request(
        "POST", _url(url), content=build_body(request_id, name, arguments, meta),
        headers=[*((key, value) for key, value in _CLIENT_HEADERS if key.lower() not in named), *request_headers.items()],
        extensions={"timeout": {"connect": min(remaining, CONNECT_TIMEOUT_SECONDS), "read": remaining, "write": remaining,
                                "pool": remaining}},
    )
    try:
        with total_deadline(deadline), tracing.http_request("POST", url, request.headers) as traced:  # with its traceparent
            response = _transport.handle_request(request)
            try:
                response.request = request
                traced.answered(response.status_code)
                if _httpx_log.isEnabledFor(logging.INFO):
                    _httpx_log.info('HTTP Request: %s %s "%s %d %s"', request.method, request.url,
                                    response.http_version, response.status_code, response.reason_phrase)
                message = _read(response, request_id, server, method, deadline, ByteBudget(max_bytes), headers)
            finally:
                response.close()
    except McpError:
        raise
    except ResponseTooLarge as exc:
        raise McpError("too_large", "too_large", {**server, "method": method, "limit": exc.limit}) from exc
    except DeadlinePassed as exc:
        raise _timeout(server, method, timeout) from exc
    except httpx.HTTPError as exc:
        if time.monotonic() >= deadline and not isinstance(exc, httpx.ConnectError):
            raise _timeout(server, method, timeout) from exc
        error = transport_failure([exc], server=server, method=method, limits=_limits(timeout))
        if error is None:
            raise McpError("dropped", "dropped", {**server, "method": method, "error_type": type(exc).__name__}) from exc
        raise error from exc
    except (ValueError, UnicodeDecodeError, SSEError) as exc:
        raise McpError("protocol", "not_json", {**server, "method": method}) from exc
    return HttpAnswer(result=_result_of(message, request_id, server, method, headers), request_id=request_id)


@lru_cache(maxsize=1024)
def _url(url: str) -> httpx.URL:
    # Parsed once per server URL (a request copies it; an httpx.URL is never changed in place).
    return httpx.URL(url)


def _read(response: httpx.Response, request_id: int, server: dict, method: str, deadline: float,
          budget: ByteBudget, headers: dict) -> dict:
    budget.announce(response.headers.get("content-length"))
    response.stream = BoundedStream(response.stream, budget=budget, deadline=deadline)
    # The read timeout was set before the request went out; the body gets only what is left.
    timeouts = response.request.extensions.get("timeout")
    if isinstance(timeouts, dict):
        timeouts["read"] = _time_left(deadline)
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise McpError("protocol", "compressed", {**server, "method": method, "encoding": encoding[:40]})
    if response.status_code >= 400:
        raise _http_error(response, server, method, headers)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return _from_event_stream(response, request_id, server, method)
    # The bounded stream read whole, without httpx's decoder and chunker around it: the body is
    # never encoded (refused above), and the caller closes the response (P1).
    return json.loads(b"".join(response.stream))


def _http_error(response: httpx.Response, server: dict, method: str, headers: dict) -> McpError:
    said = None
    try:
        error = json.loads(response.read()).get("error", {})
        said = str(error.get("message", "")) if isinstance(error, dict) else None
    except (ValueError, AttributeError, UnicodeDecodeError):
        pass
    return http_status_error(
        server=server, method=method, status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("retry-after")), said=said, secrets=secrets_of(headers),
    )


def _from_event_stream(response: httpx.Response, request_id: int, server: dict, method: str) -> dict:
    for event in EventSource(response).iter_sse():
        if not event.data:
            continue
        message = json.loads(event.data)
        if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
            return message
    # The stream ended without the response: the request is lost and may have run (a retry).
    raise McpError("dropped", "stream_ended", {**server, "method": method})


def _result_of(message: dict, request_id: int, server: dict, method: str, headers: dict) -> dict:
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise McpError("protocol", "wrong_id", {**server, "method": method})
    if "error" in message:
        raise peer_error(server=server, method=method, error=message["error"], secrets=secrets_of(headers))
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpError("protocol", "no_result", {**server, "method": method})
    return result


def _time_left(deadline: float) -> float:
    # Never zero: httpx reads 0 as "do not wait at all", which fails even an answer already there.
    return max(deadline - time.monotonic(), 0.001)


def _limits(timeout: float) -> dict:
    return {"timeout": timeout, "total": timeout}


def _timeout(server: dict, method: str, timeout: float) -> McpError:
    return McpError("timeout", "timeout", {**server, "method": method, **_limits(timeout)})
