"""Numbers a machine reads are never localized (issue 20, A3): Spanish, the default language, writes
726,9 where a browser needs 726.9. In every dashboard page and state rendered in Spanish, what a
browser parses rather than shows — the geometry of an SVG, a style, a link or a form's target, a
data attribute — holds no decimal comma and no grouped thousands, and every JSON a page carries
parses. (tests/runtime/test_dashboard_charts.py parses the charts themselves.)"""

import json
import re
from html.parser import HTMLParser

from tests.test_languages import render_all, world  # noqa: F401 - fixture

# Attributes read as numbers, lengths or URLs; data-* too.
MACHINE_READ = {"style", "href", "src", "action", "value", "viewbox", "x", "y", "x1", "x2", "y1", "y2", "width", "height",
                "d", "points", "transform", "min", "max", "step", "maxlength", "rows", "cols"}
# Tenant data shown in a field (a customer's message with "1,5 kg") is not ours to parse.
DATA_FIELDS = {"input", "textarea", "option"}
LOCALIZED = re.compile(r"\d,\d|\d[\u00a0\u202f.]\d{3}(?!\d)")


class MachineRead(HTMLParser):
    """Localized-looking numbers in machine-read attributes, and the page's JSON scripts."""

    def __init__(self):
        super().__init__()
        self.found, self.json, self._in_json = [], [], False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            read = name in MACHINE_READ or name.startswith("data-")
            if read and value and LOCALIZED.search(value) and not (name == "value" and tag in DATA_FIELDS):
                if not (name in ("href", "src", "action") and _only_in_the_host(value)):
                    self.found.append(f"<{tag} {name}={value!r}>")
        self._in_json = tag == "script" and dict(attrs).get("type") == "application/json"

    def handle_endtag(self, tag):
        self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.json.append(data)


def _only_in_the_host(url):
    # A dotted address (127.0.0.1) or a version in a host name is not a grouped number of ours.
    return not LOCALIZED.search(re.sub(r"^[a-z]+://[^/]+", "", url))


def test_no_machine_read_number_is_localized(alpha, world):  # noqa: F811
    """Issue 20, A3: every page and state in Spanish: SVG geometry, styles, URLs and data
    attributes unlocalized; JSON scripts parse."""
    found, scripts = {}, 0
    for label, html in render_all(alpha, world, "es"):
        parser = MachineRead()
        parser.feed(html)
        for text in parser.json:
            json.loads(text)
            scripts += 1
        if parser.found:
            found[label] = parser.found[:5]
    assert scripts and not found, found
