"""Sign-in throttling (T4): after a few wrong passwords an account, or an address, must wait —
even the right password is refused until the cool-off ends — on the tenant dashboard and in the
operators' Django admin. Counters live in Redis under the tenant's schema, so `ana` locked on
tenant A is not locked on tenant B (users exist per schema, names repeat)."""

import time

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.test import Client

from accounts.models import User
from tests.conftest import PASSWORD

LIMIT = django_settings.AXES_FAILURE_LIMIT


@pytest.fixture(autouse=True)
def _forget_failures():
    """Counters outlive the test's rolled-back transaction: drop them so other tests can sign in."""
    yield
    client = cache._cache.get_client(write=True)
    for key in client.scan_iter(match="*axes-*"):
        client.delete(key)


def _sign_in(world, username, password, address="203.0.113.10", **extra):
    client = Client(HTTP_HOST=world.domain, REMOTE_ADDR=address, **extra)
    response = client.post("/login/", {"username": username, "password": password})
    return response, client


def _signed_in(client):
    return "_auth_user_id" in client.session


def test_it_locks_an_account_after_repeated_failures_from_many_addresses(alpha):
    """T4: a password-guessing run spread over many addresses stops at the limit; then the
    right password is refused too, with a clear message and 429."""
    for attempt in range(LIMIT - 1):
        response, _client = _sign_in(alpha, "ana", f"wrong-{attempt}", address=f"198.51.100.{attempt + 1}")
        assert response.status_code == 200  # the form again, "wrong username or password"
    assert _sign_in(alpha, "ana", "wrong", address="198.51.100.199")[0].status_code == 429  # the limit
    response, client = _sign_in(alpha, "ana", PASSWORD, address="198.51.100.200", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert not _signed_in(client)
    # Another account of the tenant, from a fresh address, is unaffected.
    response, client = _sign_in(alpha, "sam", PASSWORD, address="198.51.100.201")
    assert response.status_code == 302 and _signed_in(client)


def test_it_locks_an_address_that_tries_many_accounts(alpha):
    """T4: one address spraying usernames is stopped, for every account, from that address only."""
    for attempt in range(LIMIT):
        _sign_in(alpha, f"nobody{attempt}", "wrong", address="203.0.113.99")
    response, client = _sign_in(alpha, "ana", PASSWORD, address="203.0.113.99")
    assert response.status_code == 429 and not _signed_in(client)
    response, client = _sign_in(alpha, "ana", PASSWORD, address="203.0.113.98")
    assert response.status_code == 302 and _signed_in(client)


def test_a_lockout_on_one_tenant_does_not_lock_the_same_name_on_another(alpha, beta):
    """T1, T4: `ana` of alpha locked out; `ana` of beta, from the same addresses, signs in."""
    for attempt in range(LIMIT + 2):
        _sign_in(alpha, "ana", "wrong", address="192.0.2.7")
    assert _sign_in(alpha, "ana", PASSWORD, address="192.0.2.7")[0].status_code == 429
    response, client = _sign_in(beta, "ana", PASSWORD, address="192.0.2.7")
    assert response.status_code == 302 and _signed_in(client)


def test_a_username_shaped_like_an_address_does_not_lock_that_address(alpha):
    """T4: counters for accounts and for addresses never share a key."""
    for _attempt in range(LIMIT + 1):
        _sign_in(alpha, "192.0.2.55", "wrong", address=f"198.51.100.{_attempt + 20}")
    response, client = _sign_in(alpha, "ana", PASSWORD, address="192.0.2.55")
    assert response.status_code == 302 and _signed_in(client)


def test_it_lets_the_account_in_again_after_the_cool_off(alpha, settings):
    """T4: the lockout is temporary."""
    from datetime import timedelta

    settings.AXES_COOLOFF_TIME = timedelta(seconds=2)
    for _attempt in range(LIMIT):
        _sign_in(alpha, "ana", "wrong", address="192.0.2.8")
    assert _sign_in(alpha, "ana", PASSWORD, address="192.0.2.9")[0].status_code == 429
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        response, client = _sign_in(alpha, "ana", PASSWORD, address="192.0.2.10")
        if response.status_code == 302:
            break
        time.sleep(0.5)
    assert response.status_code == 302 and _signed_in(client)


def test_it_throttles_the_operators_admin_too(worlds, db):
    """T4, T5: the Django admin on the platform domain has the same limit."""
    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    for attempt in range(LIMIT):
        client = Client(HTTP_HOST="localhost", REMOTE_ADDR=f"198.51.100.{attempt + 1}")
        response = client.post("/admin/login/?next=/admin/", {"username": "ops", "password": "wrong"})
        assert response.status_code == (200 if attempt < LIMIT - 1 else 429)
    client = Client(HTTP_HOST="localhost", REMOTE_ADDR="198.51.100.250", HTTP_ACCEPT_LANGUAGE="en")
    response = client.post("/admin/login/?next=/admin/", {"username": "ops", "password": "ops-password-123"})
    assert response.status_code == 429 and "Too many failed sign-in attempts" in response.content.decode()
    assert client.get("/admin/").status_code == 302  # still signed out


def test_signing_in_still_works_after_a_few_mistakes(alpha):
    """T4: a person who mistypes twice is not locked out."""
    for _attempt in range(2):
        _sign_in(alpha, "ana", "typo", address="192.0.2.30")
    response, client = _sign_in(alpha, "ana", PASSWORD, address="192.0.2.30")
    assert response.status_code == 302 and _signed_in(client)


def test_the_admin_sign_in_without_next_goes_to_the_admin(worlds, db):
    """T5: signing in (and out) of the admin never redirects to a dashboard URL that does not
    exist on the platform domain."""
    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    client = Client(HTTP_HOST="localhost")
    response = client.post("/admin/login/", {"username": "ops", "password": "ops-password-123"})
    assert response.status_code == 302
    assert client.post("/admin/logout/").status_code in (200, 302)
