"""The verb a request governs (R6, issue 18 item 2: check versus do, read from the message, whatever the
business), on messages of businesses that are in none of the development files (a pharmacy, a car rental, a
gym, a courier): what follows a verb of wanting or asking the desk, and an order at the start, in Spanish of
several regions and English."""

import pytest

from runtime.routing.head import governed
from runtime.routing.words import normalise


@pytest.mark.parametrize("text", [
    "¿Me pueden reservar una bici estática para el jueves a las 7?",
    "Quisiera renovar la receta del losartán, por favor",
    "necesito que me manden el repartidor otra vez que no había nadie",
    "Hacedme la devolución del coche en Málaga en vez de Sevilla",
    "Mándenmelo a la sucursal de Providencia",
    "Ponme a nombre de mi hermano el alquiler del sábado",
    "could you move my pickup to friday",
    "I'd like to extend the rental two more days",
    "cancel my membership please",
    "can you check me in for the spinning class",  # "check in" is an action, not a look-up
    "quería saber si me pueden cambiar el horario de entrega",  # a polite request to act
])
def test_a_request_to_do_something_is_read_as_acting(text):
    """Issue 18, R6: what follows "¿me pueden…?", "quiero…", "could you…", or an order with its pronoun."""
    assert governed(normalise(text)) == "act"


@pytest.mark.parametrize("text", [
    "quería saber si ya llegó mi pedido de vitaminas",
    "¿Me podés decir a qué hora cierra la farmacia de Palermo?",
    "Quiero ver cuántos días me quedan de plan",
    "dígame cuánto me sale el seguro del auto",
    "I'd like to know when my parcel arrives",
    "tell me my balance",
    "could you check whether the van is still available",
    "necesito consultar el estado de mi envío",
])
def test_a_request_to_know_something_is_read_as_knowing(text):
    """Issue 18, R6: the verbs of knowing (saber, ver, decir, consultar; know, tell, check) are a closed class."""
    assert governed(normalise(text)) == "know"


@pytest.mark.parametrize("text", [
    "¿Puedo devolver un jarabe abierto?",  # may I: a question about what is allowed
    "¿Qué papeles le piden a un menor para viajar?",  # "papeles" ends like an order with "les"; it is a noun
    "no quiero esperar tres días por la entrega",  # a negated want asks for nothing
    "cuanto me queda por pagar del plan",  # Spanish words before "me" are no English order
    "my card was charged twice",
    "¿me pueden ayudar con la factura?",  # "help" says nothing of the action
    "necesito que alguien me atienda",  # asks for a person, not for an action
    "",
])
def test_no_verb_of_a_request_says_nothing(text):
    """Issue 18, R6: no reading where the message names no governed verb: the other facts decide."""
    assert governed(normalise(text)) is None
