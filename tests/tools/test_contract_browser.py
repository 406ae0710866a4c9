"""The contract page in real headless Chromium (A2, issue 20): at a laptop's 1366 px each field
shows what it holds — the verb phrase is not cut to "consul", the level menu not to "seg" — and
at a phone's 375 px the table scrolls inside its box while the page itself does not."""

import pytest

from tests.accounts.test_people_browser import chromium, sign_in
from tests.tenants.test_browser import live_server_port  # noqa: F401 - fixture
from tools.models import McpServer, Tool
from tools.rules.meta import VERB_KEY

pytestmark = pytest.mark.browser
VERB = "consultar el estado de un pedido"

# For each field: does its box hold its text? The select's text is measured with its own font.
FITS = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  const out = {};
  for (const el of document.querySelectorAll("table.contract input:not([type=checkbox]), table.contract select")) {
    let fits;
    if (el.tagName === "SELECT") {
      canvas.font = getComputedStyle(el).font;
      fits = canvas.measureText(el.options[el.selectedIndex].text).width + 20 <= el.clientWidth;
    } else {
      fits = el.scrollWidth <= el.clientWidth;
    }
    out[el.name.split("-")[0]] = fits;
  }
  return out;
}"""


@pytest.fixture
def contract_server(committed_world):
    with committed_world.schema():
        server = McpServer.objects.create(slug="pedidos", transport="streamable_http", url="https://pedidos.example.com/mcp",
                                          sync_status=McpServer.SyncStatus.OK)
        Tool.objects.create(
            server=server, name="estado_pedido", prefixed_name="pedidos__estado_pedido", position=0, level="read",
            definition={"name": "estado_pedido", "description": "Estado de un pedido.", "_meta": {VERB_KEY: VERB}},
            definition_hash="h", certified_hash="h", certification=Tool.Certification.CERTIFIED,
        )
    return server


@pytest.mark.parametrize("width", [1366, 375])
def test_the_contract_fields_show_what_they_hold(committed_world, contract_server, live_server_port, width):  # noqa: F811
    """A2: every field of the contract table holds its text; at 1366 px the table fits the page,
    at 375 px the page does not scroll sideways (the table does, in its own box)."""
    base = f"http://{committed_world.domain}:{live_server_port}"
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 900}, locale="es-ES")
        sign_in(page, base, "ana")
        page.goto(f"{base}/servers/{contract_server.pk}/contract/")
        fits = page.evaluate(FITS)
        page_width = page.evaluate("document.documentElement.scrollWidth")
        box = page.evaluate("(() => { const b = document.querySelector('.table-scroll'); return [b.scrollWidth, b.clientWidth]; })()")
        verb = page.input_value("table.contract input[name^=verb-]")
    assert verb == VERB
    assert fits == {"verb": True, "capabilities": True, "level": True}, fits
    assert page_width <= width, page_width
    if width >= 1366:
        assert box[0] <= box[1], f"the table scrolls sideways at {width} px: {box}"
