"""Hostile input on the dashboard's tool pages (A4): JSON nested thousands deep, NUL characters
and unpaired surrogates written as JSON escapes, NUL bytes in filters. Each is a form error or
an ignored filter, never a 500, and nothing stored changes."""

import pytest

from tests.tools.test_tools_api import make_tool
from tools.models import ToolCall

DEEP = "[" * 5000 + "]" * 5000
BAD_JSON_TEXT = [
    '{"documento": "a\\u0000b"}',
    '{"documento": "\\ud800"}',
    '{"a\\u0000": 1}',
    '{"a": [{"b": "\\udfff"}]}',
    DEEP,
    '{"a": ' + "[" * 40 + "]" * 40 + "}",
    '{"a": NaN}',
]


@pytest.mark.parametrize("text", BAD_JSON_TEXT)
def test_it_keeps_unstorable_sample_arguments_out_with_a_message(alpha, text):
    """A4, C8: the form says what is wrong; the stored sample arguments stay."""
    tool = make_tool(alpha)
    with alpha.schema():
        tool.sample_arguments = {"documento": "1"}
        tool.save()
    response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/", {"sample_arguments": text})
    assert response.status_code == 200
    assert response.context["form"].errors["sample_arguments"]
    with alpha.schema():
        tool.refresh_from_db()
        assert tool.sample_arguments == {"documento": "1"}


@pytest.mark.parametrize("text", BAD_JSON_TEXT)
def test_it_refuses_unstorable_console_arguments_before_calling(alpha, text):
    """A4, G9: the console form refuses them; no call is made, no record written."""
    tool = make_tool(alpha)
    response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/", {"arguments": text, "channel": "chat"})
    assert response.status_code == 200
    assert response.context["console"].errors["arguments"]
    with alpha.schema():
        assert not ToolCall.objects.exists()


@pytest.mark.parametrize("url", [
    "/catalog/?server=%00", "/catalog/?certification=%00", "/catalog/?server=a%00b&certification=nope",
    "/calls/?outcome=%00", "/calls/?tool=%00", "/calls/?page=%00",
])
def test_it_ignores_nul_bytes_in_dashboard_filters(alpha, url):
    """A4: a bad filter shows the page (unfiltered or empty), never a 500."""
    make_tool(alpha)
    assert alpha.dashboard("sam").get(url).status_code == 200


def test_it_answers_an_oversized_form_with_a_clear_page(alpha):
    """A4: a form post over the upload limit gets a page that says so, not a 500."""
    tool = make_tool(alpha)
    client = alpha.dashboard("ana")
    response = client.post(f"/tools/{tool.pk}/", {"sample_arguments": "x" * 3_000_000}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 413
    assert "too large" in response.content.decode()
    with alpha.schema():
        tool.refresh_from_db()
        assert tool.sample_arguments is None
