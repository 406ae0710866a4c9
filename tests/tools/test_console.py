"""The dashboard's test console (A2, G9, T4): a write tool asks before a real call and says what
it will do; the template marks required fields instead of sending empty strings; outcomes read
as words; a blocked tool says why and links to its findings. The server behind it is the real
example support desk: its case count proves whether a side effect happened."""

import json

import pytest
from django.conf import settings
from django.utils import translation
from django.utils.html import escape

from examples.soporte.definitions import ABRIR_CASO_SOPORTE, BUSCAR_PRODUCTO
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context
from tools.console import arguments_skeleton
from tools.gateway import call_tool
from tools.models import Tool, ToolCall

CASE = {"documento": "CC1032456789", "tipo": "falla", "descripcion": "El router no enciende."}


@pytest.fixture
def desk():
    return SupportDesk()


@pytest.fixture
def soporte(alpha, desk):
    with serve_asgi(build_app(desk)) as url:
        yield certified_tool(alpha, url, definition=ABRIR_CASO_SOPORTE, slug="soporte")


def _calls(world):
    with world.schema():
        return ToolCall.objects.count()


def test_it_asks_before_a_real_write_and_names_what_it_will_do(alpha, soporte, desk):
    """A2, G9: the first submit of a write tool calls nothing and asks, with the verb and that the
    call is real; confirming makes exactly one call."""
    admin = alpha.dashboard("ana")
    url = f"/tools/{soporte.pk}/"
    asked = admin.post(url, {"arguments": json.dumps(CASE), "channel": "chat"}, HTTP_ACCEPT_LANGUAGE="en")
    page = asked.content.decode()
    assert asked.status_code == 200 and asked.context["confirm"]
    assert "This call is real" in page and "abrir un caso de soporte" in page
    assert desk.case_count == 0 and _calls(alpha) == 0
    done = admin.post(url, {"arguments": json.dumps(CASE), "channel": "chat", "confirmed": "yes"}, HTTP_ACCEPT_LANGUAGE="en")
    assert done.context["outcome"].outcome == "ok"
    assert desk.case_count == 1 and _calls(alpha) == 1
    assert 'name="confirmed"' not in done.content.decode().split('id="console-outcome"')[0].split('id="console-form"')[1], (
        "the form shown after a call does not carry the confirmation to the next one"
    )


def test_the_write_warning_reads_naturally_in_spanish(alpha, soporte, desk):
    """A3, issue 20 ("Nada la marca como prueba."): the confirmation before a real write says, in
    plain Spanish, that the call is real."""
    asked = alpha.dashboard("ana").post(f"/tools/{soporte.pk}/", {"arguments": json.dumps(CASE), "channel": "chat"},
                                        HTTP_ACCEPT_LANGUAGE="es")
    page = asked.content.decode()
    assert asked.context["confirm"] and "Es una llamada real: nada indica que sea una prueba." in page
    assert "Nada la marca" not in page and desk.case_count == 0


def test_it_calls_a_read_tool_at_once(alpha, desk):
    """G9: read tools need no confirmation."""
    with serve_asgi(build_app(desk)) as url:
        tool = certified_tool(alpha, url, definition=BUSCAR_PRODUCTO, slug="soporte")
        response = alpha.dashboard("ana").post(f"/tools/{tool.pk}/", {"arguments": '{"consulta": "router"}', "channel": "chat"})
    assert response.context["outcome"].outcome == "ok" and not response.context.get("confirm")


