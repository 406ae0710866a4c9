"""HTTP clients for every outbound request (M2): they connect only where `tenants.outbound` allows.

    outbound_client(*, purpose=None, policy=None, headers=None, timeout=10.0, limits=None, verify=None,
                    event_hooks=None, http_spans=True) -> httpx.Client
                                                                 (our own requests: the model
                                                                  client, webhooks)
    outbound_transport(*, purpose=None, policy=None, limits=None, verify=None, http_spans=True)
                    -> httpx.BaseTransport                        (the gateway's tool calls: the
                                                                  same checked connections, sent
                                                                  without httpx.Client's layer)
    outbound_async_client(...same...) -> httpx2.AsyncClient       (the MCP SDK's transports)

Each new connection resolves the host, judges every address (`tenants.outbound.vet`) and then
connects to one of those addresses — never resolving again — so a name that answers a public
address to an earlier check and 127.0.0.1 now (DNS rebinding) gets nowhere. It is done in the
network backend under httpcore's connection pool: the URL keeps the host name, so TLS sends it
as SNI and verifies the certificate against it, and the pool keys connections by name (a
connection made for one name is never reused for another on the same address). A refusal
raises the stack's ConnectError before any socket opens; `tenants.outbound.refusal_of(error)`
finds the OutboundRefused inside it.

A caller with one total deadline for a request (the gateway's tool calls, SPEC G3) sends it
inside `total_deadline(deadline)`: every name lookup, connect, socket read and write of the sync
client is then clamped to the time left, so a server trickling its header bytes one at a time
cannot hold a call past it (a read timeout alone restarts with every byte). A lookup that takes
too long fails the connection like any refusal, with the kind `dns_timeout` (`refusal_of(error).kind`).

The clients keep no cookies (a client may be shared by every tenant), never follow redirects,
ignore proxy and netrc environment variables (a proxy would resolve names itself), and only
take TLS contexts that verify certificates and host names: there is no switch to skip that.

`policy=None` means the live rules of the current tenant: the operator setting read at connect
time and the approvals read from the database when a private address shows up — sync code
only. Async code (the SDK runs in an event loop) passes a policy built beforehand in sync code
with `tenants.outbound.outbound_policy(tenant=...)`; given none, it gets the operator setting
alone, without approvals.

Every client names its `purpose` (`tenants.outbound.PURPOSES`: "model", "mcp", "webhook",
"search"): only the private-host approvals given for that purpose, on the port connected to,
apply (issue 19, M2); `purpose=None` uses none (pages a customer or a model names).

For a model client or webhooks: check the saved URL early for a clear message
(`tenants.outbound.check_url(url, tenant=tenant, purpose=...)` raises OutboundRefused), then send
through `outbound_client(purpose=..., headers=..., timeout=...)` inside the tenant's schema (or with
`policy=outbound_policy(tenant=tenant, purpose=...)`); a refusal at connect time is an `httpx.ConnectError`
whose `refusal_of(...)` is not None — nothing was sent, and retrying will not help.

`http_spans=False` keeps the httpx instrumentation that tracing installs process-wide
(asixto/tracing.py) away from the client's requests: their caller makes a span of its own and
sends the trace context itself (`tracing.http_request`), for a fraction of the instrumentation's
CPU (it parses the URL and every header again on each request; P1, P3). The model client and the
gateway do; webhooks and the built-in tools' pages keep the instrumentation.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import anyio
import httpcore
import httpcore2
import httpx
import httpx2
from django.conf import settings

from tenants.outbound import (
    DNS_TIMEOUT_SECONDS,
    OutboundPolicy,
    OutboundRefused,
    addresses_of,
    literal_address,
    lookup_timed_out,
    resolve,
    vet,
)

DEFAULT_TIMEOUT = 10.0

# The scheme, policy and purpose of the request being sent, for the network backend below, which
# is only told a host and a port. Set around each request; a connection is made inside it.
_sending: ContextVar[tuple[str, OutboundPolicy | None, str | None] | None] = ContextVar("outbound_sending", default=None)
# The time.monotonic() by which the current request must be over, if its caller set one.
_deadline: ContextVar[float | None] = ContextVar("outbound_deadline", default=None)


@contextmanager
def total_deadline(deadline: float) -> Iterator[None]:
    """Requests of the sync clients sent inside this end by `deadline` (time.monotonic()), however
    the server paces its bytes: each network wait gets at most the time left."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _clamped(timeout: float | None, timed_out: type[Exception]) -> float | None:
    """`timeout` cut to the time left before the current deadline; `timed_out` once none is left."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise timed_out("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


class RefusedConnection(httpcore.ConnectError, OutboundRefused):
    """A connection the outbound rules refused (httpx stack); httpx re-raises it as ConnectError.
    Its `kind` and `code` are the refusal's (kind `dns_timeout` for a lookup that took too long)."""

    def __init__(self, message, **coded):
        OutboundRefused.__init__(self, message, **coded)


