"""Open one ready MCP session to a target, and turn whatever goes wrong into one `McpError`.

`run_operation(target, operation, probe=...)` opens the transport, negotiates, runs
`operation(session, exchange)` and closes everything, all within the target's hard time limit.
Negotiation (SPEC M4) follows the target:

- `probe=True`, or nothing known yet: a real `server/discover` at the newest revision. A
  2026-07-28 answer is adopted; anything that is not evidence of a modern server falls back
  to the SDK's legacy `initialize` handshake. Unlike the SDK's `mode="auto"`, an HTTP 401/403/
  429/5xx on the probe is reported as what it is, never taken for "legacy", and the probe is
  bounded by the target's timeout rather than the SDK's fixed 10 s.
- a cached discover result: adopted locally, no negotiation traffic (the SDK's prior_discover).
- `legacy=True`: the legacy handshake directly.

`ClientSession` is used rather than `Client`: `Client` adds a response cache, input_required
rounds and a silent tools/list after calls, none of which the gateway wants.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from os.path import basename
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from tools.mcp.errors import McpError, parse_retry_after, redact, safe_url, shorten
from tools.mcp.http import (
    HttpStatusWatch,
    is_failure_status,
    sse_streams,
    streamable_http_streams,
)
from tools.mcp.stdio import ChildProcess, stdio_streams
from tools.mcp.target import ServerTarget

CLIENT_INFO = types.Implementation(name="asixto", title="Asixto gateway", version="1")
_STDERR_IN_MESSAGE = 1000

T = TypeVar("T")


@dataclass
class Exchange:
    """What is known about one operation in progress, for results and error messages."""

    target: ServerTarget
    method: str = "connect"  # the request in flight, named in error messages
    discover: dict[str, Any] | None = None  # raw server/discover result, when one was received
    child: ChildProcess | None = None
    http: HttpStatusWatch | None = None
    used_cached_discover: bool = False

    @property
    def where(self) -> str:
        if self.target.transport == "stdio":
            return f"The MCP server process {basename(self.target.argv[0])!r}"
        return f"The MCP server at {safe_url(self.target.url)}"

    @property
    def secrets(self) -> list[str]:
        # Whole values and their words: a server echoing a header tends to drop the "Bearer ".
        values = [*self.target.headers.values(), *self.target.env.values()]
        return [*values, *(word for value in values for word in value.split())]


async def run_operation(
    target: ServerTarget, operation: Callable[[ClientSession, Exchange], Awaitable[T]], *, probe: bool = False
) -> T:
    """Connect, negotiate, run `operation`, disconnect; raise only `McpError` for server trouble."""
    exchange = Exchange(target)
    try:
        with anyio.fail_after(target.total_timeout):
            async with open_session(target, exchange, probe=probe) as session:
                return await operation(session, exchange)
    except McpError:
        raise
    except Exception as exc:
        raise translate(exc, exchange) from exc
    except BaseExceptionGroup as group:
        errors, others = group.split(Exception)
        if others is not None or errors is None:
            raise  # a cancellation or interpreter exit is the caller's business, not the server's
        raise translate(errors, exchange) from group


@asynccontextmanager
async def open_session(
    target: ServerTarget, exchange: Exchange, *, probe: bool = False
) -> AsyncIterator[ClientSession]:
    """A `ClientSession` over the target's transport, negotiated and ready for requests."""
    async with _transport(target, exchange) as (read_stream, write_stream):
        async with ClientSession(
            read_stream, write_stream, read_timeout_seconds=target.timeout, client_info=CLIENT_INFO
        ) as session:
            if probe or (target.discover is None and not target.legacy):
                await negotiate(session, exchange)
            elif target.legacy:
                exchange.method = "initialize"
                await session.initialize()
            else:
                _adopt_cached(session, target.discover or {})
                exchange.used_cached_discover = True
            yield session


def _transport(target: ServerTarget, exchange: Exchange) -> Any:
    if target.transport == "stdio":
        exchange.child = ChildProcess(program=basename(target.argv[0]))
        return stdio_streams(target, exchange.child)
    exchange.http = HttpStatusWatch()
    if target.transport == "sse":
        exchange.method = "the event-stream request (GET)"
        return sse_streams(target, exchange.http)
    return streamable_http_streams(target, exchange.http)