def test_it_marks_required_fields_and_refuses_to_send_the_markers(alpha, soporte, desk):
    """A2, G2: the template holds the required fields with markers (no empty strings, no optional
    guesses); sent unchanged, it is refused before any call, naming the fields."""
    admin = alpha.dashboard("ana")
    page = admin.get(f"/tools/{soporte.pk}/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    with translation.override("es"):
        skeleton = arguments_skeleton(ABRIR_CASO_SOPORTE["inputSchema"])
    assert list(skeleton) == ["documento", "tipo", "descripcion"] and "" not in skeleton.values()
    template = json.dumps(skeleton, ensure_ascii=False, indent=2)
    assert escape(template) in page
    # Sent as it is — even after switching the interface to English.
    response = admin.post(f"/tools/{soporte.pk}/", {"arguments": template, "channel": "chat", "confirmed": "yes"}, HTTP_ACCEPT_LANGUAGE="en")
    errors = response.context["console"].errors["arguments"]
    assert "documento" in errors[0] and "descripcion" in errors[0] and "tipo" in errors[0]
    assert desk.case_count == 0 and _calls(alpha) == 0


def test_it_shows_the_outcome_in_words(alpha, soporte, desk):
    """A3, G9: an empty description is refused by the schema (minLength) before the server is
    called, and the page says "invalid arguments", not the code."""
    response = alpha.dashboard("ana").post(
        f"/tools/{soporte.pk}/", {"arguments": json.dumps({**CASE, "descripcion": ""}), "channel": "chat", "confirmed": "yes"},
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.context["outcome"].outcome == "invalid_arguments"
    section = response.content.decode().split('id="console-outcome"')[1]
    assert ">invalid arguments<" in section and ">invalid_arguments<" not in section
    assert "The server was not called" in section
    assert desk.case_count == 0


def test_it_says_a_blocked_tool_is_blocked_by_certification_and_links_the_findings(alpha, soporte, desk):
    """C, A2: a blocked tool has no call form; the page says why and links to its findings; a
    crafted POST calls nothing."""
    with alpha.schema():
        Tool.objects.filter(pk=soporte.pk).update(certification=Tool.Certification.BLOCKED)
    admin = alpha.dashboard("ana")
    page = admin.get(f"/tools/{soporte.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Blocked by certification" in page and 'href="#findings"' in page and 'id="findings"' in page
    assert 'id="console-form"' not in page
    admin.post(f"/tools/{soporte.pk}/", {"arguments": json.dumps(CASE), "channel": "chat", "confirmed": "yes"})
    assert desk.case_count == 0 and _calls(alpha) == 0


def test_it_lets_support_staff_read_the_tool_but_not_call_it(alpha, soporte, desk):
    """T4: no console for support staff; a crafted POST is 403."""
    sam = alpha.dashboard("sam")
    assert 'id="console-form"' not in sam.get(f"/tools/{soporte.pk}/").content.decode()
    response = sam.post(f"/tools/{soporte.pk}/", {"arguments": json.dumps(CASE), "channel": "chat", "confirmed": "yes"})
    assert response.status_code == 403 and desk.case_count == 0


def test_cancelling_the_confirmation_calls_nothing_and_keeps_the_arguments(alpha, soporte, desk):
    """G9: "Cancel" on the confirmation returns to the form with the same arguments."""
    response = alpha.dashboard("ana").post(
        f"/tools/{soporte.pk}/", {"arguments": json.dumps(CASE), "channel": "chat", "confirmed": "yes", "cancel": "yes"},
    )
    assert not response.context.get("confirm") and not response.context.get("outcome")
    assert json.loads(response.context["console"]["arguments"].value()) == CASE
    assert desk.case_count == 0 and _calls(alpha) == 0


@pytest.mark.parametrize("language, expected", [
    ("es", ["documento: debe tener como máximo 20 caracteres", "descripcion: debe tener al menos 1 carácter", "falta la propiedad obligatoria tipo"]),
    ("en", ["documento: must have at most 20 characters", "descripcion: must have at least 1 character", "the required property tipo is missing"]),
])
def test_the_model_reads_argument_problems_in_the_conversations_language(alpha, soporte, desk, language, expected):
    """A3, G2: the correctable error for bad arguments is in the tenant's language, the schema's
    problems included (jsonschema writes English); the server is not called."""
    stored = alpha.tenant.language
    alpha.tenant.language = language  # the gateway reads the tenant the connection is on
    try:
        with alpha.schema():
            outcome = call_tool(name=soporte.prefixed_name, arguments={"documento": "x" * 21, "descripcion": ""}, context=context())
    finally:
        alpha.tenant.language = stored
    assert outcome.outcome == "invalid_arguments" and desk.case_count == 0
    for text in expected:
        assert text in outcome.model_text, outcome.model_text


def test_the_field_guide_reads_naturally_in_both_languages():
    """A3: the console's guide to a tool's fields: required first, kinds and limits in words, with
    the right plural."""
    from django.utils import translation

    from tools.console import field_guide

    schema = ABRIR_CASO_SOPORTE["inputSchema"]
    with translation.override("es"):
        rows = {row["name"]: row for row in field_guide(schema)}
    assert [name for name in rows] == ["documento", "tipo", "descripcion", "prioridad"]
    assert rows["descripcion"]["limits"] == "al menos 1 carácter, como máximo 400 caracteres"
    assert rows["tipo"]["kind"] == "uno de falla, instalacion, cobro" and not rows["prioridad"]["required"]
    with translation.override("en"):
        assert field_guide(schema)[0]["limits"] == "at least 1 character, at most 20 characters"


def test_the_console_forms_show_that_a_call_is_running(alpha, soporte, desk):
    """A2, A3, issue 20: the console's form and its confirmation are marked to show "Llamando…" on
    their button while the call runs (app.js, progressive enhancement); Cancel is not."""
    admin = alpha.dashboard("ana")
    page = admin.get(f"/tools/{soporte.pk}/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert 'id="console-form" novalidate data-busy="Llamando…"' in page
    asked = admin.post(f"/tools/{soporte.pk}/", {"arguments": json.dumps(CASE), "channel": "chat"},
                       HTTP_ACCEPT_LANGUAGE="es").content.decode()
    confirm = asked.split('id="console-confirm"')[1]
    assert '<form method="post" data-busy="Llamando…">' in confirm
    assert 'id="console-cancel" data-no-busy' in confirm
    script = (settings.BASE_DIR / "static" / "asixto" / "app.js").read_text()
    assert "form[data-busy]" in script and "button.disabled = true" in script
