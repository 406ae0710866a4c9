"""Words customers use for the same thing, in Spanish and English (R6): platform knowledge that lets
word overlap meet a tool described in other words or in the other language.

A customer says "ticket", "link" or "recibo"; the tool's definition says "caso", "enlace" or
"factura". Each group below is one thing of customer service or commerce; a word of a message counts
for the lexical signal as every word of its group (`expand`), so "Any news on ticket 55120?" meets
"consultar un caso de soporte" as "¿cómo va mi caso?" does. The groups are few and unambiguous on
purpose: a word with two common meanings ("case": a phone case or a ticket; "cambio": an exchange or
a change; "gigas": a phone's storage or a plan's data) is in none, as a wrong match costs more than a missed one. Only the message's words are
expanded; the tools' words stay their own (`candidates._stems`).
"""

from functools import lru_cache

from runtime.routing.words import word_stems

GROUPS = [
    # Customer service and commerce
    "caso ticket tiquete radicado reclamo reclamacion queja incidencia pqr claim complaint",
    "soporte support",
    "falla fault failure outage",
    "instalacion installation install",
    "reparacion reparar repair fix",
    "factura recibo bill invoice",
    "saldo deuda balance owe owed",
    "cobro charge",
    "pago pagar payment pay",
    "enlace link url",
    "pedido orden compra order shipment envio paquete package parcel",
    "entrega delivery",
    "devolucion devolver devuelvo devuelve reembolso reembolsar reintegro return refund",
    "garantia warranty guarantee",
    "tienda sucursal oficina sede store shop branch office",
    "horario hours",
    "ciudad city",
    "barrio neighborhood neighbourhood",
    "cobertura coverage",
    "canales channels",
    "plan plans",
    "correo email mail",
    "telefono celular movil phone cellphone mobile",
    "direccion domicilio address",
    "asesor agente humano operador representante agent human operator representative",
    "tecnico technician",
    "visita cita appointment visit",
    "fecha date",
    "datos data",
    "minutos minutes",
    "mensajes sms texts",
    "consumo usage",
    "precio costo price cost",
    "disponibilidad availability stock",
    "producto articulo product item",
    "catalogo catalog catalogue",
    # Actions (a translation keeps the word's own ambiguity, no more)
    "consultar check",
    "buscar search",
    "abrir open",
    "agendar schedule",
    "cancelar cancel",
    "cambiar change",
    "actualizar update",
    "transferir transfer",
    "generar generate",
    # Travel, leisure and everyday services
    "vuelo vuelos flight flights",
    "hotel hoteles hotels",
    "restaurante restaurantes restaurant restaurants",
    "pelicula peliculas movie movies film",
    "cancion canciones song songs track tunes",
    "clima weather forecast pronostico",
    "alarma alarm",
    "tren train",
    "carro auto coche car",
    "taxi cab ride",
    "museo museum",
]


@lru_cache(maxsize=1)
def _groups() -> dict[frozenset[str], frozenset[str]]:
    """A word's stems (Spanish and English, `words.word_stems`) → the stems of its whole group. Keyed by
    both stems together: "case" shares the Spanish stem "cas" with "caso" but not its English one."""
    found = {}
    for group in GROUPS:
        words = [word_stems(word) for word in group.split()]
        union = frozenset().union(*words)
        for word in words:
            found[word] = found.get(word, frozenset()) | union
    return found


def expand(words: list[frozenset[str]]) -> list[frozenset[str]]:
    """Each word's stems with those of its group's words (a word of no group stays as it is)."""
    groups = _groups()
    return [groups.get(word, word) | word for word in words]