def _adopt_cached(session: ClientSession, discover: dict[str, Any]) -> None:
    try:
        session.adopt(types.DiscoverResult.model_validate(discover))
    except (ValidationError, RuntimeError) as exc:
        # A stale or hand-edited cache; the caller should probe again.
        reason = shorten(str(exc), 200)
        raise McpError(
            "protocol", f"The cached server/discover result cannot be used ({reason}); probe the server again."
        ) from exc


async def negotiate(session: ClientSession, exchange: Exchange) -> None:
    """Probe `server/discover`; adopt a modern answer or fall back to the legacy handshake."""
    version = LATEST_MODERN_VERSION
    for attempt in range(2):
        exchange.method = "server/discover"
        try:
            with anyio.fail_after(exchange.target.timeout):
                raw = await session.send_discover(version)
        except MCPError as exc:
            if exchange.http is not None and is_failure_status(exchange.http.status):
                raise  # an outage or a refused credential is not a protocol verdict
            if exc.code == REQUEST_TIMEOUT or _is_local_close(exc):
                raise  # silence or a vanished peer says nothing about its revision
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                supported = _supported_versions(exc)
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
                if mutual and attempt == 0:
                    version = mutual[-1]
                    continue
                if supported and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
                    raise McpError(
                        "protocol",
                        f"{exchange.where} speaks only protocol versions {', '.join(supported)}, "
                        "none of which Asixto supports.",
                    ) from exc
            break  # method not found, a 400 from a stateful server, ...: an older revision
        try:
            result = types.DiscoverResult.model_validate(raw)
        except ValidationError:
            break
        if any(v in MODERN_PROTOCOL_VERSIONS for v in result.supported_versions):
            session.adopt(result)
            exchange.discover = raw
            return
        break  # answers discover but advertises only handshake-era versions
    exchange.method = "initialize"
    await session.initialize()


def _supported_versions(exc: MCPError) -> list[str]:
    try:
        return list(types.UnsupportedProtocolVersionErrorData.model_validate(exc.error.data).supported)
    except ValidationError:
        return []


def translate(exc: BaseException, exchange: Exchange) -> McpError:
    """The `McpError` that explains `exc` (raised during `exchange`) without leaking secrets."""
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, McpError):
            return leaf
    if exchange.child is not None:
        error = _translate_stdio(leaves, exchange, exchange.child)
    else:
        error = _translate_http(leaves, exchange)
    if exchange.used_cached_discover and _rejected_revision(error, leaves):
        # The server may have changed revision since it was probed (SPEC M4 caches the result).
        error.message += " The cached discovery result may be stale: probe the server again."
        error.args = (error.kind, error.message)
    return error


def _rejected_revision(error: McpError, leaves: list[BaseException]) -> bool:
    """Whether the server refused the request itself (its revision), not just its contents."""
    if error.kind == "http":
        return error.http_status == 400
    refusals = (INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION)
    return error.kind == "protocol" and any(isinstance(leaf, MCPError) and leaf.code in refusals for leaf in leaves)


def _translate_stdio(leaves: list[BaseException], exchange: Exchange, child: ChildProcess) -> McpError:
    where, method, target = exchange.where, exchange.method, exchange.target
    tail = child.stderr_tail(exchange.secrets)
    said = f" Its last stderr output: {tail[-_STDERR_IN_MESSAGE:]}" if tail else ""
    if child.pid is None:
        error = next((leaf for leaf in leaves if isinstance(leaf, OSError)), None)
        reason = error.strerror if error is not None and error.strerror else shorten(str(leaves[0]), 200)
        return McpError("process", f"{where} could not be started: {reason}.")
    if child.bad_output is not None:
        return McpError("protocol", f"{where} {child.bad_output} during {method}.{said}")
    if any(_is_timeout(leaf) for leaf in leaves):
        limits = _limits(target)
        return McpError("timeout", f"{where} did not answer {method} in time ({limits}); it was stopped.{said}")
    if child.exited_on_its_own:
        return McpError("process", f"{where} {child.describe_exit()} during {method}.{said}")
    if any(_is_local_close(leaf) for leaf in leaves):
        return McpError("dropped", f"{where} closed its output during {method}.{said}")
    return _translate_common(leaves, exchange)


