"""Texts stored as codes and parameters (A3): what a rule or a sync says is kept so that each
reader renders it in their own language. Pure functions, no database."""

import json

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import override

from asixto.errors import ApplicationError
from tools.mcp import McpError
from tools.mcp import errors as mcp_errors
from tools.texts import LITERAL, CodedText, coded, error_code, render_text, text_code


def both(code, params):
    with override("en"):
        english = render_text(code, params)
    with override("es"):
        spanish = render_text(code, params)
    return english, spanish


def test_it_keeps_the_msgid_and_values_of_a_rule_message():
    """A3, C1: a `format_lazy` message is stored as its msgid and values, JSON-safe, and renders
    in each language with the same values."""
    message = format_lazy(_("The name has {length} characters; the limit is {limit}."), length=70, limit=64)
    code, params = text_code(message)
    assert code == "The name has {length} characters; the limit is {limit}."
    assert json.loads(json.dumps(params)) == {"length": 70, "limit": 64}
    english, spanish = both(code, params)
    assert english == "The name has 70 characters; the limit is 64."
    assert spanish != english and "70" in spanish and "64" in spanish


def test_it_renders_older_percent_messages_and_nested_parts():
    """A3, C8: a `%(name)s` message with a translatable part inside renders both in the reader's
    language; lists render joined."""
    inner = format_lazy(_("The name has {length} characters; the limit is {limit}."), length=70, limit=64)
    text = coded(_("The live probe failed: %(error)s"), error=inner)
    code, params = text_code(text)
    english, spanish = both(code, params)
    assert english == "The live probe failed: The name has 70 characters; the limit is 64."
    assert spanish.startswith("La prueba en vivo falló: ") and spanish != english
    listed = coded(_("Some tool definitions were left out: %(problems)s."), problems=["#1: no name", "#3: no name"])
    assert str(listed).endswith("#1: no name; #3: no name.")


def test_it_keeps_positional_parts_of_a_rule_message():
    """A3, C2: the volatile-data finding nests a list built with positional placeholders; both
    levels render in the reader's language."""
    from tools.rules import check_description

    finding = next(f for f in check_description("Devuelve el precio: $45.000 por unidad. No la uses para vender.")
                   if "volatile" in str(text_code(f.message)[0]))
    code, params = text_code(finding.message)
    assert code == "The description has volatile data ({kinds})."
    english, spanish = both(code, json.loads(json.dumps(params)))
    assert english == "The description has volatile data (prices)."
    assert spanish != english and "precios" in spanish


def test_it_keeps_plain_text_as_it_was_and_survives_a_broken_template():
    """A3, A4: plain text is a literal; a template whose values do not fit still shows."""
    assert text_code("Algo pasó") == (LITERAL, {"text": "Algo pasó"})
    assert render_text(LITERAL, {"text": "Algo pasó"}) == "Algo pasó"
    assert render_text("Needs {missing}.", {"other": 1}) == "Needs {missing}."
    assert text_code("x" * 10_000)[1]["text"].endswith("…")


def test_it_stores_an_application_errors_lazy_message_as_a_code():
    """A3: an ApplicationError raised with a lazy message is stored by its msgid."""
    error = ApplicationError(_("This command is not approved by the platform operator."))
    code, params = error_code(error)
    assert code == "This command is not approved by the platform operator." and params == {}
    assert both(code, params)[1] == "Este comando no está aprobado por el operador de la plataforma."


def test_it_stores_connection_errors_by_code_when_they_have_one_and_as_text_otherwise():
    """A3: an McpError without a code is stored as its English text; one with `code` and
    `params` is stored as `mcp:<code>`, rendered by the connection layer's `render_error` when
    it has one, and by the English text kept beside it otherwise."""
    plain = McpError("connect", "The MCP server at http://127.0.0.1:9/mcp refused the connection.")
    if not hasattr(plain, "code"):
        assert error_code(plain) == (LITERAL, {"text": plain.message})
    coded_error = McpError("connect", "The MCP server at http://127.0.0.1:9/mcp refused the connection.")
    coded_error.code, coded_error.params = "connect_refused", {"where": "http://127.0.0.1:9/mcp"}
    code, params = error_code(coded_error)
    assert code == "mcp:connect_refused"
    assert params["params"] == {"where": "http://127.0.0.1:9/mcp"} and params["text"] == coded_error.message
    expected = coded_error.message
    render = getattr(mcp_errors, "render_error", None)
    if render is not None:  # once the connection layer renders its codes
        try:
            expected = str(render("connect_refused", {"where": "http://127.0.0.1:9/mcp"}))
        except Exception:
            pass  # a code it does not know: the English text kept beside it
    assert render_text(code, params) == str(CodedText(code, params)) == expected


def test_it_never_takes_a_value_for_a_template():
    """A3, A4: a value shaped like a stored code (say, from a server's answer) stays a value:
    it is shown as text and never formatted."""
    hostile = {"code": "{0.__class__.__mro__}", "params": {}}
    code, params = text_code(coded(_("The live probe failed: %(error)s"), error=hostile))
    with override("en"):
        shown = render_text(code, json.loads(json.dumps(params)))
    assert shown == f"The live probe failed: {hostile}" and "mro" in shown and "class 'object'" not in shown
