"""Every dashboard page as Chromium draws it (issue 20; A2, A3): in Spanish and in English, at a
laptop's 1366 px and a phone's 375 px, the tenant admin visits each page of the dashboard URLconf
(the list tests/test_languages.py walks, so a page added later is visited too) and each page

- shows no text of the other language (what the browser holds after the page's scripts ran),
- at 375 px is no wider than the screen (a table may scroll, in its own box),
- shows each menu's chosen option and each table field's value whole (issue 20 saw the contract
  table's verb box show "consul" and the level menu "seg"); at 375 px a control whose text is
  longer than its line may instead take the whole line (a key's long name in a menu),
- draws each chart as SVG that parses, numbers unlocalized, bars inside the viewBox,
- raises no script error.

One browser and one live server for the module; one context per language and width. To look at
what it saw: ASIXTO_PAGE_SHOTS=/tmp/shots ./run-tests tests/test_pages_browser.py saves a
full-page screenshot of each page there."""

import os
import xml.etree.ElementTree as ET
from contextlib import ExitStack

import pytest

from tests.accounts.test_people_browser import chromium, sign_in
from tests.runtime.test_dashboard_charts import check_chart
from tests.tenants.test_browser import live_server
from tests.test_languages import LANGUAGES, dashboard_pages, leaks, probes, something_on_every_page

pytestmark = pytest.mark.browser
WIDTHS = {"laptop": (1366, 768), "phone": (375, 812)}
# Pages for a signed-out visitor (tests/test_languages.py render_all does the same).
SIGNED_OUT = ("login", "password_forgot", "password_reset")
SHOTS = os.environ.get("ASIXTO_PAGE_SHOTS")

# What sticks out: of the screen (the page then scrolls sideways) or, inside the main column, of
# its content box (a table poking past the cards beside it). Leaves first; what sits inside a box
# that scrolls or clips sideways is left out (a wide table in .table-scroll is meant to scroll).
OVERFLOW = """() => {
  const width = window.innerWidth, root = document.documentElement, main = document.querySelector("main");
  const edge = main ? main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight) : width;
  const inScroller = el => {
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== "visible") return true;
    }
    return false;
  };
  const out = [...document.body.querySelectorAll("*")].filter(el => el.getClientRects().length
    && el.getBoundingClientRect().right > (main && main !== el && main.contains(el) ? edge : width) + 1 && !inScroller(el));
  if (!out.length && root.scrollWidth <= width) return null;
  const leaves = out.filter(el => !out.some(other => other !== el && el.contains(other)));
  return {page: root.scrollWidth, screen: width, main: Math.round(edge), wider: leaves.slice(0, 5).map(el =>
    `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\\s+/).join(".") : ""}`
    + ` (right edge ${Math.round(el.getBoundingClientRect().right)} px): ${(el.innerText || el.value || "").trim().slice(0, 60)}`)};
}"""

# Shown menus and fields whose text the box cuts, measured on a copy of the control that Chromium
# lays out (text, padding, arrow, a search field's clear button: measured, not guessed). A menu
# needs what the same menu sized to its chosen option alone takes; a field, at its own width,
# must not scroll its text. A field's value counts in a table or a filter row (a long URL in a
# form's own field may scroll); an empty field's hint counts everywhere, read whole or not at all.
# What is hidden is not seen, so not measured.
CUT_CONTROLS = """phone => {
  const cut = [];
  // On a phone a control may take its whole line and no more: what needs more is cut there by
  // necessity (else the page would scroll sideways), not by a style that kept the control narrow.
  const room = el => {
    let box = el.parentElement;
    while (["inline", "contents"].includes(getComputedStyle(box).display)) box = box.parentElement;
    const style = getComputedStyle(box);
    return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  };
  const fills = el => phone && el.offsetWidth + 1 >= room(el);
  const name = el => el.name || el.id || el.getAttribute("aria-label") || el.tagName.toLowerCase();
  const copy = (el, css, fill) => {
    const probe = el.cloneNode(false);
    probe.removeAttribute("id"); probe.removeAttribute("name");
    probe.style.cssText = "position:absolute; visibility:hidden; " + css;
    fill(probe);
    el.parentElement.appendChild(probe);
    const size = [probe.offsetWidth, probe.scrollWidth, probe.clientWidth];
    probe.remove();
    return size;
  };
  const shown = el => el.getClientRects().length > 0;
  for (const el of document.querySelectorAll("select")) {
    if (!shown(el) || el.multiple || el.selectedIndex < 0) continue;
    const text = el.options[el.selectedIndex].text;
    const [needed] = copy(el, "width:auto; min-width:0; max-width:none", probe => {
      const option = document.createElement("option"); option.text = text; probe.appendChild(option);
    });
    if (el.offsetWidth + 1 < needed && !fills(el)) cut.push(`menu ${name(el)} shows ${el.offsetWidth} of the ${needed} px "${text}" needs`);
  }
  const fields = "input:not([type=checkbox]):not([type=radio]):not([type=hidden])";
  const rows = new Set(document.querySelectorAll(`table ${fields}, .filters ${fields}`));
  for (const el of document.querySelectorAll(fields)) {
    const text = el.value || el.placeholder;
    if (!shown(el) || !text || (el.value && !rows.has(el))) continue;
    const [, scroll, client] = copy(el, `box-sizing:border-box; width:${el.offsetWidth}px; min-width:0; max-width:none`, probe => {
      if (probe.type !== "search") probe.type = "text";
      probe.value = text;
    });
    const what = el.value ? `"${text}"` : `its hint "${text}"`;
    if (scroll > client + 1 && !fills(el)) cut.push(`field ${name(el)} shows ${client} of the ${scroll} px ${what} needs`);
  }
  return cut;
}"""

