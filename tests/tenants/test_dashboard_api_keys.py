"""API keys in the dashboard (issue 20, T3, A2, A4): an optional expiry on creation, last use and
expiry in the list, and a "Rotar" button that shows the new key once."""

from datetime import timedelta

from django.db import connection
from django.utils import timezone, translation
from django.utils.dateformat import format as date_format

from tenants.models import ApiKey
from tenants.services import api_key_create


def row_of(page, name):
    row = page[page.index(f">{name}<"):]
    return row[:row.index("</tr>")]


def test_it_creates_a_key_with_an_expiry_and_lists_last_use_and_expiry(alpha):
    """Issue 20: the expiry typed in the form is stored; the list shows it and the last use
    ("Nunca" for a key never used)."""
    client = alpha.dashboard("ana")
    when = (timezone.now() + timedelta(days=3)).replace(second=0, microsecond=0)
    response = client.post("/api-keys/", {"name": "piloto", "scope": "channel", "expires_at": when.strftime("%Y-%m-%dT%H:%M")})
    assert response.status_code == 200
    plaintext = response.context["created_key"]
    assert alpha.api(key=plaintext).get("/api/v1/conversations").status_code == 200
    api_key_create(tenant=alpha.tenant, name="sin-uso", scope=ApiKey.Scope.CHANNEL)
    connection.set_schema_to_public()
    assert ApiKey.objects.get(prefix=ApiKey.parse_prefix(plaintext)).expires_at == when
    page = client.get("/api-keys/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Último uso" in page and "Vence" in page
    used = row_of(page, "piloto")
    with translation.override("es"):
        month = date_format(when, "b")
    assert f"{when.day} {month} {when.year}, {when.strftime('%H:%M')}" in used
    assert "Nunca" not in used and str(timezone.now().year) in used.split("</td>")[4]
    assert "Nunca" in row_of(page, "sin-uso")


def test_it_refuses_an_expiry_in_the_past_and_makes_no_key(alpha):
    """A4, issue 20: the form says what is wrong (400); no key is made."""
    before = ApiKey.objects.filter(tenant=alpha.tenant).count()
    client = alpha.dashboard("ana")
    past = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = client.post("/api-keys/", {"name": "tarde", "scope": "channel", "expires_at": past}, HTTP_ACCEPT_LANGUAGE="es")
    assert response.status_code == 400
    assert response.context["created_key"] is None
    assert "futuro" in response.content.decode()
    connection.set_schema_to_public()
    assert ApiKey.objects.filter(tenant=alpha.tenant).count() == before


def test_the_rotate_button_shows_the_new_key_once_and_retires_the_old(alpha):
    """Issue 20, T3: "Rotar" makes a key with the same name and scope, shows it once; the old key
    keeps the chosen grace."""
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="whatsapp", scope=ApiKey.Scope.CHANNEL)
    client = alpha.dashboard("ana")
    page = client.get("/api-keys/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert f'action="/api-keys/{old.pk}/rotate/"' in page and "Rotar" in page
    response = client.post(f"/api-keys/{old.pk}/rotate/", {"grace_minutes": "60"})
    assert response.status_code == 200
    plaintext = response.context["created_key"]
    assert plaintext in response.content.decode()
    assert plaintext not in client.get("/api-keys/").content.decode()
    assert alpha.api(key=plaintext).get("/api/v1/conversations").status_code == 200
    assert alpha.api(key=old_plaintext).get("/api/v1/conversations").status_code == 200  # the grace
    connection.set_schema_to_public()
    new = ApiKey.objects.get(prefix=ApiKey.parse_prefix(plaintext))
    assert (new.name, new.scope) == ("whatsapp", "channel")
    assert ApiKey.objects.get(pk=old.pk).expires_at is not None


def test_rotating_now_revokes_the_old_key_and_support_staff_cannot_rotate(alpha, beta):
    """T3, T4, T1: grace 0 revokes at once; support staff get 403; another tenant's key is 404."""
    old, old_plaintext = api_key_create(tenant=alpha.tenant, name="voz", scope=ApiKey.Scope.CHANNEL)
    assert alpha.dashboard("sam").post(f"/api-keys/{old.pk}/rotate/", {"grace_minutes": "0"}).status_code == 403
    other, _plaintext = api_key_create(tenant=beta.tenant, name="ajena", scope=ApiKey.Scope.CHANNEL)
    assert alpha.dashboard("ana").post(f"/api-keys/{other.pk}/rotate/", {"grace_minutes": "0"}).status_code == 404
    response = alpha.dashboard("ana").post(f"/api-keys/{old.pk}/rotate/", {"grace_minutes": "0"})
    assert response.status_code == 200 and response.context["created_key"]
    assert alpha.api(key=old_plaintext).get("/api/v1/conversations").status_code == 401
    connection.set_schema_to_public()
    assert ApiKey.objects.get(pk=other.pk).is_active
