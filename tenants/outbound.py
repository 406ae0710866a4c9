"""Outbound safety (M2): where the platform may connect on a tenant's behalf.

A host is resolved and every address it resolves to is judged. Only global unicast is public:
loopback, private, link-local (which holds the cloud metadata address), carrier-grade NAT,
multicast, reserved and documentation ranges are not, nor are the IPv6 forms that lead to an
IPv4 address the platform must not reach (IPv4-mapped, NAT64 and 6to4 are judged by the IPv4
address inside; IPv4-compatible, Teredo and site-local are refused outright). Resolving through
the system resolver also catches odd spellings (`2130706433`, `0x7f000001`, `127.1`).

A non-public address is refused unless the operator turned ASIXTO_ALLOW_PRIVATE_HOSTS on
(development and tests) or approved that host or network (`ApprovedPrivateHost`, for one tenant
or for all). Plain http is refused unless that setting is on, or every address is private and
approved with plain http allowed: self-hosted models on a private network rarely have
certificates a public CA signed.

Refusals read the same whatever the reason (a private address, a name that does not resolve),
name no address and no port, and happen before any connection, so error texts cannot map a
private network. This module judges; `tenants.outbound_http` connects to what it judged.

A name is looked up in a worker thread with a time limit of its own (at most
DNS_TIMEOUT_SECONDS, less when the caller has less time): the system resolver has none a
caller controls, and a name server that never answers must not pin a web thread. A lookup
that takes too long is `LookupTimedOut`, an OutboundRefused of the kind `dns_timeout`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import idna
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Addresses some clouds serve metadata on; never reachable through a host-name approval.
METADATA_ADDRESSES = frozenset(map(ipaddress.ip_address, ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")))
# Ranges `is_global` misses on some Python versions.
_NOT_GLOBAL = tuple(map(ipaddress.ip_network, (
    "192.0.0.0/24",  # IETF protocol assignments
    "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
    "2001::/23",  # IETF protocol assignments, Teredo among them
    "2001:db8::/32", "3fff::/20",  # documentation
)))
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# What a host-name approval may cover: private networks, not the platform's own loopback nor link-local.
_PRIVATE_NETWORKS = tuple(map(ipaddress.ip_network, (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7",
)))
# An approval broader than this would be the global switch in disguise.
MIN_PREFIX = {4: 8, 6: 8}
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$")


# The longest any one name lookup may take, whatever time the caller has left.
DNS_TIMEOUT_SECONDS = 5.0
# Lookups that may run at once; a resolver that hangs holds a thread each, never more than these.
DNS_THREADS = 16


class OutboundRefused(Exception):
    """`message` in the active language; `code` (the English msgid) and `params` let a stored
    refusal be shown later in a reader's language (A3). Build one with `refusal`. `kind` says
    which failure it is to the callers that classify it (`dns_timeout` for a slow lookup)."""

    kind = "outbound_refused"

    def __init__(self, message, *, code: str = "", params: dict | None = None, kind: str | None = None):
        super().__init__(message)
        self.message = message
        self.code, self.params = code, dict(params or {})
        if kind:
            self.kind = kind

    def stored(self) -> dict:
        """What a record keeps of this refusal: the English text (`detail`: the msgid with its
        values, English being the source language), and the msgid and its values, so that a
        reader sees it in their own language (A3)."""
        if not self.code:
            return {"detail": str(self.message)}
        english = self.code % self.params if self.params else self.code
        return {"detail": english, "detail_code": self.code, "detail_params": {k: str(v) for k, v in self.params.items()}}


def refusal(msgid: str, **params) -> OutboundRefused:
    """A refusal from a `gettext_noop` msgid and its values."""
    return OutboundRefused(_(msgid) % params if params else _(msgid), code=msgid, params=params)


class LookupTimedOut(OutboundRefused):
    """The host name did not resolve in time: nothing was sent (a later try may do better)."""

    kind = "dns_timeout"


def refused_host(host: str, *, scheme: str = "https", port: int | None = None, tenant_slug: str = "",
                 purpose: str = "") -> OutboundRefused:
    """The one refusal for a host that is not public (or does not resolve): it says neither. For a
    tenant it names the exact command an operator runs to approve what was asked for."""
    if not tenant_slug:
        return refusal(gettext_noop("The platform does not connect to %(host)s: it does not resolve to a public address. "
                                    "A private host needs the platform operator's approval."), host=host)
    return refusal(gettext_noop("The platform does not connect to %(host)s: it does not resolve to a public address. "
                                "A private host needs the platform operator's approval: the operator runs "
                                "%(command)s (README, “Approving a private host”)."),
                   host=host, command=approve_command(host, scheme=scheme, port=port, tenant_slug=tenant_slug, purpose=purpose))


def approve_command(host: str, *, scheme: str, port: int | None, tenant_slug: str, purpose: str) -> str:
    """The `./manage private_host_approve` line that approves `scheme://host:port` for one
    tenant and purpose (tenants/management/commands/private_host_approve.py)."""
    words = ["./manage", "private_host_approve", normalise_host(host), "--tenant", tenant_slug,
             "--port", str(port or (443 if scheme == "https" else 80))]
    if purpose:
        words += ["--for", purpose]
    if scheme != "https":
        words.append("--allow-http")
    return shlex.join(words)


def refused_http() -> OutboundRefused:
    return refusal(gettext_noop("Use https: plain http is only allowed to private hosts the platform operator approved for it."))


def reached(address: Address) -> Address:
    """The address a packet really goes to: the IPv4 inside an IPv4-mapped, NAT64 or 6to4 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def is_public(address: Address) -> bool:
    target = reached(address)
    if target in METADATA_ADDRESSES or target.is_multicast or not target.is_global:
        return False
    if any(target in network for network in _NOT_GLOBAL):
        return False
    return target.version == 4 or target in _GLOBAL_UNICAST


