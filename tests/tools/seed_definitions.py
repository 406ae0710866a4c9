"""The contract's own example tool (seed 000), as tests start from it and break one rule."""

import copy

SCENARIOS = ["pqr", "soporte", "garantia", "ventas"]

_ABRIR_CASO_SOPORTE = {
    "name": "abrir_caso_soporte",
    "title": "Abrir caso de soporte",
    "description": (
        "Registra un caso de soporte para un cliente identificado y devuelve su número de radicado. "
        "Úsala solo cuando el cliente ya describió el problema. "
        "No la uses para consultar el estado de un caso existente."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["documento", "tipo", "descripcion"],
        "properties": {
            "documento": {"type": "string", "maxLength": 20},
            "tipo": {"enum": ["falla", "instalacion", "cobro"]},
            "descripcion": {"type": "string", "maxLength": 400},
            "prioridad": {"type": ["string", "null"], "enum": ["alta", "normal", None]},
        },
    },
    "outputSchema": {
        "type": "object",
        "required": ["radicado", "estado"],
        "properties": {
            "radicado": {"type": "string"},
            "estado": {"enum": ["abierto", "en_cola"]},
            "sla_horas": {"type": "integer"},
        },
    },
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True},
    "_meta": {
        "com.asixto/capabilities": ["pqr", "soporte", "garantia"],
        "com.asixto/verb": "abrir un caso de soporte",
    },
}


def abrir_caso_soporte(**changes) -> dict:
    """A fresh copy of the seed definition, with top-level keys replaced (None removes one)."""
    tool = copy.deepcopy(_ABRIR_CASO_SOPORTE)
    for key, value in changes.items():
        key = "_meta" if key == "meta" else key
        if value is None:
            tool.pop(key, None)
        else:
            tool[key] = value
    return tool


def ok_result() -> dict:
    """A successful result of abrir_caso_soporte, as the contract describes it."""
    return {
        "resultType": "complete",
        "content": [{"type": "text", "text": "Caso RAD-2024-0012 abierto; respuesta en 24 horas."}],
        "structuredContent": {"radicado": "RAD-2024-0012", "estado": "abierto", "sla_horas": 24},
    }
