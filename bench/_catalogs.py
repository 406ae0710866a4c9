"""Catalogs for bench/catalog_sync.py: `distinct_tools(n)`, tools that each have their own words
and schemas, as a real large server has (the test catalog's `make_tools` gives every tool one
shape, so caches keyed by a schema or a description hide most of certification's cost).

Deterministic: the same count and seed give the same catalog, so the server process and the
benchmark build the same one. Every tool is contract-compliant for a tenant whose scenarios
include "inventario" (warnings allowed, nothing that blocks)."""

import random
from typing import Any

_READ_VERBS = ["consultar", "buscar", "listar", "obtener", "revisar", "ver"]
_WRITE_VERBS = ["crear", "registrar", "actualizar", "asignar", "programar", "enviar"]
_DESTRUCTIVE_VERBS = ["eliminar", "cancelar", "anular"]
_NOUNS = [
    "cliente", "pedido", "factura", "cita", "producto", "bodega", "envio", "reclamo", "contrato", "poliza",
    "proveedor", "sucursal", "empleado", "turno", "reserva", "habitacion", "vehiculo", "ruta", "paquete",
    "garantia", "cotizacion", "pago", "cuenta", "tarjeta", "credito", "prestamo", "curso", "alumno", "matricula",
    "paciente", "receta", "examen", "mascota", "vacuna", "lote", "pallet", "caja", "etiqueta", "campana",
    "cupon", "ticket", "caso", "visita", "tecnico", "orden", "repuesto", "medidor", "lectura", "consumo", "tarifa",
]
_ADJECTIVES = [
    "activo", "pendiente", "historico", "vigente", "regional", "interno", "externo", "principal", "temporal",
    "anual", "mensual", "diario", "urgente", "nacional", "digital", "fisico", "comercial", "corporativo",
]
_WORDS = [
    "estado", "fecha", "codigo", "nombre", "detalle", "resumen", "responsable", "direccion", "telefono", "correo",
    "canal", "origen", "destino", "prioridad", "categoria", "segmento", "zona", "ciudad", "region", "observacion",
    "motivo", "referencia", "documento", "numero", "serie", "modelo", "marca", "color", "talla", "peso", "volumen",
    "cantidad", "unidad", "periodo", "vencimiento", "inicio", "cierre", "agente", "supervisor", "area", "nivel",
    "grupo", "tipo", "clase", "version", "idioma", "moneda", "plazo", "cuota", "saldo", "limite", "descuento",
]
_FORMATS = ["date", "date-time", "email", "uri", "uuid", "time"]
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def distinct_tools(count: int, *, seed: int = 20261204) -> list[dict[str, Any]]:
    """`count` tool definitions in wire form, each with its own name, title, description words,
    1–8 input properties of varied types (nested objects, arrays, enums with their own values,
    formats, patterns, required lists) and its own output schema."""
    rng = random.Random(seed)
    return [_tool(rng, number) for number in range(1, count + 1)]


def _tool(rng: random.Random, number: int) -> dict[str, Any]:
    kind = rng.choices(["read", "write", "destructive"], weights=[6, 3, 1])[0]
    verb = rng.choice({"read": _READ_VERBS, "write": _WRITE_VERBS, "destructive": _DESTRUCTIVE_VERBS}[kind])
    noun, adjective = rng.choice(_NOUNS), rng.choice(_ADJECTIVES)
    name = f"{verb}_{noun}_{adjective}_{number:04d}"
    words = rng.sample(_WORDS, 4)
    description = (
        f"{verb.capitalize()} el {noun} {adjective} según su {words[0]} y su {words[1]}, "
        f"con el {words[2]} de cada {rng.choice(_NOUNS)}. "
        f"No la uses para {rng.choice(_WRITE_VERBS if kind == 'read' else _READ_VERBS)} el {words[3]} de un {noun}."
    )
    properties = {}
    for word in rng.sample(_WORDS, rng.randint(1, 8)):
        properties[f"{word}_{rng.choice(_NOUNS)}"] = _property(rng, depth=0)
    required = rng.sample(sorted(properties), rng.randint(0, len(properties)))
    output_names = rng.sample(_WORDS, rng.randint(1, 5))
    output = {name: _property(rng, depth=1) for name in output_names}
    annotations = {
        "read": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
        "write": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": rng.random() < 0.5},
        "destructive": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    }[kind]
    return {
        "name": name,
        "title": f"{verb.capitalize()} {noun} {adjective} {number}",
        "description": description,
        "inputSchema": {
            "type": "object", "additionalProperties": False, "properties": properties,
            **({"required": required} if required else {}),
        },
        "outputSchema": {"type": "object", "required": output_names[:1], "properties": output},
        "annotations": annotations,
        "_meta": {"com.asixto/capabilities": ["inventario"], "com.asixto/verb": f"{verb} el {noun} {adjective}"},
    }


def _property(rng: random.Random, *, depth: int) -> dict[str, Any]:
    kinds = ["string", "enum", "format", "pattern", "integer", "number", "boolean", "array"]
    if depth < 2:
        kinds += ["object", "array_of_objects"]
    kind = rng.choice(kinds)
    description = f"{rng.choice(_WORDS).capitalize()} del {rng.choice(_NOUNS)}."
    if kind == "string":
        return {"type": "string", "maxLength": rng.randint(8, 400), "description": description}
    if kind == "enum":
        return {"type": "string", "enum": _enum(rng), "description": description}
    if kind == "format":
        return {"type": "string", "format": rng.choice(_FORMATS), "description": description}
    if kind == "pattern":
        return {"type": "string", "pattern": _pattern(rng), "description": description}
    if kind == "integer":
        low = rng.randint(0, 100)
        return {"type": "integer", "minimum": low, "maximum": low + rng.randint(1, 100_000)}
    if kind == "number":
        return {"type": "number", "minimum": 0, "exclusiveMaximum": rng.randint(2, 10_000) / rng.choice([1, 10, 100])}
    if kind == "boolean":
        return {"type": "boolean", "description": description}
    if kind == "array":
        item = rng.choice([{"type": "string", "enum": _enum(rng)}, {"type": "integer"}, {"type": "string", "pattern": _pattern(rng)}])
        return {"type": "array", "items": item, "maxItems": rng.randint(1, 50), "uniqueItems": rng.random() < 0.5}
    inner = {f"{word}_{rng.choice(_NOUNS)}": _property(rng, depth=depth + 1) for word in rng.sample(_WORDS, rng.randint(1, 4))}
    nested = {"type": "object", "additionalProperties": False, "properties": inner,
              "required": rng.sample(sorted(inner), rng.randint(0, len(inner)))}
    if kind == "object":
        return {**nested, "description": description}
    return {"type": "array", "items": nested, "maxItems": rng.randint(1, 20), "description": description}


def _enum(rng: random.Random) -> list[str]:
    return [f"{rng.choice(_WORDS)}_{rng.choice(_ADJECTIVES)}_{rng.randint(1, 999)}" for _ in range(rng.randint(2, 7))]


def _pattern(rng: random.Random) -> str:
    letters = "".join(rng.sample(_LETTERS, rng.randint(2, 6)))
    return rf"^[{letters}]{{{rng.randint(1, 4)}}}-[0-9]{{{rng.randint(2, 8)}}}(?:\.[a-z]{{1,{rng.randint(1, 5)}}})?$"
