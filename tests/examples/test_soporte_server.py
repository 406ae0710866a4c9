"""The example support-desk server, served on loopback and driven by the SDK's own client.

Proves the example meets the tool contract (seed 000) the way the gateway will see it: over
real HTTP, in the stateless 2026-07-28 revision (and through `mode="auto"`, which probes
`server/discover` first). No database needed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from examples.soporte.definitions import ABRIR_CASO_SOPORTE
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "auto"]
TOOL_NAMES = ["abrir_caso_soporte", "consultar_caso", "buscar_producto"]
ERROR_TYPES = {"NOT_FOUND", "INVALID_INPUT", "CONFLICT", "NOT_ALLOWED", "UNAVAILABLE", "RATE_LIMITED"}
RESULT_BUDGET = 3_000
CASE = {"documento": "CC1032456789", "tipo": "falla", "descripcion": "El router no enciende desde ayer."}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def desk() -> SupportDesk:
    return SupportDesk()


@pytest.fixture
def mcp_url(desk: SupportDesk) -> Iterator[str]:
    # A fresh server per test (≈25 ms): idempotency state never leaks between tests.
    with serve_asgi(build_app(desk)) as base_url:
        yield f"{base_url}/mcp"


def client_for(url: str, mode: str) -> Client:
    return Client(url, mode=mode, client_info=types.Implementation(name="asixto-tests", version="0"))


def gateway_meta(**extra: str) -> dict[str, str]:
    """The `com.asixto/` keys the gateway puts in every call (SPEC G1)."""
    return {
        "com.asixto/idempotencyKey": uuid.uuid4().hex,
        "com.asixto/conversationId": "cnv_test",
        "com.asixto/requestId": uuid.uuid4().hex,
        "com.asixto/channel": "chat",
        "com.asixto/companyId": "cmp_test",
        "com.asixto/priceListId": "pl_general",
        "com.asixto/currency": "COP",
        "com.asixto/timezone": "America/Bogota",
        **extra,
    }


def assert_fits_the_contract(result: types.CallToolResult, output_schema: dict[str, Any]) -> None:
    """A successful result: complete, with text, valid data, within the 3,000-character budget."""
    assert result.result_type == "complete"
    assert result.is_error is False
    assert result.content and result.content[0].type == "text" and result.content[0].text
    jsonschema.validate(result.structured_content, output_schema)
    assert len(json.dumps(result.structured_content, ensure_ascii=False)) < RESULT_BUDGET
    assert len(result.content[0].text) < RESULT_BUDGET


def assert_business_error(result: types.CallToolResult, error_type: str) -> None:
    """SPEC G6: `isError` with `{"error": {"error_type", "user_message"}}` and a short text."""
    assert result.is_error is True
    assert result.result_type == "complete"
    assert error_type in ERROR_TYPES
    assert result.structured_content == {
        "error": {"error_type": error_type, "user_message": result.structured_content["error"]["user_message"]}
    }
    message = result.structured_content["error"]["user_message"]
    assert isinstance(message, str) and 0 < len(message) <= 200
    assert [block.text for block in result.content] == [message]


@pytest.mark.parametrize("mode", MODES)
async def test_it_lists_the_three_tools_in_order_with_full_definitions(mcp_url: str, mode: str) -> None:
    """M5, C1, C3, C4, C5, C6, C7: tools/list gives every contract field, in a stable order."""
    async with client_for(mcp_url, mode) as client:
        first = await client.list_tools()
        second = await client.list_tools()

    assert [tool.name for tool in first.tools] == TOOL_NAMES
    assert [tool.name for tool in second.tools] == TOOL_NAMES
    for tool in first.tools:
        assert tool.title and tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert set(tool.input_schema["required"]) <= set(tool.input_schema["properties"])
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.annotations is not None
        hints = (tool.annotations.read_only_hint, tool.annotations.destructive_hint, tool.annotations.idempotent_hint)
        assert all(isinstance(hint, bool) for hint in hints)
        assert tool.annotations.destructive_hint is False
        capabilities = tool.meta["com.asixto/capabilities"]
        assert isinstance(capabilities, list) and capabilities and all(isinstance(c, str) for c in capabilities)
        verb = tool.meta["com.asixto/verb"]
        # A Spanish phrase that starts with an infinitive: "abrir un caso de soporte".
        assert verb.split()[0].endswith(("ar", "er", "ir")) and len(verb.split()) > 1

    by_name = {tool.name: tool for tool in first.tools}
    assert by_name["abrir_caso_soporte"].annotations.read_only_hint is False
    assert by_name["consultar_caso"].annotations.read_only_hint is True
    assert by_name["buscar_producto"].annotations.read_only_hint is True
    # The contract's own example tool is published exactly as the contract writes it.
    abrir = by_name["abrir_caso_soporte"].model_dump(by_alias=True, exclude_none=True, mode="json")
    assert abrir == ABRIR_CASO_SOPORTE
    assert abrir["_meta"]["com.asixto/verb"] == "abrir un caso de soporte"
    assert abrir["annotations"] == {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}


async def test_it_answers_server_discover(mcp_url: str) -> None:
    """M4: `server/discover` answers with 2026-07-28 and the tools capability; auto mode adopts it."""
    async with client_for(mcp_url, "auto") as client:
        discovered = client.session.discover_result
        assert client.protocol_version == "2026-07-28"
        assert client.session.initialize_result is None  # no legacy handshake happened

    assert discovered is not None
    assert "2026-07-28" in discovered.supported_versions
    assert discovered.capabilities.tools is not None

    # A pinned client never probes by itself (it synthesises a discover result), so probe on the wire.
    async with client_for(mcp_url, "2026-07-28") as client:
        raw = await client.session.send_discover("2026-07-28")
    assert raw["resultType"] == "complete"
    assert "2026-07-28" in raw["supportedVersions"]
    assert "tools" in raw["capabilities"]


@pytest.mark.parametrize("mode", MODES)
async def test_it_returns_the_same_radicado_for_the_same_idempotency_key(
    mcp_url: str, desk: SupportDesk, mode: str
) -> None:
    """C9, G3: a retry with the same idempotency key (new connection, new request id) opens no second case."""
    meta = gateway_meta()
    async with client_for(mcp_url, mode) as client:
        first = await client.call_tool("abrir_caso_soporte", CASE, meta=meta)
    # The gateway's retry after a dropped connection: another client, the same key.
    async with client_for(mcp_url, mode) as client:
        retried = await client.call_tool("abrir_caso_soporte", CASE, meta={**meta, "com.asixto/requestId": "req_2"})
        other = await client.call_tool("abrir_caso_soporte", CASE, meta=gateway_meta())

    assert first.is_error is False and retried.is_error is False and other.is_error is False
    assert retried.structured_content == first.structured_content
    assert first.structured_content["radicado"].startswith("SOP-")
    assert other.structured_content["radicado"] != first.structured_content["radicado"]
    assert desk.case_count == 2


async def test_it_refuses_an_idempotency_key_reused_with_other_data(mcp_url: str, desk: SupportDesk) -> None:
    """C9, G6: the same key with different arguments is a CONFLICT business error, not a new case."""
    meta = gateway_meta()
    async with client_for(mcp_url, "2026-07-28") as client:
        await client.call_tool("abrir_caso_soporte", CASE, meta=meta)
        clash = await client.call_tool("abrir_caso_soporte", {**CASE, "tipo": "cobro"}, meta=meta)

    assert_business_error(clash, "CONFLICT")
    assert desk.case_count == 1


@pytest.mark.parametrize("mode", MODES)
async def test_it_reports_an_unknown_radicado_as_not_found(mcp_url: str, mode: str) -> None:
    """G6, C8: an unknown radicado is `isError` with the NOT_FOUND error object, not a protocol error."""
    async with client_for(mcp_url, mode) as client:
        result = await client.call_tool("consultar_caso", {"radicado": "SOP-999999"}, meta=gateway_meta())

    assert_business_error(result, "NOT_FOUND")


@pytest.mark.parametrize("mode", MODES)
async def test_it_returns_an_empty_search_as_a_success(mcp_url: str, mode: str) -> None:
    """G6, C8: a search without matches succeeds with an empty list and a total of 0."""
    async with client_for(mcp_url, mode) as client:
        schema = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}["buscar_producto"]
        result = await client.call_tool("buscar_producto", {"consulta": "lavadora"}, meta=gateway_meta())

    assert result.structured_content == {"productos": [], "total": 0}
    assert_fits_the_contract(result, schema)


@pytest.mark.parametrize("mode", MODES)
async def test_it_returns_structured_content_that_validates_against_the_output_schema(mcp_url: str, mode: str) -> None:
    """C8, G5: every successful result validates against its tool's outputSchema and fits the budget."""
    async with client_for(mcp_url, mode) as client:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        opened = await client.call_tool("abrir_caso_soporte", {**CASE, "prioridad": "alta"}, meta=gateway_meta())
        radicado = opened.structured_content["radicado"]
        found = await client.call_tool("consultar_caso", {"radicado": radicado.lower()}, meta=gateway_meta())
        products = await client.call_tool("buscar_producto", {"consulta": "modem"}, meta=gateway_meta())
        many = await client.call_tool("buscar_producto", {"consulta": "de"}, meta=gateway_meta())

    assert_fits_the_contract(opened, schemas["abrir_caso_soporte"])
    assert opened.structured_content["estado"] == "abierto"
    assert_fits_the_contract(found, schemas["consultar_caso"])
    # Resolved data: readable names and a full date, not codes.
    assert found.structured_content["radicado"] == radicado
    assert found.structured_content["tipo"] == "Falla técnica"
    assert found.structured_content["prioridad"] == "Alta"
    assert " de 20" in found.structured_content["abierto_el"]
    assert_fits_the_contract(products, schemas["buscar_producto"])
    # "modem" finds "Módem …" and "… para módem"; prices are final and readable.
    assert products.structured_content["total"] == 2
    assert {p["precio"] for p in products.structured_content["productos"]} == {"$ 249.900", "$ 49.900"}
    assert_fits_the_contract(many, schemas["buscar_producto"])
    assert many.structured_content["total"] > len(many.structured_content["productos"]) == 5


