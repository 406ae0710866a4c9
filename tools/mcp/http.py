"""HTTP transports (streamable HTTP and the deprecated HTTP+SSE), with the real status kept.

The SDK turns a failing HTTP answer into a bare JSON-RPC error: 401, 403, 429 and 5xx with a
non-JSON body all become -32603 on streamable HTTP, and on SSE a failed POST is only logged,
so the request waits for its timeout. A response hook (`HttpStatusWatch`) notes the status and
`Retry-After` of every POST, so the error translation can report what the server really said,
and wraps every response body in the operation's byte budget (`tools.mcp.bounds`), so an answer
larger than the target's `max_response_bytes` is never read whole; during a listing, it hands
each JSON answer whole to the listing's `PageBook`, which recognises a page already checked by
its bytes before the SDK parses it (`tools.mcp.repeats`).

Every request carries the target's auth headers (set on the httpx client, since
`streamable_http_client` takes no headers) and verifies TLS certificates; there is no switch
to turn that off (SPEC M2). Redirects are the SDK's: followed only within the same origin.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tenants.outbound_http import outbound_async_client
from tools.mcp.bounds import AsyncBoundedStream, ByteBudget
from tools.mcp.errors import parse_retry_after
from tools.mcp.repeats import PageBook, RecognisingStream
from tools.mcp.target import ServerTarget

# Statuses that say "not now" or "not you" rather than "I speak another protocol revision":
# seen on a server/discover probe they fail the probe instead of sending us down the legacy path.
FAILURE_STATUSES = frozenset({401, 403, 407, 408, 429})

# The SSE event stream idles between answers; its read timeout must outlast the operation so
# the per-request timeout (a clear "did not answer") fires first.
_SSE_STREAM_SLACK_SECONDS = 5.0


def is_failure_status(status: int | None) -> bool:
    return status is not None and (status in FAILURE_STATUSES or status >= 500)


@dataclass
class HttpStatusWatch:
    """The failing status (and Retry-After) of the latest POST, set by an httpx response hook.

    A later answered request (200) clears it; a notification's 202 does not, so a notification
    posted alongside a failing request cannot hide that request's status.
    """

    status: int | None = None
    retry_after: float | None = None
    budget: ByteBudget = field(default_factory=lambda: ByteBudget(None))
    book: PageBook | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        if self.budget.limit is not None:
            # Every body counts, the SSE transport's event stream (GET) included: it carries the answers.
            length = response.headers.get("content-length")
            response.stream = AsyncBoundedStream(response.stream, budget=self.budget, content_length=length)
        if self.book is not None and self.book.asking is not None and _is_plain_json_answer(response):
            # A listing's answer, read whole as the SDK reads it, recognised by its bytes (repeats.py).
            response.stream = RecognisingStream(response.stream, book=self.book, request=response.request.content)
        # Only POSTs carry requests; the optional GET stream of streamable HTTP may legitimately
        # answer 405 without anything being wrong.
        if response.request.method != "POST" or response.status_code == 202:
            return
        if response.status_code >= 400:
            self.status = response.status_code
            self.retry_after = parse_retry_after(response.headers.get("retry-after"))
        elif 200 <= response.status_code < 300:
            self.status = self.retry_after = None

    @property
    def failed(self) -> bool:
        return self.status is not None and self.status >= 400


def _is_plain_json_answer(response: httpx2.Response) -> bool:
    """A POST of ours (a body we built whole) answered with one JSON document, which the SDK
    reads whole (not an SSE stream), sent without a content encoding (the body is the bytes)."""
    return (
        response.request.method == "POST" and 200 <= response.status_code < 300 and response.status_code != 202
        and response.headers.get("content-type", "").lower().startswith("application/json")
        and response.headers.get("content-encoding", "identity").strip().lower() == "identity"
        and isinstance(response.request.stream, httpx2.ByteStream)
    )


@cache
def verified_tls_context() -> ssl.SSLContext:
    """The one TLS context for every connection: certificates and host names are checked.

    Built once per process because loading the CA bundle costs ~20 ms, which would otherwise be
    paid by every probe and listing; an SSLContext is safe to share between threads.
    """
    context = httpx2.create_ssl_context(verify=True)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    return context


def build_http_client(
    target: ServerTarget, watch: HttpStatusWatch, *, read_timeout: float | None = None
) -> httpx2.AsyncClient:
    """An httpx client for one operation: auth headers, verified TLS, the status hook, and the
    outbound rules (M2) at every connection — the target's policy, built in sync code with the
    tenant's approvals —, pinned to the checked address, with no cookies."""
    return outbound_async_client(
        purpose="mcp",
        policy=target.outbound,
        headers=target.headers,
        timeout=httpx2.Timeout(target.timeout, read=read_timeout if read_timeout is not None else target.timeout),
        verify=verified_tls_context(),
        event_hooks={"response": [watch.on_response]},
    )


@asynccontextmanager
async def streamable_http_streams(target: ServerTarget, watch: HttpStatusWatch) -> AsyncIterator[Any]:
    assert target.url is not None
    async with build_http_client(target, watch) as client:
        async with streamable_http_client(target.url, http_client=client) as streams:
            yield streams


@asynccontextmanager
async def sse_streams(target: ServerTarget, watch: HttpStatusWatch) -> AsyncIterator[Any]:
    assert target.url is not None
    stream_timeout = target.total_timeout + _SSE_STREAM_SLACK_SECONDS

    def client_factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        # sse_client passes its own headers/timeout; ours (the target's) are what count.
        return build_http_client(target, watch, read_timeout=stream_timeout)

    async with sse_client(
        target.url,
        timeout=target.timeout,
        sse_read_timeout=stream_timeout,
        httpx_client_factory=client_factory,
    ) as streams:
        yield streams
