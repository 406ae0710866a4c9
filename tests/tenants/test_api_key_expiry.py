"""API keys that expire, and when each key was last used (issue 20, T3): an expired key gets 401
with its own code; `last_used_at` is written at most once a minute per key, not on every request."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tenants.models import ApiKey
from tenants.services import api_key_create


def stored(plaintext):
    connection.set_schema_to_public()
    return ApiKey.objects.get(prefix=ApiKey.parse_prefix(plaintext))


def test_it_refuses_an_expired_key_with_its_own_code(alpha):
    """T3, issue 20: past its expiry a key gets 401 `key_expired` saying when it expired; a
    revoked or made-up key keeps `not_authenticated`."""
    key, plaintext = api_key_create(tenant=alpha.tenant, name="temp", scope=ApiKey.Scope.ADMIN,
                                    expires_at=timezone.now() + timedelta(hours=1))
    assert alpha.api(key=plaintext).get("/api/v1/tenant").status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(minutes=5))
    response = alpha.api(key=plaintext).get("/api/v1/tenant")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "key_expired"
    assert str(timezone.now().year) in error["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")
    made_up = plaintext[:-4] + ("aaaa" if not plaintext.endswith("aaaa") else "bbbb")
    assert alpha.api(key=made_up).get("/api/v1/tenant").json()["error"]["code"] == "not_authenticated"


def test_it_creates_a_key_with_an_expiry_and_lists_it(alpha):
    """Issue 20: `expires_at` is optional on creation and listed with `last_used_at`."""
    when = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    response = alpha.api().post("/api/v1/api-keys", {"name": "trial", "scope": "channel", "expires_at": when.isoformat()},
                                content_type="application/json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["expires_at"] and created["last_used_at"] is None and created["is_active"] is True
    assert stored(created["key"]).expires_at == when
    listed = {item["id"]: item for item in alpha.api().get("/api/v1/api-keys").json()["results"]}
    assert listed[created["id"]]["expires_at"] == created["expires_at"]
    assert "last_used_at" in listed[created["id"]]


def test_it_refuses_an_expiry_in_the_past_and_stores_nothing(alpha):
    """A4, issue 20: an expiry that has passed is a 400 on `expires_at`; no key is made."""
    before = ApiKey.objects.filter(tenant=alpha.tenant).count()
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    for body in ({"name": "x", "scope": "channel", "expires_at": past},
                 {"name": "x", "scope": "channel", "expires_at": "mañana"}):
        response = alpha.api().post("/api/v1/api-keys", body, content_type="application/json")
        assert response.status_code == 400, response.content
        assert "expires_at" in response.json()["error"]["fields"]
    connection.set_schema_to_public()
    assert ApiKey.objects.filter(tenant=alpha.tenant).count() == before


def test_it_writes_last_use_at_most_once_a_minute_per_key(alpha):
    """Issue 20: the first request stamps `last_used_at`; the next ones within the minute write
    nothing; once the stamp is a minute old, the next request renews it."""
    key, plaintext = api_key_create(tenant=alpha.tenant, name="busy", scope=ApiKey.Scope.ADMIN)
    assert key.last_used_at is None
    assert alpha.api(key=plaintext).get("/api/v1/tenant").status_code == 200
    first = stored(plaintext).last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            assert alpha.api(key=plaintext).get("/api/v1/tenant").status_code == 200
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE") and "tenants_apikey" in q["sql"]]
    assert writes == []
    assert stored(plaintext).last_used_at == first
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(seconds=61))
    assert alpha.api(key=plaintext).get("/api/v1/tenant").status_code == 200
    assert stored(plaintext).last_used_at >= first


def test_last_use_of_one_key_leaves_the_others_alone(alpha):
    """Issue 20: the stamp is per key."""
    _key, used = api_key_create(tenant=alpha.tenant, name="used", scope=ApiKey.Scope.ADMIN)
    idle, _plaintext = api_key_create(tenant=alpha.tenant, name="idle", scope=ApiKey.Scope.ADMIN)
    assert alpha.api(key=used).get("/api/v1/tenant").status_code == 200
    connection.set_schema_to_public()
    assert stored(used).last_used_at is not None
    assert ApiKey.objects.get(pk=idle.pk).last_used_at is None


def test_a_refused_key_is_told_so_in_the_requests_language(alpha):
    """A3, T3 (found by exploratory testing): the 401s for a made-up and an expired key are
    answered before the locale middleware runs; they follow Accept-Language all the same."""
    key, plaintext = api_key_create(tenant=alpha.tenant, name="temp", scope=ApiKey.Scope.ADMIN,
                                    expires_at=timezone.now() + timedelta(hours=1))
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(minutes=5))
    made_up = plaintext[:-4] + ("aaaa" if not plaintext.endswith("aaaa") else "bbbb")
    for language, unknown, expired in (("es", "Clave de API no válida o revocada.", "Esta clave de API venció el"),
                                       ("en", "Invalid or revoked API key.", "This API key expired on")):
        answers = [alpha.api(key=k).get("/api/v1/tenant", HTTP_ACCEPT_LANGUAGE=language).json()["error"]["message"]
                   for k in (made_up, plaintext)]
        assert answers[0] == unknown and answers[1].startswith(expired), (language, answers)