def normalise_host(host: str) -> str:
    host = host.strip().strip("[]").lower().rstrip(".")
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")  # as httpx sends it
        except idna.IDNAError:
            pass
    return host


def normalise_approved_host(text: str) -> str:
    """An approval's host as stored: a host name, an address or a network; ValueError if none."""
    text = normalise_host(text or "")
    not_a_host = _("Give one host name, address or network, such as models.internal, 10.0.5.20 or 10.0.5.0/24.")
    if "://" in text or text.count("/") > 1:
        raise ValueError(not_a_host)
    if "/" in text:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(_("Not a valid network, such as 10.0.5.0/24.")) from None
        if network.prefixlen < MIN_PREFIX[network.version]:
            raise ValueError(
                _("Too broad: approve one host or a network of /%(prefix)d or narrower.") % {"prefix": MIN_PREFIX[network.version]}
            )
        return str(network)
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(text) or re.fullmatch(r"[0-9.]+", text):
        raise ValueError(not_a_host)
    return text


# What an approval is for (issue 19, M2): a tenant's model endpoints, its MCP servers, its webhooks,
# its search backend. Pages a customer or a model names (`read_page`) never use an approval.
PURPOSES = ("model", "mcp", "webhook", "search")
DEFAULT_PORTS = frozenset({80, 443})  # what an approval naming no port covers


def parse_ports(text: str) -> frozenset[int]:
    """"443", "8000, 8443" → the ports; ValueError for anything else. Empty: DEFAULT_PORTS."""
    ports = set()
    for part in filter(None, (piece.strip() for piece in str(text or "").split(","))):
        if not (part.isascii() and part.isdigit()) or not 1 <= int(part) <= 65535:
            raise ValueError(gettext_noop("Ports are numbers from 1 to 65535, separated by commas."))
        ports.add(int(part))
    return frozenset(ports)


@dataclass(frozen=True)
class Approval:
    """One approved private host name or network, as the check needs it (plain data): on the
    ports it names (DEFAULT_PORTS when it names none)."""

    host: str = ""
    network: Network | None = None
    allow_http: bool = False
    ports: frozenset[int] = frozenset()

    @classmethod
    def of(cls, host: str, *, allow_http: bool = False, ports: str = "") -> Approval:
        host = normalise_approved_host(host)
        try:
            ports_named = parse_ports(ports)
        except ValueError:
            ports_named = frozenset({0})  # a stored value no port matches: it covers nothing
        try:
            return cls(network=ipaddress.ip_network(host), allow_http=allow_http, ports=ports_named)
        except ValueError:
            return cls(host=host, allow_http=allow_http, ports=ports_named)

    def covers(self, host: str, address: Address, port: int | None = None) -> bool:
        if port is not None and port not in (self.ports or DEFAULT_PORTS):
            return False
        if self.network is not None:
            return address in self.network or reached(address) in self.network
        # A name is trusted for its private addresses only: its owner controls its DNS, and
        # loopback or metadata addresses would reach the platform itself.
        target = reached(address)
        return (
            self.host == normalise_host(host)
            and target not in METADATA_ADDRESSES
            and any(target in network for network in _PRIVATE_NETWORKS)
        )


