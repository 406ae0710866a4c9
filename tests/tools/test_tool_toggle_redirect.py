"""The tool toggle's `next` (A2, A4): only a path on this dashboard is followed; anything else —
another site, a protocol-relative URL, `javascript:` — goes back to the catalog, never a 500."""

import pytest

from tests.tools.test_tools_api import make_tool


@pytest.mark.parametrize("target", [
    "https://evil.example/phish", "//evil.example/phish", "javascript:alert(1)", "http://beta.localhost/catalog/",
    "\\\\evil.example", "https:evil.example", "",
])
def test_it_never_redirects_off_the_dashboard(alpha, target):
    """A2: an unsafe or empty `next` goes to the catalog."""
    tool = make_tool(alpha)
    response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/toggle/", {"next": target})
    assert response.status_code == 302
    assert response["Location"] == "/catalog/"


def test_it_follows_a_path_on_the_dashboard_with_its_filters(alpha):
    """A2: back to the filtered catalog page the admin was on."""
    tool = make_tool(alpha)
    response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/toggle/", {"next": "/catalog/?server=s1&page=2"})
    assert response.status_code == 302 and response["Location"] == "/catalog/?server=s1&page=2"
