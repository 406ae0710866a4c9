"""API keys (T2, T3): hashed at rest, shown once, revocable, scoped; isolation on their endpoints."""

from django.db import connection

from tenants.models import ApiKey
from tenants.services import api_key_create
from tests.isolation import IsolationContract


class TestApiKeyIsolation(IsolationContract):
    list_url = "/api/v1/api-keys"
    detail_url = "/api/v1/api-keys/{id}"
    detail_methods = ("get", "delete")

    def make_object(self, world):
        key, _plaintext = api_key_create(tenant=world.tenant, name="probe", scope=ApiKey.Scope.CHANNEL)
        return key.pk


class TestTenantSettingsIsolation(IsolationContract):
    list_url = "/api/v1/tenant"

    def make_object(self, world):
        return world.tenant.slug


def test_it_stores_only_a_hash_and_shows_the_key_once(alpha):
    """T3: the plaintext is in the creation response only; the database holds a SHA-256."""
    response = alpha.api().post("/api/v1/api-keys", {"name": "voice", "scope": "channel"}, content_type="application/json")
    assert response.status_code == 201, response.content
    plaintext = response.json()["key"]
    connection.set_schema_to_public()
    stored = ApiKey.objects.get(pk=response.json()["id"])
    assert plaintext not in (stored.key_hash, stored.prefix)
    assert stored.key_hash == ApiKey.hash(plaintext)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM tenants_apikey WHERE key_hash = %s OR name = %s", [plaintext, plaintext])
        assert cursor.fetchone()[0] == 0
    listing = alpha.api().get("/api/v1/api-keys").content.decode()
    detail = alpha.api().get(f"/api/v1/api-keys/{stored.pk}").content.decode()
    assert plaintext not in listing and plaintext not in detail
    assert alpha.api(key=plaintext).get("/api/v1/health").status_code == 200


def test_it_revokes_a_key_at_once(alpha):
    """T3: DELETE revokes; the next request with that key is 401 and the record stays listed."""
    created = alpha.api().post("/api/v1/api-keys", {"name": "tmp", "scope": "admin"}, content_type="application/json").json()
    assert alpha.api(key=created["key"]).get("/api/v1/tenant").status_code == 200
    revoked = alpha.api().delete(f"/api/v1/api-keys/{created['id']}")
    assert revoked.status_code == 200 and revoked.json()["is_active"] is False
    assert alpha.api(key=created["key"]).get("/api/v1/tenant").status_code == 401
    ids = [item["id"] for item in alpha.api().get("/api/v1/api-keys").json()["results"]]
    assert created["id"] in ids


def test_it_scopes_new_keys_to_the_calling_tenant(alpha, beta):
    """T2: a key created with A's admin key opens A's data only."""
    created = alpha.api().post("/api/v1/api-keys", {"name": "x", "scope": "admin"}, content_type="application/json").json()
    assert alpha.api(key=created["key"]).get("/api/v1/tenant").json()["slug"] == "alpha"


def test_it_refuses_operator_scope_from_a_tenant(alpha):
    """T3: tenants create channel or admin keys only."""
    response = alpha.api().post("/api/v1/api-keys", {"name": "x", "scope": "operator"}, content_type="application/json")
    assert response.status_code == 400
    assert "scope" in response.json()["error"]["fields"]


def test_it_does_not_let_a_header_choose_the_tenant(alpha, beta):
    """T2: the host header and any tenant-ish header are ignored by the API; the key decides."""
    response = alpha.api().get("/api/v1/tenant", HTTP_HOST=beta.domain, HTTP_X_TENANT="beta")
    assert response.json()["slug"] == "alpha"
