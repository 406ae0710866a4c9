"""Outbound safety on every path of the tools half (M2): the gateway's direct POST, the SDK
transports (legacy/SSE calls, catalog sync, probes), cookies between tenants, approved private
hosts. The resolver double answers where the operating system would; servers are real sockets."""

import re

import pytest
from django.db import connection
from django.utils import translation

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.support.outbound import NO_ANSWER, PUBLIC_ADDRESS, ConnectionCounter, DnsDouble, closed_port, with_cookie
from tests.tools.contract_samples import good
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools import mcp
from tools.gateway import call_tool, flush_records
from tools.models import McpServer
from tools.services import catalog_sync, server_create

NAME = "mcp.rebind.test"


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


@pytest.fixture
def strict(settings):
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    return settings


def call(world, name="crm__buscar_producto"):
    with world.schema():
        return call_tool(name=name, arguments={"consulta": "router"}, context=context())


def rebinding(monkeypatch):
    """The name answers a public address to the first look-up and 127.0.0.1 to every later one."""
    return DnsDouble(monkeypatch, {NAME: [PUBLIC_ADDRESS, "127.0.0.1"]})


def test_it_connects_only_to_the_checked_address_on_the_direct_path(alpha, strict, monkeypatch):
    """M2: the direct POST path re-checks the name at connect time and connects to what it
    checked: a rebinding to loopback never opens a connection, and the call fails."""
    with ConnectionCounter() as target:
        resolver = rebinding(monkeypatch)
        certified_tool(alpha, f"https://{NAME}:{target.port}")
        outcome = call(alpha)
    assert target.count == 0, "a connection reached the loopback port"
    assert not outcome.ok and outcome.outcome in {"refused", "connect_error"}
    assert len(resolver.asked) >= 2  # the call-time check ran after the registration-style check


def test_it_connects_only_to_the_checked_address_on_the_sdk_path(alpha, strict, monkeypatch):
    """M2: legacy/SSE calls go through the SDK's transport, which re-checks at connect time."""
    with ConnectionCounter() as target:
        rebinding(monkeypatch)
        with alpha.schema():
            tool = certified_tool(alpha, f"https://{NAME}:{target.port}")
            McpServer.objects.filter(pk=tool.server_id).update(transport="sse", discover_result=None, is_legacy=True)
        outcome = call(alpha)
    assert target.count == 0, "a connection reached the loopback port"
    assert not outcome.ok and outcome.outcome in {"refused", "connect_error"}


def test_it_connects_only_to_the_checked_address_when_syncing(alpha, strict, monkeypatch):
    """M2: catalog sync and its discovery probe use the SDK transport: same connect-time check."""
    with ConnectionCounter() as target:
        rebinding(monkeypatch)
        with alpha.schema():
            server = McpServer.objects.create(slug="crm", transport="streamable_http", url=f"https://{NAME}:{target.port}/mcp")
            with pytest.raises(mcp.McpError) as failed:
                catalog_sync(server=server)
    assert target.count == 0
    assert failed.value.kind == "connect" and "127.0.0.1" not in failed.value.message


def test_it_says_the_same_whether_a_private_port_is_open_or_closed(alpha, beta, strict, monkeypatch):
    """M2: a rebinding to an open and to a closed loopback port reads the same (no port scan
    through error texts), on the direct path and on the SDK path."""
    seen = {}
    with ConnectionCounter() as open_target:
        for label, port in (("open", open_target.port), ("closed", closed_port())):
            for world, transport in ((alpha, "direct"), (beta, "sse")):
                DnsDouble(monkeypatch, {NAME: [PUBLIC_ADDRESS, "127.0.0.1"]})
                with world.schema():
                    tool = certified_tool(world, f"https://{NAME}:{port}", slug=f"s{label}")
                    if transport == "sse":
                        McpServer.objects.filter(pk=tool.server_id).update(transport="sse", discover_result=None, is_legacy=True)
                outcome = call(world, name=f"s{label}__buscar_producto")
                seen[(label, transport)] = (outcome.outcome, re.sub(r"(:|--port )\d+", r"\1PORT", outcome.error or ""))
        assert open_target.count == 0
    assert seen[("open", "direct")] == seen[("closed", "direct")], seen
    assert seen[("open", "sse")] == seen[("closed", "sse")], seen


def test_it_never_carries_a_cookie_from_one_tenant_to_another(alpha, beta):
    """M2, T1: a cookie set by a server during tenant A's call is not sent on tenant B's call to
    the same host, nor on A's next call."""
    cookies_seen = []
    peer = FaultyPeer([ok_result(), ok_result(), ok_result()])
    with serve_asgi(with_cookie(peer.app(), "session=alpha-secret-cookie; Path=/", cookies_seen)) as url:
        certified_tool(alpha, url)
        certified_tool(beta, url)
        assert call(alpha).ok
        assert call(beta).ok
        assert call(alpha).ok
    assert len(cookies_seen) == 3 and cookies_seen == ["", "", ""], cookies_seen


def test_it_never_keeps_cookies_on_the_sdk_path(alpha):
    """M2: the SDK transport refuses cookies too: no request of a sync carries one back."""
    cookies_seen = []
    catalog = MutableCatalog([good("buscar_producto")])
    with serve_asgi(with_cookie(catalog.app(), "session=sticky-secret; Path=/", cookies_seen)) as url:
        with alpha.schema():
            catalog_sync(server=server_create(data={"slug": "crm", "transport": "streamable_http", "url": f"{url}/mcp"}))
    assert len(cookies_seen) >= 3 and not any(cookies_seen), cookies_seen


