"""Name look-ups are bounded (M2, G3): the system resolver has no time limit a caller controls,
so every look-up of the outbound checks runs with one, and a look-up that takes too long is a
clear refusal with a code (`dns_timeout`) instead of a thread pinned for as long as a name
server likes. The resolver double hangs where the operating system would."""

import time

import httpx
import pytest
from django.utils import translation

from tenants import outbound
from tenants.outbound import LookupTimedOut, OutboundPolicy, OutboundRefused, check_url, refusal_of
from tenants.outbound_http import outbound_client, total_deadline
from tests.support.outbound import NO_ANSWER, ConnectionCounter, DnsDouble

NAME = "mcp.slow-dns.test"
LAB = OutboundPolicy(allow_private=True)


@pytest.fixture
def hanging_dns(monkeypatch):
    resolver = DnsDouble(monkeypatch, {NAME: [NO_ANSWER]})
    yield resolver
    resolver.release()


def test_it_gives_up_a_lookup_that_does_not_end_within_the_callers_time(hanging_dns):
    """M2, G3: `check_url(timeout=…)` ends a hung look-up as a LookupTimedOut (an
    OutboundRefused, so every caller already handles it) that names the host and says why."""
    with translation.override("en"), pytest.raises(LookupTimedOut) as refused:
        check_url(f"https://{NAME}/mcp", policy=LAB, timeout=0.2)
    assert hanging_dns.hanging.is_set()
    assert isinstance(refused.value, OutboundRefused) and refused.value.kind == "dns_timeout"
    assert NAME in refused.value.message and "took too long" in refused.value.message


def test_it_bounds_a_lookup_even_when_the_caller_gives_no_time(hanging_dns, monkeypatch):
    """M2: with no time given, a look-up still ends after DNS_TIMEOUT_SECONDS."""
    monkeypatch.setattr(outbound, "DNS_TIMEOUT_SECONDS", 0.2)
    with pytest.raises(LookupTimedOut):
        check_url(f"https://{NAME}/mcp", policy=LAB)


def test_it_fails_a_connection_whose_lookup_hangs_with_the_code_dns_timeout(monkeypatch):
    """M2, G3: the client's own look-up at connect time (after a check that passed) is bounded
    by the request's total deadline: a connect error whose refusal says `dns_timeout`, and the
    port never sees a connection."""
    with ConnectionCounter() as target:
        resolver = DnsDouble(monkeypatch, {NAME: ["127.0.0.1", NO_ANSWER]})
        try:
            check_url(f"http://{NAME}:{target.port}/", policy=LAB)  # the first answer
            with outbound_client(policy=LAB) as client, pytest.raises(httpx.ConnectError) as failed:
                with total_deadline(time.monotonic() + 0.3):
                    client.get(f"http://{NAME}:{target.port}/")
        finally:
            resolver.release()
    assert resolver.hanging.is_set()
    assert refusal_of(failed.value).kind == "dns_timeout"
    assert target.count == 0
