"""Small things a tenant admin notices (A2, A4): revoking a key asks first, the server form shows
one transport's fields with a default, a favicon, one date format, the landing page names this
server's real host and port."""

import re
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import formats, translation

from tenants.models import ApprovedCommand
from tools.models import McpServer

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def test_it_asks_before_revoking_a_key_or_removing_a_server(alpha):
    """A2: destructive dashboard buttons carry a confirmation question (static/asixto/app.js asks it)."""
    page = alpha.dashboard("ana").get("/api-keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    revoke = re.search(r'<form[^>]*api-keys/[^"]+/revoke/"[^>]*>', page).group(0)
    assert 'data-confirm="Revoke the key' in revoke
    assert "asixto/app.js" in page


def test_it_offers_one_transport_at_a_time_with_http_by_default(alpha):
    """M1, A2: streamable HTTP is chosen by default (no empty choice), each field says which
    transport it belongs to, and what is saved drops the other transport's fields."""
    client = alpha.dashboard("ana")
    form = client.get("/servers/new/").context["form"]
    assert form["transport"].value() == "streamable_http"
    assert [value for value, _label in form.fields["transport"].choices] == ["streamable_http", "sse", "stdio"]
    page = client.get("/servers/new/").content.decode()
    assert re.search(r'name="url"[^>]*data-transports="streamable_http sse"|data-transports="streamable_http sse"[^>]*name="url"', page)
    assert re.search(r'data-transports="stdio"[^>]*name="command"|name="command"[^>]*data-transports="stdio"', page)
    connection.set_schema_to_public()
    ApprovedCommand.objects.create(slug="hora", executable=sys.executable, base_args=["-c", "pass"])
    response = client.post("/servers/new/", {
        "slug": "hora", "transport": "stdio", "command": "hora", "url": "https://leftover.example.com/mcp",
        "timeout_seconds": "10", "enabled": "on",
    })
    assert response.status_code == 302, response.context["form"].errors
    with alpha.schema():
        assert McpServer.objects.get(slug="hora").url == ""


def test_it_shows_a_favicon_on_every_page(alpha):
    """A2: the layout links an icon that is served."""
    page = alpha.dashboard().get("/login/").content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)"', page).group(1)
    assert Client(HTTP_HOST=alpha.domain).get(href).status_code == 200


def test_it_uses_one_date_format_on_every_page():
    """A2: every template formats moments the same way (and days, for date ranges), and the long
    and short forms agree per language."""
    formatted = []
    for template in TEMPLATES.rglob("*.html"):
        formatted += [double or single for double, single in re.findall(r"""\|date(?::"([^"]*)"|:'([^']*)')?""", template.read_text())]
    # Y-m-d: the value of an <input type="date">, which browsers show in their own format.
    assert "SHORT_DATETIME_FORMAT" in formatted and set(formatted) <= {"SHORT_DATETIME_FORMAT", "SHORT_DATE_FORMAT", "Y-m-d"}
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            assert formats.get_format("DATETIME_FORMAT") == formats.get_format("SHORT_DATETIME_FORMAT")
            assert formats.get_format("DATE_FORMAT") == formats.get_format("SHORT_DATE_FORMAT")


def test_the_landing_page_names_this_servers_host_and_port(db):
    """A2: the example dashboard address uses the port the page was reached on."""
    page = Client(HTTP_HOST="localhost:8123").get("/").content.decode()
    assert f"http://demo.{settings.ASIXTO_BASE_DOMAIN}:8123/" in page and "localhost:8123/api/v1/docs/" in page
    assert ":8000" not in page