@pytest.fixture
def approved_loopback(alpha):
    from tenants.models import ApprovedPrivateHost

    connection.set_schema_to_public()
    return ApprovedPrivateHost.objects.create(tenant=alpha.tenant, host="127.0.0.1", allow_http=True, note="lab model")


def test_it_reaches_an_approved_private_host_without_the_global_switch(alpha, beta, strict, approved_loopback):
    """M2: an operator approved 127.0.0.1 (plain http) for alpha only: alpha's calls and sync
    reach it with the global guard still on; beta, with the same URL, is refused."""
    catalog = MutableCatalog([good("buscar_producto")])
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as peer_url, serve_asgi(catalog.app()) as catalog_url:
        ports = ", ".join(url.rsplit(":", 1)[1].split("/")[0] for url in (peer_url, catalog_url))
        type(approved_loopback).objects.filter(pk=approved_loopback.pk).update(ports=ports)  # an approval names its ports
        certified_tool(alpha, peer_url)
        certified_tool(beta, peer_url)
        assert call(alpha).ok
        refused = call(beta)
        with alpha.schema():
            version = catalog_sync(server=server_create(data={"slug": "cat", "transport": "streamable_http", "url": f"{catalog_url}/mcp"}))
    assert len(peer.calls) == 1
    assert refused.outcome == "refused" and "operator" in refused.error
    assert version.number == 1


@pytest.mark.parametrize("hangs", ["at-the-call-time-check", "at-connect-time"])
def test_it_ends_a_call_whose_name_lookup_hangs_as_a_connect_error(alpha, monkeypatch, hangs):
    """M2, G3: a name server that never answers, at the gateway's check or at the client's own
    look-up when it connects: the call is a `connect_error` with the code `dns_timeout` within its
    deadline (the look-up gets only what is left of it), and the server is never reached."""
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        port = url.rsplit(":", 1)[1]
        answers = [NO_ANSWER] if hangs == "at-the-call-time-check" else ["127.0.0.1", NO_ANSWER]
        resolver = DnsDouble(monkeypatch, {NAME: answers})
        try:
            certified_tool(alpha, f"http://{NAME}:{port}", timeout=1.0)
            outcome = call(alpha)
        finally:
            resolver.release()
    assert resolver.hanging.is_set()
    assert (outcome.outcome, outcome.error_code) == ("connect_error", "dns_timeout"), (outcome.outcome, outcome.error)
    assert "looking up its host name took too long" in outcome.error
    assert peer.calls == []


def test_a_refusal_at_connect_time_is_stored_as_a_code_and_read_in_the_readers_language(alpha, strict, monkeypatch):
    """M2, A3: a call refused when connecting (the name rebound to loopback) in a Spanish-speaking
    tenant is recorded as a code with its values: the record reads in English for an English
    reader and in Spanish for a Spanish one, with no sentence of the other language inside."""
    from tools.models import ToolCall

    monkeypatch.setattr(alpha.tenant, "language", "es")  # the call runs in the tenant's language
    with ConnectionCounter() as target:
        rebinding(monkeypatch)
        certified_tool(alpha, f"https://{NAME}:{target.port}")
        outcome = call(alpha)
    assert outcome.outcome == "refused" and target.count == 0
    flush_records()
    with alpha.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert record.error_code == "outbound_refused"
    english = record.error_text
    with translation.override("es"):
        spanish = record.error_text
    assert "does not resolve to a public address" in english and "no resuelve" not in english
    assert "no resuelve a una dirección pública" in spanish and "does not resolve" not in spanish
    assert "no resuelve" not in record.error  # the stored text of logs is English


def test_a_worker_reads_the_approvals_once_and_sees_a_revocation_at_once(committed_world, strict, django_db_blocker):
    """M2, P1 (issue 22): outside a transaction, as on a worker, calls to an approved private host
    do not read the approvals from the database on every call; revoking the approval refuses the
    very next call, and approving it again lets the next one through."""
    from django.test.utils import CaptureQueriesContext

    from tenants.models import ApprovedPrivateHost

    peer = FaultyPeer([ok_result()])
    with django_db_blocker.unblock(), serve_asgi(peer.app()) as url:
        port = url.rsplit(":", 1)[1]
        tool = certified_tool(committed_world, url)
        connection.set_schema_to_public()
        approval = ApprovedPrivateHost.objects.create(tenant=committed_world.tenant, host="127.0.0.1", allow_http=True, ports=port)
        try:
            with committed_world.schema():
                assert not connection.in_atomic_block
                first = call_tool(name=tool.prefixed_name, arguments={"consulta": "a"}, context=context())
                with CaptureQueriesContext(connection) as queries:
                    second = call_tool(name=tool.prefixed_name, arguments={"consulta": "b"}, context=context())
                ApprovedPrivateHost.objects.get(pk=approval.pk).delete()
                revoked = call_tool(name=tool.prefixed_name, arguments={"consulta": "c"}, context=context())
                approval = ApprovedPrivateHost.objects.create(tenant=committed_world.tenant, host="127.0.0.1", allow_http=True, ports=port)
                again = call_tool(name=tool.prefixed_name, arguments={"consulta": "d"}, context=context())
                flush_records()
        finally:
            connection.set_schema_to_public()
            ApprovedPrivateHost.objects.filter(tenant=committed_world.tenant).delete()
    assert (first.outcome, second.outcome, revoked.outcome, again.outcome) == ("ok", "ok", "refused", "ok")
    assert [q["sql"] for q in queries.captured_queries if "approvedprivatehost" in q["sql"]] == []
    assert len(peer.calls) == 3
