"""The three tool definitions of the example support server, in their wire form.

Written as the JSON the contract shows (camelCase keys, `_meta`), so a reader can hold this
file next to the contract and compare. `TOOLS` keeps the order `tools/list` returns: a stable
order is part of the contract (it keeps the model's prompt cache warm).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

CAPABILITIES_KEY = "com.asixto/capabilities"
VERB_KEY = "com.asixto/verb"

ABRIR_CASO_SOPORTE: dict[str, Any] = {
    # Name, title, description, schemas and annotations as in the contract (seed 000), plus
    # `minLength: 1` on the required text: an empty description must not open a case.
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
            "documento": {"type": "string", "minLength": 1, "maxLength": 20},
            "tipo": {"enum": ["falla", "instalacion", "cobro"]},
            "descripcion": {"type": "string", "minLength": 1, "maxLength": 400},
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
        CAPABILITIES_KEY: ["pqr", "soporte", "garantia"],
        VERB_KEY: "abrir un caso de soporte",
    },
}

CONSULTAR_CASO: dict[str, Any] = {
    "name": "consultar_caso",
    "title": "Consultar caso de soporte",
    "description": (
        "Devuelve el estado de un caso de soporte a partir de su número de radicado. "
        "No la uses para abrir un caso nuevo."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["radicado"],
        "properties": {"radicado": {"type": "string", "minLength": 1, "maxLength": 30}},
    },
    "outputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["radicado", "estado", "tipo", "prioridad", "abierto_el", "sla_horas"],
        "properties": {
            "radicado": {"type": "string"},
            "estado": {"type": "string", "enum": ["abierto", "en_cola"]},
            "tipo": {"type": "string"},
            "prioridad": {"type": "string"},
            "descripcion": {"type": "string"},
            "abierto_el": {"type": "string"},
            "sla_horas": {"type": "integer"},
        },
    },
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    "_meta": {
        CAPABILITIES_KEY: ["soporte", "pqr", "garantia"],
        VERB_KEY: "consultar un caso de soporte",
    },
}

BUSCAR_PRODUCTO: dict[str, Any] = {
    "name": "buscar_producto",
    "title": "Buscar producto",
    "description": (
        "Busca productos del catálogo por nombre y devuelve su precio final y su disponibilidad. "
        "No la uses para consultar casos de soporte ni pedidos ya hechos."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["consulta"],
        "properties": {
            "consulta": {"type": "string", "minLength": 1, "maxLength": 80},
            "solo_disponibles": {"type": ["boolean", "null"]},
        },
    },
    "outputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["productos", "total"],
        "properties": {
            "productos": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["nombre", "precio", "disponibilidad"],
                    "properties": {
                        "nombre": {"type": "string"},
                        "precio": {"type": "string"},
                        "disponibilidad": {"type": "string"},
                    },
                },
            },
            "total": {"type": "integer", "minimum": 0},
        },
    },
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    "_meta": {
        CAPABILITIES_KEY: ["ventas", "soporte"],
        VERB_KEY: "buscar un producto del catálogo",
    },
}

# Validated into SDK models once, at import: a typo in a definition fails here, not mid-call.
TOOLS: tuple[types.Tool, ...] = tuple(
    types.Tool.model_validate(definition) for definition in (ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO)
)
TOOLS_BY_NAME: dict[str, types.Tool] = {tool.name: tool for tool in TOOLS}
