"""People and the console in real headless Chromium (T4, A2, G9): an admin adds a support user,
who signs in and cannot change settings; a password change; the console asks before a real
write; pages fit a phone-width screen; the API docs have an Authorize button."""

import json
from contextlib import contextmanager

import pytest
from django.db import connection
from django.utils import timezone

from examples.soporte.definitions import ABRIR_CASO_SOPORTE
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from accounts.models import User
from tests.conftest import PASSWORD
from tests.support.mcp_servers import serve_asgi
from tests.tenants.test_browser import CHROMIUM, CHROMIUM_ARGS, live_server_port  # noqa: F401 - fixture
from tests.tools.gateway_support import certified_tool
from tools.models import ToolCall

pytestmark = pytest.mark.browser
NEW_PASSWORD = "browser-made-password-5"


@contextmanager
def chromium():
    """Headless Chromium. Playwright's sync API runs an event loop in this thread, so the ORM
    (which refuses to run beside one) is used only before and after this block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def sign_in(page, base, username, password=PASSWORD):
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/")


def test_an_admin_adds_a_support_user_who_cannot_change_settings(committed_world, live_server_port):  # noqa: F811
    """T4: ana adds sofía as support from the People page; sofía signs in, reads the calls, gets
    403 on settings and sees no admin links; she changes her own password."""
    base = f"http://{committed_world.domain}:{live_server_port}"
    with chromium() as browser:
        _add_support_user_and_use_it(browser, base)
    with committed_world.schema():
        sofia = User.objects.get(username="sofia")
        assert sofia.role == User.Role.SUPPORT and sofia.check_password("sofias-own-password-8")


def _add_support_user_and_use_it(browser, base):
    admin = browser.new_page(extra_http_headers={"Accept-Language": "en"})
    sign_in(admin, base, "ana")
    admin.click("nav.sidebar >> text=People")
    admin.fill("#add-person input[name=username]", "sofia")
    admin.select_option("#add-person select[name=role]", "support")
    admin.fill("#add-person input[name=password]", NEW_PASSWORD)
    admin.click("#add-person button[type=submit]")
    admin.wait_for_selector("tr[data-person=sofia]")

    sofia = browser.new_context(extra_http_headers={"Accept-Language": "en"}).new_page()
    sign_in(sofia, base, "sofia", NEW_PASSWORD)
    assert sofia.locator("nav.sidebar >> text=Agent settings").count() == 0
    assert sofia.locator("nav.sidebar >> text=People").count() == 0
    response = sofia.goto(f"{base}/settings/")
    assert response.status == 403 and "Not allowed" in sofia.content()
    assert sofia.goto(f"{base}/calls/").status == 200

    sofia.click("a.account")
    sofia.fill("input[name=old_password]", NEW_PASSWORD)
    sofia.fill("input[name=new_password1]", "sofias-own-password-8")
    sofia.fill("input[name=new_password2]", "sofias-own-password-8")
    sofia.click("main button[type=submit]")
    sofia.wait_for_selector(".message")
    assert "Your password was changed" in sofia.content()


def test_the_console_asks_before_calling_a_write_tool(committed_world, live_server_port):  # noqa: F811
    """G9, A2: the first click on a write tool's console shows what will happen and calls nothing;
    cancelling calls nothing; confirming opens exactly one case."""
    desk = SupportDesk()
    with serve_asgi(build_app(desk)) as url:
        tool = certified_tool(committed_world, url, definition=ABRIR_CASO_SOPORTE, slug="soporte")
        connection.set_schema_to_public()
        base = f"http://{committed_world.domain}:{live_server_port}"
        with chromium() as browser:
            _confirm_a_console_call(browser, base, tool, desk)
    with committed_world.schema():
        assert ToolCall.objects.filter(source="console").count() == 1


def _confirm_a_console_call(browser, base, tool, desk):
    page = browser.new_page(extra_http_headers={"Accept-Language": "en"})
    sign_in(page, base, "ana")
    page.goto(f"{base}/tools/{tool.pk}/")
    assert "«required" in page.input_value("#console-form textarea[name=arguments]")
    case = {"documento": "CC1032456789", "tipo": "falla", "descripcion": "Sin servicio."}
    page.fill("#console-form textarea[name=arguments]", json.dumps(case))
    page.click("#console-form button[type=submit]")
    page.wait_for_selector("#console-confirm")
    assert "This call is real" in page.inner_text("#console-confirm")
    assert "abrir un caso de soporte" in page.inner_text("#console-confirm")
    assert desk.case_count == 0
    page.click("#console-cancel")
    page.wait_for_selector("#console-form")
    assert desk.case_count == 0
    assert json.loads(page.input_value("#console-form textarea[name=arguments]")) == case, "back to the form, arguments kept"
    page.click("#console-form button[type=submit]")
    page.click("#console-confirm-call")
    page.wait_for_selector("#console-outcome")
    assert desk.case_count == 1
    assert "SOP-" in page.inner_text("#model-text")


def test_pages_fit_a_phone_width_screen(committed_world, live_server_port):  # noqa: F811
    """A2: at 375 px wide no page scrolls sideways, long tool names included; wide tables scroll
    inside themselves."""
    tool = certified_tool(committed_world, "http://127.0.0.1:9", definition=ABRIR_CASO_SOPORTE, slug="soporte_tecnico")
    with committed_world.schema():
        call = ToolCall.objects.create(
            tool=tool, tool_name=tool.prefixed_name, channel="chat", idempotency_key="k" * 60, outcome="timeout",
            started_at=timezone.now(), request_ids=["req_" + "a" * 20], arguments={"descripcion": "x" * 300},
        )
    connection.set_schema_to_public()
    base = f"http://{committed_world.domain}:{live_server_port}"
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 375, "height": 740}, extra_http_headers={"Accept-Language": "es"})
        page = context.new_page()
        sign_in(page, base, "ana")
        for path in (*PHONE_PAGES, f"/tools/{tool.pk}/", f"/calls/{call.pk}/", "/conversations/", "/truncations/"):
            page.goto(f"{base}{path}")
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (path, overflow)


PHONE_PAGES = ("/", "/servers/", "/servers/new/", "/catalog/", "/calls/", "/violations/", "/settings/", "/api-keys/",
               "/people/", "/account/password/")


def test_the_api_docs_have_an_authorize_button(live_server_port):  # noqa: F811
    """A1: Swagger UI shows Authorize, because the schema declares the Bearer scheme."""
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"http://localhost:{live_server_port}/api/v1/docs/")
        authorize = page.wait_for_selector("button.authorize", timeout=30_000)
        assert authorize is not None and authorize.is_visible()
        # The button opens the Bearer scheme's dialog, which only a declared scheme gives.
        authorize.click()
        assert "Bearer" in page.wait_for_selector(".modal-ux", timeout=30_000).inner_text()
