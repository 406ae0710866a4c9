"""One classification of HTTP failures for both HTTP stacks: the gateway's direct POST (httpx) and
the SDK transports (httpx2) raise parallel exception classes, and the same failure must be the
same `McpError` on both (kind, code, params), with the same secrets kept out.

    connect     refused, timed out, unresolvable, a name lookup that took too long
                (`dns_timeout`), TLS certificate that does not verify (`tls_unverified`), refused
                by the platform's outbound rules at connect time (`outbound_refused`: the
                client's network backend re-checks every address, M2); those two are never
                worth a retry; anything else before sending
    timeout     no answer within the deadline (read, write or pool wait)
    dropped     the connection broke after the request went out: it may have run
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx
import httpx2

from tools.mcp.errors import McpError, redact, shorten
from tools.outbound import LookupTimedOut, OutboundRefused

_CONNECT = (httpx.ConnectError, httpx2.ConnectError)
_CONNECT_TIMEOUT = (httpx.ConnectTimeout, httpx2.ConnectTimeout)
_TIMEOUT = (httpx.TimeoutException, httpx2.TimeoutException, TimeoutError)
_TRANSPORT = (httpx.TransportError, httpx2.TransportError)

# A certificate problem is final: a retry meets the same certificate (M2 has no switch).
FINAL_CODES = frozenset({"tls_unverified", "outbound_refused"})


def transport_failure(
    leaves: Iterable[BaseException], *, server: Mapping[str, Any], method: str, limits: Mapping[str, Any]
) -> McpError | None:
    """The `McpError` for the first transport-level failure among `leaves`, or None.

    `server` names the server (`{"url": …}`); `limits` are the `timeout`/`total` seconds named
    in a timeout's text."""
    leaves = list(leaves)
    for leaf in leaves:
        if isinstance(leaf, _CONNECT_TIMEOUT):
            return McpError("connect", "connect_timeout", {**server, "method": method})
        if isinstance(leaf, _CONNECT):
            code, details = connect_reason(leaf)
            return McpError("connect", code, {**server, "method": method, **details})
    if any(isinstance(leaf, _TIMEOUT) for leaf in leaves):
        return McpError("timeout", "timeout", {**server, "method": method, **limits})
    for leaf in leaves:
        if isinstance(leaf, _TRANSPORT):
            return McpError("dropped", "dropped", {**server, "method": method, "error_type": type(leaf).__name__})
    return None


def connect_reason(error: BaseException) -> tuple[str, dict]:
    """(code, params) for a connection that could not be made; the params may give a `detail`
    (an outbound refusal also its msgid and values, A3)."""
    causes = list(_causes(error))
    refusal = next((cause for cause in causes if isinstance(cause, OutboundRefused)), None)
    if refusal is not None:
        if refusal.kind == LookupTimedOut.kind:
            return LookupTimedOut.kind, {}
        return "outbound_refused", refusal.stored()
    text = " ".join(str(cause) for cause in causes)
    if any(isinstance(cause, ssl.SSLCertVerificationError) for cause in causes) or "CERTIFICATE_VERIFY_FAILED" in text:
        return "tls_unverified", {}
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes) or "Connection refused" in text:
        return "connect_refused", {}
    if any(isinstance(cause, socket.gaierror) for cause in causes) or "Name or service not known" in text:
        return "dns_failed", {}
    if any(isinstance(cause, ssl.SSLError) for cause in causes):
        return "connect_failed", {"detail": "TLS: " + shorten(text, 160)}
    return "connect_failed", {"detail": shorten(text or type(error).__name__, 160)}


def http_status_error(
    *,
    server: Mapping[str, Any],
    method: str,
    status: int,
    retry_after: float | None,
    said: str | None,
    secrets: Iterable[str],
) -> McpError:
    """A failing HTTP status as the server sent it, with its own words (redacted) if it gave any."""
    params: dict[str, Any] = {**server, "method": method, "status": status}
    if retry_after is not None:
        params["retry_after"] = round(retry_after)
    if said and said not in ("Server returned an error response", "Not Found"):
        params["said"] = shorten(redact(said, secrets), 200)
    return McpError("http", "http_status", params, http_status=status, retry_after=retry_after)


def peer_error(*, server: Mapping[str, Any], method: str, error: Any, secrets: Iterable[str]) -> McpError:
    """A JSON-RPC error object the server answered with, its message redacted."""
    error = error if isinstance(error, Mapping) else {}
    code = error.get("code")
    said = shorten(redact(str(error.get("message", "")), secrets), 300)
    return McpError(
        "protocol", "peer_error",
        {**server, "method": method, "error_code": code if isinstance(code, int) else str(code)[:20], "said": said},
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