@dataclass(frozen=True)
class OutboundPolicy:
    """Where connections may go: the operator setting and the approvals that apply. Plain data,
    so async code can use it; build it with `outbound_policy()` in sync code."""

    allow_private: bool = False
    approvals: tuple[Approval, ...] = ()
    tenant_slug: str = ""  # whose rules these are, and what for: named in a refusal's command line
    purpose: str = ""

    def vet(self, *, scheme: str, host: str, addresses: Sequence[Address], port: int | None = None) -> None:
        """Raise OutboundRefused unless `scheme://host:port` resolving to `addresses` may be reached."""
        if self.allow_private:
            if not addresses:
                raise refusal(gettext_noop("The host %(host)s does not resolve."), host=host)
            return
        if not addresses:
            raise refused_host(host)  # nothing to approve: the name does not resolve (said as for a private one)
        private = [address for address in addresses if not is_public(address)]
        for address in private:
            if not any(approval.covers(host, address, port) for approval in self.approvals):
                raise refused_host(host, scheme=scheme, port=port, tenant_slug=self.tenant_slug, purpose=self.purpose)
        if scheme != "https":
            # Plain http only where nothing is public and every address was approved for it.
            if len(private) != len(addresses) or not all(
                any(approval.allow_http and approval.covers(host, address, port) for approval in self.approvals)
                for address in addresses
            ):
                raise refused_http()


def outbound_policy(*, tenant=None, purpose: str | None = None) -> OutboundPolicy:
    """The rules for `tenant` (default: the tenant whose schema is active) as they are now:
    the operator setting and the approvals for that tenant or for every tenant, given for
    `purpose` (PURPOSES; None: no approval applies). Reads the database, so call it from sync code."""
    from django.db import connection
    from django.db.models import Q

    from tenants.models import ApprovedPrivateHost

    schema = tenant.schema_name if tenant is not None else connection.schema_name
    applies = Q(tenant__isnull=True)
    if schema and schema != "public":
        applies |= Q(tenant__schema_name=schema)
    rows = ApprovedPrivateHost.objects.filter(applies, purposes__contains=[purpose]).values_list("host", "allow_http", "ports")
    return OutboundPolicy(
        allow_private=settings.ASIXTO_ALLOW_PRIVATE_HOSTS,
        approvals=tuple(Approval.of(host, allow_http=allow_http, ports=ports) for host, allow_http, ports in rows)
        if purpose in PURPOSES else (),
        tenant_slug=_slug_of(tenant, schema), purpose=purpose if purpose in PURPOSES else "",
    )


def _slug_of(tenant, schema: str) -> str:
    if tenant is not None:
        return tenant.slug
    if not schema or schema == "public":
        return ""
    from django.db import connection

    return getattr(getattr(connection, "tenant", None), "slug", "") or ""


def vet(*, scheme: str, host: str, addresses: Sequence[Address], policy: OutboundPolicy | None = None, tenant=None,
        port: int | None = None, purpose: str | None = None) -> None:
    """`policy.vet`, or with no policy the live rules: the setting now, and the approvals for
    `purpose` read only when they matter (a non-public address or plain http), so a public host
    costs no query."""
    if policy is None:
        allow = settings.ASIXTO_ALLOW_PRIVATE_HOSTS
        if allow or purpose is None or (scheme == "https" and addresses and all(map(is_public, addresses))):
            policy = OutboundPolicy(allow_private=allow)
        else:
            policy = _kept_policy(tenant=tenant, purpose=purpose)
    policy.vet(scheme=scheme, host=host, addresses=addresses, port=port)


def _kept_policy(*, tenant, purpose: str) -> OutboundPolicy:
    """`outbound_policy` as this process last read it, until an approval changes: every tool call
    to a server on an approved private network checks it again (tenants/outbound_approvals.py)."""
    from django.db import connection

    from tenants.outbound_approvals import cached_policy

    schema = tenant.schema_name if tenant is not None else connection.schema_name
    return cached_policy(schema=schema, key=(purpose, _slug_of(tenant, schema)),
                         load=lambda: outbound_policy(tenant=tenant, purpose=purpose))