async def test_it_rejects_arguments_outside_the_input_schema_as_a_correctable_error(mcp_url: str) -> None:
    """C3, G6: arguments the closed inputSchema does not allow give an INVALID_INPUT result."""
    async with client_for(mcp_url, "2026-07-28") as client:
        extra = await client.call_tool("buscar_producto", {"consulta": "router", "sucursal": "norte"})
        missing = await client.call_tool("abrir_caso_soporte", {"documento": "CC1", "tipo": "falla"})
        bad_enum = await client.call_tool("abrir_caso_soporte", {**CASE, "tipo": "queja"})

    for result in (extra, missing, bad_enum):
        assert_business_error(result, "INVALID_INPUT")
    assert "descripcion" in missing.structured_content["error"]["user_message"]


async def test_it_answers_an_unknown_tool_with_a_protocol_error(mcp_url: str) -> None:
    """G6: an unknown tool is a JSON-RPC error (-32602), not a business error result."""
    async with client_for(mcp_url, "2026-07-28") as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("borrar_todo", {})

    assert raised.value.code == types.INVALID_PARAMS


def test_it_speaks_stateless_2026_07_28_on_the_wire(mcp_url: str) -> None:
    """M4, C6, C8, G1, G4: one self-contained POST, no session, `_meta` and `resultType` in the raw JSON."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    def post(method: str, params: dict[str, Any], name: str | None = None) -> httpx.Response:
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        if name is not None:
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": envelope}}
        return httpx.post(mcp_url, json=body, headers=headers, timeout=5)

    listed = post("tools/list", {})
    assert listed.status_code == 200
    assert "mcp-session-id" not in listed.headers
    tools = listed.json()["result"]["tools"]
    assert [tool["_meta"]["com.asixto/verb"] for tool in tools] == [
        "abrir un caso de soporte",
        "consultar un caso de soporte",
        "buscar un producto del catálogo",
    ]

    # The gateway's keys travel in `params._meta` while `arguments` stays within the closed schema.
    call_params = {"name": "buscar_producto", "arguments": {"consulta": "router"}}
    envelope.update(gateway_meta())
    called = post("tools/call", call_params, name="buscar_producto")
    assert called.status_code == 200
    result = called.json()["result"]
    assert result["resultType"] == "complete"
    assert result["structuredContent"]["total"] == 1
    assert result["structuredContent"]["productos"][0]["nombre"] == "Router WiFi 6 doble banda"

    # The transport enforces the routing headers: a body naming another tool is refused.
    mismatched = post("tools/call", call_params, name="consultar_caso")
    assert mismatched.status_code == 400
    assert mismatched.json()["error"]["code"] == types.HEADER_MISMATCH


@pytest.mark.parametrize("empty", ["", "   "])
async def test_it_refuses_empty_required_text(mcp_url: str, desk: SupportDesk, empty: str) -> None:
    """C3, G6: a required text left empty (or blank) opens no case: INVALID_INPUT naming the field,
    and the schema says so up front (minLength), so the gateway refuses "" before calling."""
    schema = ABRIR_CASO_SOPORTE["inputSchema"]["properties"]
    assert schema["documento"]["minLength"] == 1 and schema["descripcion"]["minLength"] == 1
    async with client_for(mcp_url, "2026-07-28") as client:
        result = await client.call_tool("abrir_caso_soporte", {**CASE, "descripcion": empty}, meta=gateway_meta())
    assert_business_error(result, "INVALID_INPUT")
    assert "descripcion" in result.structured_content["error"]["user_message"]
    assert desk.case_count == 0
