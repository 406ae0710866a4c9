"""Bad input in the operators' admin (T5, A4): a reserved, malformed or taken slug, or a taken
domain, is a form error on the tenant's add page; JSON PostgreSQL cannot store is a form error
on the change pages. Never a 500, and nothing is stored."""

import pytest
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_exists

from accounts.models import User
from tenants.models import Tenant


@pytest.fixture
def operator(worlds, db):
    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    client = Client(HTTP_HOST="localhost")
    assert client.post("/admin/login/?next=/admin/", {"username": "ops", "password": "ops-password-123"}).status_code == 302
    return client


@pytest.mark.parametrize("slug,field", [
    ("www", "slug"), ("admin", "slug"), ("public", "slug"), ("alpha", "slug"), ("a--b", "slug"), ("Bad Slug", "slug"),
    ("pg-temp", "slug"),  # a schema name PostgreSQL keeps for itself: was a 500 (security review)
])
def test_it_shows_a_form_error_for_a_slug_it_cannot_use(operator, slug, field):
    """T5, A4: the add page again, with the reason under the field."""
    before = Tenant.objects.count()
    response = operator.post("/admin/tenants/tenant/add/", {"slug": slug, "name": "Www SA", "domain": ""})
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert Tenant.objects.count() == before


def test_it_shows_a_form_error_for_a_domain_in_use(operator, alpha):
    """T5, A4: another tenant's domain is refused on the form."""
    response = operator.post("/admin/tenants/tenant/add/", {"slug": "omega", "name": "Omega", "domain": alpha.domain})
    assert response.status_code == 200 and "domain" in response.context["adminform"].form.errors
    assert not schema_exists("omega")


@pytest.mark.parametrize("text", ['["a\\u0000"]', '["\\ud800"]', "[" * 5000 + "]" * 5000, "[NaN]"])
def test_it_shows_a_form_error_for_json_it_cannot_store(operator, text):
    """A4: an approved command's fixed arguments with a NUL, a surrogate or 5,000 levels."""
    response = operator.post("/admin/tenants/approvedcommand/add/", {
        "slug": "hora", "executable": "/usr/bin/true", "base_args": text, "enabled": "on",
    })
    assert response.status_code == 200
    assert "base_args" in response.context["adminform"].form.errors
