"""Platform operators in the Django admin on the public domain (T4, T5, M3)."""

from django.db import connection
from django.test import Client
from django_tenants.utils import schema_exists

from accounts.models import User
from tenants.models import ApprovedCommand, Tenant


def operator(db):
    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    client = Client(HTTP_HOST="localhost")
    assert client.post("/admin/login/?next=/admin/", {"username": "ops", "password": "ops-password-123"}).status_code == 302
    return client


def test_it_creates_a_tenant_from_the_admin_through_the_service(worlds, db):
    """T5: adding a tenant in the admin creates its schema, admin user and key, shown once."""
    client = operator(db)
    response = client.post("/admin/tenants/tenant/add/", {"slug": "omega", "name": "Omega SAS", "domain": ""}, follow=True)
    assert response.status_code == 200
    messages = [str(m) for m in response.context["messages"]]
    assert any("asx_" in m for m in messages), messages
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(slug="omega")
    assert schema_exists("omega") and tenant.get_primary_domain().domain == "omega.localhost"


def test_it_lets_operators_approve_stdio_commands(worlds, db):
    """M3: operators keep the list of commands tenants may pick."""
    client = operator(db)
    response = client.post("/admin/tenants/approvedcommand/add/", {
        "slug": "hora", "description": "Servidor de hora", "executable": "/usr/bin/mcp-server-time",
        "base_args": "[]", "enabled": "on",
    })
    assert response.status_code == 302
    connection.set_schema_to_public()
    assert ApprovedCommand.objects.get(slug="hora").executable == "/usr/bin/mcp-server-time"


def test_it_keeps_the_admin_off_tenant_domains(alpha):
    """T4: tenant users cannot reach the operators' admin on their domain."""
    assert alpha.dashboard("ana").get("/admin/").status_code == 404
