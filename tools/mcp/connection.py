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

import signal
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

from tools.mcp.bounds import ByteBudget
from tools.mcp.errors import McpError, parse_retry_after, redact, safe_url, secrets_of, shorten
from tools.mcp.failures import http_status_error, transport_failure
from tools.mcp.log_redaction import secrets_in_scope
from tools.mcp.http import (
    HttpStatusWatch,
    is_failure_status,
    sse_streams,
    streamable_http_streams,
)
from tools.mcp.meta import CLIENT_INFO as _CLIENT_INFO
from tools.mcp.repeats import PageBook
from tools.mcp.stdio import ChildProcess, stdio_streams, too_large_limit
from tools.mcp.target import ServerTarget

CLIENT_INFO = types.Implementation(**_CLIENT_INFO)
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
    book: PageBook | None = None  # a listing's pages already checked (repeats.py)

    @property
    def server(self) -> dict[str, str]:
        """Which server, as an error's params name it (see tools.mcp.errors)."""
        if self.target.transport == "stdio":
            return {"program": basename(self.target.argv[0])}
        return {"url": safe_url(self.target.url)}

    @property
    def secrets(self) -> list[str]:
        return secrets_of(self.target.headers, self.target.env)

    def params(self, **more: Any) -> dict[str, Any]:
        return {**self.server, "method": self.method, **more}


async def run_operation(
    target: ServerTarget, operation: Callable[[ClientSession, Exchange], Awaitable[T]], *, probe: bool = False,
    dispatcher: Callable[[Any, Any], Any] | None = None, book: PageBook | None = None,
) -> T:
    """Connect, negotiate, run `operation`, disconnect; raise only `McpError` for server trouble.
    `dispatcher`: builds the session's JSON-RPC dispatcher from the transport's two streams (the
    SDK's own by default); `book`: what the transport hands whole JSON answers to (both in
    repeats.py)."""
    exchange = Exchange(target, book=book)
    answered, result = False, None
    try:
        with secrets_in_scope(exchange.secrets), anyio.fail_after(target.total_timeout):
            async with open_session(target, exchange, probe=probe, dispatcher=dispatcher) as session:
                result = await operation(session, exchange)
                answered = True
            return result
    except McpError:
        raise
    except Exception as exc:
        if answered and _only_closing_noise(exc):
            return result
        raise translate(exc, exchange) from exc
    except BaseExceptionGroup as group:
        errors, others = group.split(Exception)
        if others is not None or errors is None:
            raise  # a cancellation or interpreter exit is the caller's business, not the server's
        if answered and _only_closing_noise(errors):
            return result
        raise translate(errors, exchange) from group


# What the SDK's stream readers raise when a message (a server's notification after the
# handshake, say) arrives while the session is already closing: the answer was complete.
_CLOSING_ERRORS = (anyio.BrokenResourceError, anyio.ClosedResourceError)


def _only_closing_noise(exc: BaseException) -> bool:
    """Whether everything that went wrong happened as the session closed after its answer (SSE:
    server-everything's post-handshake notification met the closing reader, issue 8)."""
    return all(isinstance(leaf, _CLOSING_ERRORS) for leaf in _leaves(exc))


@asynccontextmanager
async def open_session(
    target: ServerTarget, exchange: Exchange, *, probe: bool = False, dispatcher: Callable[[Any, Any], Any] | None = None
) -> AsyncIterator[ClientSession]:
    """A `ClientSession` over the target's transport, negotiated and ready for requests."""
    async with _transport(target, exchange) as (read_stream, write_stream):
        streams = {"dispatcher": dispatcher(read_stream, write_stream)} if dispatcher else {
            "read_stream": read_stream, "write_stream": write_stream,
        }
        async with ClientSession(**streams, read_timeout_seconds=target.timeout, client_info=CLIENT_INFO) as session:
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
        exchange.child = ChildProcess(program=basename(target.argv[0]), book=exchange.book)
        return stdio_streams(target, exchange.child)
    exchange.http = HttpStatusWatch(budget=ByteBudget(target.max_response_bytes), book=exchange.book)
    if target.transport == "sse":
        exchange.method = "GET (event stream)"
        return sse_streams(target, exchange.http)
    return streamable_http_streams(target, exchange.http)


def _adopt_cached(session: ClientSession, discover: dict[str, Any]) -> None:
    try:
        session.adopt(types.DiscoverResult.model_validate(discover))
    except (ValidationError, RuntimeError) as exc:
        # A stale or hand-edited cache; the caller should probe again.
        raise McpError("protocol", "cached_discover_invalid", {"detail": shorten(str(exc), 200)}) from exc


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
                    versions = [shorten(str(v), 40) for v in supported[:10]]
                    raise McpError("protocol", "unsupported_versions", exchange.params(versions=versions)) from exc
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
        error.params["stale_discover"] = True
    return error


