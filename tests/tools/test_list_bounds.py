"""Bounded lists (A1, A2, A4): no API list returns more than its maximum whatever `?limit=` says,
and every dashboard list is paginated with its filters kept in the page links."""

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from asixto.api import ListPagination
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create
from tests.tools.contract_samples import good
from tools.catalog import definition_hash
from tools.models import CatalogVersion, McpServer, Tool, ToolCall

MAX = ListPagination.max_limit
PAGE = 50


def _many_tools(world, count, *, slug="s1", certification="certified"):
    definition = good()
    digest = definition_hash(definition)
    with world.schema():
        server = McpServer.objects.create(slug=slug, transport="streamable_http", url="https://93.184.216.34/mcp")
        Tool.objects.bulk_create([
            Tool(server=server, name=f"t{index:06d}", prefixed_name=f"{slug}__t{index:06d}", position=index,
                 definition=definition, definition_hash=digest, level="read", certification=certification,
                 certified_hash=digest)
            for index in range(count)
        ])
    return server


def _many_calls(world, count, *, outcome="ok", tool=None, violations=()):
    now = timezone.now()
    with world.schema():
        ToolCall.objects.bulk_create([
            ToolCall(tool=tool, tool_name=tool.prefixed_name if tool else "x__y", channel="chat",
                     idempotency_key=f"k{index}", started_at=now - timedelta(seconds=index), outcome=outcome,
                     violations=list(violations))
            for index in range(count)
        ])


def _many_keys(world, count):
    ApiKey.objects.bulk_create([
        ApiKey(tenant=world.tenant, name=f"k{index}", scope="channel", prefix=uuid.uuid4().hex[:12], key_hash="0" * 64)
        for index in range(count)
    ])


def test_every_api_list_has_a_maximum(alpha):
    """A1, A4: `?limit=` above the maximum returns the maximum, on every tenant list."""
    server = _many_tools(alpha, MAX + 5)
    with alpha.schema():
        tool = Tool.objects.first()
        McpServer.objects.bulk_create([
            McpServer(slug=f"x{index}", transport="streamable_http", url="https://93.184.216.34/mcp") for index in range(MAX + 5)
        ])
        CatalogVersion.objects.bulk_create([CatalogVersion(server=server, number=n + 1) for n in range(MAX + 5)])
    _many_calls(alpha, MAX + 5, tool=tool)
    _many_keys(alpha, MAX + 5)
    connection.set_schema_to_public()
    for url in ("/api/v1/tools", "/api/v1/servers", f"/api/v1/servers/{server.pk}/versions", "/api/v1/tool-calls",
                "/api/v1/api-keys"):
        body = alpha.api().get(f"{url}?limit=1000000").json()
        assert body["count"] > MAX and len(body["results"]) == MAX, url
        assert alpha.api().get(f"{url}?offset={10**30}").json()["results"] == [], url


def test_the_operator_tenant_list_has_a_maximum(worlds, db):
    """A1, A4: the operator API too."""
    Tenant.objects.bulk_create([Tenant(slug=f"bulk{n}", name="x", schema_name=f"bulk{n}") for n in range(MAX + 5)])
    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    body = Client(headers={"Authorization": f"Bearer {plaintext}"}).get("/api/v1/operator/tenants?limit=1000000").json()
    assert body["count"] > MAX and len(body["results"]) == MAX


def _links(page):
    return [link.replace("&amp;", "&") for link in re.findall(r'href="(\?[^"]*)"', page)]


def _assert_kept(link, **params):
    for name, value in params.items():
        assert f"{name}={value}" in link, (link, name)


def test_the_catalog_is_paginated_and_keeps_its_filters(alpha):
    """A2: 120 tools give a page of 50 rows, with next-page links that keep the filters."""
    _many_tools(alpha, 120)
    client = alpha.dashboard("sam")
    page = client.get("/catalog/?server=s1&certification=certified").content.decode()
    assert page.count("<code>s1__t") == PAGE
    links = [link for link in _links(page) if "page=2" in link]
    assert links
    _assert_kept(links[0], server="s1", certification="certified")
    second = client.get("/catalog/" + links[0]).content.decode()
    assert "s1__t000050" in second and "s1__t000000" not in second
    last = client.get("/catalog/?server=s1&page=3").content.decode()
    assert last.count("<code>s1__t") == 20
    assert client.get("/catalog/?page=999").status_code == 200  # past the end: the last page


def test_the_calls_page_keeps_every_filter_in_its_links(alpha):
    """A2, G9: outcome, tool and the violations switch survive paging."""
    server = _many_tools(alpha, 1)
    with alpha.schema():
        tool = Tool.objects.get(server=server)
    _many_calls(alpha, 120, outcome="timeout", tool=tool, violations=[{"kind": "x", "detail": "y"}])
    page = alpha.dashboard("sam").get(f"/calls/?outcome=timeout&tool={tool.pk}&violations=true").content.decode()
    links = [link for link in _links(page) if "page=2" in link]
    assert links
    _assert_kept(links[0], outcome="timeout", tool=tool.pk, violations="true")


def test_the_calls_page_does_not_list_every_tool_in_its_filter(alpha):
    """A2: with thousands of tools, the tool filter stays small."""
    _many_tools(alpha, 1200)
    page = alpha.dashboard("sam").get("/calls/").content.decode()
    assert page.count("<option") < 300


@pytest.mark.parametrize("url,make", [
    ("/servers/", lambda world: _servers(world, 120)),
    ("/api-keys/", lambda world: _many_keys(world, 120)),
    ("/violations/", lambda world: _violating_tools(world, 120)),
])
def test_the_other_dashboard_lists_are_paginated(alpha, url, make):
    """A2: servers, API keys and violations: pages of 50."""
    make(alpha)
    page = alpha.dashboard("ana").get(url).content.decode()
    assert any("page=2" in link for link in _links(page)), url
    assert alpha.dashboard("ana").get(url + "?page=3").status_code == 200


def test_the_version_list_is_paginated(alpha):
    """A2, M5: a server synced many times."""
    server = _many_tools(alpha, 1)
    with alpha.schema():
        CatalogVersion.objects.bulk_create([CatalogVersion(server=server, number=n + 1) for n in range(120)])
    page = alpha.dashboard("sam").get(f"/servers/{server.pk}/versions/").content.decode()
    assert any("page=2" in link for link in _links(page))


def _servers(world, count):
    with world.schema():
        McpServer.objects.bulk_create([
            McpServer(slug=f"x{index}", transport="streamable_http", url="https://93.184.216.34/mcp") for index in range(count)
        ])


def _violating_tools(world, count):
    now = timezone.now()
    with world.schema():
        ToolCall.objects.bulk_create([
            ToolCall(tool_name=f"x__t{index}", channel="chat", idempotency_key=f"k{index}", started_at=now, outcome="ok",
                     violations=[{"kind": "x", "detail": "y"}])
            for index in range(count)
        ])
