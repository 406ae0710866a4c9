"""Tenant creation (T5): the management command, the operator API, and refusals that leave nothing."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django_tenants.utils import schema_context, schema_exists

from accounts.models import User
from tenants.models import ApiKey, Domain, Tenant
from tenants.services import api_key_create
from tests.isolation import IsolationContract


def test_it_creates_a_working_tenant_from_the_command(db):
    """T5: one JSON object with slug, domain, admin login and admin key — and they all work."""
    out = io.StringIO()
    call_command("tenant_create", "gamma", "--name", "Gamma Ltda", "--json", stdout=out)
    created = json.loads(out.getvalue())
    assert created["slug"] == "gamma" and created["domain"] == "gamma.localhost"
    assert schema_exists("gamma")
    with schema_context("gamma"):
        admin = User.objects.get(username=created["admin_username"])
        assert admin.role == User.Role.ADMIN and admin.check_password(created["admin_password"])
    from django.test import Client

    response = Client(headers={"Authorization": f"Bearer {created['admin_api_key']}"}).get("/api/v1/tenant")
    assert response.json()["slug"] == "gamma"


@pytest.mark.parametrize("slug", ["Bad Slug", "ab", "public", "alpha", "-x-y", "a" * 41])
def test_it_refuses_bad_or_taken_slugs_and_creates_nothing(worlds, db, slug):
    """T5, A4: a clear error, no schema, no rows."""
    before = Tenant.objects.count()
    with pytest.raises(CommandError, match="slug"):
        call_command("tenant_create", slug, "--name", "X", "--json", stdout=io.StringIO())
    assert Tenant.objects.count() == before


def operator_client(db):
    from django.test import Client

    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    return Client(headers={"Authorization": f"Bearer {plaintext}"})


def test_it_creates_tenants_through_the_operator_api(worlds, db):
    """T5: operators create tenants over the API; the answer carries the first credentials once."""
    client = operator_client(db)
    response = client.post("/api/v1/operator/tenants", {"slug": "delta", "name": "Delta"}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["domain"] == "delta.localhost" and body["admin_api_key"].startswith("asx_")
    assert Domain.objects.get(domain="delta.localhost").tenant.slug == "delta"
    slugs = [item["slug"] for item in client.get("/api/v1/operator/tenants").json()["results"]]
    assert "delta" in slugs and "public" not in slugs
    assert body["admin_password"] not in client.get("/api/v1/operator/tenants").content.decode()


def test_it_refuses_bad_operator_payloads_with_fields(worlds, db):
    """A4, T5: bad input is a 400 naming the fields, and nothing is created."""
    client = operator_client(db)
    before = Tenant.objects.count()
    response = client.post(
        "/api/v1/operator/tenants", {"slug": "UPPER", "name": "", "extra": 1}, content_type="application/json"
    )
    assert response.status_code == 400
    assert {"name", "extra"} <= set(response.json()["error"]["fields"])
    for slug in ("alpha", "pg-temp"):  # taken; a schema name PostgreSQL keeps for itself (was a 500)
        response = client.post("/api/v1/operator/tenants", {"slug": slug, "name": "Dup"}, content_type="application/json")
        assert response.status_code == 400 and "slug" in response.json()["error"]["fields"], response.content
    assert Tenant.objects.count() == before


def test_it_keeps_tenant_keys_out_of_the_operator_api(alpha, beta):
    """T3: a tenant's admin key is not an operator key."""
    connection.set_schema_to_public()
    response = alpha.api().post("/api/v1/operator/tenants", {"slug": "zeta", "name": "Z"}, content_type="application/json")
    assert response.status_code == 403
    assert not Tenant.objects.filter(slug="zeta").exists()


def test_it_keeps_operator_keys_out_of_tenant_endpoints(worlds, db):
    """T3: an operator key has no tenant, so tenant endpoints refuse it."""
    assert operator_client(db).get("/api/v1/tenant").status_code == 403


class TestOperatorIsolation(IsolationContract):
    list_url = "/api/v1/operator/tenants"

    def make_object(self, world):
        return world.tenant.slug

    def test_it_answers_404_for_another_tenants_object(self, alpha, beta):
        """T3: tenant keys (admin included) cannot list tenants."""
        assert alpha.api().get(self.list_url).status_code == 403
