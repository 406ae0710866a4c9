"""Check is never do (R6, issue 18), on a business that is in none of the development files (a gym):
a message that asks to know is not routed to a tool that changes something, a close call between a
read and an acting tool goes to the read one, a tool that acts is shown alone only above its band,
and a routed acting tool comes with the instruction to confirm first, unless the customer already
asked for exactly that."""

import json

import pytest

from runtime.model_client import Endpoint
from runtime.routing.candidates import ToolCard, catalog_index
from runtime.routing.compose import compose_instruction
from runtime.routing.gate import GateResult, check
from runtime.routing.guard import acting_route_allowed
from runtime.routing.route import confirmed, route_message
from runtime.routing.router import Facts
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say

READ = {"readOnlyHint": True, "destructiveHint": False}
WRITE = {"readOnlyHint": False, "destructiveHint": False}
DESTRUCTIVE = {"readOnlyHint": False, "destructiveHint": True}


def tool(name, title, description, annotations, properties=None, required=()):
    return {"name": name, "title": title, "description": description, "annotations": annotations,
            "inputSchema": {"type": "object", "properties": properties or {}, "required": list(required)}}


GYM = [ToolCard.from_definition(d) for d in [
    tool("ver_mis_reservas", "Ver mis reservas de clases", "Lista las clases que el socio tiene reservadas, con día, hora y sala.",
         READ, {"socio": {"type": "string"}}),
    tool("reservar_clase", "Reservar una clase", "Reserva un cupo en una clase grupal (spinning, yoga, funcional) para el socio.",
         WRITE, {"socio": {"type": "string"}, "clase": {"type": "string"}, "fecha": {"type": "string"}},
         required=("clase", "fecha")),
    tool("cancelar_reserva_clase", "Cancelar reserva de clase", "Cancela una reserva de clase del socio y libera el cupo.",
         DESTRUCTIVE, {"reserva": {"type": "string"}}, required=("reserva",)),
    tool("ver_membresia", "Ver membresía", "Muestra el plan del socio, su vencimiento y si está congelada.", READ,
         {"socio": {"type": "string"}}),
    tool("congelar_membresia", "Congelar membresía", "Congela la membresía del socio por un viaje o una lesión.", WRITE,
         {"socio": {"type": "string"}, "dias": {"type": "integer"}}, required=("dias",)),
    tool("cancelar_membresia", "Dar de baja la membresía", "Da de baja la membresía del socio de forma definitiva.",
         DESTRUCTIVE, {"socio": {"type": "string"}}),
    tool("consultar_pagos", "Consultar pagos", "Muestra las cuotas pagadas y pendientes del socio.", READ,
         {"socio": {"type": "string"}}),
    tool("pagar_cuota", "Pagar cuota", "Cobra la cuota mensual pendiente con la tarjeta guardada del socio.", DESTRUCTIVE,
         {"socio": {"type": "string"}}),
]]
ACTING = {card.name for card in GYM if card.acts}


@pytest.fixture(scope="module")
def gym():
    return catalog_index(GYM)


def said(text):
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("text", [
    "¿a qué hora es mi clase de spinning del jueves?",
    "reservé una clase de yoga ayer y no me aparece por ningún lado",
    "pagué la cuota el lunes, ¿ya les figura?",
    "what time is my yoga class tomorrow?",
    "¿hasta cuándo me dura la membresía que tengo congelada?",
])
def test_a_message_that_asks_to_know_is_never_routed_to_a_tool_that_acts(gym, text):
    """R6 (issue 18, item 2): a question about something, even in the words of an acting tool, goes to a
    read tool or to no tool."""
    result = check(gym, said(text))
    assert not (result.needs_tool and result.best in ACTING), (text, result)


@pytest.mark.parametrize("text, expected", [
    ("quiero reservar la clase de yoga del sábado a las 9", "reservar_clase"),
    ("por favor denme de baja la membresía, ya no voy a venir más", "cancelar_membresia"),
])
def test_a_message_that_asks_to_act_may_be_routed_to_the_tool_that_acts(gym, text, expected):
    """R6: the rule holds back questions, not requests: a clear request to act is routed to its tool."""
    result = check(gym, said(text))
    assert result.needs_tool and result.best == expected, result
    assert acting_route_allowed(result)