def _rejected_revision(error: McpError, leaves: list[BaseException]) -> bool:
    """Whether the server refused the request itself (its revision), not just its contents."""
    if error.kind == "http":
        return error.http_status == 400
    refusals = (INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION)
    return error.kind == "protocol" and any(isinstance(leaf, MCPError) and leaf.code in refusals for leaf in leaves)


def _translate_stdio(leaves: list[BaseException], exchange: Exchange, child: ChildProcess) -> McpError:
    tail = child.stderr_tail(exchange.secrets)
    said = {"stderr": tail[-_STDERR_IN_MESSAGE:]} if tail else {}
    if child.pid is None:
        error = next((leaf for leaf in leaves if isinstance(leaf, OSError)), None)
        reason = error.strerror if error is not None and error.strerror else shorten(str(leaves[0]), 200)
        return McpError("process", "process_start_failed", {**exchange.server, "detail": reason})
    limits = (too_large_limit(leaf.data) for leaf in leaves if isinstance(leaf, MCPError))
    refused = next((limit for limit in limits if limit is not None), None)
    if refused is not None or child.too_large is not None:
        # An answer past the byte limit (the gateway's ASIXTO_MAX_RESULT_BYTES), skipped unread.
        return McpError("too_large", "too_large", exchange.params(limit=refused or child.too_large))
    if child.bad_output is not None:
        return McpError("protocol", "process_bad_output", exchange.params(detail=child.bad_output, **said))
    if any(_is_timeout(leaf) for leaf in leaves):
        return McpError("timeout", "process_timeout", exchange.params(**_limits(exchange.target), **said))
    if child.exited_on_its_own:
        if child.returncode is not None and child.returncode < 0:
            return McpError("process", "process_killed", exchange.params(signal=_signal_name(-child.returncode), **said))
        return McpError("process", "process_exited", exchange.params(status=child.returncode, **said))
    if any(_is_local_close(leaf) for leaf in leaves):
        return McpError("dropped", "closed_output", exchange.params(**said))
    return _translate_common(leaves, exchange)


def _translate_http(leaves: list[BaseException], exchange: Exchange) -> McpError:
    watch = exchange.http
    if watch is not None and watch.budget.exceeded:
        # The SDK's readers turned the refusal into a failed answer; say what it was.
        return McpError("too_large", "too_large", exchange.params(limit=watch.budget.limit))
    for leaf in leaves:
        if isinstance(leaf, httpx2.HTTPStatusError):  # the SSE stream's GET was refused
            response = leaf.response
            return http_status_error(
                server=exchange.server, method=exchange.method, status=response.status_code,
                retry_after=_retry_after(response), said=None, secrets=exchange.secrets,
            )
    if watch is not None and watch.failed:
        said = next((leaf.message for leaf in leaves if isinstance(leaf, MCPError)), None)
        return http_status_error(
            server=exchange.server, method=exchange.method, status=watch.status or 0,
            retry_after=watch.retry_after, said=said, secrets=exchange.secrets,
        )
    error = transport_failure(leaves, server=exchange.server, method=exchange.method, limits=_limits(exchange.target))
    if (error is None or error.kind == "dropped") and any(_is_timeout(leaf) for leaf in leaves):
        return McpError("timeout", "timeout", exchange.params(**_limits(exchange.target)))
    if error is not None:
        return error
    if any(_is_local_close(leaf) for leaf in leaves):
        return McpError("dropped", "dropped", exchange.params(error_type="ConnectionClosed"))
    return _translate_common(leaves, exchange)


def _translate_common(leaves: list[BaseException], exchange: Exchange) -> McpError:
    leaf = leaves[0]
    if isinstance(leaf, MCPError):
        said = shorten(redact(leaf.message, exchange.secrets), 300)
        return McpError("protocol", "peer_error", exchange.params(error_code=leaf.code, said=said))
    if isinstance(leaf, ValidationError):
        problem = leaf.errors()[0] if leaf.errors() else {}
        place = ".".join(str(part) for part in problem.get("loc", ())) or "result"
        reason = shorten(redact(str(problem.get("msg", "invalid")), exchange.secrets), 200)
        return McpError("protocol", "invalid_result", exchange.params(place=place, reason=reason))
    detail = shorten(redact(str(leaf), exchange.secrets), 200)
    if not detail and isinstance(leaf, _CLOSING_ERRORS):
        # Their message is empty; say what it means rather than nothing (issue 8).
        detail = "the connection's message stream was closed while the server was still sending"
    elif not detail:
        detail = "no detail given"
    return McpError("protocol", "failed", exchange.params(error_type=type(leaf).__name__, detail=detail))


def _retry_after(response: httpx2.Response) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _is_timeout(error: BaseException) -> bool:
    if isinstance(error, MCPError):
        return error.code == REQUEST_TIMEOUT
    return isinstance(error, TimeoutError | httpx2.ReadTimeout | httpx2.WriteTimeout | httpx2.PoolTimeout)


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


def _limits(target: ServerTarget) -> dict[str, float]:
    return {"timeout": target.timeout, "total": target.total_timeout}


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
