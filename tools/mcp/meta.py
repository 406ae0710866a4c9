"""The one builder of a `tools/call`'s `params._meta` (G1), for every path that calls a tool: the
gateway's direct POST, the SDK transports and the certification probes (C8, C9).

The protocol's own keys (`io.modelcontextprotocol/…`) say who the client is; the SDK adds them by
itself from `CLIENT_INFO`, the direct POST from `protocol_meta()`, so both introduce the gateway
the same way. The eight `com.asixto/` keys say who is calling and for whom.
"""

from __future__ import annotations

PROTOCOL_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "asixto", "title": "Asixto gateway", "version": "1"}


def protocol_meta() -> dict:
    """The protocol's keys of a stateless 2026-07-28 request, as the SDK would send them."""
    return {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": dict(CLIENT_INFO),
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def call_meta(
    *,
    idempotency_key: str,
    conversation_id: str,
    request_id: str,
    channel: str,
    company_id: str,
    price_list_id: str = "",
    currency: str = "",
    timezone: str = "UTC",
) -> dict:
    """The eight `com.asixto/` keys (G1); they travel in params._meta, never in arguments."""
    return {
        "com.asixto/idempotencyKey": idempotency_key,
        "com.asixto/conversationId": conversation_id,
        "com.asixto/requestId": request_id,
        "com.asixto/channel": channel,
        "com.asixto/companyId": company_id,
        "com.asixto/priceListId": price_list_id,
        "com.asixto/currency": currency,
        "com.asixto/timezone": timezone,
    }
