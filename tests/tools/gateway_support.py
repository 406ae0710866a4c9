"""Shared set-up for gateway tests: a certified tool on a server at a given URL."""

import json

from tests.support.faults import MODERN_DISCOVER
from tests.tools.contract_samples import good
from tools.catalog import definition_hash, prefixed_name
from tools.gateway import CallContext
from tools.models import McpServer, Tool
from tools.rules import tool_level

SEARCH = good(
    "buscar_producto",
    annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    inputSchema={"type": "object", "additionalProperties": False, "required": ["consulta"],
                 "properties": {"consulta": {"type": "string", "maxLength": 100}}},
    outputSchema={"type": "object", "required": ["productos", "total"],
                  "properties": {"productos": {"type": "array"}, "total": {"type": "integer"}}},
)


def certified_tool(world, url, definition=SEARCH, *, slug="crm", timeout=2.0, transport="streamable_http",
                   path="/mcp", discover=MODERN_DISCOVER, headers=None, command=""):
    """A tool as a sync would leave it: certified for this definition, discovery cached (with
    `discover=None` the gateway negotiates through the SDK, as for a server never probed)."""
    with world.schema():
        server = McpServer.objects.create(
            slug=slug, transport=transport, url=f"{url}{path}" if url else "", command=command,
            discover_result=discover, protocol_version="2026-07-28", timeout_seconds=timeout,
            auth_headers=json.dumps(headers) if headers else "",
        )
        digest = definition_hash(definition)
        return Tool.objects.create(
            server=server, name=definition["name"], prefixed_name=prefixed_name(slug, definition["name"]), position=0,
            definition=definition, definition_hash=digest, level=tool_level(definition.get("annotations")),
            certification=Tool.Certification.CERTIFIED, certified_hash=digest,
        )


def search_tool(input_property=None, output_schema=None):
    """The gateway's sample tool with its `consulta` argument or its outputSchema replaced."""
    return good(
        "buscar_producto",
        annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
        inputSchema={"type": "object", "additionalProperties": False, "required": ["consulta"],
                     "properties": {"consulta": input_property or {"type": "string", "maxLength": 100}}},
        outputSchema=output_schema or {"type": "object", "required": ["total"], "properties": {"total": {"type": "integer"}}},
    )


def context(**changes):
    values = {"channel": "chat", "idempotency_key": "turn-1-step-1", "conversation_id": "cnv_1", "currency": "COP",
              "timezone": "America/Bogota", "price_list_id": "pl_mayorista"}
    return CallContext(**{**values, **changes})


def ok_result(text="Encontré 1 producto.", data=None):
    return {"content": [{"type": "text", "text": text}],
            "structuredContent": data if data is not None else {"productos": [{"nombre": "Router"}], "total": 1}}
