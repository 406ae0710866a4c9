"""CSRF origins (T1, T4): one tenant's dashboard never trusts a form posted from another tenant's
subdomain. Same-origin posts need no trusted origins at all (Django compares Origin with Host)."""

from django.conf import settings
from django.test import Client

from tests.conftest import PASSWORD


def _signed_in_with_csrf(world, host):
    client = Client(HTTP_HOST=host, enforce_csrf_checks=True)
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    response = client.post("/login/", {"username": "ana", "password": PASSWORD, "csrfmiddlewaretoken": token},
                           HTTP_ORIGIN=f"http://{host}")
    assert response.status_code == 302
    return client, client.cookies["csrftoken"].value


def test_the_default_trusts_no_other_origin():
    """T1: nothing configured, nothing trusted beyond the request's own origin."""
    assert not any("*" in origin for origin in settings.CSRF_TRUSTED_ORIGINS)


def test_a_post_from_another_tenants_subdomain_is_refused(alpha):
    """T1, T4: a valid token, but the form came from beta's dashboard: 403, nothing changes."""
    host = f"{alpha.domain}:8000"
    client, token = _signed_in_with_csrf(alpha, host)
    response = client.post("/api-keys/", {"name": "x", "scope": "admin", "csrfmiddlewaretoken": token},
                           HTTP_ORIGIN="http://beta.localhost:8000")
    assert response.status_code == 403
    response = client.post("/api-keys/", {"name": "x", "scope": "admin", "csrfmiddlewaretoken": token},
                           HTTP_ORIGIN=f"http://{host}")
    assert response.status_code == 200 and response.context["created_key"]
