"""Rotating an API key (issue 20, T3): a new key with the same name, scope and expiry, its secret
shown once; the old one revoked at once or after a grace; its webhook follows the new key."""

import json
import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime.models import ChannelWebhook
from runtime.webhooks import outbox_row
from tenants.models import ApiKey
from tenants.services import api_key_create, api_key_revoke
from tests.isolation import IsolationContract


def rotate(world, key_id, body=None, client=None):
    client = client or world.api()
    return client.post(f"/api/v1/api-keys/{key_id}/rotate", json.dumps(body or {}), content_type="application/json")


class TestRotationIsolation(IsolationContract):
    detail_url = "/api/v1/api-keys/{id}/rotate"
    detail_methods = ("post",)

    def make_object(self, world):
        key, _plaintext = api_key_create(tenant=world.tenant, name="probe", scope=ApiKey.Scope.CHANNEL)
        return key.pk

    def test_it_answers_404_for_another_tenants_object(self, alpha, beta):
        """T1, T2: A's admin key cannot rotate B's key (404), and B's key is left as it was."""
        key_id = self.make_object(beta)
        assert rotate(alpha, key_id).status_code == 404
        connection.set_schema_to_public()
        assert ApiKey.objects.get(pk=key_id).is_active
        assert ApiKey.objects.filter(tenant=beta.tenant, name="probe").count() == 1


def test_it_rotates_a_key_and_revokes_the_old_one_at_once(alpha):
    """Issue 20, T3: same name, scope and expiry; the new secret works, the old one is 401."""
    expires = timezone.now() + timedelta(days=10)
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="crm", scope=ApiKey.Scope.ADMIN, expires_at=expires)
    response = rotate(alpha, old.pk)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"] != str(old.pk) and body["name"] == "crm" and body["scope"] == "admin"
    assert body["previous"]["id"] == str(old.pk) and body["previous"]["is_active"] is False
    connection.set_schema_to_public()
    new = ApiKey.objects.get(pk=body["id"])
    assert new.expires_at == expires and new.key_hash == ApiKey.hash(body["key"])
    assert ApiKey.objects.get(pk=old.pk).revoked_at is not None
    assert alpha.api(key=body["key"]).get("/api/v1/tenant").status_code == 200
    assert alpha.api(key=old_plaintext).get("/api/v1/tenant").status_code == 401
    assert body["key"] not in alpha.api().get("/api/v1/api-keys").content.decode()


def test_the_old_key_keeps_working_during_the_grace(alpha):
    """Issue 20: with `grace_minutes` the old key expires at the end of the grace, then gets 401
    `key_expired`."""
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="bridge", scope=ApiKey.Scope.CHANNEL)
    body = rotate(alpha, old.pk, {"grace_minutes": 60}).json()
    connection.set_schema_to_public()
    previous = ApiKey.objects.get(pk=old.pk)
    assert previous.revoked_at is None
    assert timedelta(minutes=59) < previous.expires_at - timezone.now() <= timedelta(minutes=60)
    assert body["previous"]["is_active"] is True
    assert alpha.api(key=old_plaintext).get("/api/v1/conversations").status_code == 200
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = alpha.api(key=old_plaintext).get("/api/v1/conversations")
    assert response.status_code == 401 and response.json()["error"]["code"] == "key_expired"
    assert alpha.api(key=body["key"]).get("/api/v1/conversations").status_code == 200


def test_bad_rotations_get_a_clear_error_and_change_nothing(alpha):
    """A4, issue 20: a grace out of bounds is 400, a revoked key 409, a channel key 403; no key is made."""
    key, _plaintext = api_key_create(tenant=alpha.tenant, name="x", scope=ApiKey.Scope.CHANNEL)
    before = ApiKey.objects.filter(tenant=alpha.tenant).count()
    for grace in (-1, 10**6, "soon"):
        response = rotate(alpha, key.pk, {"grace_minutes": grace})
        assert response.status_code == 400 and "grace_minutes" in response.json()["error"]["fields"], response.content
    assert rotate(alpha, key.pk, client=alpha.api(alpha.channel_key)).status_code == 403
    connection.set_schema_to_public()
    api_key_revoke(key=key)
    response = rotate(alpha, key.pk)
    assert response.status_code == 409 and response.json()["error"]["code"] == "key_inactive"
    connection.set_schema_to_public()
    assert ApiKey.objects.filter(tenant=alpha.tenant).count() == before


def test_the_webhook_of_a_rotated_key_follows_the_new_key(alpha):
    """Issue 20, R1: the integration's webhook moves to the new key; turns posted with the old
    key are still pushed to it, during the grace and after (a turn still running, a reminder set
    before the rotation); once the integration's current key is revoked, nothing is."""
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="wa", scope=ApiKey.Scope.CHANNEL)
    created = alpha.api(old_plaintext).post("/api/v1/webhooks", json.dumps({"url": "https://93.184.216.34/hook"}),
                                            content_type="application/json")
    assert created.status_code == 201, created.content
    body = rotate(alpha, old.pk, {"grace_minutes": 30}).json()
    with alpha.schema():
        webhook = ChannelWebhook.objects.get(pk=created.json()["id"])
        assert str(webhook.api_key_id) == body["id"] and webhook.api_key_prefix == body["prefix"]
        for key_id in (old.pk, body["id"]):
            row = outbox_row(api_key_id=key_id)
            assert row is not None and row[1]["webhook_id"] == webhook.pk
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with alpha.schema():
        assert outbox_row(api_key_id=old.pk)[1]["webhook_id"] == webhook.pk
    api_key_revoke(key=ApiKey.objects.get(pk=body["id"]))
    with alpha.schema():
        assert outbox_row(api_key_id=old.pk) is None and outbox_row(api_key_id=body["id"]) is None


def test_a_key_in_its_grace_cannot_be_rotated_again(alpha):
    """Issue 20 (found by exploratory testing): rotating the old key a second time during its grace
    made a second replacement that inherited the grace's end as its own expiry, and silently
    stopped an hour later. Now it is a 409 `key_rotated` and no key is made; the replacement
    rotates as usual and keeps no expiry."""
    old, _plaintext = api_key_create(tenant=alpha.tenant, name="bridge", scope=ApiKey.Scope.CHANNEL)
    first = rotate(alpha, old.pk, {"grace_minutes": 60}).json()
    count = ApiKey.objects.count()
    again = rotate(alpha, old.pk, {"grace_minutes": 60})
    assert again.status_code == 409 and again.json()["error"]["code"] == "key_rotated", again.content
    assert ApiKey.objects.count() == count and ApiKey.objects.get(pk=old.pk).replaced_by_id == uuid.UUID(first["id"])
    second = rotate(alpha, first["id"], {"grace_minutes": 60})
    assert second.status_code == 201 and second.json()["expires_at"] is None
    assert second.json()["integration"] == first["integration"] == str(old.integration)


def test_a_key_in_its_grace_sets_no_webhook_of_its_own(alpha):
    """Issue 20 (found by exploratory testing): an integration that registers its webhook at start
    with the old key during the grace got a 201 and a webhook that never fired (replies go to the
    moved one). Now it is a 409 `key_rotated`, and nothing is stored."""
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="wa", scope=ApiKey.Scope.CHANNEL)
    rotate(alpha, old.pk, {"grace_minutes": 30})
    response = alpha.api(old_plaintext).post("/api/v1/webhooks", json.dumps({"url": "https://93.184.216.34/hook"}),
                                              content_type="application/json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "key_rotated", response.content
    with alpha.schema():
        assert not ChannelWebhook.objects.exists()