# Each inline chart as the browser holds it (serialized, so Python parses the very markup), with
# the boxes Chromium laid its bars out in, in the chart's own units.
CHARTS = """() => [...document.querySelectorAll("main svg")].map(svg => ({
  markup: new XMLSerializer().serializeToString(svg),
  view: [svg.viewBox.baseVal.width, svg.viewBox.baseVal.height],
  bars: [...svg.querySelectorAll("rect")].map(rect => { const b = rect.getBBox(); return [b.x, b.y, b.width, b.height]; }),
}))"""


@pytest.fixture(scope="module")
def site(committed_module_world, django_db_blocker):
    """The committed tenant with something on every page, its pages, a live server and Chromium.
    Everything that touches the database is done before Chromium starts: Playwright's event loop
    runs in this thread and the ORM refuses to run beside one."""
    with ExitStack() as stack:
        objects = stack.enter_context(something_on_every_page(committed_module_world))
        pages = _viewable(committed_module_world, dashboard_pages(objects))
        port = stack.enter_context(live_server(django_db_blocker))
        known = probes()
        browser = stack.enter_context(chromium())
        yield {"browser": browser, "base": f"http://{committed_module_world.domain}:{port}", "pages": pages, "known": known}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_as_chromium_draws_it(site, language, width):
    """Issue 20, A2, A3: each dashboard page in `language` at `width`: one language, no sideways
    scroll on a phone, no cut menu or table field (on a phone, none narrower than its line), charts
    that parse with their bars inside, no script error."""
    screen_width, screen_height = WIDTHS[width]
    context = site["browser"].new_context(
        viewport={"width": screen_width, "height": screen_height}, locale=language,
        extra_http_headers={"Accept-Language": language},
    )
    page = context.new_page()
    script_errors = []
    page.on("pageerror", lambda error: script_errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and script_errors.append(message.text))
    problems, visited = {}, []
    pages = sorted(site["pages"], key=lambda page_: page_[0] not in SIGNED_OUT)  # signed-out pages first
    signed_in = False
    for name, path in pages:
        if name not in SIGNED_OUT and not signed_in:
            sign_in(page, site["base"], "ana")
            signed_in = True
        del script_errors[:]
        response = page.goto(f"{site['base']}{path}")
        visited.append(name)
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/{language}-{width}-{name}.png", full_page=True)
        found = _problems(page, language, screen_width, site["known"])
        if response.status != 200:
            found.insert(0, f"answered {response.status}")
        found += [f"script error: {error}" for error in dict.fromkeys(script_errors)]
        if found:
            problems[f"{name} ({path})"] = found
    context.close()
    assert {"home", "servers", "server_contract", "catalog", "tool", "conversation", "truncations", "settings", "login"} <= set(visited)
    report = "\n".join(f"{where}:\n  " + "\n  ".join(found) for where, found in problems.items())
    assert not problems, f"{language} at {screen_width} px:\n{report}"


def _viewable(world, pages):
    """The pages a browser can show: POST endpoints (405, which Chromium will not navigate to)
    and data for a page's script are left out, as tests/test_languages.py render_all does."""
    admin, visitor = world.dashboard("ana"), world.dashboard()
    viewable = []
    for name, path in pages:
        response = (visitor if name in SIGNED_OUT else admin).get(path)
        if response.status_code != 405 and response["Content-Type"].startswith("text/html"):
            viewable.append((name, path))
    return viewable


def _problems(page, language, screen_width, known):
    found = [f"{language} page shows other-language text: {text!r}" for text in leaks(page.content(), language, known)]
    overflow = page.evaluate(OVERFLOW)
    if overflow:
        found.append(f"sticks out (page {overflow['page']} px on a {overflow['screen']} px screen, main column ends at "
                     f"{overflow['main']} px): {overflow['wider']}")
    found += page.evaluate(CUT_CONTROLS, screen_width < 760)
    for n, chart in enumerate(page.evaluate(CHARTS)):
        found += _chart_problems(chart, f"chart {n + 1}")
    return found


def _chart_problems(chart, where):
    try:
        check_chart(ET.fromstring(chart["markup"]), where)
    except (ET.ParseError, ValueError, AssertionError, TypeError) as error:
        return [f"{where} is not a well-formed chart: {error!r}"]
    width, height = chart["view"]
    outside = [bar for bar in chart["bars"] if bar[0] < 0 or bar[1] < 0 or bar[0] + bar[2] > width or bar[1] + bar[3] > height]
    return [f"{where}: bars drawn outside its {width}x{height} viewBox: {outside[:3]}"] if outside else []