class AsyncRefusedConnection(httpcore2.ConnectError, OutboundRefused):
    """The same, for the httpx2 stack the MCP SDK uses."""

    def __init__(self, message, **coded):
        OutboundRefused.__init__(self, message, **coded)


class _NoCookies(DefaultCookiePolicy):
    def set_ok(self, cookie, request):
        return False

    def return_ok(self, cookie, request):
        return False

    def domain_return_ok(self, domain, request):
        return False


def no_cookies() -> CookieJar:
    """A cookie jar that keeps nothing and sends nothing."""
    return CookieJar(policy=_NoCookies())


def _judge(host: str, port: int, addresses, *, live_ok: bool) -> None:
    scheme, policy, purpose = _sending.get() or ("https", None, None)
    if policy is None and not live_ok:
        policy = OutboundPolicy(allow_private=settings.ASIXTO_ALLOW_PRIVATE_HOSTS)
    vet(scheme=scheme, host=host, addresses=addresses, policy=policy, port=port, purpose=purpose)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until the current total deadline."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes, timeout=None):
        return self._inner.read(max_bytes, _clamped(timeout, httpcore.ReadTimeout))

    def write(self, buffer, timeout=None):
        self._inner.write(buffer, _clamped(timeout, httpcore.WriteTimeout))

    def close(self):
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        timeout = _clamped(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info):
        return self._inner.get_extra_info(info)


class _CheckedBackend(httpcore.NetworkBackend):
    """Resolve, judge, then connect to a judged address (sync)."""

    def __init__(self):
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        timeout = _clamped(timeout, httpcore.ConnectTimeout)
        try:
            addresses = resolve(host, port, timeout=timeout)
            _judge(host, port, addresses, live_ok=True)
        except OutboundRefused as exc:
            raise RefusedConnection(exc.message, code=exc.code, params=exc.params, kind=exc.kind) from None
        failure = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    str(address), port, timeout=_clamped(timeout, httpcore.ConnectTimeout), local_address=local_address,
                    socket_options=socket_options,
                )
                return _DeadlineStream(stream)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # like socket.create_connection: try the next address
        raise failure

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise RefusedConnection("Unix sockets are not outbound targets.")

    def sleep(self, seconds):
        self._inner.sleep(seconds)


class _AsyncCheckedBackend(httpcore2.AsyncNetworkBackend):
    """Resolve, judge, then connect to a judged address (async, httpx2)."""

    def __init__(self):
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            with anyio.fail_after(DNS_TIMEOUT_SECONDS if timeout is None else min(timeout, DNS_TIMEOUT_SECONDS)):
                addresses = await _resolve_async(host, port)
        except TimeoutError:
            late = lookup_timed_out(host)
            raise AsyncRefusedConnection(late.message, code=late.code, params=late.params, kind=late.kind) from None
        try:
            _judge(host, port, addresses, live_ok=False)
        except OutboundRefused as exc:
            raise AsyncRefusedConnection(exc.message, code=exc.code, params=exc.params, kind=exc.kind) from None
        failure = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise AsyncRefusedConnection("Unix sockets are not outbound targets.")

    async def sleep(self, seconds):
        await self._inner.sleep(seconds)


async def _resolve_async(host: str, port: int):
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    try:
        # In a worker thread, as asyncio does it; the same system resolver as the sync path.
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return []
    return addresses_of(infos)


