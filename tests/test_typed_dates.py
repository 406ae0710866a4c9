"""Dates typed in the dashboard read in the page's language (issue 20, A2, A4): the conversation
and truncation filters and an API key's expiry are text fields written as the page's language
writes a date (dd/mm/aaaa in Spanish, mm/dd/yyyy in English), whatever the browser's locale; ISO
dates (links, bookmarks) are read in both; what reads as no date is a 400 that says how to write
one. Chromium's side: tests/test_typed_dates_browser.py."""

from datetime import date, timedelta
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.utils import timezone, translation

from django.core.exceptions import ValidationError

from asixto.date_fields import TypedDateField, TypedDateTimeField
from tenants.models import ApiKey
from tests.runtime.test_dashboard_conversations import make_conversation


def field(html, name):
    """The attributes of the page's input called `name`."""
    found = {}

    class Inputs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "input" and dict(attrs).get("name") == name:
                found.update(attrs)

    Inputs().feed(html)
    assert found, f"no field {name}"
    return found


@pytest.mark.parametrize(("language", "typed"), [("es", "31/12/2026"), ("es", "31/12/26"), ("es", "2026-12-31"),
                                                 ("en", "12/31/2026"), ("en", "12/31/26"), ("en", "Dec 31, 2026"),
                                                 ("en", "2026-12-31")])
def test_it_reads_a_date_as_the_language_writes_it(language, typed):
    """Issue 20: each language's own way, and ISO in both."""
    with translation.override(language):
        assert TypedDateField().clean(typed) == date(2026, 12, 31)


@pytest.mark.parametrize(("language", "typed", "message"), [
    ("es", "12/31/2026", "Escriba la fecha como dd/mm/aaaa, por ejemplo 31/12/"),  # an English date on a Spanish page
    ("es", "ayer", "Escriba la fecha como dd/mm/aaaa, por ejemplo 31/12/"),
    ("en", "31/12/2026", "Write the date as mm/dd/yyyy, for example 12/31/"),
    ("en", "02/30/2026", "Write the date as mm/dd/yyyy, for example 12/31/"),
])
def test_a_date_that_does_not_read_says_how_to_write_one(language, typed, message):
    """A4, issue 20: the error names the page language's pattern and an example that cannot be
    misread (the 31st of December)."""
    with translation.override(language):
        with pytest.raises(ValidationError) as raised:
            TypedDateField().clean(typed)
        assert raised.value.messages[0].startswith(message), raised.value.messages


def test_a_moment_reads_with_its_time(settings):
    """Issue 20: an API key's expiry, in the page's language, as UTC (the settings' zone)."""
    assert settings.TIME_ZONE == "UTC"
    expected = timezone.make_aware(timezone.datetime(2026, 12, 31, 18, 30))
    with translation.override("es"):
        assert TypedDateTimeField().clean("31/12/2026 18:30") == expected
        assert TypedDateTimeField().clean("2026-12-31T18:30") == expected
        with pytest.raises(ValidationError) as raised:
            TypedDateTimeField().clean("12/31/2026 18:30")
        assert raised.value.messages == [f"Escriba la fecha y la hora como dd/mm/aaaa hh:mm, por ejemplo 31/12/{timezone.localdate().year} 18:30."]
    with translation.override("en"):
        assert TypedDateTimeField().clean("12/31/2026 18:30") == expected


@pytest.mark.parametrize(("language", "since", "until"), [("es", "{week:%d/%m/%Y}", ""), ("en", "{week:%m/%d/%Y}", ""),
                                                          ("es", "", "{month:%d/%m/%Y}"), ("en", "", "{month:%m/%d/%Y}")])
def test_the_conversation_filter_reads_the_pages_dates(alpha, language, since, until):
    """A2, issue 20: the dates typed in the page's language narrow the list, and the fields show
    them back with the language's hint."""
    recent, old = make_conversation(alpha, text="reciente"), make_conversation(alpha, days_ago=40, text="antigua")
    today = timezone.localdate()
    typed = {"since": since.format(week=today - timedelta(days=7)), "until": until.format(month=today - timedelta(days=30))}
    response = alpha.dashboard("sam").get("/conversations/", {name: value for name, value in typed.items() if value},
                                          HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    assert {c.pk for c in response.context["page"]} == ({recent.pk} if since else {old.pk})
    html = response.content.decode()
    hint = {"es": "dd/mm/aaaa", "en": "mm/dd/yyyy"}[language]
    for name, value in typed.items():
        assert field(html, name) == {"type": "text", "name": name, "class": "typed-date", "placeholder": hint, "autocomplete": "off",
                                     "id": f"id_{name}", **({"value": value} if value else {})}


def test_a_bad_date_in_a_filter_is_a_400_that_says_how_to_write_it(alpha):
    """A4, issue 20: the typed text is kept in its field, the error is in the page's language."""
    make_conversation(alpha)
    response = alpha.dashboard("sam").get("/conversations/", {"since": "12/31/2026"}, HTTP_ACCEPT_LANGUAGE="es")
    assert response.status_code == 400 and list(response.context["page"]) == []
    html = response.content.decode()
    assert "Escriba la fecha como dd/mm/aaaa" in html and field(html, "since")["value"] == "12/31/2026"
    truncations = alpha.dashboard("sam").get("/truncations/", {"until": "31/12/2026"}, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Write the date as mm/dd/yyyy" in truncations and field(truncations, "until")["value"] == "31/12/2026"


@pytest.mark.parametrize(("language", "pattern"), [("es", "%d/%m/%Y"), ("en", "%m/%d/%Y")])
def test_the_truncation_page_shows_the_days_it_covers_in_the_pages_language(alpha, language, pattern):
    """A2, issue 20: with no dates typed the fields show the default 30 days; typed ones (ISO from
    a link here) are shown back as the language writes them."""
    today = timezone.localdate()
    html = alpha.dashboard("sam").get("/truncations/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert field(html, "since")["value"] == f"{today - timedelta(days=29):{pattern}}" and field(html, "until")["value"] == f"{today:{pattern}}"
    linked = alpha.dashboard("sam").get("/truncations/", {"since": "2026-01-05", "until": "2026-02-03"}, HTTP_ACCEPT_LANGUAGE=language)
    assert field(linked.content.decode(), "since")["value"] == f"{date(2026, 1, 5):{pattern}}"
    assert linked.context["window"].since == date(2026, 1, 5) and linked.context["window"].until == date(2026, 2, 3)


def test_an_api_keys_expiry_is_typed_in_the_pages_language(alpha):
    """Issue 20: "31/12/… 18:30" on the Spanish page is the 31st of December at 18:30 UTC."""
    year = timezone.localdate().year + 1
    client = alpha.dashboard("ana")
    page = client.get("/api-keys/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert field(page, "expires_at")["placeholder"] == "dd/mm/aaaa hh:mm" and field(page, "expires_at")["type"] == "text"
    response = client.post("/api-keys/", {"name": "piloto", "scope": "channel", "expires_at": f"31/12/{year} 18:30"},
                           HTTP_ACCEPT_LANGUAGE="es")
    assert response.status_code == 200
    connection.set_schema_to_public()
    stored = ApiKey.objects.get(prefix=ApiKey.parse_prefix(response.context["created_key"]))
    assert stored.expires_at == timezone.make_aware(timezone.datetime(year, 12, 31, 18, 30))
