"""Dates typed in real Chromium whose locale is not the page's (issue 20, A2): a Spanish page in
an English (en-US) browser asks for dd/mm/aaaa and reads a date typed so; an English page in a
Spanish (es-ES) browser asks for mm/dd/yyyy. Chromium's own date inputs would follow the browser
instead. The server's side: tests/test_typed_dates.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runtime.models import Conversation
from tests.accounts.test_people_browser import chromium, sign_in
from tests.tenants.test_browser import live_server

pytestmark = pytest.mark.browser
# The page's language, the browser's locale, how the page writes a date, its hint, its error.
CASES = [("es", "en-US", "%d/%m/%Y", "dd/mm/aaaa", "Escriba la fecha como dd/mm/aaaa"),
         ("en", "es-ES", "%m/%d/%Y", "mm/dd/yyyy", "Write the date as mm/dd/yyyy")]


@pytest.fixture
def site(committed_world, django_db_blocker):
    """Two conversations, a week apart and more; a live server. The ORM is done with before
    Chromium starts (Playwright's event loop runs in this thread)."""
    with committed_world.schema():
        for ref, days in (("cliente-reciente", 1), ("cliente-antiguo", 40)):
            conversation = Conversation.objects.create(channel_kind="chat", channel_name="web", language="es", customer_ref=ref)
            when = timezone.now() - timedelta(days=days)
            Conversation.objects.filter(pk=conversation.pk).update(created_at=when, updated_at=when)
    today = timezone.localdate()
    with live_server(django_db_blocker) as port:
        yield {"base": f"http://{committed_world.domain}:{port}", "week_ago": today - timedelta(days=7), "year": today.year}


@pytest.mark.parametrize(("language", "locale", "pattern", "hint", "error"), CASES)
def test_a_date_is_typed_as_the_page_writes_it_whatever_the_browsers_locale(site, language, locale, pattern, hint, error):
    """Issue 20, A2, A4: the field asks in the page's language, the date typed that way filters the
    list and is shown back; an other-language date is refused with how to write it."""
    with chromium() as browser:
        context = browser.new_context(locale=locale)  # the browser asks for its own language too
        page = context.new_page()
        sign_in(page, site["base"], "ana")
        page.goto(f"{site['base']}/conversations/")
        if page.get_attribute("html", "lang") != language:  # the person picks the page's language in its menu
            with page.expect_navigation():
                page.select_option("form.lang select", language)
        assert page.get_attribute("html", "lang") == language and page.evaluate("navigator.language") == locale
        assert page.locator("main input[type=date], main input[type=datetime-local]").count() == 0
        since = page.locator("main input[name=since]")
        assert since.get_attribute("placeholder") == hint

        typed = site["week_ago"].strftime(pattern)
        since.fill(typed)
        with page.expect_navigation():
            page.click("main form.filters button[type=submit]")
        main = page.inner_text("main")
        assert "cliente-reciente" in main and "cliente-antiguo" not in main
        assert page.input_value("main input[name=since]") == typed

        other_languages = {"es": f"12/31/{site['year']}", "en": f"31/12/{site['year']}"}[language]
        page.fill("main input[name=since]", other_languages)
        with page.expect_navigation():
            page.click("main form.filters button[type=submit]")
        assert error in page.inner_text("main") and "cliente-reciente" not in page.inner_text("main")

        page.goto(f"{site['base']}/api-keys/")
        assert page.get_attribute("main input[name=expires_at]", "placeholder") == f"{hint} hh:mm"
        context.close()
