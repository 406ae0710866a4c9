"""What an MCP server offers besides tools (issue 20): its resources and prompts, listed live and
read-only for the admin (the server's page, `GET /api/v1/servers/{id}/resources` and
`…/prompts`). Nothing is stored and nothing reaches an agent: v1 drops resource content (G8).

The listing goes through the connection layer like a catalog sync (tools/mcp: the same
transports, outbound checks at call time, timeouts and byte bounds). A server that does not
offer them lists nothing; a failure is the connection layer's `McpError` (code and message)."""

from dataclasses import dataclass

from tools import mcp
from tools.models import McpServer
from tools.servers import server_probe, server_target

# Shown, not stored: a longer list is cut (and says so); long texts are shortened.
MAX_ITEMS = 500
MAX_TEXT = 2000
FIELDS = {
    "resources": ("uri", "name", "title", "description", "mimeType", "size"),
    "prompts": ("name", "title", "description"),
}


@dataclass(frozen=True)
class Offered:
    kind: str  # "resources" or "prompts"
    items: list  # plain dicts with FIELDS[kind] (and a prompt's `arguments`)
    truncated: bool  # the server lists more than MAX_ITEMS


def server_offerings(*, server: McpServer, kind: str) -> Offered:
    """The server's resources or prompts, as it lists them now. Raises mcp.McpError (the server
    failed) or ApplicationError (the outbound rules refuse its URL now)."""
    if not server.protocol_version:
        server_probe(server=server)  # as a sync does first: which revision it speaks (M4)
    listed = mcp.list_offered(server_target(server), kind, limit=MAX_ITEMS)
    items = [_plain(item, kind) for item in listed[:MAX_ITEMS] if isinstance(item, dict)]
    return Offered(kind=kind, items=items, truncated=len(listed) > MAX_ITEMS)


def _plain(item: dict, kind: str) -> dict:
    plain = {name: _bounded(item.get(name)) for name in FIELDS[kind]}
    if kind == "prompts":
        arguments = item.get("arguments") if isinstance(item.get("arguments"), list) else []
        plain["arguments"] = [
            {"name": _bounded(argument.get("name")), "description": _bounded(argument.get("description")),
             "required": argument.get("required") is True}
            for argument in arguments[:50] if isinstance(argument, dict)
        ]
    return plain


def _bounded(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"
