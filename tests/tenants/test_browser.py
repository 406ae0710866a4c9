"""A real user in real headless Chromium (T4, T6): sign in on the tenant's domain and change a
setting; the page never shows the saved secret again (T7)."""

import shutil
from contextlib import contextmanager

import pytest
from django.db import connection
from django.test.testcases import LiveServerThread, _StaticFilesHandler

from tenants.models import Tenant

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]


@pytest.fixture
def live_server_port(django_db_blocker):
    with live_server(django_db_blocker) as port:
        yield port


@contextmanager
def live_server(django_db_blocker):
    """Django's live server thread on a free loopback port; yields the port.
    A server thread of our own (not pytest-django's live_server), because that one needs
    transactional_db, whose flush would empty the shared tenant tables."""
    with django_db_blocker.unblock():
        thread = LiveServerThread("127.0.0.1", _StaticFilesHandler)
        thread.daemon = True
        thread.start()
        thread.is_ready.wait()
        if thread.error:
            raise thread.error
        try:
            yield thread.port
        finally:
            thread.terminate()


@pytest.mark.browser
def test_it_signs_in_and_changes_a_setting_in_a_real_browser(committed_world, live_server_port):
    """T4, T6, T7, A2: the admin signs in on alpha's domain, saves instructions and a model key."""
    from playwright.sync_api import sync_playwright

    base = f"http://{committed_world.domain}:{live_server_port}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"{base}/settings/")
        page.fill("input[name=username]", "ana")
        page.fill("input[name=password]", "correct-horse-battery")
        page.click("main button[type=submit]")
        page.wait_for_url(f"{base}/settings/")
        page.fill("textarea[name=agent_instructions]", "Responde con datos del catálogo.")
        page.fill("input[name=model_api_key]", "sk-browser-secret")
        page.fill("input[name=iteration_limit]", "4")
        page.click("main button[type=submit]")
        page.wait_for_selector(".message")
        html = page.content()
        browser.close()
    assert "sk-browser-secret" not in html
    assert "Responde con datos del catálogo." in html
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(pk=committed_world.tenant.pk)
    assert tenant.agent_instructions == "Responde con datos del catálogo."
    assert tenant.iteration_limit == 4 and tenant.model_api_key == "sk-browser-secret"