def _uninstrumented_send(transport: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
    """httpx's own HTTPTransport.handle_request, without what an instrumentation wrapped around it
    (looked up on each request: tracing may be installed after this transport was built)."""
    send = vars(httpx.HTTPTransport)["handle_request"]
    return getattr(send, "__wrapped__", send)(transport, request)


class _CheckedTransport(httpx.HTTPTransport):
    def __init__(self, *, policy: OutboundPolicy | None, verify: ssl.SSLContext, limits: httpx.Limits, purpose: str | None,
                 http_spans: bool = True):
        super().__init__(verify=verify, limits=limits, trust_env=False)
        self._policy, self._purpose = policy, purpose
        self._http_spans = http_spans
        self._pool = httpcore.ConnectionPool(
            ssl_context=verify, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_CheckedBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        token = _sending.set((request.url.scheme, self._policy, self._purpose))
        try:
            return super().handle_request(request) if self._http_spans else _uninstrumented_send(self, request)
        finally:
            _sending.reset(token)


class _AsyncCheckedTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, *, policy: OutboundPolicy | None, verify: ssl.SSLContext, limits: httpx2.Limits, purpose: str | None):
        super().__init__(verify=verify, limits=limits, trust_env=False)
        self._policy, self._purpose = policy, purpose
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=verify, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_AsyncCheckedBackend(),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        token = _sending.set((request.url.scheme, self._policy, self._purpose))
        try:
            return await super().handle_async_request(request)
        finally:
            _sending.reset(token)


@cache
def default_tls_context() -> ssl.SSLContext:
    """One verified context for both stacks, so a certificate verifies on every path or on none:
    the system's CAs (operators add an internal CA there, or point SSL_CERT_FILE / SSL_CERT_DIR
    at a bundle). Built once per process: loading CAs costs ~20 ms; a context is thread-safe."""
    return httpx2.create_ssl_context(verify=True)


def _verifying(context: ssl.SSLContext) -> ssl.SSLContext:
    if context.verify_mode != ssl.CERT_REQUIRED or not context.check_hostname:
        raise ValueError("outbound TLS must verify certificates and host names (SPEC M2)")
    return context


def outbound_client(
    *,
    purpose: str | None = None,
    policy: OutboundPolicy | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    limits: httpx.Limits | None = None,
    verify: ssl.SSLContext | None = None,
    event_hooks: Mapping[str, list[Any]] | None = None,
    http_spans: bool = True,
) -> httpx.Client:
    """A sync httpx client whose every connection passes the outbound rules (see the module)."""
    limits = limits or httpx.Limits()
    context = _verifying(verify or default_tls_context())
    return httpx.Client(
        transport=_CheckedTransport(policy=policy, verify=context, limits=limits, purpose=purpose, http_spans=http_spans),
        headers=dict(headers or {}), timeout=timeout, cookies=no_cookies(), follow_redirects=False,
        trust_env=False, event_hooks=dict(event_hooks or {}),
    )


def outbound_transport(
    *,
    purpose: str | None = None,
    policy: OutboundPolicy | None = None,
    limits: httpx.Limits | None = None,
    verify: ssl.SSLContext | None = None,
    http_spans: bool = True,
) -> httpx.BaseTransport:
    """The transport under `outbound_client`, with the same checks on every new connection.

    For a caller that builds its own `httpx.Request` (with its `timeout` extension) and needs
    none of what httpx.Client adds around a request: no cookies, no redirects, no auth, no event
    hooks. That layer costs about as much CPU as the rest of a small request on loopback (P1).
    The caller closes each response."""
    limits = limits or httpx.Limits()
    return _CheckedTransport(policy=policy, verify=_verifying(verify or default_tls_context()), limits=limits, purpose=purpose,
                             http_spans=http_spans)


def outbound_async_client(
    *,
    purpose: str | None = None,
    policy: OutboundPolicy | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx2.Timeout | float = DEFAULT_TIMEOUT,
    limits: httpx2.Limits | None = None,
    verify: ssl.SSLContext | None = None,
    event_hooks: Mapping[str, list[Any]] | None = None,
) -> httpx2.AsyncClient:
    """An httpx2 (the MCP SDK's fork of httpx) async client under the same rules."""
    limits = limits or httpx2.Limits()
    context = _verifying(verify or default_tls_context())
    return httpx2.AsyncClient(
        transport=_AsyncCheckedTransport(policy=policy, verify=context, limits=limits, purpose=purpose),
        headers=dict(headers or {}), timeout=timeout, cookies=no_cookies(), follow_redirects=False,
        trust_env=False, event_hooks=dict(event_hooks or {}),
    )
