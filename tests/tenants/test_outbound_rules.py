"""Outbound safety (M2): private, loopback, link-local and metadata addresses are refused in every
spelling, plain http is refused, unless the operator setting allows them."""

import pytest
from django.utils import translation

from tenants.outbound import OutboundRefused, check_url

PRIVATE_URLS = [
    "https://127.0.0.1/mcp",
    "https://10.1.2.3/mcp",
    "https://192.168.0.10:8443/mcp",
    "https://172.16.5.4/mcp",
    "https://169.254.169.254/latest/meta-data",  # cloud metadata (link-local)
    "https://100.100.100.200/",  # metadata on another cloud; carrier-grade NAT range
    "https://0.0.0.0/",
    "https://[::1]/mcp",
    "https://[fe80::1]/mcp",
    "https://[fd00:ec2::254]/",
    "https://[::ffff:127.0.0.1]/mcp",  # IPv4-mapped loopback
    "https://[::ffff:a9fe:a9fe]/",  # IPv4-mapped metadata address
    "https://2130706433/mcp",  # decimal 127.0.0.1
    "https://0x7f000001/mcp",  # hex 127.0.0.1
    "https://0177.0.0.1/mcp",  # octal 127.0.0.1
    "https://127.1/mcp",  # short form
    "https://0xa9fea9fe/",  # hex 169.254.169.254
    "https://localhost/mcp",  # a DNS name that resolves privately
    "https://LOCALHOST./mcp",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_it_refuses_private_addresses_in_any_spelling(url):
    """M2: loopback, private, link-local and metadata addresses — IPv4, IPv6, decimal, hex, octal,
    names — are refused when private hosts are not allowed."""
    with translation.override("en"), pytest.raises(OutboundRefused) as refused:
        check_url(url, allow_private=False)
    assert "private" in refused.value.message or "resolve" in refused.value.message


@pytest.mark.parametrize("url", ["https://127.0.0.1:9000/mcp", "http://localhost:9000/mcp", "https://[::1]/mcp"])
def test_it_allows_private_hosts_when_the_operator_setting_is_on(url):
    """M2: development and tests may use loopback servers."""
    assert check_url(url, allow_private=True)


def test_it_accepts_a_public_address_over_https():
    """M2: a global address over https passes (an IP literal: no DNS needed)."""
    assert [str(a) for a in check_url("https://93.184.216.34/mcp", allow_private=False)] == ["93.184.216.34"]


@pytest.mark.parametrize(
    "url", ["http://93.184.216.34/mcp", "ftp://93.184.216.34/", "https://user:pw@93.184.216.34/", "not a url", "https:///x"]
)
def test_it_refuses_plain_http_odd_schemes_and_credentials_in_urls(url):
    """M2: production URLs are https, with no credentials inside them."""
    with pytest.raises(OutboundRefused):
        check_url(url, allow_private=False)


def test_it_refuses_names_that_do_not_resolve():
    """M2: an unresolvable host is a clear error, not a crash."""
    with translation.override("en"), pytest.raises(OutboundRefused, match="does not resolve"):
        check_url("https://no-such-host.invalid/mcp", allow_private=False)


EMBEDDED_AND_ODD_IPV6 = [
    "https://[::7f00:1]/mcp",  # IPv4-compatible 127.0.0.1
    "https://[::a9fe:a9fe]/",  # IPv4-compatible metadata address
    "https://[64:ff9b::7f00:1]/mcp",  # NAT64 well-known prefix, 127.0.0.1 inside
    "https://[64:ff9b::a00:5]/mcp",  # NAT64, 10.0.0.5 inside
    "https://[64:ff9b:1::a00:5]/mcp",  # NAT64 local-use prefix
    "https://[2002:7f00:1::1]/mcp",  # 6to4 of 127.0.0.1
    "https://[2002:a9fe:a9fe::1]/",  # 6to4 of the metadata address
    "https://[2001::1]/mcp",  # Teredo
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/mcp",  # Teredo with a real-looking client
    "https://[fec0::1]/mcp",  # site-local (deprecated)
    "https://[ff02::1]/mcp",  # multicast
    "https://[2001:db8::1]/mcp",  # documentation
    "https://[3fff::1]/mcp",  # documentation (2024)
    "https://[100::1]/mcp",  # discard-only
    "https://[::]/mcp",
    "https://192.0.0.8/mcp",  # IETF protocol assignments
    "https://198.18.0.1/mcp",  # benchmarking
    "https://224.0.0.1/mcp",  # multicast
    "https://240.0.0.1/mcp",  # reserved
    "https://255.255.255.255/mcp",
]


@pytest.mark.parametrize("url", EMBEDDED_AND_ODD_IPV6)
def test_it_refuses_ipv6_forms_that_embed_private_ipv4_and_anything_not_global_unicast(url):
    """M2: IPv4-compatible, NAT64, 6to4, Teredo, site-local and every other address outside global
    unicast are refused; none of them is a place a tenant's server legitimately lives."""
    with pytest.raises(OutboundRefused):
        check_url(url, allow_private=False)


@pytest.mark.parametrize("url", [
    "https://[2606:4700:4700::1111]/mcp",  # global unicast
    "https://[64:ff9b::5db8:d822]/mcp",  # NAT64 of 93.184.216.34: what DNS64 gives an IPv6-only host
    "https://[::ffff:93.184.216.34]/mcp",  # IPv4-mapped public address
])
def test_it_accepts_global_ipv6_and_forms_that_reach_a_public_ipv4(url):
    """M2: the refusals above are precise: global unicast and translations of public IPv4 pass."""
    assert check_url(url, allow_private=False)


def test_it_refuses_private_and_unresolvable_hosts_with_the_same_words(monkeypatch):
    """M2: a refusal says neither which address a name has nor whether it exists: an internal
    name, a private address and a name that does not resolve read the same."""
    from tests.support.outbound import DnsDouble

    DnsDouble(monkeypatch, {"db.internal.test": ["10.0.0.7"]})
    messages = []
    with translation.override("en"):
        for host in ("db.internal.test", "10.0.0.7", "no-such-host.invalid", "127.0.0.1"):
            with pytest.raises(OutboundRefused) as refused:
                check_url(f"https://{host}:5432/mcp", allow_private=False)
            messages.append(refused.value.message.replace(host, "HOST"))
    assert len(set(messages)) == 1, messages
    assert "10.0.0.7" not in messages[0] and "5432" not in messages[0]
