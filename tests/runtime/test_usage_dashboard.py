"""Model usage in the dashboard and the prices behind its cost (issue 20, A2, A4, T6): the
overview shows turns, model requests and tokens of the last 24 hours and 30 days as recorded,
and the cost once the admin set prices per million tokens (settings page or API)."""

from datetime import timedelta
from decimal import Decimal

from django.db import connection
from django.utils import timezone

from tenants.models import Tenant
from tests.runtime.runtime_support import tenant_settings
from tests.runtime.test_usage_api import make_turn
from tests.tenants.test_dashboard import SETTINGS_FORM


def tile(world, user="sam"):
    response = world.dashboard(user).get("/")
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('id="overview-usage"')
    return html[start:html.index("</section>", start)]


def test_the_overview_shows_the_recorded_usage_and_its_cost(alpha):
    """Issue 20, A2, T4: support staff see the figures too; the 30 days include older turns."""
    now = timezone.now()
    make_turn(alpha, now - timedelta(hours=2), requests=[("model", 1234, 56), ("reply", 766, 44)])
    make_turn(alpha, now - timedelta(days=3), requests=[("model", 5000, 900), ("model", None, None)])
    text = tile(alpha)
    for figure in ("<td>1</td><td>2</td>", "<td>2</td><td>4</td>", "<td>2000</td><td>7000</td>", "<td>100</td><td>1000</td>"):
        assert figure in text, (figure, text)
    assert "/api/v1/usage" in text
    with tenant_settings(alpha, price_in_per_million=Decimal("3"), price_out_per_million=Decimal("15")):
        text = tile(alpha)
    assert "<td>0,007500</td><td>0,036000</td>" in text  # Spanish page; 2000 × 3 + 100 × 15 and 7000 × 3 + 1000 × 15, per million


def test_an_admin_sets_the_prices_in_the_settings(alpha):
    """Issue 20, T6, A4: both prices optional; a negative one is refused and nothing is stored."""
    client = alpha.dashboard("ana")
    response = client.post("/settings/", {**SETTINGS_FORM, "price_in_per_million": "0.15", "price_out_per_million": "0.6"})
    assert response.status_code == 302, response.content.decode()[:2000]
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(pk=alpha.tenant.pk)
    assert (tenant.price_in_per_million, tenant.price_out_per_million) == (Decimal("0.15"), Decimal("0.6"))
    response = client.post("/settings/", {**SETTINGS_FORM, "price_in_per_million": "-1", "price_out_per_million": ""})
    assert response.status_code == 200 and "price_in_per_million" in response.context["form"].errors
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).price_out_per_million == Decimal("0.6")


def test_the_prices_are_agent_settings_in_the_api(alpha):
    """Issue 20, T6, A4: PATCH /api/v1/tenant sets and clears them; a bad value is a 400 with a code."""
    api = alpha.api()
    response = api.patch("/api/v1/tenant", {"price_in_per_million": "2.5", "price_out_per_million": "10"},
                         content_type="application/json")
    assert response.status_code == 200, response.content
    # A decimal is a JSON string, as the schema documents it (issue 19): a number is refused.
    number = api.patch("/api/v1/tenant", {"price_in_per_million": 3}, content_type="application/json")
    assert number.status_code == 400 and "price_in_per_million" in number.json()["error"]["fields"]
    assert (response.json()["price_in_per_million"], response.json()["price_out_per_million"]) == ("2.5000", "10.0000")
    bad = api.patch("/api/v1/tenant", {"price_out_per_million": "-3"}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"
    assert "price_out_per_million" in bad.json()["error"]["fields"]
    cleared = api.patch("/api/v1/tenant", {"price_in_per_million": None}, content_type="application/json").json()
    assert cleared["price_in_per_million"] is None and cleared["price_out_per_million"] == "10.0000"
