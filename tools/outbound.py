"""Outbound safety (M2): where the platform may connect on a tenant's behalf.

A URL is resolved and every address it resolves to is checked; anything that is not a global
unicast address (loopback, private, link-local — which holds the cloud metadata address —,
carrier-grade NAT, multicast, reserved, unspecified, IPv4-mapped forms of those) is refused
unless the operator turned ASIXTO_ALLOW_PRIVATE_HOSTS on. Resolving through the system resolver
also catches the odd spellings of an address (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`).
Plain http is refused unless that same setting is on. The check runs at registration and again
before every connection."""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

# Addresses some clouds serve metadata on that `is_global` alone would not catch everywhere.
METADATA_ADDRESSES = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"),
                      ipaddress.ip_address("100.100.100.200")}


class OutboundRefused(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message


def _is_public(address):
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast and address not in METADATA_ADDRESSES


def resolve(host, port):
    try:
        # An address written plainly needs no resolver (this runs on every tool call).
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundRefused(_("The host %(host)s does not resolve.") % {"host": host}) from exc
    return sorted({ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}, key=str)


def check_url(url, *, allow_private=None):
    """Return the addresses `url` resolves to, or raise OutboundRefused with a clear reason."""
    allow_private = settings.ASIXTO_ALLOW_PRIVATE_HOSTS if allow_private is None else allow_private
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise OutboundRefused(_("Not a valid URL.")) from exc
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise OutboundRefused(_("Use an https:// URL."))
    if parts.username or parts.password:
        raise OutboundRefused(_("Put credentials in the auth headers, not in the URL."))
    if parts.scheme == "http" and not allow_private:
        raise OutboundRefused(_("Use https: plain http is only allowed in development."))
    addresses = resolve(parts.hostname, port)
    if not allow_private:
        blocked = [str(address) for address in addresses if not _is_public(address)]
        if blocked:
            raise OutboundRefused(
                _("%(host)s resolves to a private, loopback or link-local address (%(addresses)s); "
                  "the platform does not connect there.") % {"host": parts.hostname, "addresses": ", ".join(blocked)}
            )
    return addresses
