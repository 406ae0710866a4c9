"""The example support-desk MCP server: SDK wiring for the tools in `definitions.py`.

Built on the SDK's low-level `Server` because it publishes hand-written `Tool` definitions
as they are (title, closed inputSchema, outputSchema, all annotations, `_meta`), where the
decorator API would derive them from Python signatures. Served as stateless streamable HTTP;
the SDK answers `server/discover` and the 2026-07-28 per-request envelope by itself.

`build_server()` gives the MCP server, `build_app()` an ASGI app serving it at `/mcp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from examples.soporte.definitions import TOOLS, TOOLS_BY_NAME
from examples.soporte.desk import (
    CASE_TYPE_NAMES,
    PRIORITY_NAMES,
    IdempotencyConflict,
    SupportDesk,
    format_datetime,
    format_price,
)

SERVER_NAME = "asixto-ejemplo-soporte"
SERVER_VERSION = "1.0.0"

IDEMPOTENCY_KEY = "com.asixto/idempotencyKey"
TIMEZONE_KEY = "com.asixto/timezone"

# The low-level Server does not check arguments against inputSchema (only MCPServer does, via
# pydantic), so the example validates them itself, with validators compiled once.
_INPUT_VALIDATORS = {tool.name: Draft202012Validator(tool.input_schema) for tool in TOOLS}


def build_server(desk: SupportDesk | None = None) -> Server[Any]:
    """The MCP server over `desk` (a fresh, empty desk by default)."""
    desk = desk if desk is not None else SupportDesk()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Three tools fit on one page, so the cursor is never needed.
        return types.ListToolsResult(tools=list(TOOLS))

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            # An unknown tool is a protocol error, not a tool result (spec: -32602).
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        problem = _input_problem(tool.name, arguments)
        if problem is not None:
            return business_error("INVALID_INPUT", problem)
        # Gateway metadata arrives in `params._meta`, never in the arguments.
        meta: Mapping[str, Any] = ctx.meta or {}
        handler = _HANDLERS[tool.name]
        return handler(desk, arguments, meta)

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        title="Mesa de soporte de ejemplo",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # Without this the 2026-07-28 HTTP entry runs the whole tools/list handler on every
        # tools/call just to find one input schema (mcp/server/_streamable_http_modern.py).
        get_tool_input_schema=_input_schema,
    )


def _input_schema(name: str) -> dict[str, Any] | None:
    tool = TOOLS_BY_NAME.get(name)
    return tool.input_schema if tool is not None else None


def build_app(
    desk: SupportDesk | None = None, *, host: str = "127.0.0.1", json_response: bool = False
) -> Starlette:
    """An ASGI app serving a new server at `/mcp` (stateless streamable HTTP).

    Each call builds a new server: the SDK's session manager runs only once per app, so an
    app cannot be served, stopped and served again. `host` is where it will listen; on a
    loopback host the SDK turns on its DNS-rebinding protection (Host/Origin checks).
    """
    return build_server(desk).streamable_http_app(stateless_http=True, json_response=json_response, host=host)


def success(text: str, data: dict[str, Any]) -> types.CallToolResult:
    """A result the model reads (`text`) with its data (`data`, conforming to outputSchema)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)


def business_error(error_type: str, user_message: str) -> types.CallToolResult:
    """A business failure: a normal result flagged `isError`, with the error object (SPEC G6)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=user_message)],
        structured_content={"error": {"error_type": error_type, "user_message": user_message}},
        is_error=True,
    )


def _input_problem(tool_name: str, arguments: Mapping[str, Any]) -> str | None:
    """A Spanish sentence naming what is wrong with the arguments, or None when they are valid."""
    error: ValidationError | None = best_match(_INPUT_VALIDATORS[tool_name].iter_errors(dict(arguments)))
    if error is None:
        return None
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "")
        return f"Falta el dato «{missing}»."
    if error.validator == "additionalProperties":
        unexpected = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"No se admite el dato «{unexpected[0]}»." if unexpected else "Hay datos que no se admiten."
    field = ".".join(str(part) for part in error.absolute_path) or "argumentos"
    if error.validator == "minLength":
        return f"El dato «{field}» no puede estar vacío."
    return f"El dato «{field}» no es válido."


def _blank_text(arguments: Mapping[str, Any], *names: str) -> str | None:
    """The first required text that holds only spaces (the schema's minLength lets it through)."""
    return next((name for name in names if not str(arguments.get(name, "")).strip()), None)


def _abrir_caso_soporte(desk: SupportDesk, arguments: Mapping[str, Any], meta: Mapping[str, Any]) -> types.CallToolResult:
    blank = _blank_text(arguments, "documento", "descripcion")
    if blank:
        return business_error("INVALID_INPUT", f"El dato «{blank}» no puede estar vacío.")
    try:
        case = desk.open_case(
            documento=arguments["documento"],
            tipo=arguments["tipo"],
            descripcion=arguments["descripcion"],
            prioridad=arguments.get("prioridad"),
            idempotency_key=meta.get(IDEMPOTENCY_KEY),
        )
    except IdempotencyConflict:
        return business_error("CONFLICT", "Esa solicitud ya se registró con otros datos; no abrí un caso nuevo.")
    state = "abierto y asignado" if case.estado == "abierto" else "en cola"
    return success(
        f"Caso {case.radicado} registrado, {state}. Tiempo de respuesta: {case.sla_horas} horas.",
        {"radicado": case.radicado, "estado": case.estado, "sla_horas": case.sla_horas},
    )


def _consultar_caso(desk: SupportDesk, arguments: Mapping[str, Any], meta: Mapping[str, Any]) -> types.CallToolResult:
    case = desk.find_case(arguments["radicado"])
    if case is None:
        return business_error("NOT_FOUND", "No encontré un caso con ese número de radicado.")
    opened = format_datetime(case.opened_at, meta.get(TIMEZONE_KEY))
    state = "abierto y asignado" if case.estado == "abierto" else "en cola"
    return success(
        f"El caso {case.radicado} ({CASE_TYPE_NAMES[case.tipo].lower()}) está {state}; "
        f"se abrió el {opened} y se atiende en {case.sla_horas} horas.",
        {
            "radicado": case.radicado,
            "estado": case.estado,
            "tipo": CASE_TYPE_NAMES[case.tipo],
            "prioridad": PRIORITY_NAMES[case.prioridad],
            "descripcion": case.descripcion,
            "abierto_el": opened,
            "sla_horas": case.sla_horas,
        },
    )


def _buscar_producto(desk: SupportDesk, arguments: Mapping[str, Any], meta: Mapping[str, Any]) -> types.CallToolResult:
    query = arguments["consulta"]
    products, total = desk.search_products(query, solo_disponibles=bool(arguments.get("solo_disponibles")))
    # Nothing found is an answer, not a failure: the agent tells the customer so (SPEC G6).
    if not products:
        return success(f"No encontré productos para «{query}».", {"productos": [], "total": 0})
    listed = "; ".join(f"{p.nombre}, {format_price(p.precio_cop)}, {p.disponibilidad}" for p in products)
    more = f" Muestro los primeros {len(products)}." if total > len(products) else ""
    return success(
        f"Encontré {total} producto(s): {listed}.{more}",
        {
            "productos": [
                {"nombre": p.nombre, "precio": format_price(p.precio_cop), "disponibilidad": p.disponibilidad}
                for p in products
            ],
            "total": total,
        },
    )


_HANDLERS = {
    "abrir_caso_soporte": _abrir_caso_soporte,
    "consultar_caso": _consultar_caso,
    "buscar_producto": _buscar_producto,
}