def test_a_tool_that_acts_is_shown_alone_only_above_its_band():
    """R6 (issue 18, item 3): the same decision with the gate less sure: held back; an agreement to the
    agent's offer is the customer's own yes."""
    sure = GateResult(True, [("reservar_clase", 3.0)], reason="request", probability=0.97, acts=3.0)
    unsure = GateResult(True, [("reservar_clase", 3.0)], reason="request", probability=0.55, acts=3.0)
    asks = GateResult(True, [("reservar_clase", 3.0)], reason="request", probability=0.97, acts=-3.0)
    agreed = GateResult(True, [("reservar_clase", 3.0)], reason="agrees to the agent's offer", probability=0.3, acts=-3.0)
    assert acting_route_allowed(sure) and not acting_route_allowed(unsure) and not acting_route_allowed(asks)
    assert acting_route_allowed(agreed)


def test_a_routed_acting_tool_asks_for_confirmation_unless_the_customer_asked_for_exactly_that():
    """R6 (issue 18, item 3): without the required details, or without a clear request to act, the instruction
    says to confirm the action and its details first; with them, or after the customer's yes, to do it."""
    book = next(card for card in GYM if card.name == "reservar_clase")
    facts = Facts(tool="reservar_clase", request="reservar yoga", details={"clase": "yoga", "fecha": "sábado 9:00"})
    vague = Facts(tool="reservar_clase", request="reservar algo", details={"clase": "yoga"})
    clear = GateResult(True, [("reservar_clase", 3.0)], reason="request", probability=0.97, acts=4.0)
    unsure = GateResult(True, [("reservar_clase", 3.0)], reason="request", probability=0.97, acts=0.2)
    agreed = GateResult(True, [("reservar_clase", 3.0)], reason="agrees to the agent's offer", probability=0.9, acts=0.0)
    assert confirmed(book, facts, clear) and confirmed(book, vague, agreed)
    assert not confirmed(book, vague, clear) and not confirmed(book, facts, unsure)
    asking = compose_instruction(card=book, facts=vague, confirmed=False)
    doing = compose_instruction(card=book, facts=facts, confirmed=True)
    assert "do not call it yet" in asking and "confirm" in asking and "Do it now" not in asking
    assert "Do it now" in doing and "do not call it yet" not in doing
    read = next(card for card in GYM if card.name == "ver_mis_reservas")
    assert "Do it now" in compose_instruction(card=read, facts=Facts(tool=read.name, request="mis clases"), confirmed=False)


def test_the_router_picking_an_acting_tool_for_a_question_leaves_the_turn_unrouted(gym):
    """R6 (issue 18): whichever candidate the router names, a tool that acts is held back when the check
    says the message asks to know: the turn runs unrouted, and the record says why."""
    question = "¿qué clases tengo reservadas esta semana?"
    gate = check(gym, said(question))
    acting = [name for name, _score in gate.candidates if name in ACTING]
    assert gate.needs_tool and gate.best not in ACTING and acting, gate
    model = ScriptedModel([say(json.dumps({"tool": acting[0], "request": question, "clear": True}))])
    with serve_asgi(model.app()) as url:
        route, record = route_message(cards=GYM, conversation=said(question), endpoint=Endpoint(f"{url}/v1", "router"))
    assert route is None and record["outcome"] == "acting tool held back", record


@pytest.mark.parametrize("conversation, offered", [
    ([("user", "¿qué clases de yoga hay el jueves?"),
      ("assistant", "El jueves hay yoga a las 7 y a las 19 h, con cupos libres en las dos. ¿Quieres que te la reserve?"),
      ("user", "sí, la de las 7")], "reservar_clase"),
    ([("user", "¿cuánto debo?"),
      ("assistant", "Tienes una cuota pendiente de $39.900 que vence el viernes. ¿Quieres que la cobre ya con tu tarjeta guardada?"),
      ("user", "dale, cóbrala")], "pagar_cuota"),
])
def test_a_yes_to_an_offer_in_pronouns_takes_the_offered_action(gym, conversation, offered):
    """R6, issue 18: "¿Quieres que te la reserve?" names its object earlier in the agent's reply, and the customer's
    yes may name it too ("cóbrala"): the offer is ranked with both, on a business in no development file."""
    result = check(gym, [{"role": role, "content": text} for role, text in conversation])
    assert result.reason == "agrees to the agent's offer" and result.best == offered, result