@lru_cache(maxsize=1024)
def literal_address(host: str) -> Address | None:
    # Remembered: every tool call resolves its server's host again (M2), and parsing the
    # literal is most of that for a server named by its address (addresses are immutable).
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int, *, timeout: float | None = None) -> list[Address]:
    """Every address `host` resolves to, in the resolver's order; [] if it does not resolve.
    Raises LookupTimedOut after `timeout` seconds (at most DNS_TIMEOUT_SECONDS)."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]  # an address written plainly needs no resolver (this runs on every tool call)
    limit = DNS_TIMEOUT_SECONDS if timeout is None else max(min(timeout, DNS_TIMEOUT_SECONDS), 0.0)
    lookup = _lookups().submit(_getaddrinfo, host, port)
    try:
        infos = lookup.result(timeout=limit)
    except FutureTimeout:
        lookup.cancel()  # still queued behind hung lookups: it never runs
        raise lookup_timed_out(host) from None
    return addresses_of(infos)


def lookup_timed_out(host: str) -> LookupTimedOut:
    msgid = gettext_noop("Looking up the host name %(host)s took too long.")
    return LookupTimedOut(_(msgid) % {"host": host}, code=msgid, params={"host": host})


def _getaddrinfo(host, port):
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return []


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _lookups() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=DNS_THREADS, thread_name_prefix="asixto-dns")
    return _executor


def _forget_lookups_after_fork():
    # A forked child has none of the parent's lookup threads (and may have copied a held lock).
    global _executor, _executor_lock
    _executor, _executor_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_lookups_after_fork)


def addresses_of(infos: Iterable[tuple]) -> list[Address]:
    addresses: dict[Address, None] = {}
    for info in infos:
        try:
            addresses[ipaddress.ip_address(info[4][0])] = None
        except ValueError:
            continue
    return list(addresses)


def check_url(url, *, policy: OutboundPolicy | None = None, tenant=None, allow_private: bool | None = None,
              timeout: float | None = None, purpose: str | None = None):
    """Return the addresses `url` resolves to, or raise OutboundRefused with a clear reason
    (LookupTimedOut when the name took longer than `timeout`, or DNS_TIMEOUT_SECONDS, to resolve).

    With no `policy`, the live rules for `tenant` (default: the active schema's tenant) and its
    approvals for `purpose` (none without one); `allow_private` forces the operator setting
    either way, with no approvals."""
    if policy is None and allow_private is not None:
        policy = OutboundPolicy(allow_private=allow_private)
    target = _target(url) if isinstance(url, str) and len(url) <= 2048 else _target.__wrapped__(url)
    if target == "invalid":
        raise refusal(gettext_noop("Not a valid URL."))
    if target == "scheme":
        raise refusal(gettext_noop("Use an https:// URL."))
    if target == "credentials":
        raise refusal(gettext_noop("Put credentials in the auth headers, not in the URL."))
    scheme, host, port = target
    addresses = resolve(host, port, timeout=timeout)
    vet(scheme=scheme, host=host, addresses=addresses, policy=policy, tenant=tenant, port=port, purpose=purpose)
    return addresses


@lru_cache(maxsize=1024)
def _target(url) -> tuple[str, str, int] | str:
    """(scheme, host, port) of an outbound URL, or what is wrong with it. Remembered: every tool
    call checks its server's URL again (the address is looked up again each time, not this)."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except (ValueError, TypeError, AttributeError):
        return "invalid"
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "scheme"
    if parts.username or parts.password:
        return "credentials"
    return parts.scheme, parts.hostname, port


def endpoint_problem(url: str, *, tenant=None, purpose: str) -> str | None:
    """Why `url` cannot be saved as one of `tenant`'s endpoints for `purpose` (a model, a webhook,
    a search backend), or None. For serializers and forms: the same rules as MCP servers, that
    tenant's approvals for that purpose included."""
    if not url:
        return None
    try:
        check_url(url, tenant=tenant, purpose=purpose)
    except OutboundRefused as exc:
        return exc.message
    return None


def refusal_of(error: BaseException | None) -> OutboundRefused | None:
    """The OutboundRefused behind `error` (an HTTP client's ConnectError wraps it), if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OutboundRefused):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
