"""Outbound safety (M2): private, loopback, link-local and metadata addresses are refused in every
spelling, plain http is refused, unless the operator setting allows them."""

import pytest
from django.utils import translation

from tools.outbound import OutboundRefused, check_url

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
