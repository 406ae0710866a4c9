"""The outbound HTTP clients (M2) every outbound user builds on: the connect-time check and
the pinned address, TLS verified on the original name, no cookies, on both HTTP stacks (httpx
for our own requests, httpx2 for the MCP SDK)."""

import ssl

import anyio
import httpx
import httpx2
import pytest

from tenants.outbound import Approval, OutboundPolicy, OutboundRefused, refusal_of
from tenants.outbound_http import outbound_async_client, outbound_client
from tests.support.outbound import PUBLIC_ADDRESS, ConnectionCounter, DnsDouble, TestPki, TlsHttpServer, with_cookie
from tests.support.mcp_servers import serve_asgi

STRICT = OutboundPolicy(allow_private=False)
LAB = OutboundPolicy(allow_private=True)


def get_async(client_factory, url):
    async def go():
        async with client_factory() as client:
            return await client.get(url)

    return anyio.run(go)


def test_it_refuses_a_rebinding_name_at_connect_time_on_both_stacks(monkeypatch):
    """M2: whatever was checked before, each connection resolves and checks again and connects
    to that checked address; the loopback port never sees a connection."""
    with ConnectionCounter() as target:
        url = f"https://mcp.rebind.test:{target.port}/"
        DnsDouble(monkeypatch, {"mcp.rebind.test": ["127.0.0.1"]})
        with outbound_client(policy=STRICT) as client, pytest.raises(httpx.ConnectError) as sync_error:
            client.get(url)
        with pytest.raises(httpx2.ConnectError) as async_error:
            get_async(lambda: outbound_async_client(policy=STRICT), url)
    assert target.count == 0
    for error in (sync_error.value, async_error.value):
        refusal = refusal_of(error)
        assert isinstance(refusal, OutboundRefused) and "mcp.rebind.test" in refusal.message


def test_it_connects_to_the_address_it_checked_not_to_a_fresh_answer(monkeypatch):
    """M2: the name first answers an approved loopback address (127.0.0.2), then a forbidden one
    (127.0.0.1) on the same port: only the checked address gets the connection, on both stacks."""
    with ConnectionCounter() as forbidden, ConnectionCounter("127.0.0.2", forbidden.port) as checked:
        policy = OutboundPolicy(approvals=(Approval.of("127.0.0.2", allow_http=True, ports=str(forbidden.port)),))
        url = f"http://mcp.rebind.test:{forbidden.port}/"
        for stack in ("sync", "async"):
            DnsDouble(monkeypatch, {"mcp.rebind.test": ["127.0.0.2", "127.0.0.1"]})
            with pytest.raises((httpx.HTTPError, httpx2.HTTPError)) as failed:  # the port hangs up
                if stack == "sync":
                    with outbound_client(policy=policy) as client:
                        client.get(url)
                else:
                    get_async(lambda: outbound_async_client(policy=policy), url)
            assert refusal_of(failed.value) is None
    assert (checked.count, forbidden.count) == (2, 0)


def test_it_checks_the_live_setting_when_no_policy_is_given(db, settings):
    """M2: the shared clients (no policy given) read ASIXTO_ALLOW_PRIVATE_HOSTS at connect time."""
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    with ConnectionCounter() as target, outbound_client() as client:
        with pytest.raises(httpx.ConnectError):
            client.get(f"https://127.0.0.1:{target.port}/")
        settings.ASIXTO_ALLOW_PRIVATE_HOSTS = True
        with pytest.raises(httpx.HTTPError):
            client.get(f"https://127.0.0.1:{target.port}/")  # reaches the port now, which hangs up
    assert target.count == 1


def test_it_refuses_plain_http_unless_allowed(monkeypatch):
    """M2: plain http is refused before any connection unless the policy allows it."""
    with ConnectionCounter() as target:
        DnsDouble(monkeypatch, {"api.public.test": [PUBLIC_ADDRESS]})
        with outbound_client(policy=STRICT) as client, pytest.raises(httpx.ConnectError) as refused:
            client.get("http://api.public.test/")
    assert "https" in refusal_of(refused.value).message and target.count == 0


@pytest.fixture
def pki(tmp_path):
    return TestPki(tmp_path)


def test_it_verifies_tls_against_the_original_name_and_sends_it_as_sni(pki, monkeypatch):
    """M2: connecting to the pinned address keeps TLS about the name: the server sees the name
    as SNI and in Host, and its certificate (for the name only) verifies, on both stacks."""
    certfile, keyfile = pki.issue(dns=["mcp.example.test"])
    DnsDouble(monkeypatch, {"mcp.example.test": ["127.0.0.1"]})
    with TlsHttpServer(certfile, keyfile) as server:
        url = f"https://mcp.example.test:{server.port}/tools"
        with outbound_client(policy=LAB, verify=pki.client_context()) as client:
            assert client.get(url).json() == {"ok": True}
        response = get_async(lambda: outbound_async_client(policy=LAB, verify=pki.client_context()), url)
        assert response.json() == {"ok": True}
    assert server.server_names == ["mcp.example.test", "mcp.example.test"]
    assert server.hosts == [f"mcp.example.test:{server.port}"] * 2


def test_it_does_not_accept_a_certificate_for_the_address_instead_of_the_name(pki, monkeypatch):
    """M2: a certificate valid for 127.0.0.1 (the address connected to) but not for the name
    does not verify: verification is on the name the URL gave, on both stacks."""
    certfile, keyfile = pki.issue(ips=["127.0.0.1"], dns=["other.example.test"])
    DnsDouble(monkeypatch, {"mcp.example.test": ["127.0.0.1"]})
    with TlsHttpServer(certfile, keyfile) as server:
        url = f"https://mcp.example.test:{server.port}/"
        with outbound_client(policy=LAB, verify=pki.client_context()) as client, pytest.raises(httpx.ConnectError) as sync_error:
            client.get(url)
        with pytest.raises(httpx2.ConnectError) as async_error:
            get_async(lambda: outbound_async_client(policy=LAB, verify=pki.client_context()), url)
    for error in (sync_error.value, async_error.value):
        assert "CERTIFICATE_VERIFY_FAILED" in str(error) and refusal_of(error) is None


def test_it_has_no_switch_to_skip_verification():
    """M2: a TLS context that does not verify is refused when a client is built."""
    lax = ssl.create_default_context()
    lax.check_hostname = False
    lax.verify_mode = ssl.CERT_NONE
    with pytest.raises(ValueError):
        outbound_client(verify=lax)
    with pytest.raises(ValueError):
        outbound_async_client(verify=lax)


def test_it_keeps_no_cookie_between_requests_on_both_stacks():
    """M2: no cookie outlives a request, even on one client (a shared client serves many tenants)."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    seen = []
    with serve_asgi(with_cookie(app, "session=tenant-a; Path=/", seen), lifespan="off") as url:
        with outbound_client(policy=LAB) as client:
            client.get(url)
            client.get(url)
            assert not client.cookies

        async def twice():
            async with outbound_async_client(policy=LAB) as client:
                await client.get(url)
                await client.get(url)
                assert not client.cookies

        anyio.run(twice)
    assert seen == ["", "", "", ""]
