"""A per-tenant quota of MCP servers (bounded work, T5, M1): the platform default applies unless
an operator sets the tenant's own, in the Django admin or the operator API; registering past it
is refused with a clear message in the API and the dashboard, and nothing is stored."""

import json
import threading

from django.db import connection
from django.test import Client

from accounts.models import User
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create
from tools.models import McpServer

URL = "https://93.184.216.34/mcp"


def _fill(world, count):
    with world.schema():
        McpServer.objects.bulk_create([McpServer(slug=f"s{n}", transport="streamable_http", url=URL) for n in range(count)])
    connection.set_schema_to_public()


def _set_quota(world, quota):
    Tenant.objects.filter(pk=world.tenant.pk).update(server_quota=quota)


def _register(world, slug):
    body = json.dumps({"slug": slug, "transport": "streamable_http", "url": URL})
    return world.api().post("/api/v1/servers", body, content_type="application/json")


def _servers(world):
    with world.schema():
        count = McpServer.objects.count()
    connection.set_schema_to_public()
    return count


def test_it_refuses_a_server_past_the_tenants_quota_in_the_api(alpha):
    """M1: the quota is enforced with a clear 409 and nothing stored; under it, all is normal."""
    _set_quota(alpha, 3)
    _fill(alpha, 2)
    assert _register(alpha, "crm").status_code == 201
    response = _register(alpha, "erp")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "server_quota_exceeded" and "3" in error["message"]
    assert _servers(alpha) == 3


def test_it_uses_the_platform_default_when_the_tenant_has_none(alpha, beta, settings):
    """M1: no quota of its own → ASIXTO_DEFAULT_SERVER_QUOTA; another tenant's quota is its own."""
    settings.ASIXTO_DEFAULT_SERVER_QUOTA = 1
    _set_quota(beta, 5)
    assert _register(alpha, "crm").status_code == 201
    assert _register(alpha, "erp").status_code == 409
    assert _register(beta, "crm").status_code == 201
    assert _register(beta, "erp").status_code == 201


def test_it_refuses_a_server_past_the_quota_in_the_dashboard(alpha):
    """M1, A2: the form shows the message; nothing stored."""
    _set_quota(alpha, 1)
    _fill(alpha, 1)
    response = alpha.dashboard("ana").post("/servers/new/", {
        "slug": "crm", "name": "", "transport": "streamable_http", "url": URL, "timeout_seconds": "10", "enabled": "on",
    })
    assert response.status_code == 200
    errors = response.context["form"].non_field_errors()
    assert errors and "1" in errors[0]
    assert _servers(alpha) == 1
    # Editing an existing server is not registering one: still allowed at the quota.
    with alpha.schema():
        server = McpServer.objects.get()
    response = alpha.dashboard("ana").post(f"/servers/{server.pk}/", {
        "name": "renamed", "transport": "streamable_http", "url": URL, "timeout_seconds": "10", "enabled": "on",
    })
    assert response.status_code == 302, response.context["form"].errors


def test_it_lets_operators_set_the_quota_through_the_operator_api(worlds, db):
    """T5: create with a quota, change it, read it back; tenants cannot change their own."""
    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    ops = Client(headers={"Authorization": f"Bearer {plaintext}"})
    alpha = worlds["alpha"]
    response = ops.patch(f"/api/v1/operator/tenants/{alpha.tenant.pk}", json.dumps({"server_quota": 7}), content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["server_quota"] == 7
    assert Tenant.objects.get(pk=alpha.tenant.pk).server_quota == 7
    listed = {row["slug"]: row for row in ops.get("/api/v1/operator/tenants").json()["results"]}
    assert listed["alpha"]["server_quota"] == 7
    for bad in (-1, "x", 10**9):
        response = ops.patch(f"/api/v1/operator/tenants/{alpha.tenant.pk}", json.dumps({"server_quota": bad}), content_type="application/json")
        assert response.status_code == 400 and "server_quota" in response.json()["error"]["fields"]
    response = ops.patch(f"/api/v1/operator/tenants/{alpha.tenant.pk}", json.dumps({"server_quota": None}), content_type="application/json")
    assert response.status_code == 200 and Tenant.objects.get(pk=alpha.tenant.pk).server_quota is None
    # A tenant's admin key reads its quota but cannot raise it, nor reach the operator API.
    admin = alpha.api()
    assert admin.patch(f"/api/v1/operator/tenants/{alpha.tenant.pk}", json.dumps({"server_quota": 99}), content_type="application/json").status_code == 403
    response = admin.patch("/api/v1/tenant", json.dumps({"server_quota": 99}), content_type="application/json")
    assert response.status_code == 400
    assert Tenant.objects.get(pk=alpha.tenant.pk).server_quota is None


def test_it_lets_operators_set_the_quota_in_the_django_admin(worlds, db):
    """T5: the tenant's change form in the admin has the quota."""
    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    client = Client(HTTP_HOST="localhost")
    assert client.post("/admin/login/?next=/admin/", {"username": "ops", "password": "ops-password-123"}).status_code == 302
    tenant = worlds["beta"].tenant
    url = f"/admin/tenants/tenant/{tenant.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and "server_quota" in page.content.decode()
    form = page.context["adminform"].form
    data = {name: form.initial.get(name) for name in form.fields if form.initial.get(name) is not None}
    data.update({
        "server_quota": "4", "domains-TOTAL_FORMS": "0", "domains-INITIAL_FORMS": "0",
        "scenarios": json.dumps(tenant.scenarios), "exposure_policy": json.dumps(tenant.exposure_policy),
    })
    data = {key: value for key, value in data.items() if not isinstance(value, bool) or value}
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Tenant.objects.get(pk=tenant.pk).server_quota == 4


def test_concurrent_registrations_cannot_pass_the_quota_together(committed_world):
    """M1: eight registrations at once with room for one: exactly one is stored."""
    world = committed_world
    Tenant.objects.filter(pk=world.tenant.pk).update(server_quota=1)
    barrier, answers = threading.Barrier(8), []

    def register(index):
        try:
            barrier.wait(timeout=30)
            answers.append(_register(world, f"s{index}").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=register, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers) == [201] + [409] * 7
    assert _servers(world) == 1


def test_it_shows_the_quota_on_the_servers_page(alpha):
    """M1, A2: the admin sees how many servers the account may still register."""
    _set_quota(alpha, 4)
    _fill(alpha, 3)
    page = alpha.dashboard("sam").get("/servers/").content.decode()
    assert "3 de 4" in page or "3 of 4" in page


def test_operators_can_give_a_quota_when_creating_a_tenant(worlds, db):
    """T5: `server_quota` on the operator API's create."""
    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    ops = Client(headers={"Authorization": f"Bearer {plaintext}"})
    body = json.dumps({"slug": "quota-co", "name": "Quota Co", "server_quota": 3})
    response = ops.post("/api/v1/operator/tenants", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert Tenant.objects.get(slug="quota-co").effective_server_quota == 3
