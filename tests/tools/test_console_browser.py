"""The test console in real headless Chromium (A2, issue 20): once a slow call is sent, its button is
disabled and says "Llamando…"/"Calling…" (a few lines of app.js on a full-page POST) until the
outcome replaces the page."""

import pytest

from tests.accounts.test_people_browser import chromium, sign_in
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tenants.test_browser import live_server_port  # noqa: F401 - fixture
from tests.tools.gateway_support import certified_tool, ok_result

pytestmark = pytest.mark.browser
# The page is navigating while the call runs, so the button's state is noted as it changes in
# sessionStorage (kept across the navigation of the same tab) and read once the outcome is shown.
WATCH = """() => {
  const button = document.querySelector("#console-form button[type=submit]");
  new MutationObserver(() => { if (button.disabled) sessionStorage.setItem("busy", button.textContent); })
    .observe(button, {attributes: true, childList: true, characterData: true, subtree: true});
}"""


def test_a_slow_call_shows_that_it_is_running(committed_world, live_server_port, django_db_blocker):  # noqa: F811
    """A2, issue 20: the button is disabled with the running label until the outcome arrives."""
    peer = FaultyPeer([ok_result()])
    peer.delay = 3.0
    base = f"http://{committed_world.domain}:{live_server_port}"
    with django_db_blocker.unblock(), serve_asgi(peer.app()) as tool_url:
        tool = certified_tool(committed_world, tool_url, timeout=60.0)
        with chromium() as browser:
            page = browser.new_page()
            sign_in(page, base, "ana")
            page.goto(f"{base}/tools/{tool.pk}/")
            page.fill("#console-form textarea[name=arguments]", '{"consulta": "router"}')
            page.evaluate(WATCH)
            page.click("#console-form button[type=submit]")
            page.wait_for_selector("#console-outcome", timeout=60_000)
            label = page.evaluate("() => sessionStorage.getItem('busy')")
            enabled_after = page.is_enabled("#console-form button[type=submit]")
    assert label in ("Llamando…", "Calling…"), label
    assert enabled_after and len(peer.calls) == 1
