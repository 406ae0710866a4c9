"""Built-in tools in real turns (R12): attached only when the message gives a reason, run under
the gateway's contract (validated arguments, sanitised text, a call record), writing once; the
chart's data comes from the turn, never from the model."""

from datetime import timedelta

import pytest
from django.utils import timezone

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.builtins import TOOLS
from runtime.builtins.charts import chart_spec, numbers_in
from runtime.models import ContactCapture, Reminder, Turn, TurnEvent, TurnStep
from tests.runtime.runtime_support import agent, post, recording_app, register_soporte, run, tenant_settings
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tools.gateway import records
from tools.models import ToolCall
from tools.rules.validation import schema_problems

SOON = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT10:00")
REMINDER, CHART, CONTACT = "asixto__create_reminder", "asixto__draw_chart", "asixto__capture_contact"


@pytest.fixture
def soporte(alpha):
    log = []
    with serve_asgi(recording_app(build_app(SupportDesk()), log)) as url:
        register_soporte(alpha, url)
        yield log


def served(script):
    model = ScriptedModel(script)
    return model, serve_asgi(model.app())


def test_it_gives_every_builtin_a_full_closed_definition():
    """R12, C3, C6: each built-in is named asixto__…, has a description, a closed inputSchema the
    gateway's validator accepts, an outputSchema, annotations and the _meta verb and capabilities."""
    for name, tool in TOOLS.items():
        definition = tool.definition
        assert name.startswith("asixto__") and definition["description"]
        assert definition["inputSchema"]["additionalProperties"] is False
        assert schema_problems(definition["inputSchema"]) == () and schema_problems(definition["outputSchema"]) == ()
        assert set(definition["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint"}
        assert definition["_meta"]["com.asixto/verb"] and definition["_meta"]["com.asixto/capabilities"]


def test_it_offers_no_builtin_to_a_message_that_gives_no_reason(alpha, soporte):
    """R12: an ordinary question gets the catalog's tools and no built-in."""
    model, server = served([say("Abrimos de 8 a 18.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿A qué hora abren la tienda?"))
    assert turn.status == Turn.Status.DONE
    names = model.tool_names(0)
    assert "soporte__buscar_producto" in names and not [n for n in names if n.startswith("asixto__")]


def test_it_attaches_a_reminder_when_asked_and_stores_it_once_with_a_record(alpha, soporte):
    """R12, G9, R10: "recuérdame" attaches create_reminder (and no unrelated built-in); the call is
    validated, stored keyed by the step's idempotency key, and recorded like a gateway call."""
    model, server = served([call(REMINDER, {"when": SOON, "text": "pagar la factura"}),
                            say("Listo."), say("Te lo recordaré.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Recuérdame pagar la factura el 2 de enero a las 10"))
    names = model.tool_names(0)
    assert REMINDER in names and CHART not in names and "asixto__web_search" not in names
    assert turn.reply.text == "Te lo recordaré."
    with alpha.schema():
        reminder = Reminder.objects.get()
        assert reminder.text == "pagar la factura" and reminder.idempotency_key == f"turn:{turn.pk}:step:2"
        record = ToolCall.objects.get(turn_id=turn.pk)
        assert (record.tool_name, record.outcome, record.tool_id) == (REMINDER, "ok", None)


def test_it_refuses_invalid_arguments_and_a_past_date_storing_nothing(alpha, soporte):
    """R12, G2, A4: arguments outside the schema and a date in the past are told to the model; nothing is stored."""
    model, server = served([call(REMINDER, {"when": SOON, "text": "x", "extra": 1}),
                            call(REMINDER, {"when": "2001-01-02T10:00", "text": "x"}), say("¿Cuándo?"), say("¿Cuándo?")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "recuérdame algo"))
    with alpha.schema():
        assert not Reminder.objects.exists()
        outcomes = list(TurnStep.objects.filter(turn=turn, kind="tool").order_by("index").values_list("outcome", flat=True))
    assert outcomes == ["invalid_arguments", "business_error"]
    assert "future" in model.requests[2]["messages"][-1]["content"] or "futur" in model.requests[2]["messages"][-1]["content"]


def test_it_refuses_a_builtin_the_message_gave_no_reason_for(alpha, soporte):
    """R12: a built-in that was not attached is not run even when the model names it."""
    model, server = served([call(CONTACT, {"email": "ana@example.com"}), say("ok"), say("Hola.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola, buenas tardes"))
    with alpha.schema():
        assert not ContactCapture.objects.exists()
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "unavailable"


def test_it_draws_a_chart_only_from_numbers_the_turn_holds(alpha, soporte):
    """R12: the model's invented number is refused; the chart drawn holds the customer's numbers,
    with total and shares computed by the server, as a spec in a chart event."""
    invented = {"title": "Ventas", "kind": "bar", "points": [{"label": "enero", "value": 120},
                                                              {"label": "febrero", "value": 300}]}
    given = {"title": "Ventas", "kind": "bar", "points": [{"label": "enero", "value": 120},
                                                           {"label": "febrero", "value": 80}]}
    model, server = served([call(CHART, invented), call(CHART, given), say("Aquí está."), say("Aquí tienes el gráfico.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hazme un gráfico de ventas: enero 120, febrero 80"))
    assert CHART in model.tool_names(0)
    assert "300" in model.requests[1]["messages"][-1]["content"]
    with alpha.schema():
        outcomes = list(TurnStep.objects.filter(turn=turn, kind="tool").order_by("index").values_list("outcome", flat=True))
        chart = TurnEvent.objects.get(turn=turn, kind="chart")
    assert outcomes == ["business_error", "ok"]
    values = chart.data["spec"]["data"]["values"]
    assert values == [{"label": "enero", "value": 120, "share": 60.0}, {"label": "febrero", "value": 80, "share": 40.0}]
    assert chart.data["spec"]["usermeta"]["total"] == 200 and chart.data["spec"]["mark"] == "bar"


def test_it_reads_numbers_as_customers_write_them():
    """R12: Spanish thousands (189.900), decimals with a comma, and English forms all count."""
    found = numbers_in(["cuesta $ 189.900 y pesa 12,5 kg; 1,234.5 units"])
    assert {189900.0, 12.5, 1234.5} <= found
    assert chart_spec(title="t", kind="pie", points=[{"label": "a", "value": 0}])["data"]["values"][0]["share"] == 0.0


def test_it_captures_contact_details_and_edits_a_document(alpha, soporte):
    """R12, R10: "mi correo es" attaches capture_contact (an invalid email is refused, a valid one
    stored once); "anota en el documento" attaches edit_document, which appends and replaces."""
    from runtime.models import Document

    model, server = served([call(CONTACT, {"email": "no-es-correo"}), call(CONTACT, {"name": "Ana", "email": "ana@example.com"}),
                            say("ok"), say("Guardé tu correo.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Soy Ana, mi correo es ana@example.com"))
    with alpha.schema():
        assert list(ContactCapture.objects.values_list("name", "email", "turn_id")) == [("Ana", "ana@example.com", turn.pk)]
    edits = [call("asixto__edit_document", {"document": "notas", "mode": "append", "text": "Cliente pide visita el lunes"}),
             call("asixto__edit_document", {"document": "notas", "mode": "replace", "find": "lunes", "text": "martes"}),
             say("ok"), say("Anotado.")]
    model, server = served(edits)
    with server as url, agent(alpha, f"{url}/v1"):
        run(alpha, post(alpha, "Anota en el documento de notas que quiero visita el lunes"))
    assert "asixto__edit_document" in model.tool_names(0) and CONTACT not in model.tool_names(0)
    with alpha.schema():
        assert Document.objects.get(name="notas").text == "Cliente pide visita el martes"


def test_a_chart_may_draw_numbers_the_customer_gave_earlier(alpha, soporte):
    """R12: numbers from an earlier customer message of the conversation are the turn's evidence too."""
    points = {"title": "Ventas", "points": [{"label": "enero", "value": 120}, {"label": "febrero", "value": 80}]}
    model, server = served([say("Anotado."), call(CHART, points), say("ok"), say("Aquí está el gráfico.")])
    with server as url, agent(alpha, f"{url}/v1"):
        first = run(alpha, post(alpha, "Vendimos 120 en enero y 80 en febrero"))
        turn = run(alpha, post(alpha, "Ahora hazme un gráfico", conversation=first.conversation))
    with alpha.schema():
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "ok"
        assert TurnEvent.objects.get(turn=turn, kind="chart").data["spec"]["usermeta"]["total"] == 200


def test_the_channel_policy_holds_for_builtins_as_for_catalog_tools(alpha, soporte):
    """M7, issue 19 M1: with chat limited to read tools, "anota en el documento" does not offer the
    destructive edit_document; when the model calls it anyway it does not run and nothing is
    written. A read built-in (the chart) is still offered."""
    from runtime.models import Document

    edit = call("asixto__edit_document", {"document": "notas", "mode": "append", "text": "visita el lunes"})
    model, server = served([edit, say("ok"), say("No puedo anotarlo aquí.")])
    with tenant_settings(alpha, exposure_policy={"chat": ["read"], "voice": ["read"]}):
        with server as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "Anota en el documento de notas que quiero visita el lunes y hazme un gráfico"))
    assert "asixto__edit_document" not in model.tool_names(0) and CHART in model.tool_names(0)
    with alpha.schema():
        assert not Document.objects.exists()
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "unavailable"


def test_a_builtin_called_on_a_channel_its_level_is_not_allowed_on_is_refused_and_recorded(alpha):
    """Issue 19 M1: the call path itself applies the policy (whatever attached the tool): refused,
    not run, one record with outcome "refused"."""
    from runtime.builtins import Context, call_builtin
    from runtime.models import Document

    with tenant_settings(alpha, exposure_policy={"chat": ["read"]}), alpha.schema():
        outcome, result = call_builtin(tool=TOOLS["asixto__edit_document"], arguments={
            "document": "notas", "mode": "append", "text": "x"}, context=Context(
            turn_id=None, conversation_id="c", channel="chat", idempotency_key="k", language="en"))
        assert outcome.outcome == "refused" and result is None and "not allowed on this channel" in outcome.model_text
        assert not Document.objects.exists()
    records.flush()
    with alpha.schema():
        assert ToolCall.objects.get(pk=outcome.record_id).outcome == "refused"
