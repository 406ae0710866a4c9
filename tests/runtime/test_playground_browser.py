"""The playground in real headless Chromium (A2, R1, R9, G9): the admin types a message (Enter sends,
Shift+Enter adds a line), the page posts it, the turn runs on a real Celery worker, and the status
event and the reply arrive over SSE while the page is open, with the turn's tool calls inline
(name, outcome, a link to the call record); the customer's messages on the right, as chat apps do."""

import pytest
from celery.contrib.testing.worker import start_worker

from asixto.celery import app
from tests.runtime.runtime_support import agent
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say, slow
from tests.tenants.test_browser import CHROMIUM, CHROMIUM_ARGS, live_server_port  # noqa: F401 (a fixture)
from tests.tools.gateway_support import certified_tool, ok_result


@pytest.mark.browser
def test_the_admin_talks_to_the_agent_and_sees_the_turn_live(committed_world, live_server_port, django_db_blocker):  # noqa: F811
    """A2, R1, R9, G9, issue 20: Enter sends, Shift+Enter adds a line; the status built from the
    tool's verb, the tool call with its outcome and record link, then the reply, on the page."""
    from playwright.sync_api import sync_playwright

    peer = FaultyPeer([ok_result()])
    model = ScriptedModel([call("crm__buscar_producto", {"consulta": "router"}), say("ok"),
                           slow(say("Sí, tenemos el router AX-55."), 1.0)])
    base = f"http://{committed_world.domain}:{live_server_port}"
    with django_db_blocker.unblock(), serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as url, \
            agent(committed_world, f"{url}/v1"), start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        certified_tool(committed_world, tool_url)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{base}/playground/")
            page.fill("input[name=username]", "ana")
            page.fill("input[name=password]", "correct-horse-battery")
            page.click("main button[type=submit]")
            page.wait_for_url(f"{base}/playground/")
            assert page.locator("#model-hint").count() == 0
            page.click("#say-text")
            page.keyboard.type("¿Tienen")
            page.keyboard.press("Shift+Enter")
            page.keyboard.type("routers?")
            assert page.locator("#chat .bubble").count() == 0  # Shift+Enter only added a line
            page.keyboard.press("Enter")
            page.wait_for_selector(".bubble.agent", timeout=60_000)
            page.wait_for_selector(".bubble.call", timeout=30_000)
            bubbles = page.locator("#chat .bubble").all_inner_texts()
            call_text = page.inner_text(".bubble.call")
            record = page.get_attribute(".bubble.call a", "href")
            customer_box, agent_box = page.locator(".bubble.customer").bounding_box(), page.locator(".bubble.agent").bounding_box()
            link = page.get_attribute("#conversation-link", "href")
            browser.close()
    assert bubbles[0] == "¿Tienen\nrouters?" and bubbles[-1] == "Sí, tenemos el router AX-55."
    assert "crm__buscar_producto" in call_text and ("correcta" in call_text or "ok" in call_text), call_text
    assert record and record.startswith("/calls/")
    assert customer_box["x"] + customer_box["width"] > agent_box["x"] + agent_box["width"]  # customer right, agent left
    assert customer_box["x"] > agent_box["x"]
    assert "Abriendo el caso de soporte…" in bubbles[1:-1], bubbles  # the sample tool's verb: "abrir un caso de soporte"
    assert link and link.startswith("/conversations/")