def _translate_http(leaves: list[BaseException], exchange: Exchange) -> McpError:
    where, method, target = exchange.where, exchange.method, exchange.target
    for leaf in leaves:
        if isinstance(leaf, httpx2.HTTPStatusError):  # the SSE stream's GET was refused
            response = leaf.response
            return _http_error(where, method, response.status_code, _retry_after(response), None)
    watch = exchange.http
    if watch is not None and watch.failed:
        server_said = next((leaf.message for leaf in leaves if isinstance(leaf, MCPError)), None)
        if server_said is not None:
            server_said = redact(server_said, exchange.secrets)
        return _http_error(where, method, watch.status or 0, watch.retry_after, server_said)
    for leaf in leaves:
        if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
            reason = _connect_reason(leaf)
            return McpError("connect", f"{where} could not be reached: {reason}. Nothing was sent.")
    if any(_is_timeout(leaf) for leaf in leaves):
        return McpError("timeout", f"{where} did not answer {method} in time ({_limits(target)}).")
    for leaf in leaves:
        if _is_drop(leaf):
            return McpError(
                "dropped",
                f"{where} dropped the connection during {method} ({type(leaf).__name__}); the request may have run.",
            )
    return _translate_common(leaves, exchange)


def _translate_common(leaves: list[BaseException], exchange: Exchange) -> McpError:
    where, method = exchange.where, exchange.method
    leaf = leaves[0]
    if isinstance(leaf, MCPError):
        text = shorten(redact(leaf.message, exchange.secrets), 300)
        return McpError("protocol", f"{where} answered {method} with error {leaf.code}: {text}")
    if isinstance(leaf, ValidationError):
        problem = leaf.errors()[0] if leaf.errors() else {}
        place = ".".join(str(part) for part in problem.get("loc", ())) or "result"
        reason = problem.get("msg", "invalid")
        text = f"{where} answered {method} with a result that is not valid MCP ({place}: {reason})"
        return McpError("protocol", text)
    detail = shorten(redact(str(leaf), exchange.secrets), 200)
    return McpError("protocol", f"{where} failed during {method}: {type(leaf).__name__}: {detail}")


def _http_error(where: str, method: str, status: int, retry_after: float | None, server_said: str | None) -> McpError:
    phrase = _STATUS_PHRASES.get(status, "")
    text = f"{where} answered HTTP {status}{f' {phrase}' if phrase else ''} to {method}."
    if retry_after is not None:
        text += f" It asks to retry after {retry_after:.0f} s."
    if server_said and server_said not in ("Server returned an error response", "Not Found"):
        text += f" It said: {shorten(server_said, 200)}"
    return McpError("http", text, http_status=status, retry_after=retry_after)


_STATUS_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized (check the server's auth headers)",
    403: "Forbidden (check the server's auth headers)",
    404: "Not Found (check the URL)",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def _retry_after(response: httpx2.Response) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


def _connect_reason(error: BaseException) -> str:
    text = " ".join(str(e) for e in _causes(error))
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return "its TLS certificate could not be verified"
    if isinstance(error, httpx2.ConnectTimeout):
        return "the connection attempt timed out"
    if any(isinstance(cause, ConnectionRefusedError) for cause in _causes(error)):
        return "the connection was refused"
    if any(isinstance(cause, socket.gaierror) for cause in _causes(error)):
        return "its host name could not be resolved"
    return shorten(str(error) or type(error).__name__, 160)


def _is_timeout(error: BaseException) -> bool:
    if isinstance(error, MCPError):
        return error.code == REQUEST_TIMEOUT
    return isinstance(error, TimeoutError | httpx2.ReadTimeout | httpx2.WriteTimeout | httpx2.PoolTimeout)


def _is_drop(error: BaseException) -> bool:
    # After the connect and timeout checks, any transport failure means the answer was lost.
    return _is_local_close(error) or isinstance(error, httpx2.TransportError)


def _is_local_close(error: BaseException) -> bool:
    """The SDK's own "Connection closed" (its stream ended), not a peer's error -32000.

    The SDK reuses -32000, a code servers send for their own errors (the TypeScript SDK's
    "Server not initialized"), for a closed stream; only the exact local message tells them apart.
    """
    return (
        isinstance(error, MCPError)
        and error.code == CONNECTION_CLOSED
        and error.message == "Connection closed"
        and error.data is None
    )


def _limits(target: ServerTarget) -> str:
    return f"{target.timeout:g} s per request, {target.total_timeout:g} s in all"


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
