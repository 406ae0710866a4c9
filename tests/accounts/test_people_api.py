"""People over the API (T4): admin keys add, invite, change and deactivate users; channel keys
reach none of it; the last active admin stays; users of one tenant are invisible to another."""

import pytest

from accounts.models import User
from tests.isolation import IsolationContract

NEW_PASSWORD = "api-made-password-99"


class TestUserIsolation(IsolationContract):
    list_url = "/api/v1/users"
    detail_url = "/api/v1/users/{id}"
    detail_methods = ("get", "patch", "delete")

    def make_object(self, world):
        with world.schema():
            # Ids are per schema: one no other tenant has, so a 404 can only mean isolation.
            pk = {"alpha": 9001, "beta": 9002}[world.tenant.slug]
            return User.objects.create_user(f"iso-{world.tenant.slug}", role=User.Role.SUPPORT, id=pk).pk


def test_it_adds_a_support_user_with_an_admin_key(alpha):
    """T4: the created person can sign in on the tenant's domain."""
    response = alpha.api().post("/api/v1/users", {"username": "sofia", "role": "support", "password": NEW_PASSWORD}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["role"] == "support" and body["is_active"] and not body["invited"] and "password" not in body
    assert alpha.dashboard().post("/login/", {"username": "sofia", "password": NEW_PASSWORD}).status_code == 302


def test_it_refuses_user_management_to_a_channel_key(alpha):
    """T3, T4: a channel key cannot create (nor list, nor change) a user."""
    channel = alpha.api(key=alpha.channel_key)
    response = channel.post("/api/v1/users", {"username": "intruso", "role": "admin", "password": NEW_PASSWORD}, content_type="application/json")
    assert response.status_code == 403
    assert channel.get("/api/v1/users").status_code == 403
    with alpha.schema():
        sam_id = User.objects.get(username="sam").pk
        assert not User.objects.filter(username="intruso").exists()
    assert channel.patch(f"/api/v1/users/{sam_id}", {"role": "admin"}, content_type="application/json").status_code == 403
    with alpha.schema():
        assert User.objects.get(pk=sam_id).role == User.Role.SUPPORT


def test_it_invites_by_e_mail_with_a_link_to_the_tenants_dashboard(alpha, mailoutbox, django_capture_on_commit_callbacks):
    """T4: without a password, the invitation links to the dashboard's domain, whatever host the API was called on."""
    with django_capture_on_commit_callbacks(execute=True):
        response = alpha.api().post("/api/v1/users", {"username": "lucia", "email": "lucia@example.com", "role": "admin"}, content_type="application/json")
    assert response.status_code == 201 and response.json()["invited"]
    assert len(mailoutbox) == 1 and f"http://{alpha.domain}/reset/" in mailoutbox[0].body


def test_a_password_link_goes_to_the_dashboard_whatever_host_or_port_the_request_named(
        alpha, mailoutbox, django_capture_on_commit_callbacks, settings):
    """Issue 19 (low): links are built from the tenant's primary domain and the configured scheme
    and port (ASIXTO_DASHBOARD_SCHEME, ASIXTO_DASHBOARD_PORT), never from the request's Host."""
    settings.ASIXTO_DASHBOARD_SCHEME, settings.ASIXTO_DASHBOARD_PORT = "https", "8443"
    body = {"username": "marta", "email": "marta@example.com", "role": "support"}
    with django_capture_on_commit_callbacks(execute=True):
        response = alpha.api().post("/api/v1/users", body, content_type="application/json", HTTP_HOST=f"{alpha.domain}:6666")
    assert response.status_code == 201, response.content
    assert f"https://{alpha.domain}:8443/reset/" in mailoutbox[0].body and ":6666" not in mailoutbox[0].body


@pytest.mark.parametrize("payload, field", [
    ({"username": "x", "role": "owner", "password": NEW_PASSWORD}, "role"),
    ({"username": "ana", "role": "support", "password": NEW_PASSWORD}, "username"),
    ({"username": "weak", "role": "support", "password": "1234"}, "password"),
    ({"username": "nomail", "role": "support"}, "email"),
    ({"username": "x", "role": "support", "password": NEW_PASSWORD, "is_superuser": True}, "is_superuser"),
])
def test_it_answers_bad_input_with_the_field_at_fault(alpha, payload, field):
    """A4: 400 with the field named; nobody is created."""
    response = alpha.api().post("/api/v1/users", payload, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    with alpha.schema():
        assert User.objects.count() == 3


def test_it_changes_a_role_and_deactivates(alpha):
    """T4: PATCH changes the role; DELETE deactivates and the person can no longer sign in."""
    with alpha.schema():
        sam_id = User.objects.get(username="sam").pk
    assert alpha.api().patch(f"/api/v1/users/{sam_id}", {"role": "admin"}, content_type="application/json").json()["role"] == "admin"
    body = alpha.api().delete(f"/api/v1/users/{sam_id}").json()
    assert body["is_active"] is False
    assert alpha.dashboard().post("/login/", {"username": "sam", "password": "correct-horse-battery"}).status_code == 200


def test_it_keeps_the_last_active_admin(alpha):
    """T4: demoting or deactivating the only active admin is 409 and changes nothing."""
    with alpha.schema():
        User.objects.exclude(username="ana").filter(role=User.Role.ADMIN).update(is_active=False)
        ana_id = User.objects.get(username="ana").pk
    for call in (
        lambda api: api.patch(f"/api/v1/users/{ana_id}", {"role": "support"}, content_type="application/json"),
        lambda api: api.patch(f"/api/v1/users/{ana_id}", {"is_active": False}, content_type="application/json"),
        lambda api: api.delete(f"/api/v1/users/{ana_id}"),
    ):
        response = call(alpha.api())
        assert response.status_code == 409 and response.json()["error"]["code"] == "last_admin"
    with alpha.schema():
        ana = User.objects.get(pk=ana_id)
        assert ana.is_active and ana.role == User.Role.ADMIN
